#pragma once
/// From a captured trace to a runnable program through the ember dialect:
/// trace -> MLIR module (ir/Builder) -> verify -> passes of the optimisation
/// level (passes/) -> import -> fusions compiled by the CPU backend
/// (codegen/) -> Program. The only front-end file that sees MLIR.

#include "frontend/Executor.h"

#include <string>
#include <vector>

namespace ember::frontend {

struct LowerOptions {
  int opt_level = 2;
  bool inplace_buffers = true; ///< ember-plan-memory at level 2
  bool combo_kernels = true;   ///< ember-fuse-horizontal at level 2
  bool keep_pass_ir = false;   ///< fill PassRun::ir_after
  bool keep_kernel_ir = false; ///< fill KernelInfo::llvm_ir
  /// Fill Lowered::ir, ir_with_locations and ir_optimized. Printing a large
  /// module costs much of its compile time: compile() asks only when logs or
  /// the debug directory want the text now; explain() prints it later
  /// (module_text()).
  bool keep_module_text = false;
  /// A joint graph's memory budget for ember-remat: the bytes of saved
  /// tensors (other than inputs), or -1 for the minimum cut.
  int64_t memory_budget = -1;
};

/// One fusion of the lowered program.
struct KernelInfo {
  std::string name;    ///< "cpu ember_kernel_..." or "" when it runs eagerly
  std::string why_not; ///< why no kernel runs it (its ops run eagerly)
  std::vector<std::string> ops; ///< the ops it computes, with their source
  std::string spec;             ///< what the kernel computes (KernelSpec::str)
  std::string llvm_ir; ///< optimized LLVM IR (LowerOptions::keep_kernel_ir)
  double compile_seconds = 0;
  std::string origin; ///< "compiled", "disk cache", ...
  /// A joint graph's: "forward" or "backward" (which program runs it).
  std::string program;
};

/// One pass as it ran: its name (the pass argument: "ember-fuse-elementwise",
/// "canonicalize"...), its time, and the IR after it (kept only when asked).
struct PassRun {
  std::string name;
  double seconds = 0;
  std::string ir_after;
};

/// A tensor a joint graph's forward saves for its backward.
struct SavedTensor {
  std::string what; ///< the op that made it ("ember.mm"), or "argument N"
  std::vector<int64_t> sizes;
  ScalarType dtype = ScalarType::Float;
};

struct Lowered {
  explicit Lowered(Program p) : program(std::move(p)) {}
  /// The graph's program; for a joint graph, its forward, whose outputs are
  /// the graph's outputs and then the saved tensors (its mutations are
  /// written back as the graph's are).
  Program program;
  /// A joint graph's backward: the saved tensors and then the tangents in,
  /// the gradients (Trace::gradients) out. Null for other graphs.
  std::shared_ptr<const Program> backward;
  std::vector<SavedTensor> saved;
  int64_t saved_bytes = 0, recompute_flops = 0;
  bool over_budget = false;
  std::vector<std::string> recomputed; ///< ops the backward recomputes
  std::string ir;                      ///< the captured module, printed
  std::string ir_with_locations;       ///< with locations, for EMBER_DEBUG_DIR
  std::string ir_optimized;            ///< after the passes
  std::vector<KernelInfo> kernels;
  double passes_seconds = 0, codegen_seconds = 0;
  std::vector<PassRun> pass_runs; ///< in order
};

/// The module of `trace` printed as captured and after the passes of
/// `options` (what lower() keeps with keep_module_text), without compiling
/// kernels: explain()'s GraphInfo::ir and ir_optimized, made when asked.
struct ModuleText {
  std::string ir, ir_optimized;
};
ModuleText module_text(const ir::Trace &trace, const LowerOptions &options);

/// Builds, verifies, optimizes, imports and compiles `trace` (its name is
/// the function's symbol); a joint graph is partitioned by ember-remat into
/// a forward and a backward program. Throws ember::Error with the verifier's
/// diagnostics if the module is invalid (a bug in capture or in a shape
/// rule).
Lowered lower(const ir::Trace &trace, const LowerOptions &options = {});

} // namespace ember::frontend
