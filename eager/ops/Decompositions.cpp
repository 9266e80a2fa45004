// The decompositions named by ops.yaml's `decompose:` (eager/Decompose.h).
// Each must give the op's result: same shape and dtype, values within
// rounding (test_decompose compares them with the op's kernel). They compute
// in the op's compute type (float for float16 / bfloat16 inputs), as the
// kernels do.
#include "eager/Decompose.h"
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/cpu/PowByCheaperOps.h"
#include "eager/cpu/ReduceUtils.h"
#include "eager/generated/Functions.h"
#include "eager/meta/Shapes.h"

#include <limits>
#include <tuple>
#include <vector>

namespace ember::native::decompose {

namespace {

/// Float16 and bfloat16 compute in float (Note [Reduced precision compute]).
ScalarType compute_type(ScalarType t) {
  return isReducedFloatingType(t) ? kFloat : t;
}

template <bool Log>
Tensor softmax_like(const Tensor &self, int64_t dim,
                    std::optional<ScalarType> dtype, const char *op) {
  ScalarType out_t = meta::softmax_dtype(self.dtype(), dtype, op);
  Tensor x = self.to(compute_type(out_t));
  int64_t d = maybe_wrap_dim(dim, x.dim());
  EMBER_CHECK_VALUE(x.dim() == 0 || x.size(d) > 0 || x.numel() == 0, op,
                    ": no decomposition for an empty dim");
  EMBER_CHECK_VALUE(x.numel() > 0, op,
                    ": no decomposition for an empty tensor");
  Tensor shifted = x - x.amax({d}, true);
  Tensor e = shifted.exp();
  Tensor s = e.sum({d}, true);
  // As the kernel: one reciprocal per row, a multiply per element.
  Tensor y = Log ? shifted - s.log() : e * s.reciprocal();
  return y.to(out_t);
}

} // namespace

Tensor softmax(const Tensor &self, int64_t dim,
               std::optional<ScalarType> dtype) {
  return softmax_like<false>(self, dim, dtype, "softmax");
}

Tensor log_softmax(const Tensor &self, int64_t dim,
                   std::optional<ScalarType> dtype) {
  return softmax_like<true>(self, dim, dtype, "log_softmax");
}

namespace {
template <bool Log>
Tensor softmax_backward_like(const Tensor &grad_output, const Tensor &output,
                             int64_t dim, ScalarType input_dtype,
                             const char *op) {
  meta::check_softmax_backward(grad_output, output, input_dtype, op);
  EMBER_CHECK_VALUE(output.numel() > 0, op,
                    ": no decomposition for an empty tensor");
  int64_t d = maybe_wrap_dim(dim, output.dim());
  ScalarType c = compute_type(output.dtype());
  Tensor g = grad_output.to(c), y = output.to(c);
  // As the kernel (Note [Softmax backward kernel]).
  Tensor r =
      Log ? g - y.exp() * g.sum({d}, true) : y * (g - (g * y).sum({d}, true));
  return r.to(input_dtype);
}
} // namespace

Tensor softmax_backward_data(const Tensor &grad_output, const Tensor &output,
                             int64_t dim, ScalarType input_dtype) {
  return softmax_backward_like<false>(grad_output, output, dim, input_dtype,
                                      "_softmax_backward_data");
}

Tensor log_softmax_backward_data(const Tensor &grad_output,
                                 const Tensor &output, int64_t dim,
                                 ScalarType input_dtype) {
  return softmax_backward_like<true>(grad_output, output, dim, input_dtype,
                                     "_log_softmax_backward_data");
}

std::tuple<Tensor, Tensor, Tensor>
native_layer_norm(const Tensor &input, IntArrayRef normalized_shape,
                  const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps) {
  meta::LayerNormShape s =
      meta::layer_norm_shape(input, normalized_shape, weight, bias);
  EMBER_CHECK_VALUE(s.N > 0, "native_layer_norm: no decomposition for an "
                             "empty normalized_shape");
  std::vector<int64_t> dims;
  for (int64_t d = input.dim() - int64_t(normalized_shape.size());
       d < input.dim(); ++d)
    dims.push_back(d);
  // As the kernel (Note [Native layer_norm]): the mean, the mean of squared
  // deviations from it, rstd, then the affine, in the compute type.
  Tensor x = input.to(s.compute);
  Tensor mean = x.mean(dims, true);
  Tensor dev = x - mean;
  Tensor rstd = ((dev * dev).mean(dims, true) + eps).rsqrt();
  Tensor y = dev * rstd;
  if (weight && weight->defined())
    y = y * weight->to(s.compute);
  if (bias && bias->defined())
    y = y + bias->to(s.compute);
  return {y.to(input.dtype()), mean, rstd};
}

Tensor logsumexp(const Tensor &self, IntArrayRef dim, bool keepdim) {
  // In the compute type, rounded once at the end, as the kernel (a probe
  // found float16 and bfloat16 results rounded at every step).
  const ScalarType out_t = meta::logsumexp_dtype(self.dtype());
  Tensor x = self.to(compute_type(out_t));
  reduce::ReduceDims rd = reduce::reduce_dims(x, dim, keepdim);
  EMBER_CHECK_VALUE(rd.nreduce > 0 && rd.nout > 0,
                    "logsumexp: no decomposition for an empty reduction");
  // The shift: the max, or 0 where it is infinite (all -inf gives -inf,
  // a +inf gives +inf, as the kernel).
  Tensor m = x.amax(dim, true);
  m = ember::where(m.abs() == std::numeric_limits<double>::infinity(),
                   wrapped_scalar_tensor(Scalar(0.0)), m);
  Tensor r = ((x - m).exp().sum(dim, true).log() + m).to(out_t);
  return keepdim ? r : r.reshape(IntArrayRef(rd.out_sizes));
}

Tensor pow_tensor_scalar(const Tensor &self, const Scalar &exponent) {
  // The eager kernel's forms (Note [Powers by cheaper ops]); the power 1
  // of a floating tensor (a copy) is x * 1, which the folder takes away;
  // any other power is pow.Tensor_Tensor with the number as a constant,
  // which fuses. The power 0 (ones) stays whole.
  meta::check_pow_exponent(self.dtype(), exponent);
  if (std::optional<Tensor> r = pow_by_cheaper_ops(self, exponent))
    return *r;
  if (isFloatingType(self.dtype())) {
    EMBER_CHECK_VALUE(exponent.toDouble() != 0,
                      "pow: no decomposition for the power 0");
    if (exponent.toDouble() == 1)
      return ember::mul(self, wrapped_scalar_tensor(Scalar(1.0)));
  }
  return ember::pow(self, wrapped_scalar_tensor(exponent));
}

Tensor var(const Tensor &self, OptionalIntArrayRef dim,
           const std::optional<Scalar> &correction, bool keepdim) {
  meta::check_var(self.dtype());
  reduce::ReduceDims rd = reduce::reduce_dims(
      self, dim.has_value() ? *dim : IntArrayRef(), keepdim);
  EMBER_CHECK_VALUE(rd.nreduce > 0 && rd.nout > 0,
                    "var: no decomposition for an empty reduction");
  double corr = correction ? correction->toDouble() : 1.0;
  // The kernel's divisor: N - correction, clamped at 0.
  double divisor = std::max(0.0, double(rd.nreduce) - corr);
  // As the kernel (eager/cpu/ReduceStats.cpp): the mean and the squared
  // deviations in double, so that squares of large floats do not overflow
  // float's range where the kernel's do not.
  Tensor x = self.to(kDouble);
  Tensor d = x - x.mean(dim, true);
  Tensor s = (d * d).sum(dim, keepdim);
  return (s / divisor).to(self.dtype());
}

} // namespace ember::native::decompose
