#include "eager/autograd/BuiltinNodes.h"
#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/KernelSupport.h"
#include "eager/autograd/Variable.h"
#include "eager/generated/Functions.h"

#include <algorithm>

namespace ember::autograd {

Tensor sum_to(const Tensor &t, IntArrayRef shape) {
  if (t.sizes() == shape)
    return t;
  int64_t lead = t.dim() - int64_t(shape.size());
  DimVector dims;
  for (int64_t d = 0; d < lead; ++d)
    dims.push_back(d);
  for (int64_t d = lead; d < t.dim(); ++d)
    if (shape[size_t(d - lead)] == 1 && t.size(d) != 1)
      dims.push_back(d);
  Tensor r = dims.empty() ? t : t.sum(IntArrayRef(dims), /*keepdim=*/true);
  if (lead > 0 || r.sizes() != shape)
    r = r.view(shape);
  return r;
}

variable_list materialize_grads(const Node &fn, variable_list &&grads) {
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined() && i < fn.num_inputs()) {
      const InputMetadata &m = fn.input_metadata(i);
      grads[i] = zeros(m.shape, m.options());
    }
  return std::move(grads);
}

AccumulateGrad::AccumulateGrad(Tensor v) : variable(std::move(v)) {
  add_input_metadata(variable);
}

variable_list AccumulateGrad::apply(variable_list &&grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined())
    return {};
  std::lock_guard<std::mutex> lock(mutex_); // Note [Concurrent accumulation]
  Tensor &dst = variable.mutable_grad();
  if (GradMode::is_enabled()) {
    // create_graph: keep the gradient's own history (out of place).
    dst = dst.defined() ? dst + g : g;
  } else if (!dst.defined()) {
    // Take the incoming buffer when nothing else can see it; else copy, so
    // a later in-place accumulation never writes through an alias.
    // A contiguous view of a buffer nothing else holds (the transpose of
    // a transposed matmul result) counts as exclusive too.
    TensorImpl *base = g.unsafeGetTensorImpl()->view_base().get();
    bool exclusive = g.use_count() == 1 && g.is_contiguous() &&
                     !g.requires_grad() && (!base || base->use_count() == 1) &&
                     g.storage().use_count() == (base ? 2u : 1u);
    dst = exclusive ? g.detach() : g.detach().clone();
  } else if (dst.requires_grad()) {
    dst = dst + g;
  } else {
    dst.add_(g);
  }
  return {};
}

bool AccumulateGrad::has_grad_hooks() const {
  AutogradMeta *m = get_meta(variable);
  return m && !m->leaf_hooks_.empty();
}

void AccumulateGrad::run_grad_hooks(variable_list &grads) const {
  auto hooks = get_meta(variable)->leaf_hooks_; // a hook may remove hooks
  for (const auto &[id, fn] : hooks) {
    if (!grads.at(0).defined())
      break;
    grads[0] = hook_result(grads[0], fn(grads[0]));
  }
}

GraphRoot::GraphRoot(edge_list roots, variable_list grads)
    : Node(std::move(roots)), grads_(std::move(grads)) {
  // Runs first: the highest sequence number.
  sequence_nr_ = UINT64_MAX;
}

variable_list NotImplemented::apply(variable_list &&) {
  throw NotImplementedError("the derivative for '" + op_ +
                            "' is not implemented.");
}

namespace {
/// One past the last storage position that a tensor of geometry g reads,
/// counted from `origin` (0 if it is empty).
int64_t storage_end(const Geometry &g, int64_t origin) {
  int64_t span = storage_span(g.sizes, g.strides, g.offset);
  return span == 0 ? 0 : span - origin;
}

/// The storage position (from `origin`) of every element of g, flattened:
/// an int64 tensor on `device` built with ember ops.
Tensor storage_positions(const Geometry &g, int64_t origin, Device device) {
  TensorOptions o = TensorOptions(kLong).device(device);
  Tensor pos = scalar_tensor(g.offset - origin, o);
  for (size_t d = 0; d < g.sizes.size(); ++d)
    pos = pos.unsqueeze(-1) + arange(g.sizes[d], o) * Scalar(g.strides[d]);
  return pos.reshape({-1});
}

/// A zero buffer laid out like the storage of `base` (offset 0 = base's
/// first element), with the base and the view as strided views into it.
struct StorageLike {
  Tensor buffer, base, view;
  StorageLike(const Geometry &b, const Geometry &v, const TensorOptions &o) {
    int64_t n = std::max(storage_end(b, b.offset), storage_end(v, b.offset));
    buffer = zeros({n}, o);
    base = buffer.as_strided(b.sizes, b.strides, 0);
    view = buffer.as_strided(v.sizes, v.strides, v.offset - b.offset);
  }
};
} // namespace

// Note [as_strided backward accumulates]
// An as_strided view may read one storage element at several of its
// positions (windows that overlap: a stride smaller than the window,
// expanded dims), so its gradient is summed into a storage-shaped buffer
// (index_add), not written into it (copy_ would keep one contribution and
// drop the others), and then read back at the storage positions of the
// base's elements. Everything is an ember op, out of place, so the result
// keeps its history under create_graph.
Tensor as_strided_backward(const Tensor &grad, const Geometry &base,
                           const Geometry &view) {
  int64_t origin = std::min(base.offset, view.offset);
  int64_t n = std::max(storage_end(view, origin), storage_end(base, origin));
  if (n == 0 || grad.numel() == 0 || storage_end(base, origin) == 0)
    return zeros(base.sizes, grad.options());
  Tensor storage =
      zeros({n}, grad.options())
          .index_add(0, storage_positions(view, origin, grad.device()),
                     grad.reshape({-1}));
  return storage.index_select(0, storage_positions(base, origin, grad.device()))
      .reshape(base.sizes);
}

variable_list AsStridedBackward0::apply(variable_list &&grads) {
  return {as_strided_backward(grads.at(0), base_, view_)};
}

CopySlices::CopySlices(const Tensor &base, Geometry view,
                       std::shared_ptr<Node> fn)
    : base_(Geometry::of(base)), view_(std::move(view)), fn_(std::move(fn)) {
  // Edge 0: the base's previous history; then fn's edges past its first
  // (which pointed at the view's previous history, now part of the base's).
  add_next_edge(gradient_edge(base));
  for (size_t i = 1; i < fn_->num_outputs(); ++i)
    add_next_edge(fn_->next_edge(i));
}

variable_list CopySlices::apply(variable_list &&grads) {
  const Tensor &g = grads.at(0);
  variable_list out(num_outputs());
  variable_list r;
  if (!GradMode::is_enabled()) {
    StorageLike s(base_, view_, g.options());
    s.base.copy_(g);
    r = (*fn_)({s.view.clone()});
    if (r.at(0).defined())
      s.view.copy_(r[0]);
    else
      s.view.zero_();
    out[0] = s.base;
  } else {
    // create_graph: the same out of place, so the result keeps its history
    // (views of a buffer taken before a write into it would read as
    // constants, and as_strided saves its input, which a write invalidates).
    int64_t n = std::max(storage_end(base_, base_.offset),
                         storage_end(view_, base_.offset));
    Tensor base_pos = storage_positions(base_, base_.offset, g.device());
    Tensor view_pos = storage_positions(view_, base_.offset, g.device());
    Tensor storage =
        zeros({n}, g.options()).index_add(0, base_pos, g.reshape({-1}));
    r = (*fn_)({storage.index_select(0, view_pos).reshape(view_.sizes)});
    storage = r.at(0).defined()
                  ? storage.scatter(0, view_pos,
                                    sum_to(r[0], view_.sizes).reshape({-1}))
                  : storage.scatter(0, view_pos, 0.0);
    out[0] = storage.index_select(0, base_pos).reshape(base_.sizes);
  }
  for (size_t i = 1; i < out.size() && i < r.size(); ++i)
    out[i] = std::move(r[i]);
  return out;
}

} // namespace ember::autograd
