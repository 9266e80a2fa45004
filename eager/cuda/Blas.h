#pragma once
/// Matrix products on CUDA through cuBLAS, loaded at run time like the
/// driver (Note [Loading the CUDA driver]). The CPU's batchedProduct
/// (eager/cpu/LinearAlgebra.cpp) chooses each operand's layout (Note
/// [BLAS-compatible strides]) and calls gemm_batched for CUDA tensors, so
/// mm, addmm, bmm, baddbmm (and matmul, linear, built on them) share one
/// path on both devices.
///
/// Note [cuBLAS precision]
/// float32 and float64 run cublas{S,D}gemmStridedBatched in cuBLAS's
/// default math mode: full float32, no TF32 (as PyTorch, whose
/// allow_tf32 is off by default for matmul). float16 and bfloat16 run
/// cublasGemmStridedBatchedEx with float32 accumulation, rounded once to the
/// 16-bit result. With cuda::set_allow_tf32(true) (or
/// set_float32_matmul_precision("high")), float32 products run
/// cublasGemmStridedBatchedEx in CUBLAS_COMPUTE_32F_FAST_TF32: inputs
/// rounded to TF32 (10-bit mantissa) on tensor cores, float32 accumulation.
/// Integer products are not supported on CUDA (as in PyTorch).

#include "eager/Tensor.h"

namespace ember::cuda {

/// One operand of a batched product as BLAS reads it, row-major: element
/// (i, j) of matrix b is at data + b * batch_stride + i * ld + j, or + j *
/// ld + i when `trans` (a column-major matrix).
struct GemmOperand {
  const void *data;
  int64_t batch_stride; ///< elements
  bool trans;
  int64_t ld;
};

/// out (batch x M x N, contiguous, on a CUDA device) = alpha * a @ b +
/// beta * out, with a batch x M x K and b batch x K x N of out's dtype.
/// Raises for dtypes cuBLAS does not take and sizes beyond its int.
void gemm_batched(const Tensor &out, const GemmOperand &a, const GemmOperand &b,
                  int64_t M, int64_t N, int64_t K, int64_t batch, double alpha,
                  double beta);

} // namespace ember::cuda
