#pragma once
/// From a captured trace to a runnable program through the ember dialect:
/// trace -> MLIR module (ir/Builder) -> verify -> (passes, a later issue) ->
/// import -> Program. The only front-end file that sees MLIR.

#include "frontend/Executor.h"

#include <string>

namespace ember::frontend {

struct Lowered {
  Program program;
  std::string ir;                ///< the module, printed
  std::string ir_with_locations; ///< with locations, for EMBER_DEBUG_DIR
};

/// Builds, verifies and imports `trace` (its name is the function's symbol).
/// Throws ember::Error with the verifier's diagnostics if the module is
/// invalid (a bug in capture or in a shape rule).
Lowered lower(const ir::Trace &trace);

} // namespace ember::frontend
