#pragma once
/// ember::optim::Optimizer: the base of every optimizer (libtorch's
/// torch/optim/optimizer.h). An optimizer holds parameter groups (each a list
/// of parameters with its own options), per-parameter state (momentum
/// buffers, running averages, step counts), and updates the parameters in
/// place from their grad() on step().

#include "eager/Tensor.h"
#include "eager/nn/Options.h"
#include "eager/nn/Serialize.h"

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
  OptimizerParamState(const OptimizerParamState &) = default;
  OptimizerParamState &operator=(const OptimizerParamState &) = default;
  OptimizerParamState(OptimizerParamState &&) noexcept = default;
  OptimizerParamState &operator=(OptimizerParamState &&) noexcept = default;
  virtual ~OptimizerParamState() = default;
  /// A copy of the derived state (its tensors are shared, not copied).
  virtual std::unique_ptr<OptimizerParamState> clone() const;
  /// Writes the state's fields into `archive`.
  virtual void serialize(serialize::OutputArchive &archive) const;
  /// Reads the state's fields back from `archive`.
  virtual void serialize(serialize::InputArchive &archive);
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
  Optimizer(Optimizer &&) = default;
  Optimizer &operator=(Optimizer &&) = default;
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
