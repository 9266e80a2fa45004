#pragma once
/// ember's MLIR passes (passes/Passes.td) and the pipelines of the
/// optimisation levels.

#include "ir/Dialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>
#include <string>
#include <vector>

namespace ember::passes {

/// Note [Fusion size]
/// One fusion holds at most this many ops (ember-fuse-elementwise's
/// `max-ops`), each counted by its weight, its size relative to a simple op
/// (FusionTarget::weight: the CPU target weighs an op by the instructions
/// of its scalar library function, so a sin counts for many adds); a longer
/// chain becomes several kernels. LLVM's backend is super-linear in the
/// size of a loop body (its machine scheduler builds register pressure per
/// region): one kernel of a 50k-op chain took 15 s to compile, a 1k-op
/// chain of sin and exp 4 s; kernels of 4k simple ops compile at a
/// constant cost per op. A cut costs one more pass over the data per
/// kernel, which no real chain notices.
inline constexpr int64_t kMaxFusionOps = 4096;

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

/// Registers every ember pass and the pipelines with MLIR's registry (for
/// ember-opt: `--ember-fuse-elementwise`, `--ember-pipeline=O2`), once.
void register_passes();

/// The highest optimisation level.
inline constexpr int kMaxOptLevel = 2;

/// Adds the passes of optimisation level `level` to `pm` (anchored on a
/// module): 0 nothing (every op an eager step), 1 canonicalize and CSE,
/// 2 also decomposition, elementwise fusion for the fusion target `target`
/// (passes/FusionTarget.h), (with `combo_kernels`) combined kernels of
/// independent fusions (ember-fuse-horizontal) and (with `inplace_buffers`)
/// the buffer plan.
/// Returns the passes' names (their ember-opt arguments), in order: what
/// explain() and tests list, never restated by hand.
///
/// With `remat` the pipeline also partitions joint forward/backward
/// functions (ember-remat, with `memory_budget`: -1 the minimum cut, else
/// bytes), after canonicalize and CSE and before decomposition and fusion,
/// so that both halves fuse.
std::vector<std::string>
build_pipeline(mlir::OpPassManager &pm, int level, bool inplace_buffers = true,
               const std::string &target = "cpu", bool remat = false,
               int64_t memory_budget = -1, bool combo_kernels = true);

} // namespace ember::passes
