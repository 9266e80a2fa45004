#include "eager/autograd/Variable.h"
#include "eager/Capturing.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <atomic>

namespace ember::autograd {

// --- Node ------------------------------------------------------------------

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
std::atomic<unsigned> next_hook_id{1};
} // namespace

/// Note [Deleting long graphs]
/// A graph built by a long loop (total = total + loss, 100k times) is a
/// chain of nodes, each owning the next through its edges. Destroying the
/// head by plain destructors recurses once per node and overflows the
/// stack. As libtorch's deleteNode, a node's destructor takes its edges
/// instead: every edge whose node it holds the last reference to gives up
/// that node's edges to an explicit stack first, and the node then dies
/// with no edges left, so no destructor recurses. (Derived members, saved
/// tensors among them, are destroyed before this runs; the nodes they
/// reference are still held by the edges here, so releasing them does not
/// recurse either.)
Node::~Node() {
  edge_list stack = std::move(next_edges_);
  while (!stack.empty()) {
    std::shared_ptr<Node> fn = std::move(stack.back().function);
    stack.pop_back();
    if (fn && fn.use_count() == 1) {
      for (Edge &e : fn->next_edges_)
        stack.push_back(std::move(e));
      fn->next_edges_.clear();
    }
  }
}

Node::Node(edge_list next_edges)
    : next_edges_(std::move(next_edges)),
      sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

uint64_t peek_sequence_nr() {
  return next_sequence_nr.load(std::memory_order_relaxed);
}

uint32_t Node::add_input_metadata(const Tensor &t) {
  return add_input_metadata(
      InputMetadata{DimVector(t.sizes()), t.dtype(), t.device()});
}
uint32_t Node::add_input_metadata(InputMetadata m) {
  input_metadata_.push_back(std::move(m));
  return uint32_t(input_metadata_.size() - 1);
}

unsigned next_grad_hook_id() {
  return next_hook_id.fetch_add(1, std::memory_order_relaxed);
}

unsigned Node::add_grad_hook(uint32_t input_nr, GradHook hook) {
  unsigned id = next_grad_hook_id();
  grad_hooks_.push_back({id, input_nr, std::move(hook)});
  return id;
}

bool Node::remove_grad_hook(unsigned id) {
  for (auto it = grad_hooks_.begin(); it != grad_hooks_.end(); ++it)
    if (it->id == id) {
      grad_hooks_.erase(it);
      return true;
    }
  return false;
}

void Node::run_grad_hooks(variable_list &grads) const {
  // Copy: a hook may remove hooks.
  auto hooks = grad_hooks_;
  for (const HookEntry &h : hooks) {
    if (h.input_nr >= grads.size() || !grads[h.input_nr].defined())
      continue;
    grads[h.input_nr] = hook_result(grads[h.input_nr], h.fn(grads[h.input_nr]));
  }
}

Tensor hook_result(const Tensor &grad, Tensor result) {
  if (!result.defined())
    return grad;
  EMBER_CHECK(result.dtype() == grad.dtype() &&
                  result.device() == grad.device(),
              "hook has changed the type of value (was ",
              toString(grad.dtype()), " on ", grad.device().str(), " got ",
              toString(result.dtype()), " on ", result.device().str(),
              "): a gradient hook must return a tensor of the gradient's "
              "dtype and device, or an undefined tensor to keep it");
  EMBER_CHECK(result.sizes() == grad.sizes(),
              "hook has changed the size of value (was ", grad.sizes(), " got ",
              result.sizes(),
              "): a gradient hook must return a tensor of the gradient's "
              "shape");
  return result;
}

// --- meta
// ---------------------------------------------------------------------

void AutogradMeta::set_requires_grad(bool r, TensorImpl *) {
  EMBER_CHECK(!grad_fn_ || r,
              "you can only change requires_grad flags of leaf variables. If "
              "you want to use a computed variable in a subgraph that doesn't "
              "require differentiation use var_no_grad = var.detach().");
  requires_grad_ = r;
}

AutogradMeta::~AutogradMeta() {
  if (retain_grad_hook_)
    if (auto fn = retain_grad_node_.lock())
      fn->remove_grad_hook(retain_grad_hook_);
}

std::string AutogradMeta::grad_fn_name() const {
  return grad_fn_ ? grad_fn_->name() : "";
}

AutogradMeta *get_meta(const Tensor &t) {
  return static_cast<AutogradMeta *>(t.unsafeGetTensorImpl()->autograd_meta());
}

AutogradMeta *materialize_meta(const Tensor &t) {
  TensorImpl *impl = t.unsafeGetTensorImpl();
  if (!impl->autograd_meta())
    impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return static_cast<AutogradMeta *>(impl->autograd_meta());
}

void set_history_from_base(const Tensor &t) {
  Tensor base = t._base();
  auto fn =
      std::make_shared<AsStridedBackward0>(Geometry::of(base), Geometry::of(t));
  fn->add_next_edge(gradient_edge(base));
  set_history(t, fn);
}

namespace {
/// Whether the base of view `t` takes part in autograd.
bool base_requires_grad(const Tensor &t) {
  const auto &b = t.unsafeGetTensorImpl()->view_base();
  return b && b->autograd_meta() && b->autograd_meta()->requires_grad();
}
} // namespace

const std::shared_ptr<Node> &grad_fn_of(const Tensor &t) {
  static const std::shared_ptr<Node> none;
  AutogradMeta *m = get_meta(t);
  if (!m)
    return none;
  // Note [View grad_fn regeneration]
  // A view's history is stale once its storage was modified in place
  // through another alias (the base or a sibling view): the base's grad_fn
  // then describes the new values, so the view's gradient must flow through
  // it. As PyTorch, regenerate the view's grad_fn as an as_strided of the
  // base when the storage version moved since grad_fn was set.
  if (m->grad_fn_ && t.is_view() && m->attr_version_ != t._version() &&
      base_requires_grad(t))
    set_history_from_base(t);
  return m->grad_fn_;
}

// Note [Concurrent accumulation]
// As in PyTorch, threads may run forward and backward at once on graphs that
// share leaves (Hogwild-style training, one model used by several threads).
// A leaf's AccumulateGrad is found or made under the mutex of the leaf's
// meta, so every graph that uses the leaf while its node lives gets that one
// node (without the lock, the weak_ptr was read while being written, and
// two nodes could be made); the node adds into the leaf's grad under a mutex
// of its own, so two backward passes never update it at once. Two mutexes,
// as in PyTorch: under create_graph, the addition records a node, and the
// gradient being added may be the leaf itself, whose accumulator it then
// looks up. Reading or resetting .grad() while a backward runs is for the
// caller to order, as in PyTorch.
std::shared_ptr<Node> grad_accumulator(const Tensor &t) {
  AutogradMeta *m = materialize_meta(t);
  std::lock_guard<std::mutex> lock(m->mutex_);
  if (auto acc = m->grad_accumulator_.lock())
    return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  m->grad_accumulator_ = acc;
  return acc;
}

Edge gradient_edge(const Tensor &t) {
  if (!t.defined())
    return {};
  AutogradMeta *m = get_meta(t);
  if (!m)
    return {};
  if (const auto &fn = grad_fn_of(t))
    return Edge(fn, m->output_nr_);
  if (m->requires_grad_)
    return Edge(grad_accumulator(t), 0);
  return {};
}

edge_list collect_next_edges(std::initializer_list<const Tensor *> ts) {
  edge_list out;
  out.reserve(ts.size());
  for (const Tensor *t : ts)
    out.push_back(gradient_edge(*t));
  return out;
}

void set_history(const Tensor &t, const std::shared_ptr<Node> &fn) {
  AutogradMeta *m = materialize_meta(t);
  m->grad_fn_ = fn;
  m->output_nr_ = fn->add_input_metadata(t);
  m->attr_version_ = t._version();
  t.unsafeGetTensorImpl()->set_key(DispatchKey::Autograd, true);
}

void rebase_history(const Tensor &t, std::shared_ptr<Node> fn) {
  if (!t.is_view()) {
    set_history(t, fn); // the node's first input describes t
    return;
  }
  // Note [In-place ops on views]
  // The base gets a CopySlices node: its gradient passes through outside
  // the view and through fn inside it. fn's first edge (to the view's old
  // history) is replaced by the base's old history. The view then reads its
  // history from the base (grad_fn regeneration).
  Tensor base = t._base();
  set_history(base, std::make_shared<CopySlices>(base, Geometry::of(t), fn));
  fn->add_input_metadata(t); // the gradient CopySlices passes to fn
  set_history_from_base(t);
}

bool compute_requires_grad(std::initializer_list<const Tensor *> ts) {
  if (!GradMode::is_enabled())
    return false;
  for (const Tensor *t : ts)
    if (t->defined() && t->requires_grad())
      return true;
  return false;
}

bool any_requires_grad(TensorList ts) {
  if (!GradMode::is_enabled())
    return false;
  for (const Tensor &t : ts)
    if (t.defined() && t.requires_grad())
      return true;
  return false;
}

void check_inplace(const Tensor &t, bool requires_grad) {
  if (!requires_grad)
    return;
  if (t.is_view()) {
    Tensor base = t._base();
    AutogradMeta *bm = get_meta(base);
    EMBER_CHECK(!(bm && bm->requires_grad_ && !bm->grad_fn_),
                "a view of a leaf Variable that requires grad is being used "
                "in an in-place operation.");
  }
  AutogradMeta *m = get_meta(t);
  EMBER_CHECK(!(m && m->requires_grad_ && !m->grad_fn_ && !t.is_view()),
              "a leaf Variable that requires grad is being used in an "
              "in-place operation.");
}

} // namespace ember::autograd

// --- Tensor's autograd methods
// ---------------------------------------------------

namespace ember {
using namespace autograd;

bool Tensor::requires_grad() const {
  auto *m = impl()->autograd_meta();
  return m && m->requires_grad();
}

Tensor &Tensor::set_requires_grad(bool r) {
  if (r)
    EMBER_CHECK(isFloatingType(dtype()),
                "only Tensors of floating point dtype can require gradients "
                "(got ",
                dtype(), ")");
  if (!r && !impl()->autograd_meta())
    return *this;
  AutogradMeta *m = materialize_meta(*this);
  m->set_requires_grad(r, impl());
  impl()->set_key(DispatchKey::Autograd, r || m->grad_fn_);
  return *this;
}

const Tensor &Tensor::requires_grad_(bool r) const {
  const_cast<Tensor *>(this)->set_requires_grad(r);
  return *this;
}

const Tensor &Tensor::grad() const {
  static const Tensor undefined;
  AutogradMeta *m = get_meta(*this);
  const Tensor &g = m ? m->grad_ : undefined;
  // Note [Host state in replayed calls]
  if (is_capturing() && ember::detail::capture_grad_read_fn)
    ember::detail::capture_grad_read_fn(*this, g, false);
  return g;
}

Tensor &Tensor::mutable_grad() const {
  Tensor &g = materialize_meta(*this)->grad_;
  if (is_capturing() && ember::detail::capture_grad_read_fn)
    ember::detail::capture_grad_read_fn(*this, g, true);
  return g;
}

namespace autograd {
void zero_grad_of(const Tensor &param, bool set_to_none) {
  if (!param.grad().defined())
    return;
  Tensor &g = param.mutable_grad();
  if (set_to_none) {
    replay_clear_grad(param);
    g.reset();
    return;
  }
  if (g.grad_fn())
    g.detach_();
  else
    g.requires_grad_(false);
  g.zero_();
}
} // namespace autograd

bool Tensor::is_leaf() const { return !grad_fn(); }

const std::shared_ptr<Node> &Tensor::grad_fn() const {
  return grad_fn_of(*this);
}

uint32_t Tensor::output_nr() const {
  AutogradMeta *m = get_meta(*this);
  return m ? m->output_nr_ : 0;
}

void Tensor::retain_grad() const {
  EMBER_CHECK(requires_grad(), "can't retain_grad on Tensor that has "
                               "requires_grad=False");
  if (is_leaf())
    return; // leaves keep their grad anyway
  AutogradMeta *m = get_meta(*this);
  if (m->retains_grad_)
    return;
  m->retains_grad_ = true;
  // The hook points at this tensor's impl; ~AutogradMeta removes it, so the
  // node (which may outlive the tensor) never calls it on a dead tensor.
  const auto &fn = grad_fn();
  m->retain_grad_node_ = fn;
  m->retain_grad_hook_ = fn->add_grad_hook(
      output_nr(), [impl = unsafeGetTensorImpl()](const Tensor &g) {
        auto *meta = static_cast<AutogradMeta *>(impl->autograd_meta());
        if (!meta->grad_.defined())
          meta->grad_ = GradMode::is_enabled() ? g : g.clone();
        else
          meta->grad_ = meta->grad_ + g;
        return Tensor();
      });
}

bool Tensor::retains_grad() const {
  AutogradMeta *m = get_meta(*this);
  return m && m->retains_grad_;
}

void Tensor::backward(const Tensor &gradient, std::optional<bool> retain_graph,
                      bool create_graph,
                      std::optional<TensorList> inputs) const {
  variable_list in;
  if (inputs)
    in.assign(inputs->begin(), inputs->end());
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, in);
}

Tensor Tensor::detach() const {
  // A capture tensor has no autograd history to cut (capture runs without
  // grad), but detach() still gives a new tensor, an alias of the same
  // memory: the same value, recorded as a view so that the caller gets a
  // tensor of its own (not the argument it passed).
  if (impl()->key_set().has(DispatchKey::Capture)) {
    NoGradGuard no_grad; // (the alias has no history, as eagerly)
    return as_strided(sizes(), strides(), storage_offset());
  }
  auto impl2 = make_intrusive<TensorImpl>(storage(), dtype(), sizes(),
                                          strides(), storage_offset());
  return Tensor(std::move(impl2));
}

const Tensor &Tensor::detach_() const {
  EMBER_CHECK(!is_view() || !requires_grad(),
              "Can't detach views in-place. Use detach() instead.");
  if (AutogradMeta *m = get_meta(*this)) {
    m->grad_fn_.reset();
    m->requires_grad_ = false;
    m->output_nr_ = 0;
    impl()->set_key(DispatchKey::Autograd, false);
  }
  return *this;
}

unsigned
Tensor::_register_hook(std::function<Tensor(const Tensor &)> hook) const {
  EMBER_CHECK(requires_grad(), "cannot register a hook on a tensor that "
                               "doesn't require gradient");
  if (const auto &fn = grad_fn())
    return fn->add_grad_hook(output_nr(), std::move(hook));
  unsigned id = next_grad_hook_id();
  get_meta(*this)->leaf_hooks_.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_hook(unsigned handle) const {
  if (const auto &fn = grad_fn(); fn && fn->remove_grad_hook(handle))
    return;
  if (AutogradMeta *m = get_meta(*this))
    for (auto it = m->leaf_hooks_.begin(); it != m->leaf_hooks_.end(); ++it)
      if (it->first == handle) {
        m->leaf_hooks_.erase(it);
        return;
      }
  throw Error("remove_hook: no hook with handle " + std::to_string(handle) +
              " is registered on this tensor");
}

} // namespace ember
