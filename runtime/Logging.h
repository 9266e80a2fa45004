#pragma once
/// Compiler logs (torch._logging): topics switched on by EMBER_LOGS (a comma
/// list) or set_logs(), printed on stderr as "[ember:topic] message".

#include <sstream>
#include <string>
#include <vector>

namespace ember::logging {

// Note [Log topics]
// name, what it prints. EMBER_LOGS accepts exactly these names (and "all").
#define EMBER_FORALL_LOG_TOPICS(_)                                             \
  _(graph, "each captured graph as a readable trace, when it is compiled")     \
  _(ir, "each compiled graph's ember MLIR module")                             \
  _(guards, "the guards of each new cache entry")                              \
  _(breaks, "each graph break, with its reason and source location")           \
  _(recompiles, "each recompile, with the guard that failed and the entry")    \
  _(passes, "each graph's module after the passes, with their time")           \
  _(fusion, "each fusion: its ops, and its kernel or why it runs eagerly")     \
  _(kernels, "each compiled kernel: what it computes and its compile time")    \
  _(cudagraphs, "each CUDA graph of replay mode: captured, or why not")

enum class Topic {
#define EMBER_LOG_TOPIC(name, desc) name,
  EMBER_FORALL_LOG_TOPICS(EMBER_LOG_TOPIC)
#undef EMBER_LOG_TOPIC
      NumTopics
};

struct TopicInfo {
  const char *name;
  const char *description;
};
const std::vector<TopicInfo> &topics();

/// True when `t` is on. The first call reads EMBER_LOGS.
bool enabled(Topic t);
/// Switches the topics of a comma list on (and every other off), as
/// EMBER_LOGS does; "" switches all off. Throws ember::Error naming the
/// valid topics for an unknown name.
void set_logs(const std::string &comma_list);

/// Prints one message under topic `t` (when enabled).
void log(Topic t, const std::string &message);

/// Prints "[ember] warning: <message>" on stderr, whatever EMBER_LOGS says:
/// for what must not go unnoticed (a setting ember cannot honour, a function
/// that stops compiling).
void warn(const std::string &message);
/// warn(), once per process for each `key` (PyTorch's TORCH_WARN_ONCE).
void warn_once(const std::string &key, const std::string &message);

} // namespace ember::logging
