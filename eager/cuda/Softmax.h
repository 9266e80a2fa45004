#pragma once
/// The CUDA kernels of softmax, log_softmax, their backward kernels and
/// native_layer_norm (Note [CUDA softmax kernels] in eager/cuda/Softmax.cpp).

#include "eager/Tensor.h"

#include <optional>
#include <string>
#include <tuple>

namespace ember::cuda {

/// Which of the four kernels.
struct SoftmaxKernel {
  bool log = false;      ///< log_softmax (else softmax)
  bool backward = false; ///< the backward kernel
  /// The in-memory cache's key of the kernel on stored dtype `t`.
  std::string signature(ScalarType t) const;
};

/// The NVRTC source of kernel "ember_softmax" on stored dtype `t` (its
/// compute type: float for float16 and bfloat16). The forward takes
/// (const T *x, T *y, long long rows, long long n), the backward
/// (const C *grad, const T *output, T *out, long long rows, long long n):
/// rows of n contiguous points, a block per row.
std::string softmax_source(const SoftmaxKernel &k, ScalarType t);

/// softmax (or log_softmax) of CUDA tensor `x` along dim `d`, in x's dtype,
/// contiguous.
Tensor softmax_rows(const Tensor &x, int64_t d, bool log);

/// The NVRTC source of kernel "ember_layer_norm" on input dtype `t`, with
/// or without a weight and a bias: (const T *x, const C *weight, const C
/// *bias, T *y, C *mean, C *rstd, long long rows, long long n, double eps),
/// C the compute type.
std::string layer_norm_source(ScalarType t, bool weight, bool bias);

/// native_layer_norm of CUDA tensor `x` seen as `rows` rows of `n`: the
/// output (x's dtype) and each row's mean and rstd ([rows], the compute
/// type). `weight` and `bias` may be undefined.
std::tuple<Tensor, Tensor, Tensor>
layer_norm_rows(const Tensor &x, const Tensor &weight, const Tensor &bias,
                int64_t rows, int64_t n, double eps);

/// The NVRTC source of native_layer_norm_backward's kernels on input dtype
/// `t` with gradient dtype `g` (t, or t's compute type C), with or without
/// a weight: "ember_layer_norm_dx" (const G *grad, const T *x, const C
/// *weight, const C *mean, const C *rstd, T *dx, long long rows, long long
/// n), a block per row; "ember_layer_norm_dwb" (const G *grad, const T *x,
/// const C *mean, const C *rstd, C *part_w, C *part_b, long long rows, long
/// long n, long long chunk), blocks of 256 threads, each on 32 columns of a
/// chunk of rows, writing the chunk's column sums of grad * xhat and grad.
std::string layer_norm_backward_source(ScalarType t, ScalarType g, bool weight);

/// native_layer_norm_backward of CUDA tensors seen as `rows` rows of `n`:
/// dx (x's dtype, [rows, n]) when `want_dx`, and the weight's and bias's
/// gradients ([n], the compute type) when `want_dwb`; the others undefined.
/// `mean` and `rstd` hold `rows` values; `weight` may be undefined.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_rows(
    const Tensor &grad, const Tensor &x, const Tensor &mean, const Tensor &rstd,
    const Tensor &weight, int64_t rows, int64_t n, bool want_dx, bool want_dwb);

/// The backward kernel: `grad` (in output's compute type) and `output`
/// along `d`, in output's dtype, contiguous.
Tensor softmax_backward_rows(const Tensor &grad, const Tensor &output,
                             int64_t d, bool log);

} // namespace ember::cuda

namespace ember::native {
/// native_layer_norm_backward written with ember ops
/// (eager/cuda/Normalization.cpp): the CUDA op's path for empty tensors, and
/// device-agnostic, so that test_cuda checks it against the CPU kernel on
/// every machine.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_composite(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask);
} // namespace ember::native
