#pragma once
/// ember::optim::SGD: stochastic gradient descent with optional momentum,
/// dampening, weight decay and Nesterov momentum (torch/optim/sgd.h,
/// torch.optim.SGD).

#include "eager/optim/Optimizer.h"

namespace ember::optim {

/// Options of SGD. The learning rate has no default:
/// `SGDOptions(0.1).momentum(0.9).nesterov(true)`. A double converts
/// implicitly, so `SGD(params, 0.1)` works.
struct SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}
  EMBER_ARG(double, lr);
  EMBER_ARG(double, momentum) = 0;
  EMBER_ARG(double, dampening) = 0;
  EMBER_ARG(double, weight_decay) = 0;
  EMBER_ARG(bool, nesterov) = false;

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  double get_lr() const override { return lr(); }
  void set_lr(double lr) override { this->lr(lr); }
  friend bool operator==(const SGDOptions &a, const SGDOptions &b);
};

/// SGD's per-parameter state: the momentum buffer (only with momentum).
struct SGDParamState : public OptimizerCloneableParamState<SGDParamState> {
  EMBER_ARG(Tensor, momentum_buffer);

public:
  void serialize(serialize::OutputArchive &archive) const override;
  void serialize(serialize::InputArchive &archive) override;
  friend bool operator==(const SGDParamState &a, const SGDParamState &b);
};

/// Stochastic gradient descent, with PyTorch's update rule (for each
/// parameter p with gradient g, in torch.optim.SGD's single-tensor form):
///
///   g = g + weight_decay * p                     (if weight_decay != 0)
///   b = g (first step) | momentum * b + (1 - dampening) * g
///   g = g + momentum * b (nesterov) | b          (if momentum != 0)
///   p = p - lr * g
class SGD : public Optimizer {
public:
  /// Raises ValueError for a negative lr, momentum or weight_decay, for
  /// nesterov without momentum or with dampening, and for no groups.
  explicit SGD(std::vector<OptimizerParamGroup> param_groups,
               SGDOptions defaults);
  explicit SGD(std::vector<Tensor> params, SGDOptions defaults);

  Tensor step(LossClosure closure = nullptr) override;

protected:
  std::string name() const override { return "SGD"; }
  std::unique_ptr<OptimizerParamState> make_param_state() const override {
    return std::make_unique<SGDParamState>();
  }
};

} // namespace ember::optim
