#pragma once
/// The CPU backend for fusions: says whether it compiles a fusion (the body
/// of an ember.fusion, as a trace), and compiles it into an ir::Kernel that
/// the executor runs.

#include "ir/Trace.h"

#include <memory>
#include <string>

namespace ember::codegen {

struct FusionCompile {
  std::shared_ptr<const ir::Kernel> kernel; ///< null: not supported
  std::string why_not;                      ///< when kernel is null
  std::string llvm_ir; ///< the optimized LLVM IR, when asked for
  std::string spec;    ///< the kernel's description (KernelSpec::str)
  double compile_seconds = 0;
  std::string origin; ///< CompiledKernel::origin: compiled, disk cache...
};

/// Compiles `body` for the CPU. Ops the backend does not cover (anything
/// but pointwise ops of the op table and wrapped numbers, an integer
/// division that must raise on zero, a device other than the CPU) give a
/// null kernel and the reason.
FusionCompile compile_cpu_fusion(const ir::Trace &body, bool keep_ir = false);

} // namespace ember::codegen
