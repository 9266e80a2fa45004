// native_layer_norm_backward written with ember ops: the CUDA op's path for
// empty tensors (its kernels are in eager/cuda/Softmax.cpp). It computes what
// the CPU kernel computes (eager/cpu/Normalization.cpp, Note [Native
// layer_norm]), in the same compute type, and is device-agnostic: test_cuda
// checks it against the CPU kernel on CPU tensors on every machine.
#include "eager/cuda/Softmax.h"

#include "eager/Factory.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

#include <vector>

namespace ember::native {

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_composite(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask) {
  meta::LayerNormShape s = meta::layer_norm_backward_shape(
      grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask);
  const ScalarType c = s.compute;
  const TensorOptions opts = TensorOptions(c).device(input.device());
  const bool want_dx = output_mask[0] != 0, want_dw = output_mask[1] != 0,
             want_db = output_mask[2] != 0;
  const bool has_w = weight && weight->defined(),
             has_b = bias && bias->defined();
  // The normalized dims (the trailing ones) and the batch dims before them.
  std::vector<int64_t> norm_dims, batch_dims;
  const int64_t first = input.dim() - int64_t(normalized_shape.size());
  for (int64_t d = 0; d < input.dim(); ++d)
    (d < first ? batch_dims : norm_dims).push_back(d);
  // Sums over the batch dims (none: the tensor itself, as sum(dim=[])
  // would sum everything).
  auto over_batch = [&](const Tensor &t) {
    return batch_dims.empty() ? t : t.sum(batch_dims);
  };
  Tensor dx, dw, db;
  if (s.M == 0 || s.N == 0) {
    // No rows: the parameter gradients are sums of nothing.
    if (want_dx)
      dx = empty(input.sizes(), opts);
    if (want_dw)
      dw = zeros(normalized_shape, opts);
    if (want_db)
      db = zeros(normalized_shape, opts);
  } else {
    Tensor g = grad_out.to(c), x = input.to(c);
    Tensor xhat = (x - mean.to(c)) * rstd.to(c);
    if (want_dx) {
      Tensor gw = has_w ? g * weight->to(c) : g;
      dx = rstd.to(c) * (gw - gw.mean(norm_dims, true) -
                         xhat * (gw * xhat).mean(norm_dims, true));
    }
    if (want_dw)
      dw = over_batch(g * xhat);
    if (want_db)
      db = over_batch(g);
  }
  if (want_dx)
    dx = dx.to(input.dtype());
  if (want_dw)
    dw = dw.to(has_w ? weight->dtype() : input.dtype());
  if (want_db)
    db = db.to(has_b ? bias->dtype() : input.dtype());
  return {dx, dw, db};
}

} // namespace ember::native
