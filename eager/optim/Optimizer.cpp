#include "eager/optim/Optimizer.h"

#include "eager/Capturing.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <typeinfo>
#include <unordered_set>

namespace ember::optim {

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
  for (auto &group : param_groups_) {
    for (auto &p : group.params()) {
      Tensor &g = p.mutable_grad();
      if (!g.defined())
        continue;
      if (set_to_none) {
        g.reset();
        continue;
      }
      // As torch.optim.Optimizer.zero_grad: cut the gradient out of any
      // graph (create_graph=True backward gives it one), then zero it.
      if (g.grad_fn())
        g.detach_();
      else
        g.requires_grad_(false);
      g.zero_();
    }
  }
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
  // A step reads each parameter's .grad of this call (zero_grad() sets them
  // to None, backward makes new ones) and makes its state on its first call:
  // replay mode, which would read the first call's tensors, captures it.
  const Tensor &g = p.grad();
  no_replay(ember::detail::kStepReadsGrads); // (after grad()'s own reason)
  EMBER_CHECK(!g.defined() || g.sizes() == p.sizes(), "a parameter of shape ",
              p.sizes(), " has a gradient of shape ", g.sizes(),
              "; an optimizer needs gradients of the parameter's shape");
  return g;
}
} // namespace detail

} // namespace ember::optim
