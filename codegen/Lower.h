#pragma once
/// ember.fusion -> KernelSpec: the code generators read the dialect.
///
/// A fusion's body (ir/EmberOps.td) becomes a typed kernel description
/// (codegen/Kernel.h): its block arguments the inputs, wrapped numbers the
/// constants, each op a step (a pointwise op of the table with its op
/// handle, a conversion, or a fold), the yielded values the outputs. The
/// same per-op analysis answers the fusion pass's question "does the CPU
/// generator compute this op?" (Note [Per-op capability] in
/// passes/FusionTarget.h), so the answer given while groups form and the
/// lowering that follows cannot disagree.

#include "codegen/Kernel.h"

#include <string>

namespace mlir {
class Operation;
} // namespace mlir

namespace ember::codegen {

/// The code generators that read the kernel description: LLVM on the CPU
/// (codegen/Kernel.h), CUDA C on the GPU (codegen/CudaRender.h).
enum class Generator { Cpu, Cuda };

/// Why the CPU generator does not compute `op` inside a fusion ("" when it
/// does): an op of another kind (not pointwise, not a conversion on the
/// CPU, not a fold of the table), a value not on the CPU, a dtype without
/// a scalar library function, an integer division that must raise on zero.
std::string cpu_unsupported(mlir::Operation *op);
/// The same for the CUDA generator: values on one CUDA device, a pointwise
/// op with a device functor for its compute dtype (every dtype).
std::string cuda_unsupported(mlir::Operation *op);

/// The kernel of an ember.fusion (its inputs contiguous); "" on success,
/// otherwise why generator `g` does not take it (a fusion of fusions is
/// not one kernel: compile_cpu_fusion runs its inner ones together).
std::string lower_fusion(mlir::Operation *fusion, KernelSpec &k,
                         Generator g = Generator::Cpu);

/// Registers the code generators as the fusion targets "cpu", "cuda" and
/// "auto" (each op's device's generator; what compile() uses for a graph
/// with CUDA values), once per process (passes/FusionTarget.h).
void register_fusion_targets();

} // namespace ember::codegen
