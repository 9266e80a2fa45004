#include "runtime/Env.h"
#include "runtime/Error.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

extern char **environ;

namespace ember::env {

const std::vector<Var> &registry() {
  static const std::vector<Var> vars = {
#define EMBER_ENV_ENTRY(name, desc) {#name, desc},
      EMBER_FORALL_ENV_VARS(EMBER_ENV_ENTRY)
#undef EMBER_ENV_ENTRY
  };
  return vars;
}

static bool registered(const std::string &name) {
  for (const Var &v : registry())
    if (name == v.name)
      return true;
  return false;
}

static void checkEnvironment() {
  static std::once_flag once;
  static std::string bad;
  std::call_once(once, [] {
    for (char **e = environ; e && *e; ++e) {
      std::string kv = *e;
      if (kv.rfind("EMBER_", 0) != 0)
        continue;
      std::string name = kv.substr(0, kv.find('='));
      if (!registered(name))
        bad += (bad.empty() ? "" : ", ") + name;
    }
  });
  if (!bad.empty()) {
    std::string known;
    for (const Var &v : registry())
      known += std::string(known.empty() ? "" : ", ") + v.name;
    throw Error("unknown environment variable(s) " + bad +
                ": ember reads only " + known +
                " (see the README, \"Environment variables\"). Unset or correct them.");
  }
}

std::optional<std::string> get(const char *name) {
  EMBER_INTERNAL_ASSERT(registered(name));
  checkEnvironment();
  const char *v = std::getenv(name);
  if (!v)
    return std::nullopt;
  return std::string(v);
}

std::optional<long> get_int(const char *name, long lo, long hi) {
  auto s = get(name);
  if (!s)
    return std::nullopt;
  char *end = nullptr;
  long v = std::strtol(s->c_str(), &end, 10);
  EMBER_CHECK(!s->empty() && *end == '\0' && v >= lo && v <= hi, name, "='", *s,
              "' is not an integer in [", lo, ", ", hi, "]");
  return v;
}

} // namespace ember::env
