#pragma once
/// The nodes the engine itself creates (the generated ones, one per op with
/// a derivative, are in eager/generated/AutogradNodes.h).

#include "eager/autograd/Node.h"

#include <mutex>

namespace ember::autograd {

/// Accumulates the incoming gradient into a leaf's grad().
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(Tensor variable);
  variable_list apply(variable_list &&grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  /// A leaf's hooks live on the tensor (its accumulator may be recreated).
  void run_grad_hooks(variable_list &grads) const override;
  bool has_grad_hooks() const override;
  Tensor variable;

private:
  /// Held while adding into variable's grad (Note [Concurrent accumulation]).
  std::mutex mutex_;
};

/// The start of a backward pass: returns the root gradients.
struct GraphRoot final : Node {
  GraphRoot(edge_list roots, variable_list grads);
  variable_list apply(variable_list &&) override { return grads_; }
  std::string name() const override { return "GraphRoot"; }

private:
  variable_list grads_;
};

/// Where an op without a derivative formula was recorded: raises when
/// backward reaches it (PyTorch's NotImplemented node).
struct NotImplemented final : Node {
  explicit NotImplemented(std::string op) : op_(std::move(op)) {}
  variable_list apply(variable_list &&) override;
  std::string name() const override { return "NotImplemented"; }

private:
  std::string op_;
};

/// Strided geometry of a tensor inside its storage.
struct Geometry {
  DimVector sizes, strides;
  int64_t offset = 0;
  static Geometry of(const Tensor &t) {
    return {DimVector(t.sizes()), DimVector(t.strides()), t.storage_offset()};
  }
};

/// The gradient of a view with respect to its base, for a view whose
/// grad_fn was regenerated after an in-place change of the storage.
struct AsStridedBackward0 final : Node {
  AsStridedBackward0(Geometry base, Geometry view)
      : base_(std::move(base)), view_(std::move(view)) {}
  variable_list apply(variable_list &&grads) override;
  std::string name() const override { return "AsStridedBackward0"; }

private:
  Geometry base_, view_;
};

/// An in-place op on a view, seen from the base (PyTorch's CopySlices): the
/// base's gradient outside the view passes through; inside it goes through
/// the in-place op's node `fn`.
struct CopySlices final : Node {
  CopySlices(const Tensor &base, Geometry view, std::shared_ptr<Node> fn);
  variable_list apply(variable_list &&grads) override;
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }

private:
  Geometry base_, view_;
  std::shared_ptr<Node> fn_;
};

/// The gradient of a view of geometry `view` with respect to the tensor of
/// geometry `base` whose storage it reads (summed where the view reads an
/// element more than once). AsStridedBackward0 and as_strided's formula.
Tensor as_strided_backward(const Tensor &grad, const Geometry &base,
                           const Geometry &view);

/// The gradient of `t` reduced to `shape` (summing broadcast dimensions), as
/// the engine does for every gradient whose input was broadcast.
Tensor sum_to(const Tensor &t, IntArrayRef shape);

} // namespace ember::autograd
