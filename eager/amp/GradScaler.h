#pragma once
/// Loss scaling for float16 training (torch.amp.GradScaler):
///
///   ember::amp::GradScaler scaler(ember::kCUDA);
///   for (...) {
///     opt.zero_grad();
///     Tensor loss;
///     {
///       ember::amp::autocast ac(ember::kCUDA, ember::kHalf);
///       loss = loss_fn(model->forward(x), y);
///     }
///     scaler.scale(loss).backward();
///     scaler.unscale_(opt);                    // optional: to clip
///     ember::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
///     scaler.step(opt);                        // skipped on inf/NaN grads
///     scaler.update();
///   }
///
/// Note [Loss scaling]
/// scale() multiplies outputs by the scale S (a float32 value, 2^16 at
/// first), so that small float16 gradients do not flush to zero. unscale_()
/// multiplies every gradient of an optimizer's parameters by 1/S in place
/// and records whether any of them holds an inf or a NaN; step() unscales
/// first unless that was done, then runs the optimizer's step only when
/// none did. update() backs S off (S * backoff_factor) after a step with
/// infs, and grows it (S * growth_factor, when that is finite) after
/// growth_interval steps in a row without. The defaults, the order each
/// optimizer must follow (unscale_ at most once, then step, between two
/// update()s) and the errors are PyTorch's. Gradients are unscaled in their
/// own dtype; float16 gradients are refused, as PyTorch refuses them
/// (parameters, and so gradients, are meant to stay float32 under
/// autocast).

#include "eager/Tensor.h"
#include "eager/nn/Serialize.h"

#include <optional>
#include <unordered_map>

namespace ember {
namespace optim {
class Optimizer;
}

namespace amp {

class GradScaler {
public:
  /// torch.amp.GradScaler(device, init_scale, growth_factor,
  /// backoff_factor, growth_interval, enabled). On CUDA without a GPU it
  /// warns and disables itself, as PyTorch.
  explicit GradScaler(DeviceType device = kCUDA, double init_scale = 65536.0,
                      double growth_factor = 2.0, double backoff_factor = 0.5,
                      int64_t growth_interval = 2000, bool enabled = true);

  /// outputs * scale (outputs unchanged when disabled).
  Tensor scale(const Tensor &outputs);
  std::vector<Tensor> scale(const std::vector<Tensor> &outputs);

  /// Divides the gradients of the optimizer's parameters by the scale, in
  /// place, and records whether any is inf/NaN.
  void unscale_(optim::Optimizer &optimizer);
  /// Unscales (unless unscale_ was called) and runs optimizer.step() when
  /// every gradient is finite. Returns the step's result, or nullopt when
  /// the step was skipped.
  std::optional<Tensor> step(optim::Optimizer &optimizer);
  /// Updates the scale after the iteration's step()s; `new_scale` sets it
  /// instead.
  void update(std::optional<double> new_scale = std::nullopt);
  /// Sets the scale from a one-element floating tensor.
  void update(const Tensor &new_scale);

  /// The current scale (1.0 when disabled).
  double get_scale() const;
  double get_growth_factor() const { return growth_factor_; }
  void set_growth_factor(double f);
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double f);
  int64_t get_growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t n);
  /// Steps in a row without an inf since the scale last changed.
  int64_t get_growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return enabled_; }

  /// What state_dict() holds (PyTorch's keys: scale, growth_factor,
  /// backoff_factor, growth_interval, _growth_tracker).
  struct State {
    double scale = 65536.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
    int64_t growth_tracker = 0;
  };
  State state_dict() const;
  void load_state_dict(const State &state);

private:
  enum class Stage { ready, unscaled, stepped };
  struct PerOptimizer {
    Stage stage = Stage::ready;
    bool found_inf = false;
    bool checked = false; ///< unscale_ ran since the last update
  };
  void check_factors() const;

  DeviceType device_;
  bool enabled_;
  float scale_; ///< float32, as PyTorch's scale tensor
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  int64_t growth_tracker_ = 0;
  bool scaled_ = false; ///< scale() ran (unscale_ needs it)
  std::unordered_map<const optim::Optimizer *, PerOptimizer> per_optimizer_;
};

} // namespace amp

namespace serialize {
/// ember::save(scaler, path) / ember::load(scaler, path).
OutputArchive &operator<<(OutputArchive &archive,
                          const amp::GradScaler &scaler);
InputArchive &operator>>(InputArchive &archive, amp::GradScaler &scaler);
} // namespace serialize

} // namespace ember
