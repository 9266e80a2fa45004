#pragma once
/// ember::optim::RMSprop (torch/optim/rmsprop.h, torch.optim.RMSprop).

#include "eager/optim/Optimizer.h"

namespace ember::optim {

/// Options of RMSprop: `RMSpropOptions(1e-2).alpha(0.9).centered(true)`.
struct RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  EMBER_ARG(double, lr) = 1e-2;
  EMBER_ARG(double, alpha) = 0.99;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(bool, centered) = false;

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  double get_lr() const override { return lr(); }
  void set_lr(double lr) override { this->lr(lr); }
  friend bool operator==(const RMSpropOptions &a, const RMSpropOptions &b);
};

/// RMSprop's per-parameter state: step count, running average of squared
/// gradients, momentum buffer (with momentum) and running average of
/// gradients (when centered).
struct RMSpropParamState
    : public OptimizerCloneableParamState<RMSpropParamState> {
  EMBER_ARG(int64_t, step) = 0;
  EMBER_ARG(Tensor, square_avg);
  EMBER_ARG(Tensor, momentum_buffer) = {};
  EMBER_ARG(Tensor, grad_avg) = {};

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  friend bool operator==(const RMSpropParamState &a,
                         const RMSpropParamState &b);
};

/// RMSprop (torch.optim.RMSprop, single-tensor form). For each parameter p
/// with gradient g:
///
///   g = g + weight_decay * p                     (if weight_decay != 0)
///   s = alpha * s + (1 - alpha) * g * g
///   avg = sqrt(s - a * a) with a = lerp(a, g, 1 - alpha) (centered)
///       | sqrt(s);  avg = avg + eps
///   b = momentum * b + g / avg;  p = p - lr * b  (if momentum > 0)
///   p = p - lr * g / avg                         (otherwise)
class RMSprop : public Optimizer {
public:
  /// Raises ValueError for a negative lr, eps, momentum, weight_decay or
  /// alpha, and for no parameters.
  explicit RMSprop(std::vector<OptimizerParamGroup> param_groups,
                   RMSpropOptions defaults = {});
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {});

  Tensor step(LossClosure closure = nullptr) override;

protected:
  std::string name() const override { return "RMSprop"; }
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<RMSpropParamState>();
  }
};

} // namespace ember::optim
