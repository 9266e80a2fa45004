#pragma once
/// Runs an op's decomposition (eager/Decompose.h) on fake tensors and
/// records the ops it calls as a trace: what the ember-decompose pass puts in
/// the op's place. No MLIR here.

#include "ir/Trace.h"

#include <optional>
#include <string>

namespace ember::ir {

/// `op_trace` holds one node (ir::import_op); the result is a trace with the
/// same inputs and output types whose nodes are the ops its decomposition
/// calls, decomposed again where they have decompositions themselves. None
/// when the op has no decomposition or the decomposition declines the
/// input (`why` says why).
std::optional<Trace> decompose(const Trace &op_trace, std::string *why);

} // namespace ember::ir
