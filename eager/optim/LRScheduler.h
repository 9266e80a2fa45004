#pragma once
/// Learning-rate schedulers (torch.optim.lr_scheduler; libtorch's
/// torch/optim/schedulers/): StepLR and CosineAnnealingLR.

#include "eager/optim/Optimizer.h"

#include <cstdint>
#include <vector>

namespace ember::optim {

/// The base of the schedulers. Following PyTorch, constructing a scheduler
/// performs the initial step (last_epoch becomes 0, the learning rates stay
/// those of the param groups); each step() then advances last_epoch by one
/// and writes the new learning rates into the optimizer's param groups.
class LRScheduler {
public:
  explicit LRScheduler(Optimizer &optimizer);
  virtual ~LRScheduler() = default;

  /// Advances one epoch and updates the optimizer's learning rates.
  void step();
  /// The learning rates computed by the last step(), one per param group.
  const std::vector<double> &get_last_lr() const { return last_lr_; }
  /// The number of step() calls so far (0 right after construction).
  int64_t last_epoch() const { return last_epoch_; }
  /// The learning rates of the param groups when the scheduler was made.
  const std::vector<double> &base_lrs() const { return base_lrs_; }

protected:
  /// The learning rates for epoch last_epoch(), from the current ones
  /// (PyTorch's get_lr(): the recursive form).
  virtual std::vector<double> get_lrs() = 0;
  /// The learning rates the param groups have now.
  std::vector<double> get_current_lrs() const;
  /// Runs the initial step; derived constructors call it last.
  void initial_step();

  Optimizer &optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;

private:
  void set_optimizer_lrs(const std::vector<double> &lrs);
};

/// Multiplies the learning rate by gamma every step_size epochs:
/// lr = base_lr * gamma^(epoch / step_size) (torch.optim.lr_scheduler.
/// StepLR).
class StepLR : public LRScheduler {
public:
  /// Raises ValueError when step_size is not positive.
  StepLR(Optimizer &optimizer, int64_t step_size, double gamma = 0.1);

private:
  std::vector<double> get_lrs() override;
  int64_t step_size_;
  double gamma_;
};

/// Cosine annealing from the initial learning rate down to eta_min over
/// T_max epochs (and back up, periodically): lr = eta_min + (base_lr -
/// eta_min) * (1 + cos(pi * epoch / T_max)) / 2, computed recursively as
/// torch.optim.lr_scheduler.CosineAnnealingLR does.
class CosineAnnealingLR : public LRScheduler {
public:
  /// Raises ValueError when T_max is not positive.
  CosineAnnealingLR(Optimizer &optimizer, int64_t T_max, double eta_min = 0);

private:
  std::vector<double> get_lrs() override;
  int64_t T_max_;
  double eta_min_;
};

} // namespace ember::optim
