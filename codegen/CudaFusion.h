#pragma once
/// The CUDA backend for fusions: an ember.fusion of CUDA values read into a
/// kernel description (codegen/Lower.h), rendered as CUDA C (codegen/
/// CudaRender.h), compiled by NVRTC for its device (the memory and disk
/// caches of runtime/Nvrtc.h) and launched on the device's current stream,
/// its results from the caching allocator or, as the buffer plan
/// (ember.reuse) says, written into inputs that die there. A reduction with
/// few output points runs as the two kernels of Note [Split reductions].

#include "codegen/CpuFusion.h"

namespace ember::codegen {

/// Compiles an ember.fusion of CUDA values (its kernels compiled now, for
/// its device). A fusion the CUDA generator does not cover (codegen/
/// Lower.h: cuda_unsupported), or a fusion of fusions (combined kernels are
/// the CPU's for now), gives a null kernel and the reason; its ops then run
/// their eager CUDA kernels.
FusionCompile compile_cuda_fusion(mlir::Operation *fusion);

/// Compiles the kernels of `fusions` (a graph's CUDA fusions) in parallel
/// ahead of compile_cuda_fusion, which then finds them compiled (Note [The
/// kernels of a graph compile in parallel] in runtime/Nvrtc.h). Fusions
/// without a kernel are skipped; compile_cuda_fusion says why.
void precompile_cuda_fusions(const std::vector<mlir::Operation *> &fusions);

/// Why a fusion of fusions (Note [Combined kernels]) is not a CUDA kernel
/// (compile() and ember-translate say the same).
extern const char kCombinedNotOnCuda[];

/// Whether an op reads or gives a value on a CUDA device (whose fusion is
/// the CUDA generator's).
bool on_cuda(mlir::Operation *op);

} // namespace ember::codegen
