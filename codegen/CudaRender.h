#pragma once
/// The CUDA C renderer: a kernel description (codegen/Kernel.h, KernelSpec)
/// as CUDA C++ source for NVRTC, beside the LLVM emitter of Kernel.cpp.
///
/// Note [CUDA kernels from the kernel description]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// One scalar semantics on the GPU: every step calls the op's device functor
/// (its ops.yaml `expr`, generated for the eager CUDA kernels, eager/cuda/
/// Pointwise.h) over the device prelude (eager/cuda/PointwiseMath.cuh), and
/// conversions are the prelude's convert<>, so a fused kernel computes what
/// the eager CUDA kernels compute op by op. Values travel in register types
/// as on the CPU (float for float16 and bfloat16); a step whose dtype is a
/// 16-bit float rounds to it, as eager's stored intermediate would, and is
/// defined in both types: an output stores the 16-bit value it rounded to
/// (rounding its float again would be exact, but a conversion a point).
///
/// Shapes and strides are constants of the source (the kernel description
/// holds them, and the cache keys kernels by it), so index arithmetic is
/// multiplications by literals. It is 32-bit when every offset, and the
/// grid-stride loop's last step at the largest grid (`max_blocks`), fits
/// in int32; else 64-bit.
///
/// Pointwise kernels: a grid-stride loop. When the iteration space coalesces
/// to one dim (Loops, TensorIterator's rule), each thread takes `vector`
/// consecutive points: the operands of stride 1 are loaded and stored as one
/// aligned vector (16 bytes, or fewer for 1- and 2-byte dtypes) when every
/// such pointer is aligned for it (checked once per launch: a view's offset
/// may misalign it), a broadcast operand (stride 0) is read once per thread,
/// any other stride element by element; the tail and misaligned launches
/// take the scalar path. Otherwise each thread takes one point and splits
/// its index into coordinates by the literal sizes.
///
/// Reductions (Note [Reduction kernels] in Kernel.h), in one of two
/// layouts. When the innermost dim is kept (a sum over the batch of a
/// [256, 1024] gradient), a thread per kept point folds its column alone,
/// in order: neighbouring threads read neighbouring elements. Otherwise
/// (softmax's rows) one block per kept point, looping over them: for each
/// reduce step, in order, the block's threads stride over the reduced
/// points, computing the full values the step reads (softmax's exp in the
/// sum's loop and again in the output loop: never through memory; a held
/// row keeps it instead, Note [Held values] in CudaRender.cpp), then
/// combine their accumulators by warp shuffles and one shared-memory step,
/// in a fixed order (the result does not depend on timing). The reduced
/// value is then every thread's. A last loop stores the full outputs;
/// thread 0 stores the reduced ones. Sums accumulate in double (floats) or
/// int64, as eager's, amax and amin in the compute type, a NaN winning
/// (pw::maximum). Each loop re-reads the row, from L1/L2 for rows that fit
/// there. A reduction with few kept points and many folded into each runs
/// as the CPU's Note [Split reductions] (split_reduction under the GPU's
/// policy, kCudaSplit: two kernels), which also splits a column layout of
/// few kept points, whose threads would each fold a long column.
///
/// Note [Persistent rows]
/// A row layout whose row fits in registers holds it there: each thread
/// loads its points of every full input a fold reads once (`held` of them,
/// at most 16, at most 32 registers of held values, a 64-bit value taking
/// two), and every fold and the
/// output loop read those registers, unrolled, instead of re-reading the
/// row: one pass over memory for softmax or layer_norm instead of one per
/// fold. A full input only the output loop reads (layer_norm's weight and
/// bias) is read there, from memory: held too, it would triple layer_norm's
/// registers and push its 8192-point rows out of the layout. The
/// block is a quarter of the row's points (a multiple of 32, at most 512),
/// so a thread holds about four points (more, up to 16, for long rows); a
/// row over 8192 points of one input, or any row whose inputs would need
/// more registers, is looped. When the block's turns cover the row exactly
/// (8192 = 16 x 512), a point is not tested against the row's end. A thread
/// folds its points in the looped layout's order (j = threadIdx.x, then +
/// blockDim.x), so both fold the same values in the same order for the same
/// block.
///
/// The renderer does not launch: the kernel's parameters are its outputs'
/// pointers then its inputs' (an output in place of an input is passed the
/// same pointer twice, and neither is __restrict__).

#include "codegen/Kernel.h"

#include <string>
#include <vector>

namespace ember::cuda {
struct Functor;
} // namespace ember::cuda

namespace ember::codegen {

struct CudaKernel {
  std::string entry;  ///< the extern "C" __global__ function's name
  std::string kernel; ///< its source, after the prelude and the functors
  /// The functors it calls (eager/cuda/Pointwise.h), by name.
  std::vector<const cuda::Functor *> functors;
  int block = 256; ///< threads per block (a multiple of 32)
  /// Items (points of a pointwise kernel, kept points of a fold) a block
  /// covers in one turn of its grid-stride loop.
  int64_t per_block = 1;
  int64_t blocks = 0;     ///< the grid that covers the work once
  int64_t max_blocks = 0; ///< the largest grid its index arithmetic allows
  bool index32 = false;   ///< 32-bit index arithmetic
  int vector = 1;         ///< points per thread (vector loads)
  bool reduction = false; ///< a reduction kernel (block folds)
  /// Points of a row a thread holds in registers (Note [Persistent rows]);
  /// 0 when the row is looped over.
  int held = 0;

  /// The whole NVRTC program: prelude, functors, the shared helpers (the
  /// vector type, the block fold), the kernel.
  std::string source() const;
};

/// The most pointers (outputs and inputs) a rendered kernel takes: CUDA's
/// portable 4 KB of kernel parameters. NVRTC rejects more (past 32 KB) or
/// takes minutes on a few thousand.
constexpr size_t kMaxCudaKernelPointers = 512;

/// The kernel of `spec` (a pointwise or reduction kernel). Raises
/// ember::Error for a step without a device functor for its compute dtype,
/// or more than kMaxCudaKernelPointers operands (lower_fusion with the CUDA
/// generator never makes either).
CudaKernel render_cuda(const KernelSpec &spec);

/// One NVRTC program holding several kernels (the prelude and each functor
/// once): the kernels of one graph compile together.
std::string cuda_program(const std::vector<CudaKernel> &kernels);

/// The device functor of a pointwise op (its in-place form too); null when
/// the op has none.
const cuda::Functor *cuda_functor(const OperatorHandle &op);

} // namespace ember::codegen
