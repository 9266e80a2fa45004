#include "eager/optim/Optimizer.h"

#include "eager/Capturing.h"
#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/Variable.h"
#include "eager/generated/Functions.h"

#include <atomic>
#include <typeinfo>
#include <unordered_set>

namespace ember::optim {

uint64_t OptimizerParamState::next_serial() {
  static std::atomic<uint64_t> n{0};
  return ++n;
}

std::unique_ptr<OptimizerParamState> OptimizerParamState::clone() const {
  throw NotImplementedError(
      "clone() has not been implemented for this optimizer param state; "
      "derive it from OptimizerCloneableParamState<YourState>");
}

std::unique_ptr<OptimizerOptions> OptimizerOptions::clone() const {
  throw NotImplementedError(
      "clone() has not been implemented for these optimizer options; "
      "derive them from OptimizerCloneableOptions<YourOptions>");
}

double OptimizerOptions::get_lr() const {
  throw NotImplementedError(
      "get_lr() has not been implemented for these optimizer options; "
      "override it to return the learning rate");
}

void OptimizerOptions::set_lr(double) {
  throw NotImplementedError(
      "set_lr() has not been implemented for these optimizer options; "
      "override it to set the learning rate");
}

OptimizerOptions &OptimizerParamGroup::options() {
  EMBER_CHECK(options_ != nullptr,
              "this param group has no options yet; add it to an optimizer "
              "(which gives it the defaults) or call set_options()");
  return *options_;
}

const OptimizerOptions &OptimizerParamGroup::options() const {
  EMBER_CHECK(options_ != nullptr,
              "this param group has no options yet; add it to an optimizer "
              "(which gives it the defaults) or call set_options()");
  return *options_;
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> param_groups,
                     std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  EMBER_INTERNAL_ASSERT(defaults_ != nullptr);
  EMBER_CHECK_VALUE(!param_groups.empty(),
                    "optimizer got an empty parameter list");
  for (const auto &group : param_groups)
    add_param_group(group);
}

namespace {
std::vector<OptimizerParamGroup> one_group(std::vector<Tensor> &&parameters) {
  EMBER_CHECK_VALUE(!parameters.empty(),
                    "optimizer got an empty parameter list");
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::move(parameters));
  return groups;
}
} // namespace

Optimizer::Optimizer(std::vector<Tensor> parameters,
                     std::unique_ptr<OptimizerOptions> defaults)
    : Optimizer(one_group(std::move(parameters)), std::move(defaults)) {}

namespace {
/// Checks parameters about to join the optimizer: defined leaves, none
/// already in a group, none twice in the new list.
void check_new_params(const std::vector<OptimizerParamGroup> &groups,
                      const std::vector<Tensor> &params) {
  std::unordered_set<const void *> existing, added;
  for (const auto &group : groups)
    for (const auto &p : group.params())
      existing.insert(p.unsafeGetTensorImpl());
  for (const auto &p : params) {
    EMBER_CHECK_VALUE(p.defined(),
                      "optimizer got an undefined tensor as a parameter");
    EMBER_CHECK_VALUE(p.is_leaf(), "can't optimize a non-leaf Tensor");
    EMBER_CHECK_VALUE(
        !existing.count(p.unsafeGetTensorImpl()),
        "some parameters appear in more than one parameter group");
    // PyTorch warns here and announces an error; ember raises it (a
    // duplicated parameter would be updated twice per step).
    EMBER_CHECK_VALUE(
        added.insert(p.unsafeGetTensorImpl()).second,
        "optimizer contains a parameter group with duplicate parameters; "
        "pass each parameter once");
  }
}
} // namespace

void Optimizer::add_param_group(const OptimizerParamGroup &param_group) {
  check_new_params(param_groups_, param_group.params());
  OptimizerParamGroup group(param_group.params());
  if (param_group.has_options()) {
    const OptimizerOptions &o = param_group.options();
    const OptimizerOptions &defaults = *defaults_;
    EMBER_CHECK_TYPE(typeid(o) == typeid(defaults),
                     "the options of a param group must have the same type "
                     "as the optimizer's defaults (SGDOptions for SGD, "
                     "AdamOptions for Adam, ...)");
    group.set_options(o.clone());
  } else {
    group.set_options(defaults_->clone());
  }
  param_groups_.push_back(std::move(group));
}

void Optimizer::add_parameters(const std::vector<Tensor> &parameters) {
  EMBER_CHECK(!param_groups_.empty(), "this optimizer has no param groups");
  check_new_params(param_groups_, parameters);
  auto &params = param_groups_.front().params();
  params.insert(params.end(), parameters.begin(), parameters.end());
}

void Optimizer::zero_grad(bool set_to_none) {
  // Note [Host state in replayed calls]: a replay clears the .grads too
  // (replay_clear_grad: after taking the ones its program reads); the
  // zeros of set_to_none=false are ops of the graph, on this call's .grad
  // (read through grad(), which records it).
  for (auto &group : param_groups_)
    for (auto &p : group.params())
      autograd::zero_grad_of(p, set_to_none);
}

const std::vector<Tensor> &Optimizer::parameters() const noexcept {
  return param_groups_.front().params();
}

std::vector<Tensor> &Optimizer::parameters() noexcept {
  return param_groups_.front().params();
}

size_t Optimizer::size() const noexcept {
  size_t n = 0;
  for (const auto &group : param_groups_)
    n += group.params().size();
  return n;
}

OptimizerParamState *Optimizer::find_state(const Tensor &p) const {
  auto it = state_.find(p.unsafeGetTensorImpl());
  return it == state_.end() ? nullptr : it->second.get();
}

namespace detail {
Tensor run_closure(const Optimizer::LossClosure &closure) {
  if (!closure)
    return Tensor();
  AutoGradMode enable_grad(true);
  return closure();
}

const Tensor &checked_grad(const Tensor &p) {
  // (replayed: Note [Replayed optimizer steps])
  const Tensor &g = p.grad();
  EMBER_CHECK(!g.defined() || g.sizes() == p.sizes(), "a parameter of shape ",
              p.sizes(), " has a gradient of shape ", g.sizes(),
              "; an optimizer needs gradients of the parameter's shape");
  return g;
}
StepReplay::StepReplay(Optimizer &opt) : on_(is_capturing()), opt_(&opt) {
  if (!on_)
    return;
  // Registered first, so that it runs before the guards and effects that
  // dereference the states it checks; filled by finish().
  guard_ = std::make_shared<std::function<bool()>>();
  replay_guard("an optimizer's parameters, options (but the learning rate) "
               "or state changed, or it is gone",
               [g = guard_] { return *g && (*g)(); });
}

void StepReplay::made_state() {
  if (on_)
    no_replay("an optimizer's step made its state (its first step, or a "
              "buffer an option asks for): a replay cannot; the next call's "
              "capture replays");
}

void StepReplay::effect(std::function<void()> f) {
  if (on_)
    replay_effect(std::move(f));
}

Tensor StepReplay::value(const std::string &key, const Device &device,
                         std::function<double(Optimizer &)> f) {
  std::string k = key + "@" + device.str();
  auto it = values_.find(k);
  if (it != values_.end())
    return it->second;
  auto make = [device](double v) {
    return scalar_tensor(v, TensorOptions(kDouble).device(device));
  };
  Tensor t = make(f(*opt_));
  if (on_)
    remake_on_replay(t, [self = std::weak_ptr<Optimizer *>(opt_->self_), f,
                         make] { return make(f(**self.lock())); });
  values_.emplace(std::move(k), t);
  return t;
}

Tensor StepReplay::neg_lr(size_t group, const Device &device) {
  return value("-lr" + std::to_string(group), device, [group](Optimizer &opt) {
    return -opt.param_groups()[group].options().get_lr();
  });
}

Tensor StepReplay::compute(const Tensor &t, const Tensor &like) {
  // (a 0-dim factor beside a parameter with dims is read in the op's
  // compute type as it is: converting it would be a kernel of its own)
  if (t.dim() == 0 && like.dim() > 0)
    return t;
  ScalarType dt = like.scalar_type();
  return t.to(isReducedFloatingType(dt) ? kFloat : dt);
}

void StepReplay::scale_(const Tensor &p, const Tensor &f) {
  // (in place where that rounds as eager: a float32 or float64 parameter
  // with dims)
  if (p.dim() > 0 && !isReducedFloatingType(p.scalar_type()))
    p.mul_(f);
  else
    p.copy_(compute(p, p) * compute(f, p));
}

Tensor StepReplay::div(const Tensor &t, const Tensor &f) {
  return (compute(t, t) / compute(f, t)).to(t.scalar_type());
}

void StepReplay::add_(const Tensor &p, const Tensor &d, const Tensor &f) {
  p.addcmul_(compute(d, p), compute(f, p));
}

void StepReplay::addcdiv_(const Tensor &p, const Tensor &a, const Tensor &b,
                          const Tensor &f) {
  p.addcdiv_(compute(a, p) * compute(f, p), b);
}

void StepReplay::finish(bool (*same_but_lr)(const OptimizerOptions &,
                                            const OptimizerOptions &),
                        std::function<bool()> extra) {
  if (!on_)
    return;
  struct Group {
    std::vector<Tensor> params;
    std::unique_ptr<OptimizerOptions> options;
    std::vector<std::pair<const OptimizerParamState *, uint64_t>> states;
  };
  auto groups = std::make_shared<std::vector<Group>>();
  for (const OptimizerParamGroup &g : opt_->param_groups()) {
    Group c{g.params(), g.options().clone(), {}};
    for (const Tensor &p : g.params()) {
      const OptimizerParamState *st = opt_->find_state(p);
      c.states.emplace_back(st, st ? st->replay_serial() : 0);
    }
    groups->push_back(std::move(c));
  }
  *guard_ = [self = std::weak_ptr<Optimizer *>(opt_->self_), groups,
             same_but_lr, checks = std::move(checks_),
             extra = std::move(extra)] {
    auto o = self.lock();
    if (!o)
      return false;
    const Optimizer &opt = **o;
    if (opt.param_groups().size() != groups->size())
      return false;
    for (size_t i = 0; i < groups->size(); ++i) {
      const Group &c = (*groups)[i];
      const OptimizerParamGroup &g = opt.param_groups()[i];
      if (g.params().size() != c.params.size() ||
          !same_but_lr(g.options(), *c.options))
        return false;
      for (size_t k = 0; k < c.params.size(); ++k) {
        if (!g.params()[k].is_same(c.params[k]))
          return false;
        const OptimizerParamState *st = opt.find_state(c.params[k]);
        if (st != c.states[k].first ||
            (st && st->replay_serial() != c.states[k].second))
          return false;
      }
    }
    for (const auto &c : checks)
      if (!c())
        return false;
    return !extra || extra();
  };
}

} // namespace detail

} // namespace ember::optim
