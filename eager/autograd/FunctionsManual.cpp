#include "eager/autograd/FunctionsManual.h"
#include "eager/Capturing.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/WrapDim.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <algorithm>
#include <cmath>

namespace ember::autograd::details {

Tensor scale(const Tensor &grad, const Scalar &s) {
  if (s.isIntegral(false) ? s.toLong() == 1 : s.toDouble() == 1.0)
    return grad;
  return grad * s;
}

Tensor neg_scale(const Tensor &grad, const Scalar &s) {
  return grad * Scalar(-s.toDouble());
}

Tensor unsqueeze_reduced(const Tensor &g, IntArrayRef self_sizes,
                         OptionalIntArrayRef dim, bool keepdim) {
  int64_t nd = int64_t(self_sizes.size());
  if (keepdim || nd == 0)
    return g;
  if (!dim || dim->empty()) // every dim reduced
    return g.reshape(DimVector(size_t(nd), 1));
  auto mask = dim_list_to_bitset(*dim, nd);
  Tensor r = g;
  for (int64_t d = 0; d < nd; ++d)
    if (mask[size_t(d)])
      r = r.unsqueeze(d);
  return r;
}

Tensor sum_backward(const Tensor &grad, IntArrayRef self_sizes,
                    OptionalIntArrayRef dim, bool keepdim) {
  return unsqueeze_reduced(grad, self_sizes, dim, keepdim).expand(self_sizes);
}

namespace {
/// How many elements of a tensor of self_sizes a reduction over `dim`
/// (none or empty: every dim) combines into one.
int64_t reduced_numel(IntArrayRef self_sizes, OptionalIntArrayRef dim) {
  int64_t nd = int64_t(self_sizes.size());
  int64_t n = 1;
  if (!dim || dim->empty()) {
    for (int64_t s : self_sizes)
      n *= s;
    return n;
  }
  auto mask = dim_list_to_bitset(*dim, nd);
  for (int64_t d = 0; d < nd; ++d)
    if (mask[size_t(d)])
      n *= self_sizes[size_t(d)];
  return n;
}
} // namespace

Tensor mean_backward(const Tensor &grad, IntArrayRef self_sizes,
                     OptionalIntArrayRef dim, bool keepdim) {
  int64_t n = reduced_numel(self_sizes, dim);
  return sum_backward(grad, self_sizes, dim, keepdim) / Scalar(double(n));
}

namespace {
bool column_major(IntArrayRef strides) {
  return strides.size() == 2 && strides[0] == 1 && strides[1] != 1;
}
} // namespace

Tensor mm_mat1_backward(const Tensor &grad, const Tensor &mat2,
                        IntArrayRef mat1_strides) {
  if (column_major(mat1_strides))
    return mat2.mm(grad.t()).t();
  return grad.mm(mat2.t());
}

Tensor mm_mat2_backward(const Tensor &grad, const Tensor &mat1,
                        IntArrayRef mat2_strides) {
  if (column_major(mat2_strides))
    return grad.t().mm(mat1).t();
  return mat1.t().mm(grad);
}

Tensor prod_backward(const Tensor &grad, const Tensor &self, int64_t dim,
                     bool keepdim) {
  if (self.dim() == 0)
    return grad;
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t n = self.size(d);
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  if (n == 0)
    return zeros_like(self);
  // Product of the other elements, without dividing (zeros stay exact):
  // exclusive cumulative products from the left and from the right.
  Tensor ones = ones_like(self.narrow(d, 0, 1));
  Tensor left = cat({ones, self.narrow(d, 0, n - 1)}, d).cumprod(d);
  Tensor right =
      cat({self.narrow(d, 1, n - 1), ones}, d).flip({d}).cumprod(d).flip({d});
  return g * left * right;
}

Tensor value_selecting_reduction_backward(const Tensor &grad, int64_t dim,
                                          const Tensor &indices,
                                          IntArrayRef self_sizes,
                                          bool keepdim) {
  if (self_sizes.empty())
    return grad.reshape(self_sizes);
  int64_t d = maybe_wrap_dim(dim, int64_t(self_sizes.size()));
  Tensor g = keepdim ? grad : grad.unsqueeze(d);
  Tensor idx = keepdim ? indices : indices.unsqueeze(d);
  return zeros(self_sizes, grad.options()).scatter(d, idx, g);
}

Tensor amax_backward(const Tensor &grad, const Tensor &self,
                     const Tensor &result, IntArrayRef dim, bool keepdim) {
  OptionalIntArrayRef od = dim;
  Tensor r = unsqueeze_reduced(result, self.sizes(), od, keepdim);
  Tensor g = unsqueeze_reduced(grad, self.sizes(), od, keepdim);
  Tensor mask = (self == r).to(grad.dtype());
  Tensor count = dim.empty() ? mask.sum() : mask.sum(dim, /*keepdim=*/true);
  return g * mask / count;
}

Tensor var_backward(const Tensor &grad, const Tensor &self,
                    OptionalIntArrayRef dim,
                    const std::optional<Scalar> &correction, bool keepdim) {
  double c = correction ? correction->toDouble() : 1.0;
  int64_t n = reduced_numel(self.sizes(), dim);
  Tensor g = unsqueeze_reduced(grad, self.sizes(), dim, keepdim);
  Tensor mean = (!dim || dim->empty()) ? self.mean() : self.mean(*dim, true);
  return g * (self - mean) * Scalar(2.0 / (double(n) - c));
}

Tensor norm_backward(const Tensor &grad, const Tensor &self,
                     const std::optional<Scalar> &p, const Tensor &result,
                     IntArrayRef dim, bool keepdim) {
  double pv = p ? p->toDouble() : 2.0;
  if (pv == 0.0)
    return zeros_like(self);
  if (std::isinf(pv)) // the max of |self|: split evenly between ties
    return self.sign() * amax_backward(grad, self.abs(), result, dim, keepdim);
  OptionalIntArrayRef od = dim;
  Tensor g = unsqueeze_reduced(grad, self.sizes(), od, keepdim);
  if (pv == 1.0)
    return g * self.sign();
  Tensor r = unsqueeze_reduced(result, self.sizes(), od, keepdim);
  if (pv == 2.0)
    return where(r == 0, zeros_like(self), g * self / r);
  // As PyTorch's: sign(x) |x|^(p-1) / r^(p-1), 0 where x is 0 (for p < 1,
  // |0|^(p-1) is inf) and where the norm is 0.
  Tensor scaled =
      where(self == 0, zeros_like(self), self.sign() * self.abs().pow(pv - 1));
  return where(r == 0, zeros_like(self), g * scaled / r.pow(pv - 1));
}

Tensor logsumexp_backward(const Tensor &grad, const Tensor &self,
                          const Tensor &result, IntArrayRef dim, bool keepdim) {
  OptionalIntArrayRef od = dim;
  Tensor g = unsqueeze_reduced(grad, self.sizes(), od, keepdim);
  Tensor r = unsqueeze_reduced(result, self.sizes(), od, keepdim);
  return g * (self - r).exp();
}

Tensor cumsum_backward(const Tensor &grad, int64_t dim) {
  if (grad.dim() == 0)
    return grad;
  int64_t d = maybe_wrap_dim(dim, grad.dim());
  return grad.flip({d}).cumsum(d).flip({d});
}

Tensor cumprod_backward(const Tensor &grad, const Tensor &self, int64_t dim,
                        const Tensor &result) {
  if (self.dim() == 0)
    return grad;
  // d result_j / d self_i = result_j / self_i for j >= i, where no zero
  // precedes i along dim. At the first zero k of a row it is the product of
  // the others, prod_{m <= j, m != k} self_m: the cumprod of the row with
  // that zero replaced by 1. Past it every derivative is 0.
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor zero = self == 0;
  Tensor seen = zero.cumsum(d); // zeros at or before each point
  Tensor before = seen == 0;
  Tensor first = zero.logical_and(seen == 1);
  Tensor ones = ones_like(self);
  Tensor plain = cumsum_backward(grad * result, d) / where(before, self, ones);
  Tensor at_zero =
      cumsum_backward(grad * where(first, ones, self).cumprod(d), d);
  return where(before, plain, where(first, at_zero, zeros_like(plain)));
}

Tensor softmax_backward(const Tensor &grad, const Tensor &result, int64_t dim,
                        ScalarType self_dtype) {
  return ember::_softmax_backward_data(grad, result, dim, self_dtype);
}

Tensor log_softmax_backward(const Tensor &grad, const Tensor &result,
                            int64_t dim, ScalarType self_dtype) {
  return ember::_log_softmax_backward_data(grad, result, dim, self_dtype);
}

// r = y * (g - s), s = sum(g y) along dim. dr/dy for an incoming gradient
// G: G * (g - s) - g * sum(G y). (dr/dg is the op itself, applied to G.)
Tensor softmax_backward_data_output_backward(const Tensor &grad,
                                             const Tensor &grad_output,
                                             const Tensor &output,
                                             int64_t dim) {
  const std::vector<int64_t> d{dim};
  return grad * (grad_output - (grad_output * output).sum(d, true)) -
         grad_output * (grad * output).sum(d, true);
}

// r = g - exp(y) * sum(g) along dim. dr/dg: G - sum(G exp(y)); dr/dy:
// -G exp(y) sum(g).
Tensor log_softmax_backward_data_grad_output_backward(const Tensor &grad,
                                                      const Tensor &output,
                                                      int64_t dim,
                                                      ScalarType dtype) {
  const std::vector<int64_t> d{dim};
  return (grad - (grad * output.exp()).sum(d, true)).to(dtype);
}

Tensor log_softmax_backward_data_output_backward(const Tensor &grad,
                                                 const Tensor &grad_output,
                                                 const Tensor &output,
                                                 int64_t dim) {
  const std::vector<int64_t> d{dim};
  return (grad * output.exp() * grad_output.sum(d, true)).neg();
}

Tensor gelu_erf_double_backward(const Tensor &grad, const Tensor &grad_output,
                                const Tensor &self) {
  constexpr double kBeta = 0.39894228040143267794; // 1/sqrt(2 pi)
  Tensor x2 = self * self;
  Tensor pdf = (x2 * -0.5).exp() * kBeta;
  return grad * grad_output * pdf * (2 - x2);
}

std::tuple<Tensor, Tensor, Tensor>
layer_norm_backward(const Tensor &grad, const Tensor &input,
                    IntArrayRef normalized_shape, const Tensor &mean,
                    const Tensor &rstd, const std::optional<Tensor> &weight,
                    const std::optional<Tensor> &bias, double eps,
                    std::array<bool, 3> grad_input_mask) {
  const bool has_w = weight && weight->defined();
  bool graph = GradMode::is_enabled() &&
               (grad.requires_grad() || input.requires_grad() ||
                (has_w && weight->requires_grad()));
  // Traced into a compiled backward (Note [The joint graph] in
  // frontend/Capture.cpp) with all three gradients wanted (an affine
  // layer_norm in training), the kernel is one op of the graph: on the CPU
  // and on CUDA it beats the formula's ops fused (one pass for dx, one for
  // the column sums, where the fused formula reads the input again for each
  // reduction). A graph op has no undefined results, so with fewer wanted
  // the formula is traced instead, and fuses with its neighbours.
  const bool all =
      grad_input_mask[0] && grad_input_mask[1] && grad_input_mask[2];
  if (!graph && (all || !is_capturing())) {
    std::vector<int64_t> mask = {grad_input_mask[0], grad_input_mask[1],
                                 grad_input_mask[2]};
    return ember::native_layer_norm_backward(grad, input, normalized_shape,
                                             mean, rstd, weight, bias, mask);
  }
  // create_graph (or a compiled backward wanting fewer than all three): the
  // kernel's formula in ember ops, with the statistics recomputed from the
  // input so that they are differentiated too (the saved mean and rstd have
  // no history).
  int64_t axis = input.dim() - int64_t(normalized_shape.size());
  std::vector<int64_t> norm_dims, batch_dims;
  for (int64_t d = 0; d < input.dim(); ++d)
    (d < axis ? batch_dims : norm_dims).push_back(d);
  ScalarType c = isReducedFloatingType(input.dtype()) ? kFloat : input.dtype();
  Tensor x = input.to(c), g = grad.to(c);
  Tensor xc = x - x.mean(norm_dims, true);
  Tensor rs = ((xc * xc).mean(norm_dims, true) + eps).rsqrt();
  Tensor xhat = xc * rs;
  Tensor gw = has_w ? g * weight->to(c) : g;
  auto over_batch = [&](const Tensor &t) {
    return batch_dims.empty() ? t : t.sum(batch_dims);
  };
  Tensor gi, gweight, gbias;
  if (grad_input_mask[0])
    gi = (rs * (gw - gw.mean(norm_dims, true) -
                xhat * (gw * xhat).mean(norm_dims, true)))
             .to(input.dtype());
  if (grad_input_mask[1])
    gweight = over_batch(g * xhat).to(has_w ? weight->dtype() : input.dtype());
  if (grad_input_mask[2])
    gbias = over_batch(g).to(bias && bias->defined() ? bias->dtype()
                                                     : input.dtype());
  return {gi, gweight, gbias};
}

Tensor gelu_tanh_backward(const Tensor &grad, const Tensor &in) {
  constexpr double kBeta = 0.79788456080286535588; // sqrt(2/pi)
  constexpr double kKappa = 0.044715;
  // In float for float16/bfloat16, as the forward's kernel computes (and
  // PyTorch's backward kernel): x * x overflows float16 for |x| > 256, and
  // 0 * inf would make the gradient NaN where it is 1.
  bool reduced = in.dtype() == kHalf || in.dtype() == kBFloat16;
  Tensor self = reduced ? in.to(kFloat) : in;
  Tensor x2 = self * self;
  Tensor inner = (self + x2 * self * kKappa) * kBeta;
  Tensor t = inner.tanh();
  Tensor left = (t + 1) * 0.5;
  Tensor dinner = (x2 * (3 * kKappa) + 1) * kBeta;
  Tensor right = self * 0.5 * (1 - t * t) * dinner;
  if (reduced)
    return (grad.to(kFloat) * (left + right)).to(grad.dtype());
  return grad * (left + right);
}

Tensor silu_backward(const Tensor &grad, const Tensor &self) {
  Tensor s = self.sigmoid();
  return grad * s * (1 + self * (1 - s));
}

Tensor softplus_backward(const Tensor &grad, const Tensor &self,
                         const Scalar &beta, const Scalar &threshold) {
  Tensor z = self * beta;
  return where(z > threshold, grad, grad * z.sigmoid());
}

Tensor pow_backward(const Tensor &grad, const Tensor &self,
                    const Scalar &exponent) {
  double e = exponent.toDouble();
  if (e == 0.0)
    return zeros_like(self, grad.options());
  // As PyTorch's, grad * (e * self^(e-1)) (the order matters in float16:
  // grad * self^(e-1) can overflow where e * self^(e-1) times grad does
  // not); without the copy that self.pow(1) is, or the ones self.pow(0)
  // is, which the compiler would not fuse.
  if (e == 2.0)
    return grad * (self * Scalar(e));
  if (e == 1.0)
    return grad * Scalar(e);
  return grad * (self.pow(Scalar(e - 1)) * Scalar(e));
}

Tensor pow_backward_self(const Tensor &grad, const Tensor &self,
                         const Tensor &exponent) {
  Tensor g = grad * exponent * self.pow(exponent - 1);
  return where(exponent == 0, zeros_like(g), g);
}

Tensor pow_backward_exponent(const Tensor &grad, const Tensor &self,
                             const Tensor &exponent, const Tensor &result) {
  Tensor safe = where((self == 0) & (exponent >= 0), ones_like(result),
                      self.to(result.dtype()));
  Tensor g = grad * result * safe.log();
  return where((self == 0) & (exponent >= 0), zeros_like(g), g);
}

Tensor pow_backward_exponent(const Tensor &grad, const Scalar &base,
                             const Tensor &result) {
  double b = base.toDouble();
  if (b == 0.0) // 0 where the exponent is >= 0 (result 0 or 1), as PyTorch
    return where((result == 0).logical_or(result == 1), zeros_like(grad),
                 grad * result * -INFINITY);
  return grad * result * std::log(b);
}

Tensor max_min_backward(const Tensor &grad, const Tensor &self,
                        const Tensor &other, bool is_max) {
  // As PyTorch's: the whole gradient unless self loses, so both get it
  // where either is NaN.
  Tensor loses = is_max ? self < other : self > other;
  return where(self == other, grad / 2, where(loses, zeros_like(grad), grad));
}

Tensor atan2_backward(const Tensor &grad, const Tensor &self,
                      const Tensor &other, bool for_self) {
  // d/dy atan2(y, x) = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2); 0 at the
  // origin, as PyTorch's (not 0/0).
  Tensor r2 = self * self + other * other;
  Tensor g = for_self ? grad * other / r2 : grad.neg() * self / r2;
  return where(r2 == 0, zeros_like(g), g);
}

Tensor clamp_tensor_backward(const Tensor &grad, const Tensor &self,
                             const Tensor &min, const Tensor &max, int which) {
  // As PyTorch 2.15's (Note [Clamp's gradients]), on every order of self,
  // min and max: strictly inside, self's; at a bound, split evenly between
  // self and that bound (all self's when both bounds equal it); beyond one,
  // that bound's; min > max, max's. A NaN self keeps it all (and max too
  // when min > max); with a NaN bound, self's where it lies within the
  // other bound, else no one's.
  Tensor at_min = self == min, at_max = self == max;
  Tensor crossed = min > max, nan = self != self;
  Tensor nan_bound = (min != min).logical_or(max != max);
  Tensor half = full_like(grad, 0.5), one = ones_like(grad),
         zero = zeros_like(grad);
  Tensor w;
  if (which == 0) {
    Tensor inside = (self > min).logical_and(self < max);
    w = where(at_min.logical_and(at_max), one,
              where(inside, one, zero) +
                  where(at_min.logical_and(self < max), half, zero) +
                  where(at_max.logical_and(self > min), half, zero));
    Tensor within = (self >= min)
                        .logical_or(min != min)
                        .logical_and((self <= max).logical_or(max != max));
    w = where(nan_bound, where(within, one, zero), w);
    w = where(crossed, zero, w);
  } else if (which == 1) {
    w = where(self < min, one, zero) +
        where(at_min.logical_and(self < max), half, zero);
    w = where(nan_bound.logical_or(crossed), zero, w);
  } else {
    w = where(self > max, one, zero) +
        where(at_max.logical_and(self > min), half, zero);
    w = where(nan_bound, zero, where(crossed, one, w));
  }
  // (a NaN self: comparisons are false, so only these two apply)
  w = where(nan, which == 0 ? one : zero, w);
  if (which == 2)
    w = where(nan.logical_and(crossed), one, w);
  return grad * w;
}

Tensor fmax_fmin_backward(const Tensor &grad, const Tensor &self,
                          const Tensor &other, bool is_max, bool for_self) {
  // As PyTorch 2.15's: split evenly at a tie; else the operand that is the
  // result: the winner, or the one that is not NaN (self where both are).
  const Tensor &a = for_self ? self : other, &b = for_self ? other : self;
  Tensor wins =
      (is_max ? a > b : a < b)
          .logical_or(for_self
                          ? b.isnan()
                          : a.isnan().logical_not().logical_and(b.isnan()));
  return where(self == other, grad / 2, where(wins, grad, zeros_like(grad)));
}

Tensor clamp_backward_mask(const Tensor &grad, const Tensor &keep) {
  return where(keep, grad, zeros_like(grad));
}

Tensor as_strided_backward(const Tensor &grad, const Tensor &self,
                           IntArrayRef size, IntArrayRef stride,
                           std::optional<int64_t> storage_offset) {
  return autograd::as_strided_backward(
      grad, Geometry::of(self),
      Geometry{DimVector(size), DimVector(stride),
               storage_offset.value_or(self.storage_offset())});
}

Tensor permute_backward(const Tensor &grad, IntArrayRef dims) {
  int64_t n = int64_t(dims.size());
  DimVector inv(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n; ++i)
    inv[size_t(maybe_wrap_dim(dims[size_t(i)], n))] = i;
  return grad.permute(inv);
}

Tensor select_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                       int64_t index) {
  Tensor r = zeros(self_sizes, grad.options());
  r.select(dim, index).copy_(grad);
  return r;
}

Tensor slice_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end,
                      int64_t step) {
  Tensor r = zeros(self_sizes, grad.options());
  r.slice(dim, start, end, step).copy_(grad);
  return r;
}

Tensor diagonal_backward(const Tensor &grad, IntArrayRef self_sizes,
                         int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor r = zeros(self_sizes, grad.options());
  r.diagonal(offset, dim1, dim2).copy_(grad);
  return r;
}

Tensor unfold_backward(const Tensor &grad, IntArrayRef self_sizes,
                       int64_t dimension, int64_t size, int64_t step) {
  Tensor r = zeros(self_sizes, grad.options());
  if (self_sizes.empty())
    return r + grad.reshape({});
  int64_t d = maybe_wrap_dim(dimension, int64_t(self_sizes.size()));
  // Windows overlap when step < size: add them one window at a time.
  // grad.select(d, i) has the window as its last dim: move it back to d.
  int64_t nd = int64_t(self_sizes.size());
  DimVector perm;
  for (int64_t k = 0; k < nd - 1; ++k) {
    if (k == d)
      perm.push_back(nd - 1);
    perm.push_back(k);
  }
  if (d == nd - 1)
    perm.push_back(nd - 1);
  for (int64_t i = 0; i < grad.size(d); ++i)
    r.narrow(d, i * step, size).add_(grad.select(d, i).permute(perm));
  return r;
}

variable_list cat_backward(const Tensor &grad, int64_t dim,
                           const std::vector<std::vector<int64_t>> &sizes) {
  variable_list out;
  int64_t d = 0, offset = 0;
  for (const auto &s : sizes)
    if (!s.empty() && !(s.size() == 1 && s[0] == 0)) {
      d = maybe_wrap_dim(dim, int64_t(s.size()));
      break;
    }
  for (const auto &s : sizes) {
    if (s.size() == 1 && s[0] == 0 && grad.dim() != 1) { // legacy empty
      out.push_back(zeros(s, grad.options()));
      continue;
    }
    int64_t n = s[size_t(d)];
    out.push_back(grad.narrow(d, offset, n));
    offset += n;
  }
  return out;
}

Tensor index_select_backward(const Tensor &grad, IntArrayRef self_sizes,
                             int64_t dim, const Tensor &index) {
  if (self_sizes.empty())
    return grad.reshape({});
  return zeros(self_sizes, grad.options())
      .index_add(dim, index.reshape({-1}), grad);
}

Tensor gather_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                       const Tensor &index) {
  return zeros(self_sizes, grad.options()).scatter_add(dim, index, grad);
}

Tensor scatter_src_backward(const Tensor &grad, int64_t dim,
                            const Tensor &index, IntArrayRef src_sizes) {
  Tensor g = grad.gather(dim, index);
  if (g.sizes() == src_sizes)
    return g;
  DimVector pad;
  for (int64_t d = int64_t(src_sizes.size()) - 1; d >= 0; --d) {
    pad.push_back(0);
    pad.push_back(src_sizes[size_t(d)] - g.size(d));
  }
  return constant_pad_nd(g, pad, 0);
}

Tensor masked_select_backward(const Tensor &grad, const Tensor &self,
                              const Tensor &mask) {
  auto shape = infer_size(self.sizes(), mask.sizes());
  Tensor r = zeros(shape, grad.options());
  ember::index_put_(r, std::vector<Tensor>{mask.expand(shape)}, grad, false);
  return r;
}

Tensor index_backward(const Tensor &grad, IntArrayRef self_sizes,
                      const std::vector<Tensor> &indices) {
  Tensor r = zeros(self_sizes, grad.options());
  ember::index_put_(r, indices, grad, /*accumulate=*/true);
  return r;
}

Tensor index_put_self_backward(const Tensor &grad,
                               const std::vector<Tensor> &indices,
                               bool accumulate) {
  if (accumulate)
    return grad;
  Tensor r = grad.clone();
  ember::index_put_(r, indices, zeros({}, grad.options()), false);
  return r;
}

Tensor index_put_values_backward(const Tensor &grad,
                                 const std::vector<Tensor> &indices) {
  return ember::index(grad, indices);
}

Tensor index_add_source_backward(const Tensor &grad, int64_t dim,
                                 const Tensor &index, int64_t source_dim,
                                 const Scalar &alpha) {
  Tensor g = grad.dim() == 0 ? grad : grad.index_select(dim, index);
  if (source_dim == 0 && g.dim() > 0)
    g = g.reshape({});
  return scale(g, alpha);
}

Tensor constant_pad_nd_backward(const Tensor &grad, IntArrayRef pad) {
  DimVector neg;
  for (int64_t p : pad)
    neg.push_back(-p);
  return constant_pad_nd(grad, neg, 0);
}

Tensor im2col_backward(const Tensor &grad, IntArrayRef self_sizes,
                       IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride) {
  int64_t n = int64_t(self_sizes.size());
  DimVector out{self_sizes[size_t(n - 2)], self_sizes[size_t(n - 1)]};
  return ember::_col2im(grad, out, kernel_size, dilation, padding, stride);
}

} // namespace ember::autograd::details
