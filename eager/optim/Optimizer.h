#pragma once
/// ember::optim::Optimizer: the base of every optimizer (libtorch's
/// torch/optim/optimizer.h). An optimizer holds parameter groups (each a list
/// of parameters with its own options), per-parameter state (momentum
/// buffers, running averages, step counts), and updates the parameters in
/// place from their grad() on step().

#include "eager/Tensor.h"
#include "eager/nn/Options.h"
#include "eager/nn/Serialize.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ember {
namespace optim {

/// The state an optimizer keeps for one parameter (torch::optim::
/// OptimizerParamState). Each optimizer derives its own (SGDParamState, ...).
class OptimizerParamState {
public:
  OptimizerParamState() = default;
  // (a copy is another state: it gets its own replay_serial())
  OptimizerParamState(const OptimizerParamState &) {}
  OptimizerParamState &operator=(const OptimizerParamState &) { return *this; }
  OptimizerParamState(OptimizerParamState &&) noexcept {}
  OptimizerParamState &operator=(OptimizerParamState &&) noexcept {
    return *this;
  }
  virtual ~OptimizerParamState() = default;
  /// A copy of the derived state (its tensors are shared, not copied).
  virtual std::unique_ptr<OptimizerParamState> clone() const;
  /// Writes the state's fields into `archive`.
  virtual void serialize(serialize::OutputArchive &archive) const;
  /// Reads the state's fields back from `archive`.
  virtual void serialize(serialize::InputArchive &archive);

  /// Note [Replayed optimizer steps]: a number no other state object had,
  /// which a replayed step checks (a state made again at the same address
  /// is another state).
  uint64_t replay_serial() const { return serial_; }

private:
  static uint64_t next_serial();
  uint64_t serial_ = next_serial();
};

/// CRTP helper: implements clone() for a derived param state.
template <class Derived>
class OptimizerCloneableParamState : public OptimizerParamState {
public:
  std::unique_ptr<OptimizerParamState> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived &>(*this));
  }
};

/// The hyper-parameters of an optimizer or of one of its param groups
/// (torch::optim::OptimizerOptions). Every optimizer's options have a
/// learning rate, which the schedulers read and write through get_lr() /
/// set_lr().
class OptimizerOptions {
public:
  OptimizerOptions() = default;
  OptimizerOptions(const OptimizerOptions &) = default;
  OptimizerOptions &operator=(const OptimizerOptions &) = default;
  OptimizerOptions(OptimizerOptions &&) noexcept = default;
  OptimizerOptions &operator=(OptimizerOptions &&) noexcept = default;
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const;
  virtual void serialize(serialize::OutputArchive &archive) const;
  virtual void serialize(serialize::InputArchive &archive);
  /// The learning rate of these options.
  virtual double get_lr() const;
  /// Sets the learning rate of these options.
  virtual void set_lr(double lr);
};

/// CRTP helper: implements clone() for derived options.
template <class Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived &>(*this));
  }
};

/// One group of parameters optimized with the same options
/// (torch::optim::OptimizerParamGroup). A group built without options takes
/// the optimizer's defaults when it is added.
class OptimizerParamGroup {
public:
  OptimizerParamGroup(const OptimizerParamGroup &param_group)
      : params_(param_group.params()),
        options_(param_group.has_options() ? param_group.options().clone()
                                           : nullptr) {}
  OptimizerParamGroup &operator=(const OptimizerParamGroup &param_group) {
    params_ = param_group.params();
    options_ =
        param_group.has_options() ? param_group.options().clone() : nullptr;
    return *this;
  }
  OptimizerParamGroup(OptimizerParamGroup &&) noexcept = default;
  OptimizerParamGroup &operator=(OptimizerParamGroup &&) noexcept = default;
  /// A group that will use the optimizer's default options.
  OptimizerParamGroup(std::vector<Tensor> params)
      : params_(std::move(params)) {}
  /// A group with its own options (e.g. std::make_unique<SGDOptions>(0.01)).
  OptimizerParamGroup(std::vector<Tensor> params,
                      std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}

  bool has_options() const { return options_ != nullptr; }
  /// The group's options; raises if it has none yet.
  OptimizerOptions &options();
  const OptimizerOptions &options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) {
    options_ = std::move(options);
  }
  std::vector<Tensor> &params() { return params_; }
  const std::vector<Tensor> &params() const { return params_; }

protected:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

namespace detail {
class StepReplay;
}

/// The base of all optimizers (torch::optim::Optimizer).
///
/// Parameters are updated in place by step(), which reads each parameter's
/// grad() and skips parameters whose grad is undefined. State is kept per
/// parameter, keyed by its TensorImpl, and created lazily on the first step
/// that sees a gradient for it.
class Optimizer {
public:
  /// The callable step() may take: re-evaluates the model and returns the
  /// loss (run with grad mode enabled).
  using LossClosure = std::function<Tensor()>;

  Optimizer(const Optimizer &) = delete;
  Optimizer &operator=(const Optimizer &) = delete;
  // (Note [Replayed optimizer steps]: both optimizers get new handles, so
  // that replays of steps captured on either capture again)
  Optimizer(Optimizer &&o) noexcept
      : param_groups_(std::move(o.param_groups_)), state_(std::move(o.state_)),
        defaults_(std::move(o.defaults_)) {
    o.self_ = std::make_shared<Optimizer *>(&o);
  }
  Optimizer &operator=(Optimizer &&o) noexcept {
    param_groups_ = std::move(o.param_groups_);
    state_ = std::move(o.state_);
    defaults_ = std::move(o.defaults_);
    self_ = std::make_shared<Optimizer *>(this);
    o.self_ = std::make_shared<Optimizer *>(&o);
    return *this;
  }
  virtual ~Optimizer() = default;

  /// An optimizer over the given groups; groups without options use
  /// `defaults`. Raises ValueError for an empty list of groups.
  explicit Optimizer(std::vector<OptimizerParamGroup> param_groups,
                     std::unique_ptr<OptimizerOptions> defaults);
  /// An optimizer over one group holding `parameters`. Raises ValueError
  /// ("optimizer got an empty parameter list") when `parameters` is empty.
  explicit Optimizer(std::vector<Tensor> parameters,
                     std::unique_ptr<OptimizerOptions> defaults);

  /// Adds a group of parameters (torch.optim.Optimizer.add_param_group).
  /// A group without options gets a copy of the defaults. Raises when a
  /// parameter is not a leaf or already belongs to another group.
  void add_param_group(const OptimizerParamGroup &param_group);

  /// Performs one optimization step. If `closure` is given, it is called
  /// first (with grad mode on) and its result returned; otherwise returns
  /// an undefined tensor.
  virtual Tensor step(LossClosure closure = nullptr) = 0;

  /// Adds parameters to the first group (torch::optim::Optimizer::
  /// add_parameters).
  void add_parameters(const std::vector<Tensor> &parameters);

  /// Resets the gradients of all parameters. With set_to_none (the default,
  /// as PyTorch 2) the gradients become undefined; otherwise they are
  /// detached and filled with zeros.
  void zero_grad(bool set_to_none = true);

  /// The parameters of the first param group (as libtorch).
  const std::vector<Tensor> &parameters() const noexcept;
  std::vector<Tensor> &parameters() noexcept;
  /// The number of parameters over all groups.
  size_t size() const noexcept;

  OptimizerOptions &defaults() noexcept { return *defaults_; }
  const OptimizerOptions &defaults() const noexcept { return *defaults_; }

  std::vector<OptimizerParamGroup> &param_groups() noexcept {
    return param_groups_;
  }
  const std::vector<OptimizerParamGroup> &param_groups() const noexcept {
    return param_groups_;
  }

  /// Per-parameter state, keyed by the parameter's TensorImpl pointer.
  using StateMap =
      std::unordered_map<void *, std::unique_ptr<OptimizerParamState>>;
  StateMap &state() noexcept { return state_; }
  const StateMap &state() const noexcept { return state_; }

  /// Writes the param groups' options and the per-parameter state into
  /// `archive` (see Note [Optimizer archive layout]).
  virtual void save(serialize::OutputArchive &archive) const;
  /// Restores what save() wrote into an optimizer of the same type over
  /// parameters of the same shapes, grouped the same way.
  virtual void load(serialize::InputArchive &archive);

protected:
  /// The optimizer's name, written into and checked by save()/load().
  virtual std::string name() const = 0;
  /// A fresh, empty state object of the derived optimizer's type.
  virtual std::unique_ptr<OptimizerParamState> make_param_state() const = 0;
  /// The state of `p`, or null if it has none yet.
  OptimizerParamState *find_state(const Tensor &p) const;

  std::vector<OptimizerParamGroup> param_groups_;
  StateMap state_;
  std::unique_ptr<OptimizerOptions> defaults_;

private:
  friend class detail::StepReplay;
  /// Note [Replayed optimizer steps]: how a replay finds this optimizer,
  /// and sees that it is gone.
  std::shared_ptr<Optimizer *> self_ = std::make_shared<Optimizer *>(this);
};

namespace detail {
/// Runs `closure` (if any) with grad mode on and returns its loss.
Tensor run_closure(const Optimizer::LossClosure &closure);

/// The options of `group` as the optimizer's options type; raises if a
/// caller replaced them with options of another optimizer.
template <class Options> Options &options_as(OptimizerParamGroup &group) {
  auto *o = dynamic_cast<Options *>(&group.options());
  EMBER_CHECK_TYPE(o != nullptr,
                   "a param group's options have the wrong type for this "
                   "optimizer (each group needs the optimizer's own options "
                   "type, e.g. SGDOptions for SGD)");
  return *o;
}

/// The state of parameter `p` as `State`, created empty on first use (the
/// bool is true then, so the caller initializes it).
template <class State>
std::pair<State &, bool> state_of(Optimizer::StateMap &state, const Tensor &p) {
  auto &slot = state[p.unsafeGetTensorImpl()];
  bool fresh = slot == nullptr;
  if (fresh)
    slot = std::make_unique<State>();
  auto *s = dynamic_cast<State *>(slot.get());
  EMBER_CHECK_TYPE(s != nullptr, "the optimizer state of a parameter has the "
                                 "wrong type for this optimizer");
  return {*s, fresh};
}

/// The gradient of `p` (undefined when it has none), checked against p's
/// shape.
const Tensor &checked_grad(const Tensor &p);

/// Note [Replayed optimizer steps]
/// A step captured by compile() in replay mode declares what its replays
/// do on the host (Note [Host state in replayed calls] in
/// eager/Capturing.h), so that a training loop's step replays:
/// - a guard: the optimizer still exists, its groups hold the same
///   parameters with the same options (the learning rate aside), and each
///   parameter has the state object the capture used;
/// - effects: each step count's increment;
/// - remade values: each factor that depends on the learning rate or on a
///   step count is a 0-dim tensor the graph reads, made again at each
///   replay from that call's options and counts. So a scheduler's new
///   learning rate and each step's bias corrections need no new capture
///   (where a number would be a constant of the graph).
/// The .grad reads need nothing here: Tensor::grad() records them. A first
/// step makes the state (zeros from a factory), which a replay cannot
/// repeat: that call is captured, and the next one's capture replays.
class StepReplay {
public:
  /// Declares nothing when the step is not being captured.
  explicit StepReplay(Optimizer &opt);
  /// Whether the step is being captured.
  bool on() const { return on_; }
  /// A 0-dim float64 tensor on `device` holding f(opt): remade by f at each
  /// replay, in the order of the step's effects. `key` names the value
  /// within this step: the same key gives the same tensor (one input,
  /// remade once per replay). Plain `f(opt)` in a double when not
  /// capturing is the caller's business.
  Tensor value(const std::string &key, const Device &device,
               std::function<double(Optimizer &)> f);
  /// value() of minus group `group`'s learning rate.
  Tensor neg_lr(size_t group, const Device &device);
  /// Note [Captured updates round as eager's]
  /// The captured step takes a 0-dim float64 tensor where the eager step
  /// passes a number, and computes with it as eager computes with the
  /// number: in the same op, order and compute type, rounded where eager
  /// rounds. `p.add_(d, -lr)` is one op, fma(-lr, d, p) rounded once, so
  /// add_(p, d, neg_lr) writes p.addcmul_(c(d), c(neg_lr)), not
  /// p.add_(d * neg_lr) (d * lr rounded first: a probe found 1 ulp
  /// differences in 18% of float32 elements); addcdiv_(p, a, b, f) is
  /// p.addcdiv_(c(a) * c(f), b); scale_ and div are t * f and t / f as
  /// c(t) * c(f) rounded to t's dtype. c() is compute(): `t` in
  /// the compute dtype of the parameter `like` (float for
  /// float16/bfloat16), so that a number is never rounded to float16 first
  /// (a 0-dim float64 operand of a float16 op is), nor a 0-dim float32
  /// parameter's update computed in float64 (two 0-dim operands promote);
  /// a 0-dim factor beside a parameter with dims is left as it is (the
  /// other operands make the op's compute type float). Compiled and eager
  /// steps are then equal to the bit wherever both contract a multiply and
  /// an add into an fma (the compiled kernels always do on an FMA CPU; the
  /// -march=native build's eager loops do, the sanitized build's do not).
  static Tensor compute(const Tensor &t, const Tensor &like);
  /// Eager's p.mul_(number), t / number, p.add_(d, number) and
  /// p.addcdiv_(a, b, number) with the number a 0-dim tensor `f` from
  /// value(), rounded as eager's (above).
  static void scale_(const Tensor &p, const Tensor &f);
  static Tensor div(const Tensor &t, const Tensor &f);
  static void add_(const Tensor &p, const Tensor &d, const Tensor &f);
  static void addcdiv_(const Tensor &p, const Tensor &a, const Tensor &b,
                       const Tensor &f);
  /// The step made or replaced a parameter's state (its first step, or a
  /// buffer an option change asks for): a replay could not repeat that, so
  /// this call is not replayed (a later one is).
  void made_state();
  /// Declares `st`'s step count increment (st.step(st.step() + 1)).
  template <class State> void count_step(State &st) {
    effect([p = &st] { p->step(p->step() + 1); });
  }
  /// The guard checks that `st`'s tensors (`fields(st)`, an array of
  /// tensors) are still the ones the capture read and wrote: a state
  /// field set to another tensor (moments reset by assignment) captures
  /// again.
  template <class State, class Fields>
  void watch(const State &st, Fields fields) {
    if (!on_)
      return;
    auto impls = [fields](const State &s) {
      auto ts = fields(s);
      std::array<const TensorImpl *, std::tuple_size_v<decltype(ts)>> r{};
      for (size_t i = 0; i < ts.size(); ++i)
        r[i] = ts[i].unsafeGetTensorImpl();
      return r;
    };
    checks_.push_back(
        [s = &st, impls, was = impls(st)] { return impls(*s) == was; });
  }
  /// The guard, once the step ran (its states exist): `same_but_lr` says
  /// whether two options of this optimizer's type are equal but for the
  /// learning rate; `extra` (optional) checks more, after the guard found
  /// the optimizer and its states as captured (and watch()'s checks).
  void finish(bool (*same_but_lr)(const OptimizerOptions &,
                                  const OptimizerOptions &),
              std::function<bool()> extra = nullptr);

private:
  void effect(std::function<void()> f);
  bool on_ = false;
  Optimizer *opt_ = nullptr;
  std::shared_ptr<std::function<bool()>> guard_;
  std::vector<std::function<bool()>> checks_; ///< watch()'s
  std::unordered_map<std::string, Tensor> values_;
};

/// same_but_lr for StepReplay::finish: `Options`' operator== with the
/// learning rates made equal.
template <class Options>
bool same_options_but_lr(const OptimizerOptions &a, const OptimizerOptions &b) {
  auto *x = dynamic_cast<const Options *>(&a);
  auto *y = dynamic_cast<const Options *>(&b);
  if (!x || !y)
    return false;
  Options z = *y;
  z.lr(x->lr());
  return *x == z;
}
} // namespace detail

} // namespace optim

namespace serialize {
/// `archive << optimizer` writes its state (Optimizer::save), so that
/// `ember::save(optimizer, "optim.bin")` works (torch::save).
OutputArchive &operator<<(OutputArchive &archive,
                          const optim::Optimizer &optimizer);
/// `archive >> optimizer` restores it (Optimizer::load), so that
/// `ember::load(optimizer, "optim.bin")` works (torch::load).
InputArchive &operator>>(InputArchive &archive, optim::Optimizer &optimizer);
} // namespace serialize

} // namespace ember
