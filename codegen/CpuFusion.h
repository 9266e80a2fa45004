#pragma once
/// The CPU backend for fusions: compiles an ember.fusion (codegen/Lower.h
/// reads it into a KernelSpec) into an ir::Kernel that the executor runs,
/// or says why not.

#include "ir/Trace.h"

#include <memory>
#include <string>

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

/// Compiles an ember.fusion for the CPU. A body the backend does not cover
/// (codegen/Lower.h: cpu_unsupported, or a shape the kernel cannot index)
/// gives a null kernel and the reason.
FusionCompile compile_cpu_fusion(mlir::Operation *fusion, bool keep_ir = false);

} // namespace ember::codegen
