// nn::functional losses, as compositions of ember ops (see Functional.h).
#include "eager/Capturing.h"
#include "eager/Factory.h"
#include "eager/autograd/CustomFunction.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/nn/Functional.h"
#include "eager/nn/OpArgs.h"

#include <cmath>

namespace ember::nn::functional {

namespace {

Tensor reduce(const Tensor &loss, Reduction r) {
  switch (r.kind()) {
  case Reduction::None:
    return loss;
  case Reduction::Mean:
    return loss.mean();
  default:
    return loss.sum();
  }
}

/// PyTorch raises ValueError when the target's size differs from the
/// input's in the binary cross-entropy losses.
void checkSameSize(const char *what, const Tensor &input,
                   const Tensor &target) {
  EMBER_CHECK_VALUE(input.sizes() == target.sizes(), what, " target size (",
                    target.sizes(), ") must be the same as input size (",
                    input.sizes(), "); ensure they have the same size");
}

/// Shape (1, C, 1, ..., 1) for a per-class weight over (N, C, d1, ...).
std::vector<int64_t> classShape(const Tensor &input, int64_t classDim) {
  std::vector<int64_t> s(size_t(input.dim()), 1);
  s[size_t(classDim)] = input.size(classDim);
  return s;
}

/// The shared checks of nll_loss and cross_entropy with class-index targets:
/// returns (input, target) with a batch dim (unbatched inputs gain one).
std::pair<Tensor, Tensor> checkClassTarget(const char *op, const Tensor &input,
                                           const Tensor &target,
                                           const Tensor &weight) {
  EMBER_CHECK_VALUE(input.dim() >= 1, op,
                    ": input tensor should be 1D or more (classes, or batch "
                    "then classes), but got a 0-d input");
  EMBER_CHECK_TYPE(target.dtype() == kLong, op,
                   ": expected a target of class indices with scalar type "
                   "Long (int64), but found ",
                   toString(target.dtype()),
                   " (convert it with .to(ember::kLong))");
  Tensor x = input, t = target;
  if (input.dim() == 1) {
    EMBER_CHECK_VALUE(target.dim() == 0, op,
                      ": for an unbatched input of shape ", input.sizes(),
                      ", expected a 0-d target, but got a target of size ",
                      target.sizes());
    x = input.unsqueeze(0);
    t = target.unsqueeze(0);
  } else {
    EMBER_CHECK_VALUE(target.dim() >= 1 && input.size(0) == target.size(0),
                      "Expected input batch_size (", input.size(0),
                      ") to match target batch_size (",
                      target.dim() >= 1 ? target.size(0) : 1, ").");
    std::vector<int64_t> want{input.size(0)};
    for (int64_t d = 2; d < input.dim(); ++d)
      want.push_back(input.size(d));
    EMBER_CHECK_VALUE(target.sizes() == IntArrayRef(want),
                      "Expected target size ", IntArrayRef(want), ", got ",
                      target.sizes());
  }
  int64_t C = x.size(1);
  if (weight.defined())
    EMBER_CHECK_VALUE(weight.dim() == 1 && weight.numel() == C,
                      "weight tensor should be defined either for all ", C,
                      " classes or no classes but got weight tensor of "
                      "shape: ",
                      weight.sizes());
  return {x, t};
}

/// Raises IndexError "Target 5 is out of bounds." for a class index outside
/// [0, C) that is not ignore_index. Under compile() the targets have no data
/// yet, and reading them would end the graph: there the gather that picks
/// the targets' log-probabilities checks them when it runs (IndexError
/// "gather(): index 5 is out of bounds for dimension 1 with size 3").
void checkTargetRange(const Tensor &t, int64_t C, int64_t ignore_index) {
  // Inside ember::compile the gather of the target's classes checks them
  // (its bounds check raises, as for any index): reading the values here
  // would break the graph at every call, and a replay would not repeat it.
  if (t.numel() == 0 || is_capturing())
    return;
  Tensor bad = (t != ignore_index).logical_and((t < 0).logical_or(t >= C));
  if (bad.any().item<bool>()) {
    int64_t v = t.masked_select(bad).reshape({-1})[0].item<int64_t>();
    throw IndexError(detail::str("Target ", v, " is out of bounds."));
  }
}

/// nll on (N, C, d...) log-probabilities: the per-element losses and the
/// per-element weights (zero where ignored).
std::pair<Tensor, Tensor> nllTerms(const Tensor &logp, const Tensor &t,
                                   const Tensor &weight, int64_t ignore_index) {
  Tensor keep = t != ignore_index;
  Tensor safe = ember::where(keep, t, zeros({}, t.options()));
  Tensor picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1);
  Tensor zero = zeros({}, logp.options());
  Tensor w = weight.defined()
                 ? weight.index_select(0, safe.reshape({-1})).view(t.sizes())
                 : ones({}, logp.options()).expand(t.sizes());
  w = ember::where(keep, w.to(logp.dtype()), zero);
  Tensor loss = ember::where(keep, -picked * w, zero);
  return {loss, w};
}

Tensor reduceWeighted(const Tensor &loss, const Tensor &w, Reduction r) {
  switch (r.kind()) {
  case Reduction::None:
    return loss;
  case Reduction::Sum:
    return loss.sum();
  default:
    // PyTorch: divided by the summed weight of the counted targets (NaN when
    // every target is ignored).
    return loss.sum() / w.sum();
  }
}

} // namespace

static Tensor mseLoss(const Tensor &input, const Tensor &target,
                      const MSELossFuncOptions &options) {
  return reduce(ember::square(input - target), options.reduction());
}

static Tensor l1Loss(const Tensor &input, const Tensor &target,
                     const L1LossFuncOptions &options) {
  return reduce(ember::abs(input - target), options.reduction());
}

static Tensor smooth_l1Loss(const Tensor &input, const Tensor &target,
                            const SmoothL1LossFuncOptions &options) {
  double beta = options.beta();
  EMBER_CHECK_VALUE(beta >= 0,
                    "smooth_l1_loss does not support negative values for "
                    "beta (got ",
                    beta, ")");
  Tensor d = ember::abs(input - target);
  if (beta == 0)
    return reduce(d, options.reduction());
  Tensor loss = ember::where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta);
  return reduce(loss, options.reduction());
}

static Tensor huberLoss(const Tensor &input, const Tensor &target,
                        const HuberLossFuncOptions &options) {
  double delta = options.delta();
  EMBER_CHECK_VALUE(delta > 0,
                    "huber_loss does not support non-positive values for "
                    "delta (got ",
                    delta, ")");
  Tensor d = ember::abs(input - target);
  Tensor loss = ember::where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta);
  return reduce(loss, options.reduction());
}

static Tensor nllLoss(const Tensor &input, const Tensor &target,
                      const NLLLossFuncOptions &options) {
  auto [x, t] = checkClassTarget("nll_loss", input, target, options.weight());
  checkTargetRange(t, x.size(1), options.ignore_index());
  auto [loss, w] = nllTerms(x, t, options.weight(), options.ignore_index());
  if (input.dim() == 1 && options.reduction().kind() == Reduction::None)
    loss = loss.squeeze(0);
  return reduceWeighted(loss, w, options.reduction());
}

// Note [Cross-entropy forms]
// As PyTorch's cross_entropy_loss: a target of the input's shape holds class
// probabilities (floating); any other shape holds class indices. With
// indices and label smoothing eps, the loss is
//   (1 - eps) * nll + eps / C * smooth,   smooth = -sum_c w_c logp_c
// where smooth is zero at ignored targets and its mean divides by the summed
// weights of the counted targets, like nll's. With probabilities, the target
// itself is smoothed (t (1 - eps) + eps / C) and mean divides by the number
// of samples.
static Tensor crossEntropy(const Tensor &input, const Tensor &target,
                           const CrossEntropyFuncOptions &options) {
  double eps = options.label_smoothing();
  EMBER_CHECK_VALUE(eps >= 0 && eps <= 1,
                    "label_smoothing must be between 0.0 and 1.0. Got: ", eps);
  EMBER_CHECK_VALUE(input.dim() >= 1,
                    "cross_entropy: input tensor should be 1D or more "
                    "(classes, or batch then classes), but got a 0-d input");
  const Tensor &weight = options.weight();
  Reduction r = options.reduction();
  int64_t classDim = input.dim() == 1 ? 0 : 1;
  int64_t C = input.size(classDim);
  if (input.sizes() == target.sizes()) {
    EMBER_CHECK_TYPE(isFloatingType(target.dtype()),
                     "Expected floating point type for target with class "
                     "probabilities, got ",
                     toString(target.dtype()));
    EMBER_CHECK_VALUE(options.ignore_index() < 0,
                      "ignore_index is not supported for floating point "
                      "target");
    if (weight.defined())
      EMBER_CHECK_VALUE(weight.dim() == 1 && weight.numel() == C,
                        "weight tensor should be defined either for all ", C,
                        " classes or no classes but got weight tensor of "
                        "shape: ",
                        weight.sizes());
    Tensor logp = ember::log_softmax(input, classDim);
    Tensor t = eps > 0 ? target * (1 - eps) + eps / double(C) : target;
    Tensor prod = logp * t;
    if (weight.defined())
      prod = prod * weight.view(classShape(input, classDim));
    switch (r.kind()) {
    case Reduction::None:
      return -prod.sum({classDim});
    case Reduction::Sum:
      return -prod.sum();
    default:
      return -prod.sum() / double(C == 0 ? 0 : input.numel() / C);
    }
  }
  auto [x, t] = checkClassTarget("cross_entropy", input, target, weight);
  checkTargetRange(t, x.size(1), options.ignore_index());
  Tensor logp = ember::log_softmax(x, 1);
  auto [loss, w] = nllTerms(logp, t, weight, options.ignore_index());
  Tensor nll = reduceWeighted(loss, w, r);
  Tensor out = nll;
  if (eps > 0) {
    Tensor lw = weight.defined() ? logp * weight.view(classShape(x, 1)) : logp;
    Tensor smooth = ember::where(t != options.ignore_index(), -lw.sum({1}),
                                 zeros({}, logp.options()));
    Tensor s = reduceWeighted(smooth, w, r);
    out = nll * (1 - eps) + s * (eps / double(C));
  }
  if (input.dim() == 1 && r.kind() == Reduction::None)
    out = out.squeeze(0);
  return out;
}

namespace {
// -(y log x + (1 - y) log(1 - x)), each log clamped at -100 (as PyTorch, so
// that 0 * log(0) stays finite), with PyTorch's gradient (x - y) /
// max(x (1 - x), 1e-12): differentiating the clamped logs instead gives
// 0 * inf = NaN where a probability is exactly 0 or 1, as a saturated
// sigmoid's often is.
struct BinaryCrossEntropyBackward
    : autograd::Function<BinaryCrossEntropyBackward> {
  static Tensor forward(autograd::AutogradContext *ctx, const Tensor &x,
                        const Tensor &y) {
    ctx->save_for_backward({x, y});
    return (y - 1) * ember::clamp_min(ember::log1p(-x), -100) -
           y * ember::clamp_min(ember::log(x), -100);
  }
  static autograd::variable_list backward(autograd::AutogradContext *ctx,
                                          autograd::variable_list grads) {
    autograd::variable_list s = ctx->get_saved_variables();
    const Tensor &x = s[0], &y = s[1];
    Tensor gx, gy;
    if (ctx->needs_input_grad(0))
      gx = grads[0] * (x - y) / ember::clamp_min(x * (1 - x), 1e-12);
    if (ctx->needs_input_grad(1))
      gy = grads[0] * (ember::clamp_min(ember::log1p(-x), -100) -
                       ember::clamp_min(ember::log(x), -100));
    return {gx, gy};
  }
};
} // namespace

static Tensor
binary_crossEntropy(const Tensor &input, const Tensor &target,
                    const BinaryCrossEntropyFuncOptions &options) {
  checkSameSize("binary_cross_entropy:", input, target);
  EMBER_CHECK_TYPE(isFloatingType(input.dtype()),
                   "binary_cross_entropy: expected a floating input of "
                   "probabilities, but got ",
                   toString(input.dtype()));
  if (input.numel() > 0) {
    Tensor inRange = (input >= 0).logical_and(input <= 1);
    EMBER_CHECK_VALUE(inRange.all().item<bool>(),
                      "all elements of input should be between 0 and 1");
  }
  Tensor loss = BinaryCrossEntropyBackward::apply(input, target);
  if (options.weight().defined())
    loss = loss * options.weight();
  return reduce(loss, options.reduction());
}

static Tensor binaryCrossEntropyWithLogits(
    const Tensor &input, const Tensor &target,
    const BinaryCrossEntropyWithLogitsFuncOptions &options) {
  checkSameSize("binary_cross_entropy_with_logits:", input, target);
  // (1 - t) x - lw log(sigmoid(x)), lw = 1 + (pos_weight - 1) t: the log
  // sigmoid is computed stably (F::logsigmoid).
  Tensor logsig = logsigmoid(input);
  Tensor loss;
  if (options.pos_weight().defined()) {
    Tensor lw = (options.pos_weight() - 1) * target + 1;
    loss = (1 - target) * input - lw * logsig;
  } else {
    loss = (1 - target) * input - logsig;
  }
  if (options.weight().defined())
    loss = loss * options.weight();
  return reduce(loss, options.reduction());
}

// Note [Functional forms through the op table]
// The nn::functional losses (and conv1d/conv2d, pad, group_norm and
// scaled_dot_product_attention) call their ember:: op, as libtorch's
// F:: forms call torch:: ops, so that whatever sits on the op's dispatch
// path applies to them too: its autocast policy (Note [Autocast]), the
// profiler's row. The op's native function holds the math.
Tensor mse_loss(const Tensor &input, const Tensor &target,
                const MSELossFuncOptions &options) {
  return ember::mse_loss(input, target, options.reduction().kind());
}
Tensor l1_loss(const Tensor &input, const Tensor &target,
               const L1LossFuncOptions &options) {
  return ember::l1_loss(input, target, options.reduction().kind());
}
Tensor smooth_l1_loss(const Tensor &input, const Tensor &target,
                      const SmoothL1LossFuncOptions &options) {
  return ember::smooth_l1_loss(input, target, options.reduction().kind(),
                               options.beta());
}
Tensor huber_loss(const Tensor &input, const Tensor &target,
                  const HuberLossFuncOptions &options) {
  return ember::huber_loss(input, target, options.reduction().kind(),
                           options.delta());
}
Tensor nll_loss(const Tensor &input, const Tensor &target,
                const NLLLossFuncOptions &options) {
  return ember::nll_loss(input, target, op_args::optional_of(options.weight()),
                         options.reduction().kind(), options.ignore_index());
}
Tensor cross_entropy(const Tensor &input, const Tensor &target,
                     const CrossEntropyFuncOptions &options) {
  return ember::cross_entropy_loss(
      input, target, op_args::optional_of(options.weight()),
      options.reduction().kind(), options.ignore_index(),
      options.label_smoothing());
}
Tensor binary_cross_entropy(const Tensor &input, const Tensor &target,
                            const BinaryCrossEntropyFuncOptions &options) {
  return ember::binary_cross_entropy(input, target,
                                     op_args::optional_of(options.weight()),
                                     options.reduction().kind());
}
Tensor binary_cross_entropy_with_logits(
    const Tensor &input, const Tensor &target,
    const BinaryCrossEntropyWithLogitsFuncOptions &options) {
  return ember::binary_cross_entropy_with_logits(
      input, target, op_args::optional_of(options.weight()),
      op_args::optional_of(options.pos_weight()), options.reduction().kind());
}

} // namespace ember::nn::functional

namespace ember::native {

namespace F = ember::nn::functional;

Tensor mse_loss(const Tensor &self, const Tensor &target, int64_t reduction) {
  return F::mseLoss(self, target, Reduction::from_int(reduction));
}

Tensor l1_loss(const Tensor &self, const Tensor &target, int64_t reduction) {
  return F::l1Loss(self, target, Reduction::from_int(reduction));
}

Tensor smooth_l1_loss(const Tensor &self, const Tensor &target,
                      int64_t reduction, double beta) {
  return F::smooth_l1Loss(
      self, target,
      F::SmoothL1LossFuncOptions(Reduction::from_int(reduction)).beta(beta));
}

Tensor huber_loss(const Tensor &self, const Tensor &target, int64_t reduction,
                  double delta) {
  return F::huberLoss(
      self, target,
      F::HuberLossFuncOptions(Reduction::from_int(reduction)).delta(delta));
}

Tensor nll_loss(const Tensor &self, const Tensor &target,
                const std::optional<Tensor> &weight, int64_t reduction,
                int64_t ignore_index) {
  return F::nllLoss(self, target,
                    F::NLLLossFuncOptions(Reduction::from_int(reduction))
                        .weight(weight.value_or(Tensor()))
                        .ignore_index(ignore_index));
}

Tensor cross_entropy_loss(const Tensor &self, const Tensor &target,
                          const std::optional<Tensor> &weight,
                          int64_t reduction, int64_t ignore_index,
                          double label_smoothing) {
  return F::crossEntropy(
      self, target,
      F::CrossEntropyFuncOptions(Reduction::from_int(reduction))
          .weight(weight.value_or(Tensor()))
          .ignore_index(ignore_index)
          .label_smoothing(label_smoothing));
}

Tensor binary_cross_entropy(const Tensor &self, const Tensor &target,
                            const std::optional<Tensor> &weight,
                            int64_t reduction) {
  return F::binary_crossEntropy(
      self, target,
      F::BinaryCrossEntropyFuncOptions(Reduction::from_int(reduction))
          .weight(weight.value_or(Tensor())));
}

Tensor binary_cross_entropy_with_logits(const Tensor &self,
                                        const Tensor &target,
                                        const std::optional<Tensor> &weight,
                                        const std::optional<Tensor> &pos_weight,
                                        int64_t reduction) {
  return F::binaryCrossEntropyWithLogits(
      self, target,
      F::BinaryCrossEntropyWithLogitsFuncOptions(Reduction::from_int(reduction))
          .weight(weight.value_or(Tensor()))
          .pos_weight(pos_weight.value_or(Tensor())));
}

// ATen's kl_div (ops.yaml; ember has no F::kl_div yet): pointwise
// target * (log(target) - input) for log-probabilities `input`, 0 where
// target is 0 (xlogy); with log_target, exp(target) * (target - input).
Tensor kl_div(const Tensor &self, const Tensor &target, int64_t reduction,
              bool log_target) {
  Tensor loss = log_target
                    ? ember::exp(target) * (target - self)
                    : target * ember::log(target.masked_fill(target == 0, 1)) -
                          target * self;
  return nn::functional::reduce(loss, Reduction::from_int(reduction));
}

} // namespace ember::native
