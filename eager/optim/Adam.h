#pragma once
/// ember::optim::Adam (torch/optim/adam.h, torch.optim.Adam).

#include "eager/optim/Optimizer.h"

#include <tuple>

namespace ember::optim {

/// Options of Adam: `AdamOptions(1e-3).betas({0.9, 0.999}).amsgrad(true)`.
struct AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  using betas_t = std::tuple<double, double>;
  EMBER_ARG(double, lr) = 1e-3;
  EMBER_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, amsgrad) = false;

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  double get_lr() const override { return lr(); }
  void set_lr(double lr) override { this->lr(lr); }
  friend bool operator==(const AdamOptions &a, const AdamOptions &b);
};

/// Adam's per-parameter state: step count, first and second moment running
/// averages, and (with amsgrad) the running maximum of the second moment.
struct AdamParamState : public OptimizerCloneableParamState<AdamParamState> {
  EMBER_ARG(int64_t, step) = 0;
  EMBER_ARG(Tensor, exp_avg);
  EMBER_ARG(Tensor, exp_avg_sq);
  EMBER_ARG(Tensor, max_exp_avg_sq) = {};

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  friend bool operator==(const AdamParamState &a, const AdamParamState &b);
};

/// Adam, with PyTorch's update rule (torch.optim.Adam, single-tensor form).
/// For each parameter p with gradient g, at step t = 1, 2, ...:
///
///   g = g + weight_decay * p                     (if weight_decay != 0)
///   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
///   vmax = max(vmax, v), used instead of v       (if amsgrad)
///   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
class Adam : public Optimizer {
public:
  /// Raises ValueError for a negative lr, eps or weight_decay, betas outside
  /// [0, 1), and for no parameters.
  explicit Adam(std::vector<OptimizerParamGroup> param_groups,
                AdamOptions defaults = {});
  explicit Adam(std::vector<Tensor> params, AdamOptions defaults = {});

  Tensor step(LossClosure closure = nullptr) override;

protected:
  std::string name() const override { return "Adam"; }
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<AdamParamState>();
  }
};

} // namespace ember::optim
