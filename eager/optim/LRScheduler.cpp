#include "eager/optim/LRScheduler.h"

#include <cmath>
#include <numbers>

namespace ember::optim {

LRScheduler::LRScheduler(Optimizer &optimizer)
    : optimizer_(optimizer), base_lrs_(get_current_lrs()) {}

std::vector<double> LRScheduler::get_current_lrs() const {
  std::vector<double> lrs;
  lrs.reserve(optimizer_.param_groups().size());
  for (const auto &group : optimizer_.param_groups())
    lrs.push_back(group.options().get_lr());
  return lrs;
}

void LRScheduler::set_optimizer_lrs(const std::vector<double> &lrs) {
  auto &groups = optimizer_.param_groups();
  EMBER_CHECK(lrs.size() == groups.size(), "the scheduler computed ",
              lrs.size(), " learning rates for an optimizer with ",
              groups.size(),
              " param groups; do not add param groups after creating a "
              "scheduler");
  for (size_t i = 0; i < groups.size(); ++i)
    groups[i].options().set_lr(lrs[i]);
}

void LRScheduler::initial_step() {
  last_epoch_ = -1;
  step();
}

void LRScheduler::step() {
  ++last_epoch_;
  std::vector<double> lrs = get_lrs();
  set_optimizer_lrs(lrs);
  last_lr_ = std::move(lrs);
}

StepLR::StepLR(Optimizer &optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK_VALUE(step_size > 0,
                    "StepLR: step_size must be a positive number of epochs, "
                    "but got ",
                    step_size);
  initial_step();
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0)
    return lrs;
  for (double &lr : lrs)
    lr *= gamma_;
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer &optimizer, int64_t T_max,
                                     double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK_VALUE(T_max > 0,
                    "CosineAnnealingLR: T_max must be a positive number of "
                    "epochs, but got ",
                    T_max);
  initial_step();
}

// Note [Recursive cosine annealing]
// As torch.optim.lr_scheduler.CosineAnnealingLR.get_lr, each epoch's rate is
// computed from the previous one (so changes made to a group's lr between
// steps carry on), not from the closed form eta_min + (base_lr - eta_min) *
// (1 + cos(pi * epoch / T_max)) / 2; the two agree when nothing else touches
// the rates. At epochs where the closed form's previous value is eta_min
// (epoch - 1 - T_max a multiple of 2 T_max) the ratio would divide by zero,
// so PyTorch (and ember) adds the increment of the cosine instead.
std::vector<double> CosineAnnealingLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  const double pi = std::numbers::pi, T = double(T_max_);
  const double e = double(last_epoch_);
  if (last_epoch_ == 0)
    return lrs;
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t i = 0; i < lrs.size(); ++i)
      lrs[i] += (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    return lrs;
  }
  const double ratio =
      (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T));
  for (double &lr : lrs)
    lr = ratio * (lr - eta_min_) + eta_min_;
  return lrs;
}

} // namespace ember::optim
