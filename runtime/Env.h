#pragma once
/// The one registry of EMBER_* environment variables.
///
/// Every variable ember reads is listed in EMBER_FORALL_ENV_VARS with its
/// meaning; reading one that is not listed is a bug, and an EMBER_* variable
/// in the environment that is not listed is a user error (a typo would
/// otherwise be silently ignored), reported on first use of the registry.

#include <optional>
#include <string>
#include <vector>

namespace ember::env {

// Note [Environment variables]
// name, what it does. The README's table of variables mirrors this list.
#define EMBER_FORALL_ENV_VARS(_)                                               \
  _(EMBER_NUM_THREADS,                                                         \
    "Threads in the intra-op pool (default: the number of cores). BLAS uses "  \
    "the same count.")                                                         \
  _(EMBER_LOGS,                                                                \
    "Comma list of compiler logs to print on stderr: graph, ir, guards, "      \
    "breaks, recompiles, passes, fusion, kernels (runtime/Logging.h). "        \
    "Unknown names are an error.")                                             \
  _(EMBER_DEBUG_DIR,                                                           \
    "Folder that receives, for each compiled graph, its trace (.trace), its "  \
    "MLIR (.mlir, readable by ember-opt), its Graphviz graph (.dot), the "     \
    "module after the passes (.fused.mlir), each kernel's LLVM IR (.ll) and "  \
    "the map of kernels to source ops (.kernels.txt).")                        \
  _(EMBER_CACHE_DIR,                                                           \
    "Folder of the on-disk kernel cache (default: $XDG_CACHE_HOME/ember, "     \
    "else ~/.cache/ember); empty turns the disk cache off.")                   \
  _(EMBER_VERIFY_PASSES,                                                       \
    "1: compile() verifies the module after every pass, as mlir-opt does "     \
    "(the tests set it); otherwise before and after the pipeline only.")

struct Var {
  const char *name;
  const char *description;
};
/// Every registered variable.
const std::vector<Var> &registry();
/// The value of a registered variable, or nullopt when unset. Throws
/// ember::Error for an unregistered name or an unknown EMBER_* variable in the
/// environment.
std::optional<std::string> get(const char *name);
/// get() parsed as an integer in [lo, hi], with a clear error otherwise.
std::optional<long> get_int(const char *name, long lo, long hi);

} // namespace ember::env
