#pragma once
/// ember::optim::AdamW: Adam with decoupled weight decay (torch/optim/
/// adamw.h, torch.optim.AdamW).

#include "eager/optim/Optimizer.h"

#include <tuple>

namespace ember::optim {

/// Options of AdamW; as AdamOptions but weight_decay defaults to 1e-2.
struct AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  using betas_t = std::tuple<double, double>;
  EMBER_ARG(double, lr) = 1e-3;
  EMBER_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(double, weight_decay) = 1e-2;
  EMBER_ARG(bool, amsgrad) = false;

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  double get_lr() const override { return lr(); }
  void set_lr(double lr) override { this->lr(lr); }
  friend bool operator==(const AdamWOptions &a, const AdamWOptions &b);
};

/// AdamW's per-parameter state (the same fields as Adam's).
struct AdamWParamState : public OptimizerCloneableParamState<AdamWParamState> {
  EMBER_ARG(int64_t, step) = 0;
  EMBER_ARG(Tensor, exp_avg);
  EMBER_ARG(Tensor, exp_avg_sq);
  EMBER_ARG(Tensor, max_exp_avg_sq) = {};

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  friend bool operator==(const AdamWParamState &a, const AdamWParamState &b);
};

/// AdamW (torch.optim.AdamW, single-tensor form): Adam's update, with the
/// weight decay applied to the parameter instead of the gradient, before
/// the moments are updated:
///
///   p = p * (1 - lr * weight_decay)
///   (then Adam's step with weight_decay = 0)
class AdamW : public Optimizer {
public:
  /// Raises ValueError for a negative lr, eps or weight_decay, betas outside
  /// [0, 1), and for no parameters.
  explicit AdamW(std::vector<OptimizerParamGroup> param_groups,
                 AdamWOptions defaults = {});
  explicit AdamW(std::vector<Tensor> params, AdamWOptions defaults = {});

  Tensor step(LossClosure closure = nullptr) override;

protected:
  std::string name() const override { return "AdamW"; }
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<AdamWParamState>();
  }
};

} // namespace ember::optim
