#include "eager/amp/GradScaler.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"
#include "eager/optim/Optimizer.h"
#include "runtime/Cuda.h"
#include "runtime/Logging.h"

#include <cmath>

namespace ember {
namespace amp {

GradScaler::GradScaler(DeviceType device, double init_scale,
                       double growth_factor, double backoff_factor,
                       int64_t growth_interval, bool enabled)
    : device_(device), enabled_(enabled), scale_(float(init_scale)),
      growth_factor_(growth_factor), backoff_factor_(backoff_factor),
      growth_interval_(growth_interval) {
  EMBER_CHECK_VALUE(std::isfinite(scale_) && scale_ > 0,
                    "GradScaler: init_scale must be a positive finite "
                    "float32 value, got ",
                    init_scale);
  check_factors();
  if (enabled_ && device_ == kCUDA && !cuda::is_available()) {
    logging::warn_once("gradscaler-no-cuda",
                       "GradScaler(cuda) is enabled, but CUDA is not "
                       "available (no GPU or driver); disabling it. Pass "
                       "ember::kCPU to scale CPU training.");
    enabled_ = false;
  }
}

void GradScaler::check_factors() const {
  EMBER_CHECK_VALUE(growth_factor_ > 1.0,
                    "GradScaler: growth_factor should be > 1, got ",
                    growth_factor_);
  EMBER_CHECK_VALUE(backoff_factor_ > 0.0 && backoff_factor_ < 1.0,
                    "GradScaler: backoff_factor should be in (0, 1), got ",
                    backoff_factor_);
  EMBER_CHECK_VALUE(growth_interval_ > 0,
                    "GradScaler: growth_interval should be a positive "
                    "integer, got ",
                    growth_interval_);
}

Tensor GradScaler::scale(const Tensor &outputs) {
  if (!enabled_)
    return outputs;
  EMBER_CHECK(outputs.defined(), "GradScaler.scale: the output is undefined");
  scaled_ = true;
  // A float32 0-dim tensor, as PyTorch's scale: a float16 loss stays
  // float16 (a 0-dim tensor does not promote a dimensioned one), a 0-dim
  // loss becomes float32.
  Tensor s = full(std::vector<int64_t>{}, double(scale_),
                  TensorOptions(kFloat).device(outputs.device()));
  return outputs * s;
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor> &outputs) {
  std::vector<Tensor> r;
  r.reserve(outputs.size());
  for (const Tensor &t : outputs)
    r.push_back(scale(t));
  return r;
}

void GradScaler::unscale_(optim::Optimizer &optimizer) {
  if (!enabled_)
    return;
  PerOptimizer &st = per_optimizer_[&optimizer];
  EMBER_CHECK(st.stage != Stage::unscaled,
              "unscale_() has already been called on this optimizer since "
              "the last update().");
  EMBER_CHECK(st.stage != Stage::stepped, "unscale_() is being called after "
                                          "step(): call it before step(), "
                                          "once per update().");
  EMBER_CHECK(scaled_, "Attempted unscale_ but the scaler has scaled nothing. "
                       "This may indicate your script did not use "
                       "scaler.scale(loss or outputs) earlier in the "
                       "iteration.");
  NoGradGuard no_grad;
  // Every gradient is checked before any is written, so that a refusal
  // leaves them all as they were.
  std::vector<Tensor> grads;
  for (const optim::OptimizerParamGroup &g : optimizer.param_groups())
    for (const Tensor &p : g.params())
      if (p.grad().defined()) {
        EMBER_CHECK_VALUE(p.grad().dtype() != kHalf,
                          "Attempting to unscale FP16 gradients: keep the "
                          "parameters in float32 (autocast casts them for "
                          "the ops that run in float16).");
        grads.push_back(p.grad());
      }
  // PyTorch's inv_scale: 1/scale computed in double, rounded to float32.
  const double inv = double(float(1.0 / double(scale_)));
  std::vector<Tensor> bad;
  for (const Tensor &grad : grads) {
    // inf * 0 and NaN * 0 are NaN, which is != 0; finite * 0 is +-0.
    bad.push_back(grad.mul(0).ne(0).any());
    grad.mul_(inv);
  }
  st.found_inf = !bad.empty() && stack(bad).any().item<bool>();
  // No gradient, no check: step() raises, as PyTorch's.
  st.checked = !grads.empty();
  st.stage = Stage::unscaled;
}

std::optional<Tensor> GradScaler::step(optim::Optimizer &optimizer) {
  if (!enabled_)
    return optimizer.step();
  PerOptimizer &st = per_optimizer_[&optimizer];
  EMBER_CHECK(st.stage != Stage::stepped,
              "step() has already been called since the last update().");
  if (st.stage == Stage::ready)
    unscale_(optimizer);
  EMBER_CHECK(st.checked, "No inf checks were recorded for this optimizer.");
  std::optional<Tensor> r;
  if (!st.found_inf)
    r = optimizer.step();
  st.stage = Stage::stepped;
  return r;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_)
    return;
  if (new_scale) {
    EMBER_CHECK_VALUE(std::isfinite(float(*new_scale)) && *new_scale > 0,
                      "GradScaler.update: new_scale must be a positive "
                      "finite float32 value, got ",
                      *new_scale);
    scale_ = float(*new_scale);
  } else {
    bool any = false, found = false;
    for (const auto &[opt, st] : per_optimizer_) {
      any = any || st.checked;
      found = found || (st.checked && st.found_inf);
    }
    EMBER_CHECK(any, "No inf checks were recorded prior to update().");
    // PyTorch's _amp_update_scale_.
    if (found) {
      scale_ = float(double(scale_) * backoff_factor_);
      growth_tracker_ = 0;
    } else if (++growth_tracker_ == growth_interval_) {
      float grown = float(double(scale_) * growth_factor_);
      if (std::isfinite(grown))
        scale_ = grown;
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

void GradScaler::update(const Tensor &new_scale) {
  EMBER_CHECK_VALUE(new_scale.defined() && new_scale.numel() == 1 &&
                        new_scale.is_floating_point() &&
                        !new_scale.requires_grad(),
                    "new_scale should be a float or a 1-element floating "
                    "tensor with requires_grad=False.");
  update(new_scale.item<double>());
}

double GradScaler::get_scale() const { return enabled_ ? scale_ : 1.0; }

namespace {
/// Sets `field` to `value` unless `check` raises, which leaves it as it was.
template <class T, class Check>
void set_checked(T &field, T value, const Check &check) {
  T was = field;
  field = value;
  try {
    check();
  } catch (...) {
    field = was;
    throw;
  }
}
} // namespace

void GradScaler::set_growth_factor(double f) {
  set_checked(growth_factor_, f, [this] { check_factors(); });
}
void GradScaler::set_backoff_factor(double f) {
  set_checked(backoff_factor_, f, [this] { check_factors(); });
}
void GradScaler::set_growth_interval(int64_t n) {
  set_checked(growth_interval_, n, [this] { check_factors(); });
}

GradScaler::State GradScaler::state_dict() const {
  return {scale_, growth_factor_, backoff_factor_, growth_interval_,
          growth_tracker_};
}

void GradScaler::load_state_dict(const State &s) {
  GradScaler check(kCPU, s.scale, s.growth_factor, s.backoff_factor,
                   s.growth_interval);
  EMBER_CHECK_VALUE(s.growth_tracker >= 0,
                    "GradScaler.load_state_dict: _growth_tracker ",
                    s.growth_tracker, " is negative");
  scale_ = float(s.scale);
  growth_factor_ = s.growth_factor;
  backoff_factor_ = s.backoff_factor;
  growth_interval_ = s.growth_interval;
  growth_tracker_ = s.growth_tracker;
}

} // namespace amp

namespace serialize {
OutputArchive &operator<<(OutputArchive &archive,
                          const amp::GradScaler &scaler) {
  if (!scaler.is_enabled()) // PyTorch's state_dict of a disabled scaler: {}
    return archive;
  amp::GradScaler::State s = scaler.state_dict();
  archive.write("scale", IValue(s.scale));
  archive.write("growth_factor", IValue(s.growth_factor));
  archive.write("backoff_factor", IValue(s.backoff_factor));
  archive.write("growth_interval", IValue(s.growth_interval));
  archive.write("_growth_tracker", IValue(s.growth_tracker));
  return archive;
}

InputArchive &operator>>(InputArchive &archive, amp::GradScaler &scaler) {
  amp::GradScaler::State s;
  IValue v;
  EMBER_CHECK(archive.try_read("scale", v),
              "The source state dict is empty, possibly because it was saved "
              "from a disabled instance of GradScaler.");
  s.scale = v.toDouble();
  archive.read("growth_factor", v);
  s.growth_factor = v.toDouble();
  archive.read("backoff_factor", v);
  s.backoff_factor = v.toDouble();
  archive.read("growth_interval", v);
  s.growth_interval = v.toInt();
  archive.read("_growth_tracker", v);
  s.growth_tracker = v.toInt();
  scaler.load_state_dict(s);
  return archive;
}
} // namespace serialize

} // namespace ember
