// The CUDA kernels of reductions and scans built from other ops (prod,
// norm, all / any, cumsum / cumprod, dot, equal: Note [CUDA reductions from
// kernels that exist] below), and of argmax / argmin and max.dim / min.dim,
// written with ember ops whose CUDA kernels exist (amax/amin, comparisons,
// masked_fill): the index of the first extreme along the dim is the smallest
// position where the row equals its extreme, or, in a row with a NaN (which
// amax propagates), the first NaN, as PyTorch's kernels pick it.
// Device-agnostic: test_cuda checks them against the CPU kernels on CPU tensors
// on every machine. 0-dim, empty and bool inputs run the CPU kernel on host
// copies (its checks and errors included), as the decomposed kernels' empty
// inputs do (Note [CUDA kernels from decompositions] in eager/Decompose.h).
#include "eager/Decompose.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

#include <cmath>
#include <vector>

namespace ember::native {

namespace {

bool on_host(const Tensor &self) {
  return self.dim() == 0 || self.numel() == 0 || self.dtype() == kBool;
}

/// The index of the first extreme of `x` along `d` (keepdim).
Tensor first_extreme(const Tensor &x, int64_t d, const Tensor &extreme) {
  Tensor hit = x.eq(extreme);
  if (x.is_floating_point())
    hit = hit.logical_or(x.isnan());
  const int64_t n = x.size(d);
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[size_t(d)] = n;
  Tensor pos = arange(n, TensorOptions(kLong).device(x.device())).view(shape);
  return pos.expand(x.sizes())
      .masked_fill(hit.logical_not(), n)
      .amin({d}, true);
}

Tensor arg_extreme(const Tensor &self, std::optional<int64_t> dim, bool keepdim,
                   bool is_max) {
  namespace dd = ember::detail::decomposed;
  if (on_host(self))
    return dd::back(is_max ? native::argmax(dd::host(self), dim, keepdim)
                           : native::argmin(dd::host(self), dim, keepdim),
                    self.device());
  Tensor x = dim ? self : self.reshape({-1});
  const int64_t d = dim ? maybe_wrap_dim(*dim, x.dim()) : 0;
  Tensor e = is_max ? x.amax({d}, true) : x.amin({d}, true);
  Tensor idx = first_extreme(x, d, e);
  if (!dim)
    return keepdim ? idx.reshape(std::vector<int64_t>(size_t(self.dim()), 1))
                   : idx.reshape({});
  return keepdim ? idx : idx.squeeze(d);
}

std::tuple<Tensor, Tensor> extreme_dim(const Tensor &self, int64_t dim,
                                       bool keepdim, bool is_max) {
  namespace dd = ember::detail::decomposed;
  if (on_host(self))
    return dd::back(is_max ? native::max_dim(dd::host(self), dim, keepdim)
                           : native::min_dim(dd::host(self), dim, keepdim),
                    self.device());
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor e = is_max ? self.amax({d}, true) : self.amin({d}, true);
  Tensor idx = first_extreme(self, d, e);
  return keepdim ? std::tuple<Tensor, Tensor>{e, idx}
                 : std::tuple<Tensor, Tensor>{e.squeeze(d), idx.squeeze(d)};
}

} // namespace

Tensor argmax_composite(const Tensor &self, std::optional<int64_t> dim,
                        bool keepdim) {
  return arg_extreme(self, dim, keepdim, true);
}
Tensor argmin_composite(const Tensor &self, std::optional<int64_t> dim,
                        bool keepdim) {
  return arg_extreme(self, dim, keepdim, false);
}
std::tuple<Tensor, Tensor> max_dim_composite(const Tensor &self, int64_t dim,
                                             bool keepdim) {
  return extreme_dim(self, dim, keepdim, true);
}
std::tuple<Tensor, Tensor> min_dim_composite(const Tensor &self, int64_t dim,
                                             bool keepdim) {
  return extreme_dim(self, dim, keepdim, false);
}

// --- prod, norm, all / any, cumsum / cumprod, dot, equal ---------------------

// Note [CUDA reductions from kernels that exist]
// The remaining reductions and scans of the op table are written, as
// argmax above, with ops whose CUDA kernels exist, device-agnostic (test_cuda
// checks each on CPU tensors against the CPU kernel on every machine):
//  * prod folds the dim in halves: log2(n) pointwise multiplications (a
//    leftover element multiplied into the first), so integer products wrap
//    as the CPU's sequential product does (multiplication mod 2^64 is
//    associative) and float products differ from it only in the rounding
//    of the double intermediates;
//  * cumsum / cumprod are Hillis and Steele's scan: log2(n) steps, step s
//    combining each element with the one 2^s before it (O(n log n) work,
//    where a one-pass scan kernel would do O(n): the next step if scans
//    matter on the GPU);
//  * norm is abs, pow, sum, amax / amin as the order asks; all / any count
//    the zeros / nonzeros (sum), so empty reductions give True / False;
//  * dot is a 1 x n by n x 1 product through cuBLAS for floats (its
//    accumulation), a product and a sum for integers; equal is eq and all.
// Floating dtypes compute in double and round once at the end, as the CPU
// kernels accumulate: a product or sum whose intermediate leaves float's
// range still gives the CPU's finite result, and a float cumsum is as
// accurate as the CPU's though its order differs. 0-dim and empty inputs
// run the CPU kernel on host copies (its checks, errors and identities
// included).

namespace {

/// The CPU kernel on host copies: for the inputs a composition does not
/// cover (0-dim, empty).
template <class F> auto on_cpu(const Tensor &self, F cpu) {
  namespace dd = ember::detail::decomposed;
  return dd::back(cpu(dd::host(self)), self.device());
}

/// The compute dtype of a composition on `t`: double for the floating
/// dtypes, as the CPU kernels accumulate (so an intermediate product or sum
/// out of a float's range does not turn the result into inf or NaN).
ScalarType wide(ScalarType t) { return isFloatingType(t) ? kDouble : t; }

/// Hillis and Steele's inclusive scan of `x` (owned: written in place)
/// along `d` with `op`.
template <class Op> Tensor scan(Tensor x, int64_t d, Op op) {
  const int64_t n = x.size(d);
  for (int64_t s = 1; s < n; s *= 2) {
    Tensor step = op(x.narrow(d, s, n - s), x.narrow(d, 0, n - s));
    x.narrow(d, s, n - s).copy_(step);
  }
  return x;
}

Tensor scan_op(const Tensor &self, int64_t dim, std::optional<ScalarType> dtype,
               bool is_sum) {
  const ScalarType out_t = meta::scan_dtype(self.dtype(), dtype);
  if (self.dim() == 0 || self.numel() == 0)
    return on_cpu(self, [&](const Tensor &h) {
      return is_sum ? native::cumsum(h, dim, dtype)
                    : native::cumprod(h, dim, dtype);
    });
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  // (the input in the result's dtype first, as the CPU kernel reads it)
  Tensor x = self.to(out_t).to(wide(out_t), /*non_blocking=*/false,
                               /*copy=*/true);
  x = scan(x, d, [&](const Tensor &a, const Tensor &b) {
    return is_sum ? a + b : a * b;
  });
  // (a sum starts from +0, so a run of -0.0 sums to +0.0)
  return (is_sum && x.is_floating_point() ? x + 0.0 : x).to(out_t);
}

} // namespace

Tensor prod_cuda(const Tensor &self, int64_t dim, bool keepdim,
                 std::optional<ScalarType> dtype) {
  if (self.dim() == 0 || self.numel() == 0)
    return on_cpu(self, [&](const Tensor &h) {
      return native::prod(h, dim, keepdim, dtype);
    });
  const ScalarType out_t = meta::sum_dtype(self.dtype(), dtype);
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor x = self.to(out_t).to(wide(out_t));
  for (int64_t n = x.size(d); n > 1; n = x.size(d)) {
    const int64_t h = n / 2;
    Tensor y = x.narrow(d, 0, h) * x.narrow(d, h, h);
    if (n % 2)
      y.narrow(d, 0, 1).mul_(x.narrow(d, 2 * h, 1));
    x = y;
  }
  if (x.is_same(self)) // (one element along d: a new tensor all the same)
    x = x.clone();
  return (keepdim ? x : x.squeeze(d)).to(out_t);
}

Tensor norm_cuda(const Tensor &self, const std::optional<Scalar> &p,
                 IntArrayRef dim, bool keepdim) {
  meta::check_norm(self, p, dim);
  if (self.dim() == 0 || self.numel() == 0)
    return on_cpu(self, [&](const Tensor &h) {
      return native::norm(h, p, dim, keepdim);
    });
  const double pv = p ? p->toDouble() : 2.0;
  std::vector<int64_t> dims(dim.begin(), dim.end());
  if (dims.empty())
    for (int64_t k = 0; k < self.dim(); ++k)
      dims.push_back(k);
  Tensor x = self.to(wide(self.dtype()));
  Tensor r;
  if (pv == 0)
    r = x.ne(0).to(x.dtype()).sum(dims, keepdim);
  else if (pv == 1)
    r = x.abs().sum(dims, keepdim);
  else if (pv == 2)
    r = (x * x).sum(dims, keepdim).sqrt();
  else if (std::isinf(pv))
    r = pv > 0 ? x.abs().amax(dims, keepdim) : x.abs().amin(dims, keepdim);
  else
    r = x.abs().pow(pv).sum(dims, keepdim).pow(1.0 / pv);
  return r.to(self.dtype());
}

namespace {
/// all (no zero along dim) or any (a nonzero): counts, so that an empty
/// reduction gives True / False.
Tensor all_any(const Tensor &self, int64_t dim, bool keepdim, bool is_all) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0 || self.numel() == 0)
    return on_cpu(self, [&](const Tensor &h) {
      return is_all ? native::all_dim(h, d, keepdim)
                    : native::any_dim(h, d, keepdim);
    });
  Tensor count = (is_all ? self.eq(0) : self.ne(0)).sum({d}, keepdim);
  return (is_all ? count.eq(0) : count.ne(0))
      .to(meta::all_any_dtype(self.dtype()));
}
} // namespace

Tensor all_dim_cuda(const Tensor &self, int64_t dim, bool keepdim) {
  return all_any(self, dim, keepdim, true);
}

Tensor any_dim_cuda(const Tensor &self, int64_t dim, bool keepdim) {
  return all_any(self, dim, keepdim, false);
}

Tensor cumsum_cuda(const Tensor &self, int64_t dim,
                   std::optional<ScalarType> dtype) {
  return scan_op(self, dim, dtype, true);
}

Tensor cumprod_cuda(const Tensor &self, int64_t dim,
                    std::optional<ScalarType> dtype) {
  return scan_op(self, dim, dtype, false);
}

Tensor dot_cuda(const Tensor &self, const Tensor &tensor) {
  meta::check_dot(self, tensor);
  const int64_t n = self.numel();
  if (n == 0 || self.dtype() == kBool)
    return on_cpu(
        self, [&](const Tensor &h) { return native::dot(h, tensor.cpu()); });
  if (self.is_floating_point())
    return self.reshape({1, n}).mm(tensor.reshape({n, 1})).reshape({});
  return (self * tensor).sum().to(self.dtype());
}

bool equal_cuda(const Tensor &self, const Tensor &other) {
  meta::check_equal(self, other);
  if (self.sizes() != other.sizes())
    return false;
  return self.numel() == 0 ||
         self.eq(other).logical_not().sum().item<int64_t>() == 0;
}

} // namespace ember::native
