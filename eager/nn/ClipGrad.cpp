#include "eager/nn/ClipGrad.h"

#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <cmath>

namespace ember::nn::utils {

double clip_grad_norm_(const std::vector<Tensor> &parameters, double max_norm,
                       double norm_type, bool error_if_nonfinite) {
  EMBER_CHECK_VALUE(
      !std::isnan(norm_type) && (norm_type >= 0 || std::isinf(norm_type)),
      "clip_grad_norm_: norm_type must be >= 0 or +-inf, got ", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor &p : parameters)
    if (p.defined() && p.grad().defined())
      grads.push_back(p.grad());
  if (grads.empty())
    return 0.0;
  // As PyTorch: each gradient's norm in its dtype, the total in theirs
  // (float32 gradients overflow to an infinite norm where they would).
  ScalarType dt = grads[0].dtype();
  for (const Tensor &g : grads)
    dt = promoteTypes(dt, g.dtype());
  const bool inf = std::isinf(norm_type), neg = norm_type < 0;
  auto norm_of = [&](const Tensor &t) {
    return inf ? (neg ? t.abs().min() : t.abs().max()) : t.norm(norm_type);
  };
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor &g : grads)
    norms.push_back(norm_of(g).to(dt));
  Tensor total = norm_of(stack(norms));
  double total_value = total.item<double>();
  if (error_if_nonfinite && !std::isfinite(total_value))
    throw Error(ember::detail::str(
        "The total norm of order ", norm_type,
        " for gradients from `parameters` is non-finite, so it cannot be "
        "clipped. To disable this error and scale the gradients by the "
        "non-finite norm anyway, set `error_if_nonfinite=false`"));
  // PyTorch's clip_coef = max_norm / (total + 1e-6), clamped to 1, in the
  // norm's dtype (an infinite norm gives 0, a NaN norm NaN).
  Tensor coef = ((total + 1e-6).reciprocal() * max_norm).clamp_max(1.0);
  for (const Tensor &g : grads)
    g.mul_(coef.to(g.dtype()));
  return total_value;
}

double clip_grad_norm_(std::initializer_list<Tensor> parameters,
                       double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>(parameters), max_norm, norm_type,
                         error_if_nonfinite);
}

double clip_grad_norm_(const Tensor &parameter, double max_norm,
                       double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type,
                         error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor> &parameters,
                      double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor &p : parameters)
    if (p.defined() && p.grad().defined())
      p.grad().clamp_(Scalar(-clip_value), Scalar(clip_value));
}

void clip_grad_value_(std::initializer_list<Tensor> parameters,
                      double clip_value) {
  clip_grad_value_(std::vector<Tensor>(parameters), clip_value);
}

void clip_grad_value_(const Tensor &parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

} // namespace ember::nn::utils
