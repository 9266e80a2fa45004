#pragma once
/// Grad modes (torch::NoGradGuard, torch::AutoGradMode, InferenceMode): a
/// thread-local switch that decides whether ops record autograd history.

namespace ember {

/// Thread-local: is gradient recording on? (torch.is_grad_enabled)
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// RAII: sets grad mode for the current scope, restoring it after.
class AutoGradMode {
public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) {
    GradMode::set_enabled(enabled);
  }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode &) = delete;
  AutoGradMode &operator=(const AutoGradMode &) = delete;

private:
  bool prev_;
};

/// RAII: no autograd history inside the scope (torch::NoGradGuard).
class NoGradGuard : public AutoGradMode {
public:
  NoGradGuard() : AutoGradMode(false) {}
};

/// torch.set_grad_enabled(bool) as a function: sets the thread's mode.
inline void set_grad_enabled(bool enabled) { GradMode::set_enabled(enabled); }
inline bool is_grad_enabled() { return GradMode::is_enabled(); }

/// RAII: inference mode (c10::InferenceMode). Grad recording is off, and
/// tensors created inside are inference tensors: they never take part in
/// autograd later (saving one for backward raises), and in-place updates to
/// them outside inference mode are refused.
class InferenceMode {
public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode &) = delete;
  InferenceMode &operator=(const InferenceMode &) = delete;
  /// Is inference mode on on this thread?
  static bool is_enabled();

private:
  bool prev_inference_, prev_grad_;
};

} // namespace ember
