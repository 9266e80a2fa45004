#include "runtime/Logging.h"

#include "runtime/Env.h"
#include "runtime/Error.h"

#include <atomic>
#include <iostream>
#include <mutex>
#include <set>

namespace ember::logging {

const std::vector<TopicInfo> &topics() {
  static const std::vector<TopicInfo> t = {
#define EMBER_LOG_TOPIC(name, desc) {#name, desc},
      EMBER_FORALL_LOG_TOPICS(EMBER_LOG_TOPIC)
#undef EMBER_LOG_TOPIC
  };
  return t;
}

namespace {
constexpr int kNumTopics = int(Topic::NumTopics);
std::atomic<uint32_t> g_mask{0};
std::once_flag g_env_once;

uint32_t parse(const std::string &list, const char *source) {
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t end = list.find(',', pos);
    if (end == std::string::npos)
      end = list.size();
    std::string name = list.substr(pos, end - pos);
    while (!name.empty() && name.front() == ' ')
      name.erase(name.begin());
    while (!name.empty() && name.back() == ' ')
      name.pop_back();
    pos = end + 1;
    if (name.empty())
      continue;
    if (name == "all") {
      mask = (1u << kNumTopics) - 1;
      continue;
    }
    bool found = false;
    for (int i = 0; i < kNumTopics; ++i)
      if (name == topics()[i].name) {
        mask |= 1u << i;
        found = true;
      }
    if (!found) {
      std::string valid;
      for (const TopicInfo &t : topics())
        valid += std::string(valid.empty() ? "" : ", ") + t.name;
      EMBER_CHECK_VALUE(false, source, ": unknown log topic '", name,
                        "'; valid topics are ", valid, " (or all)");
    }
  }
  return mask;
}

void read_env() {
  std::call_once(g_env_once, [] {
    if (auto v = env::get("EMBER_LOGS"))
      g_mask.store(parse(*v, "EMBER_LOGS"), std::memory_order_relaxed);
  });
}
} // namespace

bool enabled(Topic t) {
  read_env();
  return g_mask.load(std::memory_order_relaxed) & (1u << int(t));
}

void set_logs(const std::string &comma_list) {
  read_env();
  g_mask.store(parse(comma_list, "set_logs"), std::memory_order_relaxed);
}

void log(Topic t, const std::string &message) {
  if (!enabled(t))
    return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "[ember:" << topics()[int(t)].name << "] " << message;
  if (message.empty() || message.back() != '\n')
    std::cerr << '\n';
  std::cerr.flush();
}

void warn(const std::string &message) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "[ember] warning: " << message << '\n';
  std::cerr.flush();
}

void warn_once(const std::string &key, const std::string &message) {
  static std::mutex mu;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen.insert(key).second)
      return;
  }
  warn(message);
}

} // namespace ember::logging
