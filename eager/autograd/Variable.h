#pragma once
/// What autograd keeps on a tensor (torch::autograd::AutogradMeta) and the
/// functions that connect tensors to the graph.

#include "eager/autograd/Node.h"

#include <mutex>

namespace ember::autograd {

struct AutogradMeta final : AutogradMetaInterface {
  /// Leaves: does the user want a gradient? Non-leaves require grad
  /// because they have a grad_fn.
  bool requires_grad_ = false;
  bool retains_grad_ = false;
  /// The node that produced this tensor (null for leaves) and which of its
  /// outputs this is.
  std::shared_ptr<Node> grad_fn_;
  uint32_t output_nr_ = 0;
  /// Leaves: the node that accumulates into grad_ (weak: the graph owns it).
  std::weak_ptr<Node> grad_accumulator_;
  Tensor grad_;
  /// Views: the storage version when grad_fn_ was set; when the base is
  /// modified in place the view's grad_fn is regenerated from the base.
  uint32_t attr_version_ = 0;
  /// retain_grad(): the hook that copies the gradient into grad_, and the
  /// node that holds it (removed when this tensor dies).
  unsigned retain_grad_hook_ = 0;
  std::weak_ptr<Node> retain_grad_node_;

  /// Hooks on a leaf (run by its AccumulateGrad): id and function.
  std::vector<std::pair<unsigned, GradHook>> leaf_hooks_;
  /// Leaves: held while grad_accumulator_ is read or set (Note [Concurrent
  /// accumulation]).
  std::mutex mutex_;

  AutogradMeta() = default;
  ~AutogradMeta() override;

  bool requires_grad() const override {
    return requires_grad_ || grad_fn_ != nullptr;
  }
  void set_requires_grad(bool r, TensorImpl *self) override;
  std::string grad_fn_name() const override;
};

/// The meta of t, or null.
AutogradMeta *get_meta(const Tensor &t);
/// The meta of t, created if absent.
AutogradMeta *materialize_meta(const Tensor &t);

/// grad_fn of t, regenerated first if t is a view whose base changed.
const std::shared_ptr<Node> &grad_fn_of(const Tensor &t);
/// The AccumulateGrad node of a leaf that requires grad (created once and
/// kept alive by the graph that uses it).
std::shared_ptr<Node> grad_accumulator(const Tensor &t);

/// Makes `t` output `output` of `fn`... attaches a fresh output to its node
/// (sets grad_fn and output_nr, records its metadata, adds the Autograd key).
void set_history(const Tensor &t, const std::shared_ptr<Node> &fn);
/// Gives view `t` the history "an as_strided of its base", through the
/// base's current history (Note [View grad_fn regeneration]).
void set_history_from_base(const Tensor &t);
/// After an in-place op recorded by `fn` on `t`: t (or, for a view, its
/// base through a CopySlices node) gets the new history.
void rebase_history(const Tensor &t, std::shared_ptr<Node> fn);

/// Whether an op on these inputs records history (grad mode on and some
/// input requires grad).
bool compute_requires_grad(std::initializer_list<const Tensor *> ts);
bool any_requires_grad(TensorList ts);

/// Refuses in-place modification of a leaf that requires grad (and of a
/// view of one), as PyTorch, when grad mode is on.
void check_inplace(const Tensor &t, bool requires_grad);

/// A fresh id for a gradient hook.
unsigned next_grad_hook_id();

/// The zero_grad of torch.optim.Optimizer and torch.nn.Module for one
/// parameter (nothing when its .grad is undefined): set_to_none clears it
/// (declared to
/// replay mode: Note [Host state in replayed calls]); else the gradient is
/// cut out of any graph (create_graph=True gives it one) in place and
/// zeroed.
void zero_grad_of(const Tensor &param, bool set_to_none);

/// Whether tensors of this dtype can carry gradients.
inline bool is_differentiable_type(ScalarType t) { return isFloatingType(t); }

} // namespace ember::autograd
