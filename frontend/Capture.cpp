#include "frontend/Capture.h"

#include "eager/Capturing.h"
#include "eager/Factory.h"
#include "eager/OpTraits.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/Checkpoint.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/SavedVariable.h"
#include "eager/autograd/Variable.h"
#include "frontend/Executor.h"
#include "runtime/Allocator.h"
#include "runtime/Logging.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>

namespace ember::frontend {

namespace {
thread_local Session *tls_session = nullptr;

ir::ValueType type_of(const Tensor &t) {
  return ir::ValueType{t.sizes().vec(), t.dtype(), t.device()};
}

std::string where_str(const std::source_location &loc) {
  if (!loc.file_name() || !*loc.file_name())
    return "";
  std::string f = loc.file_name();
  return f + ":" + std::to_string(loc.line()) + ":" +
         std::to_string(loc.column());
}

const void *storage_key(const Tensor &t) {
  return t.storage().unsafeGetStorageImpl();
}

/// `t` is its whole storage, contiguous from its start: positions in the
/// storage are positions in t's row-major layout.
bool covers_storage(const Tensor &t) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         t.nbytes() == t.storage().nbytes();
}

const OperatorHandle &as_strided_op() {
  static const OperatorHandle &op =
      Dispatcher::singleton().findSchemaOrThrow("ember::as_strided");
  return op;
}

/// Runs `op` on `stack` through the eager kernels.
void call_eager(const OperatorHandle &op, Stack &stack) {
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  op.callBoxed(stack);
}

/// The grad_fn of the capture tensor of a real input that requires grad:
/// its gradient goes on to the real tensor's edge (Note [The joint graph]).
struct CaptureInput final : autograd::Node {
  autograd::variable_list apply(autograd::variable_list &&grads) override {
    return std::move(grads);
  }
  std::string name() const override { return "CaptureInput"; }
};

/// A compiled graph's outputs' autograd node (AOTAutograd's): its backward
/// runs the graph's backward program on the tensors the forward saved and
/// the outputs' gradients.
struct CompiledFunctionBackward final : autograd::Node {
  CompiledFunctionBackward(std::shared_ptr<const Program> backward,
                           const std::vector<Tensor> &saved,
                           std::vector<int> slots,
                           std::shared_ptr<StepPeaks> peaks)
      : backward_(std::move(backward)), slots_(std::move(slots)),
        peaks_(std::move(peaks)) {
    for (const Tensor &t : saved)
      saved_.emplace_back(t, false);
  }
  autograd::variable_list apply(autograd::variable_list &&grads) override {
    EMBER_CHECK(!GradMode::is_enabled(),
                "a compiled function's backward does not support "
                "create_graph=true (double backward), as torch.compile's "
                "AOTAutograd; run that function eagerly to take higher "
                "derivatives");
    EMBER_CHECK(!released_,
                "Trying to backward through the graph a second time: the "
                "outputs of a compiled graph share one backward node "
                "(CompiledFunctionBackward, as with torch.compile), whose "
                "saved tensors the first backward through any of them "
                "freed. Sum the losses into one backward, or pass "
                "retain_graph=true to the earlier backward calls.");
    std::vector<Tensor> in;
    in.reserve(saved_.size() + grads.size());
    for (const autograd::SavedVariable &s : saved_)
      in.push_back(s.unpack());
    // Without retain_graph the saved tensors are freed now, and each as the
    // backward program is done with it (AOTAutograd's stolen arguments):
    // the peak is not all of them plus all the gradients.
    bool keep = autograd::current_graph_task_keep_graph();
    if (!keep)
      release_variables();
    for (size_t k = 0; k < grads.size(); ++k) {
      // The backward was compiled for contiguous tangents; a gradient that
      // never arrived is zeros (as AOTAutograd materializes them).
      const autograd::InputMetadata &m = input_metadata(k);
      in.push_back(grads[k].defined()
                       ? grads[k].contiguous()
                       : zeros(IntArrayRef(m.shape), m.options()));
    }
    std::vector<Tensor> outs;
    {
      PeakMemoryScope scope;
      outs =
          keep ? backward_->run(in) : backward_->run_consuming(std::move(in));
      if (peaks_)
        peaks_->backward = scope.peak();
    }
    // A gradient that only gradients which never arrived reach is not
    // defined, as eagerly (not zeros: an optimizer skips a parameter
    // without a gradient).
    std::vector<bool> absent(grads.size());
    for (size_t k = 0; k < grads.size(); ++k)
      absent[k] = !grads[k].defined();
    std::vector<bool> defined = reached(absent);
    autograd::variable_list result(num_outputs());
    for (size_t i = 0; i < slots_.size() && i < result.size(); ++i)
      if (slots_[i] >= 0 && defined.at(size_t(slots_[i])))
        result[i] = outs.at(size_t(slots_[i]));
    return result;
  }
  void release_variables() override {
    for (autograd::SavedVariable &s : saved_)
      s.reset_data();
    released_ = true;
  }
  std::string name() const override { return "CompiledFunctionBackward"; }

private:
  /// Per backward output: whether a tangent not `absent` reaches it (or
  /// none does: it does not depend on the tangents).
  std::vector<bool> reached(const std::vector<bool> &absent) const {
    const ir::Trace &t = backward_->trace();
    size_t nout = t.outputs.size();
    if (std::none_of(absent.begin(), absent.end(), [](bool a) { return a; }))
      return std::vector<bool>(nout, true);
    // Per value: reached by a present tangent / by any tangent.
    std::vector<char> live(t.types.size(), 0), any(t.types.size(), 0);
    size_t first = t.inputs.size() - absent.size();
    for (size_t k = 0; k < absent.size(); ++k) {
      int v = t.inputs[first + k].value;
      any[size_t(v)] = 1;
      live[size_t(v)] = !absent[k];
    }
    for (const ir::Node &n : t.nodes) {
      char l = 0, a = 0;
      for (const ir::Arg &arg : n.args) {
        if (arg.kind == ir::Arg::Kind::Value && arg.value >= 0) {
          l |= live[size_t(arg.value)];
          a |= any[size_t(arg.value)];
        }
        for (int v : arg.values)
          if (v >= 0) {
            l |= live[size_t(v)];
            a |= any[size_t(v)];
          }
      }
      for (int r : n.results) {
        live[size_t(r)] = l;
        any[size_t(r)] = a;
      }
    }
    std::vector<bool> out(nout);
    for (size_t i = 0; i < nout; ++i) {
      size_t v = size_t(t.outputs[i]);
      out[i] = live[v] || !any[v];
    }
    return out;
  }

  std::shared_ptr<const Program> backward_;
  std::vector<autograd::SavedVariable> saved_;
  std::vector<int> slots_; ///< per next edge: its backward output, or -1
  std::shared_ptr<StepPeaks> peaks_;
  bool released_ = false;
};

} // namespace

void attach_compiled_backward(const std::vector<Tensor> &outputs,
                              const GraphResult &r,
                              const std::vector<Tensor> &grad_reals,
                              const std::vector<int> &slots) {
  autograd::edge_list edges;
  for (size_t k = 0; k < grad_reals.size(); ++k)
    edges.push_back(slots[k] < 0 ? autograd::Edge()
                                 : autograd::gradient_edge(grad_reals[k]));
  auto node = std::make_shared<CompiledFunctionBackward>(r.backward, r.saved,
                                                         slots, r.peaks);
  node->set_next_edges(std::move(edges));
  for (const Tensor &t : outputs)
    autograd::set_history(t, node);
}

namespace {

/// Whether a defined tensor of `stack` (or of a list in it) satisfies
/// `pred`.
template <class Pred> bool any_tensor(const Stack &stack, Pred pred) {
  for (const IValue &v : stack) {
    if (v.isTensor() && v.toTensor().defined() && pred(v.toTensor()))
      return true;
    if (v.isTensorList())
      for (const Tensor &t : v.toTensorList())
        if (t.defined() && pred(t))
          return true;
  }
  return false;
}

bool any_requires_grad(const Stack &stack) {
  return any_tensor(stack, [](const Tensor &t) { return t.requires_grad(); });
}

/// The outputs' node when tracing the backward raised what eagerly the
/// backward raises (a saved tensor written in place): it raises that.
struct RaisingBackward final : autograd::Node {
  explicit RaisingBackward(std::string message)
      : message_(std::move(message)) {}
  autograd::variable_list apply(autograd::variable_list &&) override {
    throw Error(message_);
  }
  std::string name() const override { return "CompiledFunctionBackward"; }

private:
  std::string message_;
};

/// Thrown out of the backward trace when it cannot go on (a graph break).
struct JointAbort {
  std::string reason;
};

/// The capture tensor `t` stands for (a view's: itself).
Tensor capture_tensor(CaptureMeta *m) {
  return Tensor(intrusive_ptr<TensorImpl>(m->self));
}
} // namespace

Tensor replay_views(Tensor base, const std::vector<ViewStep> &chain) {
  for (const ViewStep &s : chain) {
    Stack st = s.args;
    st[0] = std::move(base);
    call_eager(*s.op, st);
    base = st.at(0).toTensor();
  }
  return base;
}

void mark_view_of(const Tensor &view, intrusive_ptr<TensorImpl> base) {
  TensorImpl *v = view.unsafeGetTensorImpl();
  if (v->view_base() || v == base.get())
    return;
  v->set_view_base(base->view_base() ? base->view_base() : std::move(base));
}

std::vector<int> alias_pattern(const std::vector<Tensor> &tensors) {
  std::vector<int> first(tensors.size(), -1);
  for (size_t i = 0; i < tensors.size(); ++i)
    for (size_t j = 0; j < i && first[i] < 0; ++j)
      if (tensors[i].is_alias_of(tensors[j]) && tensors[i].nbytes() &&
          tensors[j].nbytes())
        first[i] = int(j);
  return first;
}

Tensor storage_view(const Tensor &t) {
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  return t.as_strided({int64_t(t.storage().nbytes() / t.itemsize())}, {1}, 0);
}

CaptureMeta::~CaptureMeta() {
  if (session)
    session->forget(this);
}

void Session::forget(CaptureMeta *m) {
  live_.erase(m);
  if (m->real.defined()) {
    auto it = input_roots_.find(storage_key(m->real));
    if (it != input_roots_.end() && it->second == m)
      input_roots_.erase(it);
  }
}

Session::Session(std::string name, GraphRunner runner, BreakHook on_break,
                 bool fullgraph)
    : name_(std::move(name)), runner_(std::move(runner)),
      on_break_(std::move(on_break)), fullgraph_(fullgraph), prev_(tls_session),
      saved_tls_(tls_local_dispatch_key_set()) {
  install_capture();
  static std::atomic<uint32_t> epochs{0};
  epoch_ = ++epochs;
  if (epoch_ == 0) // wrapped around: 0 means "no call"
    epoch_ = ++epochs;
  prev_epoch_ = detail::set_creation_epoch(epoch_);
  tls_session = this;
  tls_local_dispatch_key_set().included |= DispatchKey::Capture;
  tls_local_dispatch_key_set().excluded =
      tls_local_dispatch_key_set().excluded - DispatchKey::Capture;
  reset_graph();
}

Session::~Session() {
  abandon();
  detail::set_creation_epoch(prev_epoch_);
  tls_session = prev_;
  tls_local_dispatch_key_set() = saved_tls_;
}

Session *Session::current() { return tls_session; }

bool Session::fresh(const Tensor &t) const {
  return t.defined() && t.storage().defined() &&
         t.storage().unsafeGetStorageImpl()->epoch == epoch_;
}

void Session::reset_graph() {
  graph_seq_ = autograd::peek_sequence_nr();
  joint_blocked_.clear();
  backward_error_.clear();
  grad_reals_.clear();
  grad_slots_.clear();
  trace_ = ir::Trace();
  trace_.name = name_ + "_graph" + std::to_string(graph_index_);
  inputs_.clear();
  lifted_.clear();
  storage_roots_.clear();
  input_roots_.clear();
  region_ids_.clear();
}

void Session::abandon() {
  unmark_written();
  for (CaptureMeta *m : std::vector<CaptureMeta *>(live_.begin(), live_.end()))
    m->session = nullptr;
  live_.clear();
  lifted_.clear();
}

CaptureMeta *Session::meta_of(const Tensor &t) const {
  if (!t.defined()) // an undefined result is handed back as it is
    return nullptr;
  TensorImpl *impl = t.unsafeGetTensorImpl();
  if (!impl->key_set().has(DispatchKey::Capture) ||
      (!impl->capture_meta() && written_.count(impl)))
    return nullptr; // (Note [Reading a tensor the graph writes])
  auto *m = static_cast<CaptureMeta *>(impl->capture_meta());
  EMBER_CHECK(m && m->session == this,
              "a capture tensor from another compiled call (or from a call "
              "that raised) was used in ",
              trace_.name,
              "; capture tensors live only inside the call that made them");
  return m;
}

Tensor Session::make_capture(const Tensor &like, int value) {
  auto impl =
      make_intrusive<TensorImpl>(like.storage(), like.dtype(), like.sizes(),
                                 like.strides(), like.storage_offset());
  impl->set_key(DispatchKey::Capture, true);
  auto m = std::make_unique<CaptureMeta>();
  m->session = this;
  m->self = impl.get();
  m->value = value;
  live_.insert(m.get());
  impl->set_capture_meta(std::move(m));
  return Tensor(std::move(impl));
}

Tensor Session::add_input(const Tensor &real, ir::InputKind kind, int index,
                          std::string name) {
  int v = trace_.add_value(type_of(real));
  trace_.inputs.push_back({v, kind, index, std::move(name),
                           kind == ir::InputKind::Lifted && fresh(real)});
  inputs_.push_back(real);
  // The real tensor's geometry, storage offset included: the function
  // reads it (as_strided(..., x.storage_offset())).
  Tensor t = make_capture(meta::fake_like(real), v);
  CaptureMeta *m = meta_of(t);
  m->real = real;
  m->scratch = in_backward_;
  attach_input(t, real);
  m->input = int(trace_.inputs.size()) - 1;
  m->input_value = v;
  if (real.nbytes() > 0)
    input_roots_[storage_key(real)] = m;
  return t;
}

Tensor Session::add_storage_root(const Tensor &real, ir::InputKind kind,
                                 int index, std::string name) {
  Tensor root = add_input(storage_view(real), kind, index, std::move(name));
  CaptureMeta *m = meta_of(root);
  m->storage_root = true;
  input_roots_.erase(storage_key(real));
  storage_roots_[storage_key(real)] = root;
  return root;
}

Tensor Session::storage_root_for(const Tensor &real, int argument) {
  if (argument >= 0)
    return add_storage_root(real, ir::InputKind::ArgumentStorage, argument,
                            "arg" + std::to_string(argument) + "_storage");
  return add_storage_root(
      real, ir::InputKind::Lifted, int(trace_.inputs.size()),
      "lifted_storage" + std::to_string(storage_roots_.size()));
}

Tensor Session::view_of_storage(const Tensor &root, const Tensor &real) {
  Stack st{IValue(root), IValue(real.sizes().vec()),
           IValue(real.strides().vec()), IValue(real.storage_offset())};
  record(as_strided_op(), st);
  // Its gradient goes to real, not through the storage (which may have been
  // made from another tensor sharing it: Note [Inputs that share memory]).
  attach_input(st.at(0).toTensor(), real);
  return st.at(0).toTensor();
}

void Session::attach_input(const Tensor &t, const Tensor &real) {
  if (!real.requires_grad())
    return;
  // Note [The joint graph]: gradients reaching t go on to real's edge.
  auto fn = std::make_shared<CaptureInput>();
  fn->add_next_edge(autograd::gradient_edge(real));
  autograd::set_history(t, fn);
  grad_reals_.push_back(real);
}

Tensor Session::rebase_on_storage(CaptureMeta *r) {
  EMBER_INTERNAL_ASSERT(r->real.defined() && !r->is_view() && !r->storage_root);
  const ir::Input in = trace_.inputs.at(size_t(r->input));
  Tensor root = storage_root_for(
      r->real, in.kind == ir::InputKind::Argument ? in.index : -1);
  CaptureMeta *s = meta_of(root);
  // r becomes as_strided(root, r's geometry); views of r view root through
  // it, their geometry now relative to the storage.
  std::vector<ViewStep> step{
      {&as_strided_op(), Stack{IValue(), IValue(r->real.sizes().vec()),
                               IValue(r->real.strides().vec()),
                               IValue(r->real.storage_offset())}}};
  auto geometry = [&](const std::vector<ViewStep> &chain) {
    Tensor g = meta::fake(root.sizes(), root.dtype(), root.device());
    for (const ViewStep &v : chain) {
      Stack args = v.args;
      args[0] = g;
      g = meta::infer(*v.op, args).outputs.at(0);
    }
    return g;
  };
  for (CaptureMeta *v : live_) {
    if (v->base.get() != r->self)
      continue;
    std::vector<ViewStep> chain = step;
    chain.insert(chain.end(), v->chain.begin(), v->chain.end());
    v->base = intrusive_ptr<TensorImpl>(s->self);
    v->chain = std::move(chain);
    v->geom = geometry(v->chain);
    v->base_gen = ~uint64_t(0); // recomputed from the root at its next use
  }
  r->base = intrusive_ptr<TensorImpl>(s->self);
  r->chain = std::move(step);
  r->geom = geometry(r->chain);
  if (r->value != r->input_value)
    write_through_view(r, r->value); // its writes so far, into the root
  else
    r->base_gen = s->gen;
  return root;
}

Tensor Session::shared_storage_root(const Tensor &real) {
  if (real.nbytes() == 0)
    return Tensor();
  auto s = storage_roots_.find(storage_key(real));
  if (s != storage_roots_.end())
    return s->second;
  auto r = input_roots_.find(storage_key(real));
  if (r == input_roots_.end())
    return Tensor();
  return rebase_on_storage(r->second);
}

std::vector<Tensor> Session::wrap_arguments(const std::vector<Tensor> &reals) {
  std::vector<Tensor> out(reals.size());
  const std::vector<int> first = alias_pattern(reals);
  for (size_t i = 0; i < reals.size(); ++i) {
    if (first[i] >= 0)
      continue; // wrapped with the first argument sharing its memory
    const Tensor &r = reals[i];
    std::string name = "arg" + std::to_string(i);
    std::vector<size_t> group{i}; // later arguments sharing r's storage
    for (size_t j = i + 1; j < reals.size(); ++j)
      if (first[j] == int(i))
        group.push_back(j);
    bool one_impl = true, overlap = false;
    for (size_t j : group) {
      one_impl = one_impl && reals[j].is_same(r);
      overlap = overlap || meta::has_internal_overlap(reals[j]);
    }
    if (one_impl && !overlap) {
      out[i] = add_input(r, ir::InputKind::Argument, int(i), name);
      for (size_t j : group)
        out[j] = out[i];
      args_.emplace(r.unsafeGetTensorImpl(), out[i]);
      continue;
    }
    for (size_t j : group)
      EMBER_CHECK(reals[j].dtype() == r.dtype(), "compile: arguments ", i,
                  " and ", j, " share memory but have different dtypes (",
                  toString(r.dtype()), " and ", toString(reals[j].dtype()),
                  "); pass a copy (.clone()) of one of them");
    // Note [Inputs that share memory]: the whole storage as a 1-D input;
    // each argument an as_strided view of it.
    Tensor root = add_storage_root(r, ir::InputKind::ArgumentStorage, int(i),
                                   name + "_storage");
    for (size_t j : group) {
      out[j] = one_impl && j != i ? out[i] : view_of_storage(root, reals[j]);
      args_.emplace(reals[j].unsafeGetTensorImpl(), out[j]);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    arg_wrappers_.emplace(out[i].unsafeGetTensorImpl(), int(i));
    arg_pairs_.emplace_back(out[i], reals[i]);
    // Note [An argument's grad]
    // The function reads `.grad` of its arguments as eagerly (an update
    // w.data().sub_(w.grad() * lr), clip_grad_norm_): the capture tensor
    // standing for an argument holds the real tensor's grad, a real tensor
    // that the graph lifts when an op reads it, and writes in place go to
    // it. A grad the function replaces or clears (mutable_grad() = ...,
    // zero_grad) is handed on to the real tensor when the call ends; a grad
    // a backward pass inside the function made for an argument without one
    // is handed to its capture tensor when the pass ends (take_real_grads).
    OwnGradReads own(this);
    const Tensor &g = reals[i].grad();
    if (g.defined() && !out[i].grad().defined())
      out[i].mutable_grad() = g;
    arg_grads_.push_back(out[i].grad().unsafeGetTensorImpl());
  }
  return out;
}

void Session::give_back_grads() {
  OwnGradReads own(this);
  for (size_t i = 0; i < arg_pairs_.size(); ++i) {
    const auto &[wrapper, real] = arg_pairs_[i];
    const Tensor &g = wrapper.grad();
    if (g.unsafeGetTensorImpl() != arg_grads_[i] && !real.grad().is_same(g))
      real.mutable_grad() = g;
  }
}

void Session::take_real_grads() {
  OwnGradReads own(this);
  for (size_t i = 0; i < arg_pairs_.size(); ++i) {
    auto &[wrapper, real] = arg_pairs_[i];
    const Tensor &g = real.grad();
    if (!g.defined() || wrapper.grad().is_same(g) ||
        wrapper.grad().unsafeGetTensorImpl() != arg_grads_[i])
      continue;
    wrapper.mutable_grad() = g;
    arg_grads_[i] = g.unsafeGetTensorImpl();
  }
}

void Session::check_requires_grad() {
  for (size_t i = 0; i < arg_pairs_.size(); ++i) {
    const auto &[wrapper, real] = arg_pairs_[i];
    // (an in-place op of a value that requires grad gives the argument a
    // grad_fn, as eagerly: only a leaf's flag is the user's call)
    EMBER_CHECK(!wrapper.requires_grad() || !wrapper.is_leaf() ||
                    real.requires_grad(),
                "compile: tensor argument ", i,
                " was made to require grad inside the compiled function "
                "(requires_grad_()); the function sees a stand-in for the "
                "caller's tensor, so its gradient would never reach that "
                "tensor. Call requires_grad_() before calling the compiled "
                "function (with grad mode on, such a call runs eagerly).");
  }
}

Tensor Session::lift(const Tensor &real) {
  auto it = lifted_.find(real.unsafeGetTensorImpl());
  if (it != lifted_.end())
    return it->second;
  auto a = args_.find(real.unsafeGetTensorImpl());
  if (a != args_.end() && meta_of(a->second))
    return a->second; // still the capture tensor of that argument
  auto w = arg_wrappers_.find(real.unsafeGetTensorImpl());
  // Note [Inputs that share memory]
  if (Tensor root = shared_storage_root(real); root.defined()) {
    const ir::Input &in = trace_.inputs.at(size_t(meta_of(root)->input));
    if (in.kind == ir::InputKind::ArgumentStorage || w != arg_wrappers_.end())
      lifted_aliases_argument_ = true;
    Tensor t = view_of_storage(root, real);
    lifted_.emplace(real.unsafeGetTensorImpl(), t);
    return t;
  }
  Tensor t;
  if (meta::has_internal_overlap(real)) {
    // A tensor that overlaps itself (expanded) is a view of its storage,
    // as such an argument is (wrap_arguments).
    t = view_of_storage(
        storage_root_for(real, w != arg_wrappers_.end() ? w->second : -1),
        real);
  } else {
    t = w != arg_wrappers_.end()
            ? add_input(real, ir::InputKind::Argument, w->second,
                        "arg" + std::to_string(w->second))
            : add_input(real, ir::InputKind::Lifted, int(trace_.inputs.size()),
                        "lifted" + std::to_string(lifted_.size()));
  }
  lifted_.emplace(real.unsafeGetTensorImpl(), t);
  return t;
}

int Session::value_of(const Tensor &t, CaptureMeta **out) {
  *out = nullptr;
  if (CaptureMeta *m = meta_of(t)) {
    if (m->is_view())
      refresh_view(m);
    *out = m;
    return m->value;
  }
  TensorImpl *impl = t.unsafeGetTensorImpl();
  if (impl->is_wrapped_number()) {
    int v = trace_.add_value(type_of(t));
    ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
    trace_.constants.push_back({v, t.item(), Tensor()});
    return v;
  }
  Tensor w = lift(t);
  CaptureMeta *m = meta_of(w);
  if (m->is_view()) // a lifted tensor sharing memory with another input
    refresh_view(m);
  *out = m;
  return m->value;
}

int Session::add_node(const OperatorHandle &op, std::vector<ir::Arg> args,
                      const Tensor &result_like) {
  int v = trace_.add_value(type_of(result_like));
  push_node(op, std::move(args), {v});
  return v;
}

void Session::push_node(const OperatorHandle &op, std::vector<ir::Arg> args,
                        std::vector<int> results) {
  ir::Node n;
  n.op = &op;
  n.args = std::move(args);
  n.results = std::move(results);
  // Note [Checkpoint regions in a compiled function]: regions numbered
  // from 1 in each graph, so that the trace of a call matches the next's.
  if (uint64_t r = detail::checkpoint_region(); r && !in_backward_)
    n.recompute = region_ids_.try_emplace(r, int64_t(region_ids_.size()) + 1)
                      .first->second;
  trace_.nodes.push_back(std::move(n));
}

void Session::refresh_view(CaptureMeta *m) {
  CaptureMeta *root = m->root();
  if (root->gen == m->base_gen)
    return;
  // Replay the view ops on the base's current value; types come from the
  // same ops applied to a fake row-major base.
  int cur = root->value;
  Tensor fake =
      meta::fake(m->base->sizes(), m->base->dtype(), m->base->device());
  for (const ViewStep &s : m->chain) {
    Stack args = s.args;
    args[0] = fake;
    fake = meta::infer(*s.op, args).outputs.at(0);
    std::vector<ir::Arg> a;
    a.push_back(ir::Arg::of_value(cur));
    for (size_t i = 1; i < s.args.size(); ++i)
      a.push_back(ir::Arg::of_attr(s.args[i]));
    cur = add_node(*s.op, std::move(a), fake);
  }
  m->value = cur;
  m->base_gen = root->gen;
}

void Session::write_through_view(CaptureMeta *m, int new_value) {
  CaptureMeta *root = m->root();
  static const OperatorHandle &scatter =
      Dispatcher::singleton().findSchemaOrThrow("ember::as_strided_scatter");
  const Tensor &g = m->geom;
  std::vector<ir::Arg> a;
  a.push_back(ir::Arg::of_value(root->value));
  a.push_back(ir::Arg::of_value(new_value));
  a.push_back(ir::Arg::of_attr(g.sizes().vec()));
  a.push_back(ir::Arg::of_attr(g.strides().vec()));
  a.push_back(ir::Arg::of_attr(IValue(g.storage_offset())));
  root->value = add_node(scatter, std::move(a), Tensor(m->base));
  root->gen++;
  m->value = new_value;
  m->base_gen = root->gen;
}

std::string Session::inplace_on_view_reason(const OperatorHandle &op,
                                            const Stack &stack) {
  const FunctionSchema &schema = op.schema();
  if (schema.arguments.empty() || !schema.arguments[0].is_write ||
      !GradMode::is_enabled() || !stack[0].isTensor())
    return "";
  const Tensor &self = stack[0].toTensor();
  CaptureMeta *m = self.defined() ? meta_of(self) : nullptr;
  if (!m || !m->root()->real.defined() || !m->root()->real.is_view())
    return "";
  bool rg = any_requires_grad(stack);
  // Eagerly the write gives the view's base a CopySlices history, which
  // the tensor standing for the view in the graph cannot give it.
  return rg ? op.name() +
                  " writes in place, with autograd, into a view of a tensor "
                  "from outside the graph (its base's history changes)"
            : "";
}

void Session::mark_written(const Tensor &real) {
  // Note [Reading a tensor the graph writes]
  // A real tensor the graph writes holds its old value until the graph
  // runs; code that reads it directly (item(), data_ptr()) must see the
  // write. It gets the Capture key until the graph ends, so that reading it
  // syncs (a graph break) as reading a capture tensor does. (Reading through
  // `storage().data()` reads the buffer itself and bypasses this, as it
  // bypasses every tensor-level check.)
  TensorImpl *impl = real.unsafeGetTensorImpl();
  if (impl->capture_meta() || !written_.emplace(impl, real).second)
    return;
  impl->set_key(DispatchKey::Capture, true);
}

void Session::unmark_written() {
  for (auto &[impl, t] : written_)
    impl->set_key(DispatchKey::Capture, false);
  written_.clear();
}

void Session::record(const OperatorHandle &op, Stack &stack) {
  const FunctionSchema &schema = op.schema();
  check_requires_grad();

  // Ops the graph cannot hold: a graph break, then the op runs eagerly.
  std::string needs_data;
  meta::Result r;
  if (!meta::has_rule(op)) {
    needs_data = op.name() +
                 " has no shape rule (a custom op: register one with "
                 "ember::meta::register_fake)";
  } else {
    for (const IValue &v : stack)
      if (v.isGenerator())
        needs_data = op.name() + " takes an explicit Generator";
    if (needs_data.empty())
      needs_data = inplace_on_view_reason(op, stack);
    if (needs_data.empty()) {
      r = meta::infer(op, stack);
      needs_data = r.needs_data;
      // (an optional gradient of a *_backward op: no graph value stands
      // for an undefined result)
      for (const Tensor &o : r.outputs)
        if (!o.defined() && needs_data.empty())
          needs_data = op.name() + " returns an undefined tensor";
    }
    // Note [Devices in a compiled graph]
    // A graph value lives on one device, and each fusion is compiled by the
    // generator of its device (the CPU's LLVM one, the CUDA C one for NVRTC;
    // an op a generator does not take runs its eager kernel there). A fused
    // kernel reads and writes one device's memory, so an op between devices
    // (.to(kCUDA), .cpu(), a CPU tensor with CUDA ones) breaks the graph and
    // runs eagerly, which copies. A wrapped number (a Scalar as a tensor)
    // belongs to no device.
    if (needs_data.empty()) {
      std::optional<Device> first;
      auto another_device = [&](const Tensor &t) {
        if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number())
          return false;
        if (!first)
          first = t.device();
        return *first != t.device();
      };
      if (any_tensor(stack, another_device) ||
          std::any_of(r.outputs.begin(), r.outputs.end(), another_device))
        needs_data = op.name() + " works on tensors of two devices (a copy "
                                 "between devices runs eagerly)";
    }
  }
  if (!needs_data.empty()) {
    // Called from the op's autograd kernel, whose node (being built) holds
    // the graph's nodes: the graph keeps its eager backward (Note [The joint
    // graph]).
    if (tls_local_dispatch_key_set().excluded.has(DispatchKey::Autograd) &&
        GradMode::is_enabled() && any_requires_grad(stack))
      joint_blocked_ = needs_data + " (inside its autograd kernel)";
    graph_break(needs_data, "");
    call_eager(op, stack);
    return;
  }

  // as_strided's geometry is a place in the storage: it is recorded on the
  // root whose value is the whole storage, a storage root for a real tensor
  // that is not its whole storage (Note [Inputs that share memory]), with
  // the offset made explicit (None is self's own).
  if (&op == &as_strided_op() && stack[0].isTensor() &&
      stack[0].toTensor().defined()) {
    const Tensor &self = stack[0].toTensor();
    CaptureMeta *m = meta_of(self);
    if (!m && !self.unsafeGetTensorImpl()->is_wrapped_number())
      m = meta_of(lift(self)); // a real tensor: the capture tensor of it
    if (m) {
      CaptureMeta *root = m->root();
      if (root->real.defined() && !root->storage_root &&
          !covers_storage(root->real))
        root = meta_of(rebase_on_storage(root));
      if (stack[3].isNone())
        stack[3] = IValue(stack[0].toTensor().storage_offset());
      stack[0] = Tensor(intrusive_ptr<TensorImpl>(root->self));
      r = meta::infer(op, stack);
    }
  }

  // (Note [Random ops in a compiled function] in eager/Factory.cpp)
  if (random_state_arg(op) >= 0)
    draws_random_ = true;

  // Arguments -> trace arguments.
  std::vector<ir::Arg> args;
  args.reserve(stack.size());
  CaptureMeta *self_meta = nullptr;
  for (size_t i = 0; i < stack.size(); ++i) {
    const IValue &v = stack[i];
    if (v.isTensor()) {
      const Tensor &t = v.toTensor();
      CaptureMeta *m = nullptr;
      args.push_back(ir::Arg::of_value(t.defined() ? value_of(t, &m) : -1));
      if (i == 0)
        self_meta = m;
    } else if (v.isTensorList()) {
      std::vector<int> ids;
      for (const Tensor &t : v.toTensorList()) {
        CaptureMeta *m = nullptr; // undefined elements: None in Tensor?[]
        ids.push_back(t.defined() ? value_of(t, &m) : -1);
      }
      args.push_back(ir::Arg::of_values(std::move(ids)));
    } else if (i < schema.arguments.size() &&
               schema.arguments[i].type.rfind("Tensor", 0) == 0) {
      args.push_back(ir::Arg::of_value(-1)); // an absent Tensor?
    } else {
      args.push_back(ir::Arg::of_attr(v));
    }
  }

  bool inplace = !schema.arguments.empty() && schema.arguments[0].is_write;
  if (inplace) {
    EMBER_INTERNAL_ASSERT(self_meta && r.outputs.size() == 1);
    // A real leaf that requires grad may not be written in place under
    // grad mode, directly or through a view, as eagerly (its capture tensor
    // is not a leaf: Note [The joint graph]); as eagerly, only a write that
    // takes part in autograd: one through a detached alias
    // (x.detach().mul_(2), w.data().sub_(...)) is allowed.
    const Tensor &root_real = self_meta->root()->real;
    bool takes_part = false;
    for (const IValue &v : stack)
      if (v.isTensor())
        takes_part = takes_part || v.toTensor().requires_grad();
    // (the root's real tensor itself, or a differentiable view of it: a
    // detached alias does not require grad)
    const bool aliases_leaf =
        !self_meta->is_view() || stack[0].toTensor().requires_grad();
    if (GradMode::is_enabled() && takes_part && aliases_leaf &&
        root_real.defined() && root_real.requires_grad() && root_real.is_leaf())
      EMBER_CHECK(false,
                  self_meta->is_view() || root_real.is_view()
                      ? "a view of a leaf Variable that requires grad is being "
                        "used in an in-place operation."
                      : "a leaf Variable that requires grad is being used in "
                        "an in-place operation.");
    int nv = add_node(op, std::move(args), r.outputs[0]);
    // Autograd's saved tensors check the version, as eagerly: the capture
    // tensor's and the real tensor's (end_graph keeps the count the
    // write-back would add to it).
    TensorImpl *self_impl = stack[0].toTensor().unsafeGetTensorImpl();
    self_impl->bump_version();
    if (Tensor &real = self_meta->root()->real; real.defined()) {
      // (a capture view made from the real tensor may share its storage)
      if (!self_impl->storage().is_alias_of(real.storage()))
        real.unsafeGetTensorImpl()->bump_version();
      mark_written(real);
    }
    if (self_meta->is_view()) {
      write_through_view(self_meta, nv);
    } else {
      self_meta->value = nv;
      self_meta->gen++;
    }
    Tensor self = stack[0].toTensor();
    stack.clear();
    stack.emplace_back(std::move(self));
    return;
  }

  std::vector<int> results;
  std::vector<Tensor> outs;
  for (const Tensor &o : r.outputs) {
    int v = trace_.add_value(type_of(o));
    results.push_back(v);
    outs.push_back(make_capture(o, v));
  }
  // A view of a capture tensor: remember its base, recipe and geometry.
  if (self_meta && outs.size() == 1 && stack[0].isTensor()) {
    const Tensor &in = stack[0].toTensor();
    const Tensor &o = r.outputs[0];
    TensorImpl *in_impl = self_meta->self;
    if (o.storage().is_alias_of(in_impl->storage()) ||
        o.storage().is_alias_of(in.storage())) {
      // The view's geometry within its root's row-major layout.
      auto geometry = [&] {
        Tensor parent =
            self_meta->is_view()
                ? self_meta->geom
                : meta::fake(self_meta->self->sizes(), self_meta->self->dtype(),
                             self_meta->self->device());
        Stack gargs = stack;
        gargs[0] = parent;
        return meta::infer(op, gargs).outputs.at(0);
      };
      Tensor geom;
      try {
        geom = geometry();
      } catch (const Error &) {
        // A view that the real tensor's layout allows but its root's
        // row-major layout cannot express (view() of a transpose that is
        // contiguous in memory): within the storage, every view eager
        // makes is a strided one (Note [Inputs that share memory]).
        CaptureMeta *root = self_meta->root();
        if (!root->real.defined() || root->storage_root)
          throw;
        rebase_on_storage(root);
        geom = geometry();
        // self's value, recomputed from the storage: a value of the root
        // written before is laid out row-major, not as the real tensor.
        CaptureMeta *again = nullptr;
        args[0] = ir::Arg::of_value(value_of(in, &again));
      }
      CaptureMeta *m = meta_of(outs[0]);
      CaptureMeta *root = self_meta->root();
      m->base = intrusive_ptr<TensorImpl>(root->self);
      m->base_gen = root->gen;
      m->chain = self_meta->chain;
      ViewStep step{&op, stack};
      step.args[0] = IValue();
      m->chain.push_back(step);
      m->geom = std::move(geom);
    }
  }
  push_node(op, std::move(args), std::move(results));
  stack.clear();
  for (Tensor &t : outs)
    stack.emplace_back(std::move(t));
}

void Session::graph_break(const std::string &reason, const std::string &where) {
  if (in_backward_) // the backward trace stops; the graph's runs eagerly
    throw JointAbort{"its backward needs data: " + reason};
  BreakInfo b{reason, where};
  if (fullgraph_)
    EMBER_CHECK(false, "compile(fullgraph=true): graph break in ", trace_.name,
                ": ", reason, where.empty() ? "" : " (at " + where + ")",
                "; remove the sync point or compile with fullgraph=false");
  if (logging::enabled(logging::Topic::breaks))
    logging::log(logging::Topic::breaks,
                 "graph break in " + trace_.name + ": " + reason +
                     (where.empty() ? "" : " at " + where));
  breaks_.push_back(b);
  if (on_break_)
    on_break_(b);
  end_graph();
}

std::vector<OutputRecipe> Session::finish(const std::vector<Tensor> &outs) {
  check_requires_grad();
  give_back_grads();
  std::vector<OutputRecipe> recipes(outs.size());
  std::vector<int> values(outs.size(), -1);
  for (size_t i = 0; i < outs.size(); ++i) {
    OutputRecipe &r = recipes[i];
    CaptureMeta *m = meta_of(outs[i]);
    if (!m) {
      r.fixed = outs[i];
      continue;
    }
    CaptureMeta *root = m->root();
    r.chain = m->chain;
    r.requires_grad = outs[i].requires_grad();
    if (root->real.defined()) {
      r.kind = OutputRecipe::Kind::Input;
      r.index = root->input;
    } else {
      r.kind = OutputRecipe::Kind::GraphOutput;
      values[i] = root->value;
    }
  }
  end_graph();
  for (size_t i = 0; i < outs.size(); ++i)
    if (values[i] >= 0)
      recipes[i].index =
          int(std::find(last_outputs_.begin(), last_outputs_.end(), values[i]) -
              last_outputs_.begin());
  // What replay mode would hand out or write again (Note [Creation epochs]).
  if (lifted_aliases_argument_)
    replay_blocker_ = "a captured tensor shares memory with an argument";
  // A training graph replays (Note [Replaying training graphs]) unless its
  // backward raises (end_graph() said so), or it returns a view of an
  // output (whose history the capture makes from its base's).
  for (const OutputRecipe &r : recipes)
    if (last_joint_ && r.kind == OutputRecipe::Kind::GraphOutput &&
        !r.chain.empty())
      replay_blocker_ = "it trains and returns a view of a graph output";
  // A .grad returned itself (not a capture tensor): a replay would return
  // the first call's (found by a probe).
  for (const OutputRecipe &r : recipes)
    for (const GradRead &g : grad_reads_)
      if (r.kind == OutputRecipe::Kind::Fixed && r.fixed.defined() &&
          g.grad.is_same(r.fixed))
        replay_blocker_ = "it returns a .grad itself: a replay would return "
                          "the first call's";
  for (const OutputRecipe &r : recipes)
    if ((r.kind == OutputRecipe::Kind::Fixed && fresh(r.fixed)) ||
        (r.kind == OutputRecipe::Kind::Input &&
         fresh(last_input_tensors_.at(size_t(r.index)))))
      replay_blocker_ = "it returns a tensor it created outside the graph "
                        "(a factory's result)";
  // A tensor it made outside the graph from host values (a factory's
  // result) would keep the first call's values in every replay, unless the
  // code that made it remakes it at each replay (Note [Host state in
  // replayed calls]: the optimizers' step-dependent factors).
  for (size_t i = 0; i < last_inputs_.size(); ++i) {
    const ir::Input &in = last_inputs_[i];
    if (in.kind != ir::InputKind::Lifted)
      continue;
    const TensorImpl *real = last_input_tensors_.at(i).unsafeGetTensorImpl();
    if (in.fresh && std::none_of(replay_steps_.begin(), replay_steps_.end(),
                                 [&](const ReplayStep &s) {
                                   return s.made.unsafeGetTensorImpl() == real;
                                 }))
      replay_blocker_ = "it reads a tensor it created outside the graph (a "
                        "factory's result: a replay would reuse the first "
                        "call's values)";
    // A replay reads each .grad anew (Note [Host state in replayed
    // calls]), the tensor itself: not one sharing its memory.
    for (const GradRead &g : grad_reads_)
      if (g.grad.defined() && g.grad.unsafeGetTensorImpl() != real &&
          last_input_tensors_[i].is_alias_of(g.grad))
        replay_blocker_ = "it reads a .grad through a view or another "
                          "tensor sharing its memory";
  }
  for (const ir::Mutation &m : last_mutations_)
    if (fresh(last_input_tensors_.at(size_t(m.input))))
      replay_blocker_ = "it writes into a tensor it created outside the "
                        "graph (a factory's result)";
  // A .grad the call replaced (p.mutable_grad() = g, or cleared without
  // replay_clear_grad): a replay would not (Note [Host state in replayed
  // calls]).
  {
    OwnGradReads own(this);
    for (const GradRead &g : grad_reads_) {
      const Tensor &now = g.owner.grad();
      if (!now.is_same(g.grad) &&
          (now.defined() ||
           !cleared_grads_.count(g.owner.unsafeGetTensorImpl())))
        replay_blocker_ = "it replaces a .grad (p.mutable_grad() = ...): a "
                          "replay would not assign it";
    }
  }
  if (draws_random_)
    replay_blocker_ = "it draws random numbers (each call reads the "
                      "generator's state anew; a replay would repeat the "
                      "first call's numbers)";
  // (last: the reason of the code that knows it reads state)
  if (!no_replay_.empty())
    replay_blocker_ = no_replay_;
  return recipes;
}

void Session::add_grad_read(const Tensor &owner, const Tensor &grad,
                            bool replaceable) {
  if (own_grad_reads_)
    return;
  // A capture tensor's (an argument's: Note [An argument's grad]).
  if (owner.unsafeGetTensorImpl()->capture_meta()) {
    if (replaceable)
      set_no_replay(ember::detail::kTakesGrad);
    else if (grad.defined())
      set_no_replay(ember::detail::kReadsGrad);
    return;
  }
  // The state a declared clear left (zero_grad(set_to_none), then a step
  // reading the .grads): a replay clears it too (found by a probe: the
  // read's guard, "undefined", failed at every replay's start).
  if (!grad.defined() && cleared_grads_.count(owner.unsafeGetTensorImpl()))
    return;
  // A .grad this call made (a backward inside it) is not one a replay can
  // read at its start.
  if (grad.defined() &&
      (grad.unsafeGetTensorImpl()->capture_meta() || fresh(grad)))
    set_no_replay("it reads a .grad that the call itself made");
  grad_reads_.push_back({owner, grad});
}

void Session::add_clear_grad(const Tensor &owner) {
  cleared_grads_.insert(owner.unsafeGetTensorImpl());
  add_replay_step(
      {[owner] { owner.mutable_grad().reset(); }, nullptr, Tensor()});
}

Tensor Session::stand_in(const Tensor &t) {
  CaptureMeta *m = nullptr;
  int v = value_of(t, &m);
  // An input's own value: the capture tensor of a real tensor (which never
  // becomes an output) is saved itself.
  if (!m->is_view() && m->real.defined() && v == m->input_value)
    return t;
  TensorImpl *src = t.unsafeGetTensorImpl();
  // The same (fake) storage: in-place writes to t bump the version the
  // saved tensor checks.
  auto impl =
      make_intrusive<TensorImpl>(src->storage(), src->dtype(), src->sizes(),
                                 src->strides(), src->storage_offset());
  impl->set_key(DispatchKey::Capture, true);
  auto meta = std::make_unique<CaptureMeta>();
  meta->session = this;
  meta->self = impl.get();
  meta->value = v;
  meta->saved = true;
  live_.insert(meta.get());
  impl->set_capture_meta(std::move(meta));
  return Tensor(std::move(impl));
}

std::string Session::joint_blocker(const std::vector<CaptureMeta *> &outs) {
  if (!joint_blocked_.empty())
    return joint_blocked_;
  for (CaptureMeta *m : live_)
    if (!m->is_view() && m->real.defined() && !m->scratch &&
        m->value != m->input_value && capture_tensor(m).requires_grad())
      return "input " + trace_.inputs.at(size_t(m->input)).name +
             " is written in place with a value that requires grad";
  // A real tensor written in place during this graph (its autograd kernel
  // ran on it) has a history built here: its nodes must stay.
  for (CaptureMeta *m : live_)
    if (got_history(m))
      return "a tensor from outside the graph was written in place with a "
             "value that requires grad";
  std::vector<Tensor> roots;
  for (CaptureMeta *m : outs)
    roots.push_back(capture_tensor(m));
  // The graph's nodes reach what came before it only through the cut (its
  // inputs' edges). A node made by other code during capture (a custom
  // autograd Function whose forward has a graph break: its input is an
  // earlier graph's output, never read by an op of this graph) can lead
  // past it; tracing would run that earlier backward on stand-ins.
  std::unordered_set<autograd::Node *> cut;
  for (const Tensor &real : grad_reals_)
    cut.insert(autograd::gradient_edge(real).function.get());
  const char *escapes =
      "an autograd node of the graph leads to a tensor from before it that "
      "no op of the graph reads (a custom autograd Function whose forward "
      "has a graph break)";
  std::string why;
  visit_graph_nodes(roots, [&](autograd::Node *n) {
    if (n->has_grad_hooks())
      why = "a hook is registered on a tensor of the graph (register_hook "
            "or retain_grad)";
    else if (dynamic_cast<autograd::NotImplemented *>(n))
      why = "an op of the graph has no derivative formula";
    else if (auto *acc = dynamic_cast<autograd::AccumulateGrad *>(n))
      why = acc->variable.unsafeGetTensorImpl()->key_set().has(
                DispatchKey::Capture)
                ? "a tensor made inside the function requires grad (a leaf "
                  "of the graph)"
                : escapes;
    else if (!dynamic_cast<CaptureInput *>(n))
      for (const autograd::Edge &e : n->next_edges())
        if (e.function && !cut.count(e.function.get()) &&
            e.function->sequence_nr() < graph_seq_)
          why = escapes;
    return why.empty();
  });
  return why;
}

void Session::visit_graph_nodes(
    const std::vector<Tensor> &roots,
    const std::function<bool(autograd::Node *)> &visit) const {
  // Up to the cut: the edges of the real tensors the graph reads (their
  // nodes may be newer, made by eager code between graphs).
  std::unordered_set<autograd::Node *> cut;
  for (const Tensor &real : grad_reals_)
    cut.insert(autograd::gradient_edge(real).function.get());
  std::vector<autograd::Node *> work;
  std::unordered_set<autograd::Node *> seen;
  for (const Tensor &r : roots)
    work.push_back(autograd::grad_fn_of(r).get());
  while (!work.empty()) {
    autograd::Node *n = work.back();
    work.pop_back();
    if (!n || n->sequence_nr() < graph_seq_ || cut.count(n) ||
        !seen.insert(n).second)
      continue;
    if (!visit(n))
      return;
    if (dynamic_cast<CaptureInput *>(n)) // (leads to a real tensor's edge)
      continue;
    for (const autograd::Edge &e : n->next_edges())
      work.push_back(e.function.get());
  }
}

std::vector<CaptureMeta *> Session::trace_backward() {
  // The graph's outputs that require grad: roots the user's code still
  // holds (saved tensors are stand-ins), in value order.
  std::vector<CaptureMeta *> outs;
  for (CaptureMeta *m : live_)
    if (!m->is_view() && !m->real.defined() && !m->saved && !m->tangent &&
        capture_tensor(m).requires_grad())
      outs.push_back(m);
  if (outs.empty())
    return {};
  std::sort(outs.begin(), outs.end(),
            [](CaptureMeta *a, CaptureMeta *b) { return a->value < b->value; });
  std::string why = joint_blocker(outs);
  if (why.empty()) {
    size_t nodes = trace_.nodes.size();
    std::vector<Tensor> roots, tangents;
    std::vector<int> tangent_values;
    for (CaptureMeta *m : outs) {
      roots.push_back(capture_tensor(m));
      int v = trace_.add_value(type_of(roots.back()));
      tangent_values.push_back(v);
      tangents.push_back(
          make_capture(meta::fake(roots.back().sizes(), roots.back().dtype(),
                                  roots.back().device()),
                       v));
      meta_of(tangents.back())->tangent = true;
    }
    // The cut: each real tensor's edge once.
    autograd::edge_list cut;
    std::vector<int> cut_of; // per grad_reals_ entry: its index in `cut`
    for (const Tensor &real : grad_reals_) {
      autograd::Edge e = autograd::gradient_edge(real);
      auto it = std::find_if(cut.begin(), cut.end(), [&](const auto &c) {
        return c.function == e.function && c.input_nr == e.input_nr;
      });
      cut_of.push_back(int(it - cut.begin()));
      if (it == cut.end())
        cut.push_back(std::move(e));
    }
    // The nodes built during capture, once done: what they saved (the
    // stand-ins) is dropped before the graph's outputs are chosen.
    auto release = [&] {
      visit_graph_nodes(roots, [](autograd::Node *n) {
        n->release_variables(); // (a CaptureInput saves nothing)
        return true;
      });
    };
    std::vector<Tensor> grads;
    bool version_error = false;
    try {
      in_backward_ = true;
      grads = autograd::grad_at_edges(roots, tangents, cut);
      in_backward_ = false;
    } catch (const JointAbort &a) {
      in_backward_ = false;
      why = a.reason;
    } catch (const autograd::SavedTensorModifiedError &e) {
      in_backward_ = false;
      why = e.what();
      version_error = true;
    } catch (const std::exception &e) {
      in_backward_ = false;
      why = std::string("tracing it raised: ") + e.what();
    }
    if (why.empty()) {
      // The gradients' values first: a gradient that is a real tensor (a
      // factory's zeros) is lifted, and inputs lifted by the backward come
      // before the tangents.
      std::vector<int> slot_of_cut(cut.size(), -1);
      for (size_t k = 0; k < grads.size(); ++k) {
        if (!grads[k].defined())
          continue;
        CaptureMeta *m = nullptr;
        slot_of_cut[k] = int(trace_.gradients.size());
        trace_.gradients.push_back(value_of(grads[k], &m));
      }
      for (size_t k = 0; k < outs.size(); ++k)
        trace_.inputs.push_back({tangent_values[k], ir::InputKind::Tangent,
                                 int(k), "tangent" + std::to_string(k)});
      // Each edge gets its gradient once (the first entry standing for it).
      for (size_t k = 0; k < cut_of.size(); ++k) {
        int c = cut_of[k];
        bool first = std::find(cut_of.begin(), cut_of.begin() + long(k), c) ==
                     cut_of.begin() + long(k);
        grad_slots_.push_back(first ? slot_of_cut[size_t(c)] : -1);
      }
      release();
      return outs;
    }
    // Undo the partial trace: its nodes go, its values stay unused.
    trace_.nodes.resize(nodes);
    trace_.gradients.clear();
    if (version_error) {
      // A tensor saved for backward was written in place after: eagerly
      // backward raises, and so does the outputs' node here (Note [The
      // joint graph]).
      backward_error_ = why;
      release();
      return outs;
    }
  }
  eager_backward_.push_back(trace_.name + " (" + why + ")");
  return {};
}

bool Session::got_history(CaptureMeta *m) const {
  if (m->is_view() || !m->real.defined() || m->storage_root || m->scratch)
    return false;
  const auto *am = autograd::get_meta(m->real);
  return am && am->grad_fn_ && am->grad_fn_->sequence_nr() >= graph_seq_;
}

void Session::take_history(const Tensor &real,
                           const autograd::AutogradMeta *from) {
  // The real tensor, and (after a break, when it is an argument's capture
  // tensor of an earlier graph) the caller's argument.
  std::vector<Tensor> targets{real};
  if (auto a = arg_wrappers_.find(real.unsafeGetTensorImpl());
      a != arg_wrappers_.end())
    targets.push_back(arg_pairs_.at(size_t(a->second)).second);
  for (const Tensor &t : targets) {
    auto *rm = autograd::materialize_meta(t);
    if (rm == from)
      continue;
    rm->grad_fn_ = from->grad_fn_;
    rm->output_nr_ = from->output_nr_;
    rm->attr_version_ = t._version();
    t.unsafeGetTensorImpl()->set_key(DispatchKey::Autograd, true);
  }
}

void Session::end_graph() {
  unmark_written();
  // Note [The joint graph]: the backward of the outputs that require grad.
  std::vector<CaptureMeta *> tangent_outs = trace_backward();

  // Every live capture tensor stays alive until it is materialized (a view
  // may hold the last reference to its base).
  std::vector<intrusive_ptr<TensorImpl>> keep;
  for (CaptureMeta *m : live_)
    keep.emplace_back(m->self);
  // Roots first, then views (whose recipes start from their root).
  std::vector<CaptureMeta *> roots, views;
  for (CaptureMeta *m : live_)
    (m->is_view() ? views : roots).push_back(m);
  // A deterministic order (value ids) for the graph's outputs.
  auto by_value = [](CaptureMeta *a, CaptureMeta *b) {
    return a->value < b->value;
  };
  std::sort(roots.begin(), roots.end(), by_value);
  std::sort(views.begin(), views.end(), by_value);

  std::vector<CaptureMeta *> out_roots;
  for (CaptureMeta *m : roots) {
    if (m->real.defined()) {
      if (m->value != m->input_value && !m->scratch)
        trace_.mutations.push_back({m->input, m->value});
    } else if (std::find(trace_.outputs.begin(), trace_.outputs.end(),
                         m->value) == trace_.outputs.end()) {
      trace_.outputs.push_back(m->value);
      // The strides eager gives the tensor (Note [Outputs are new tensors]);
      // a saved stand-in of a view (maybe expanded) is made contiguous.
      trace_.output_strides.push_back(
          m->saved ? contiguous_strides(m->self->sizes()).vec()
                   : m->self->strides().vec());
      out_roots.push_back(m);
    } else {
      out_roots.push_back(m);
    }
  }
  // Each tangent is the gradient of its output's value.
  for (ir::Input &in : trace_.inputs)
    if (in.kind == ir::InputKind::Tangent)
      in.index = int(std::find(trace_.outputs.begin(), trace_.outputs.end(),
                               tangent_outs.at(size_t(in.index))->value) -
                     trace_.outputs.begin());

  GraphResult result;
  if (!trace_.nodes.empty() || !trace_.mutations.empty()) {
    // The versions of written inputs already count each in-place op
    // (record()); the write-back adds none.
    std::vector<std::pair<StorageImpl *, uint32_t>> versions;
    for (const ir::Mutation &mu : trace_.mutations) {
      const Tensor &real = inputs_.at(size_t(mu.input));
      if (real.storage().defined())
        versions.emplace_back(real.storage().unsafeGetStorageImpl(),
                              real._version());
    }
    // The graph runs without capture (and without the grad mode switch
    // below having any effect on it).
    result = runner_(trace_, inputs_);
    ++graphs_run_;
    for (auto &[s, v] : versions)
      s->version.store(v, std::memory_order_relaxed);
  }
  last_joint_.reset();
  if (!tangent_outs.empty() && !backward_error_.empty()) {
    auto node = std::make_shared<RaisingBackward>(backward_error_);
    for (CaptureMeta *m : tangent_outs)
      autograd::set_history(capture_tensor(m), node);
    replay_blocker_ = "its backward raises: " + backward_error_;
  } else if (!tangent_outs.empty()) {
    // One node for the outputs that require grad; its gradients go to the
    // inputs' edges (Note [The joint graph]).
    JointReplay j;
    std::vector<Tensor> outs;
    for (CaptureMeta *m : tangent_outs) {
      outs.push_back(capture_tensor(m));
      j.tangent_outputs.push_back(int(
          std::find(trace_.outputs.begin(), trace_.outputs.end(), m->value) -
          trace_.outputs.begin()));
    }
    j.grad_reals = grad_reals_;
    j.slots = grad_slots_;
    attach_compiled_backward(outs, result, j.grad_reals, j.slots);
    last_joint_ = std::move(j);
  }

  // Materialize in place: roots, then views replayed on their real base.
  auto finish_impl = [&](CaptureMeta *m, const Tensor &real) {
    TensorImpl *impl = m->self;
    impl->set_data_from(*real.unsafeGetTensorImpl());
    impl->set_key(DispatchKey::Capture, false);
  };
  for (CaptureMeta *m : roots) {
    if (m->real.defined()) {
      finish_impl(m, m->real);
    } else {
      auto it =
          std::find(trace_.outputs.begin(), trace_.outputs.end(), m->value);
      finish_impl(m, result.outputs.at(size_t(it - trace_.outputs.begin())));
    }
  }
  for (CaptureMeta *m : views) {
    finish_impl(m, replay_views(Tensor(m->base), m->chain));
    // A view of its root's base, as eagerly (the boxed view ops replay_views
    // calls do not record it): for a view of an argument, the caller's
    // tensor (or its base), so that autograd's checks see it (an in-place
    // write to a returned view of a leaf that requires grad raises).
    CaptureMeta *root = m->root();
    mark_view_of(capture_tensor(m), root->real.defined() && !root->storage_root
                                        ? intrusive_ptr<TensorImpl>(
                                              root->real.unsafeGetTensorImpl())
                                        : m->base);
    // A view's history: through its base's (the node's, or an input's).
    Tensor v = capture_tensor(m);
    if (!tangent_outs.empty())
      if (auto *am = autograd::get_meta(v); am && am->grad_fn_)
        autograd::set_history_from_base(v);
  }
  // An input that requires grad written in place (its graph keeps the
  // eager backward): the real tensor's history is the writes', as eagerly.
  for (CaptureMeta *m : roots) {
    if (!m->real.defined() || m->value == m->input_value || m->scratch)
      continue;
    auto *wm = autograd::get_meta(capture_tensor(m));
    if (!wm || !wm->grad_fn_ ||
        dynamic_cast<CaptureInput *>(wm->grad_fn_.get()))
      continue;
    // The real tensor, and (after a break, when it is an argument's
    // capture tensor of an earlier graph) the caller's argument.
    take_history(m->real, wm);
  }
  // A real tensor written in place directly, or through a view made from
  // it (its autograd kernel gave it the write's history): an argument's
  // capture tensor of an earlier graph passes it on to the caller's
  // argument.
  for (CaptureMeta *m : roots)
    if (got_history(m) && arg_wrappers_.count(m->real.unsafeGetTensorImpl()))
      take_history(m->real, autograd::get_meta(m->real));
  // Drop the capture records (their destructors leave live_).
  std::vector<CaptureMeta *> all(live_.begin(), live_.end());
  for (CaptureMeta *m : all) {
    m->session = nullptr;
    m->self->set_capture_meta(nullptr);
  }
  live_.clear();
  last_outputs_ = trace_.outputs;
  last_mutations_ = trace_.mutations;
  last_inputs_ = trace_.inputs;
  last_input_tensors_ = inputs_;
  ++graph_index_;
  reset_graph();
}

// ---------------------------------------------------------------------------
// The Capture key's fallback and the sync hook.
// ---------------------------------------------------------------------------

namespace {
void capture_fallback(const OperatorHandle &op, DispatchKeySet, Stack &stack) {
  Session *s = Session::current();
  if (!s) {
    // A capture tensor outside its call (it raised): say so.
    EMBER_CHECK(false,
                "a capture tensor was used outside of ember::compile "
                "(in ",
                op.name(),
                "); capture tensors exist only "
                "while a compiled call runs");
  }
  s->record(op, stack);
}

void capture_sync(TensorImpl &t, const char *reason,
                  const std::source_location &where) {
  auto *m = static_cast<CaptureMeta *>(t.capture_meta());
  // (a real tensor the graph writes: Note [Reading a tensor the graph
  // writes])
  Session *s = m ? m->session : Session::current();
  EMBER_CHECK(s && s == Session::current(),
              "a capture tensor was used outside of the compiled call that "
              "made it (",
              reason, ")");
  s->graph_break(reason, where_str(where));
}

Tensor capture_save(const Tensor &t) {
  auto *m = static_cast<CaptureMeta *>(t.unsafeGetTensorImpl()->capture_meta());
  if (!m || !m->session || m->session != Session::current())
    return t; // (a tensor of a call that raised: saved as it is)
  return m->session->stand_in(t);
}
} // namespace

void install_capture() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dispatcher::singleton().setFallback(DispatchKey::Capture,
                                        &capture_fallback);
    detail::capture_sync_fn = &capture_sync;
    detail::capture_save_fn = &capture_save;
    ember::detail::capture_after_backward_fn = [] {
      if (Session *s = Session::current())
        s->take_real_grads();
    };
    ember::detail::capture_no_replay_fn = [](const char *why) {
      if (Session *s = Session::current())
        s->set_no_replay(why);
    };
    ember::detail::capture_grad_read_fn =
        [](const Tensor &owner, const Tensor &grad, bool replaceable) {
          if (Session *s = Session::current())
            s->add_grad_read(owner, grad, replaceable);
        };
    ember::detail::capture_clear_grad_fn = [](const Tensor &owner) {
      if (Session *s = Session::current())
        s->add_clear_grad(owner);
    };
    ember::detail::capture_replay_guard_fn = [](const char *what,
                                                std::function<bool()> g) {
      if (Session *s = Session::current())
        s->add_replay_guard({what, std::move(g)});
    };
    ember::detail::capture_replay_effect_fn = [](std::function<void()> f) {
      if (Session *s = Session::current())
        s->add_replay_step({std::move(f), nullptr, Tensor()});
    };
    ember::detail::capture_remake_fn = [](const Tensor &t,
                                          std::function<Tensor()> f) {
      if (Session *s = Session::current())
        s->add_replay_step({nullptr, std::move(f), t});
    };
    ember::detail::capture_factory_fn = [](const Tensor &t,
                                           std::function<Tensor()> f) {
      if (Session *s = Session::current();
          s &&
          (s->tracing_backward() || ember::detail::library_factories_depth > 0))
        s->add_replay_step({nullptr, std::move(f), t});
    };
  });
}

} // namespace ember::frontend
