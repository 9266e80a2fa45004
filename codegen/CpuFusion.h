#pragma once
/// The CPU backend for fusions: compiles an ember.fusion (codegen/Lower.h
/// reads it into a KernelSpec) into an ir::Kernel that the executor runs,
/// or says why not.

#include "ir/Trace.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace ember::codegen {

struct FusionCompile {
  std::shared_ptr<const ir::Kernel> kernel; ///< null: not supported
  std::string why_not;                      ///< when kernel is null
  std::string llvm_ir; ///< the optimized LLVM IR, when asked for
  std::string spec;    ///< the kernel's description (KernelSpec::str)
  double compile_seconds = 0;
  std::string origin; ///< CompiledKernel::origin: compiled, disk cache...
};

/// Which results of a fusion kernel are written into one of its inputs
/// (the buffer plan, ember.reuse, as the executor hands it over:
/// ir::Kernel::run_reusing): for each result, the input `reuse` names when
/// that input has the result's shape and dtype, is contiguous, and either
/// nothing but the caller's list holds its whole storage or it is an input
/// the graph overwrites with the result (an entry -(k + 2)); else -1. Both
/// code generators decide so.
std::vector<int> results_in_place(const std::vector<const Tensor *> &inputs,
                                  const std::vector<ir::ValueType> &results,
                                  const std::vector<int> &reuse);

/// Compiles an ember.fusion for the CPU. A body the backend does not cover
/// (codegen/Lower.h: cpu_unsupported, or a shape the kernel cannot index)
/// gives a null kernel and the reason.
FusionCompile compile_cpu_fusion(mlir::Operation *fusion, bool keep_ir = false);

} // namespace ember::codegen
