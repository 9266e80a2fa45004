#include "eager/autograd/SavedVariable.h"

#include "eager/autograd/GradMode.h"
#include "eager/autograd/ThreadLocalState.h"
#include "eager/autograd/Variable.h"

#include <sstream>

namespace ember::autograd {

namespace {
thread_local std::vector<SavedTensorHooks> tls_hooks;
thread_local size_t tls_hooks_disabled_below = 0; // hooks [0, n) suspended

const SavedTensorHooks *current_hooks() {
  if (tls_hooks.size() <= tls_hooks_disabled_below)
    return nullptr;
  return &tls_hooks.back();
}
} // namespace

namespace graph {
saved_tensors_hooks::saved_tensors_hooks(
    std::function<std::any(const Tensor &)> pack,
    std::function<Tensor(const std::any &)> unpack) {
  tls_hooks.push_back({std::move(pack), std::move(unpack)});
}
saved_tensors_hooks::~saved_tensors_hooks() { tls_hooks.pop_back(); }

disable_saved_tensors_hooks::disable_saved_tensors_hooks()
    : depth_(tls_hooks_disabled_below) {
  tls_hooks_disabled_below = tls_hooks.size();
}
disable_saved_tensors_hooks::~disable_saved_tensors_hooks() {
  tls_hooks_disabled_below = depth_;
}
} // namespace graph

} // namespace ember::autograd

namespace ember::detail {
SavedHooksState get_saved_hooks() {
  return {autograd::tls_hooks, autograd::tls_hooks_disabled_below};
}
void set_saved_hooks(SavedHooksState state) {
  autograd::tls_hooks = std::move(state.hooks);
  autograd::tls_hooks_disabled_below = state.disabled_below;
}
} // namespace ember::detail

namespace ember::autograd {

SavedVariable::SavedVariable(const Tensor &t, bool is_output) {
  if (!t.defined())
    return;
  EMBER_CHECK(!t.is_inference(),
              "Inference tensors cannot be saved for backward. To work "
              "around you can make a clone to get a normal tensor and use "
              "it in autograd.");
  was_defined_ = true;
  is_output_ = is_output;
  is_leaf_ = t.is_leaf();
  requires_grad_ = t.requires_grad();
  saved_version_ = t._version();
  output_nr_ = t.output_nr();
  sizes_.assign(t.sizes().begin(), t.sizes().end());
  if (is_leaf_ && requires_grad_)
    grad_accumulator_ = grad_accumulator(t);
  if (!is_output)
    if (const auto &fn = t.grad_fn())
      grad_fn_name_ = fn->name();
  if (const SavedTensorHooks *h = current_hooks()) {
    packed_ = std::make_shared<std::any>(h->pack(t));
    unpack_hook_ = h->unpack;
    return;
  }
  // A capture tensor is saved as a stand-in of the same value and storage
  // (Note [The joint graph] in frontend/Capture.cpp): it keeps no autograd
  // history (no cycle) and does not keep `t` alive.
  if (t.unsafeGetTensorImpl()->key_set().has(DispatchKey::Capture) &&
      detail::capture_save_fn) {
    data_ = detail::capture_save_fn(t);
    capture_storage_ = data_.storage();
    return;
  }
  // Outputs keep only their data: the node that saves them is their
  // grad_fn, and holding the tensor would make a cycle node -> tensor ->
  // node. Leaves and other inputs are kept as they are.
  data_ = is_output ? t.detach() : t;
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node> &saved_for) const {
  if (!was_defined_)
    return Tensor();
  EMBER_CHECK(!freed_,
              "Trying to backward through the graph a second time (or "
              "directly access saved tensors after they have already been "
              "freed). Saved intermediate values of the graph are freed when "
              "you call .backward() or autograd.grad(). Specify "
              "retain_graph=True if you need to backward through the graph "
              "a second time or if you need to access saved tensors after "
              "calling backward.");
  Tensor data = packed_ ? unpack_hook_(*packed_) : data_;
  // A capture tensor made real since: the writes that count are the ones
  // its graph recorded, on its capture storage (later eager writes to the
  // real storage are not seen).
  uint32_t version =
      !capture_storage_.defined() ||
              data.storage().is_alias_of(capture_storage_)
          ? data._version()
          : capture_storage_.unsafeGetStorageImpl()->version.load(
                std::memory_order_relaxed);
  if (!packed_ && version != saved_version_) {
    std::ostringstream w; // (not string +: GCC 12 -Wrestrict, bug 105329)
    w << "[" << data.toString() << " [";
    for (size_t i = 0; i < sizes_.size(); ++i)
      w << (i ? ", " : "") << sizes_[i];
    w << "]]";
    std::string what = w.str();
    std::string producer =
        is_output_ && saved_for
            ? ", which is output " + std::to_string(output_nr_) + " of " +
                  saved_for->name() + ","
            : (!grad_fn_name_.empty()
                   ? ", which is output " + std::to_string(output_nr_) +
                         " of " + grad_fn_name_ + ","
                   : "");
    throw SavedTensorModifiedError(
        "one of the variables needed for gradient computation has "
        "been modified by an inplace operation: " +
        what + producer + " is at version " + std::to_string(version) +
        "; expected version " + std::to_string(saved_version_) +
        " instead. Hint: the backtrace further above can point to "
        "the operation that failed to compute its gradient. The "
        "variable in question was changed in there or anywhere "
        "later. Good luck!");
  }
  if (!is_output_ || !saved_for || !requires_grad_)
    return data;
  // A capture stand-in unpacked by a backward without create_graph (the
  // joint graph's trace) needs no history: reattaching it would record a
  // view op.
  if (data.unsafeGetTensorImpl()->key_set().has(DispatchKey::Capture) &&
      !GradMode::is_enabled())
    return data;
  // An output: reattach its node, so that a create_graph backward that uses
  // it differentiates through it.
  Tensor r = data.detach();
  AutogradMeta *m = materialize_meta(r);
  m->grad_fn_ = saved_for;
  m->output_nr_ = output_nr_;
  m->attr_version_ = r._version();
  r.unsafeGetTensorImpl()->set_key(DispatchKey::Autograd, true);
  return r;
}

void SavedVariable::reset_data() {
  if (!was_defined_)
    return;
  data_.reset();
  packed_.reset();
  freed_ = true;
}

} // namespace ember::autograd
