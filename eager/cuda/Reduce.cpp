// The CUDA kernels of argmax / argmin and max.dim / min.dim, written with
// ember ops whose CUDA kernels exist (amax/amin, comparisons, masked_fill):
// the index of the first extreme along the dim is the smallest position
// where the row equals its extreme, or, in a row with a NaN (which amax
// propagates), the first NaN, as PyTorch's kernels pick it. Device-agnostic:
// test_cuda checks them against the CPU kernels on CPU tensors on every
// machine. 0-dim, empty and bool inputs run the CPU kernel on host copies
// (its checks and errors included), as the decomposed kernels' empty inputs
// do (Note [CUDA kernels from decompositions] in eager/Decompose.h).
#include "eager/Decompose.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"

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

} // namespace ember::native
