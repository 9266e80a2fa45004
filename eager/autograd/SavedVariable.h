#pragma once
/// A tensor saved for backward (torch::autograd::SavedVariable). It records
/// the storage version at save time: if the tensor is modified in place
/// before backward, unpack() raises PyTorch's error instead of computing a
/// wrong gradient.

#include "eager/autograd/Node.h"

#include <any>
#include <functional>
#include <memory>

namespace ember::autograd {

/// Pack/unpack hooks applied to every tensor saved for backward while they
/// are installed (torch.autograd.graph.saved_tensors_hooks). pack returns
/// anything; unpack turns it back into a tensor during backward.
struct SavedTensorHooks {
  std::function<std::any(const Tensor &)> pack;
  std::function<Tensor(const std::any &)> unpack;
};

namespace graph {
/// RAII: installs saved-tensor hooks on this thread for the scope.
class saved_tensors_hooks {
public:
  saved_tensors_hooks(std::function<std::any(const Tensor &)> pack,
                      std::function<Tensor(const std::any &)> unpack);
  ~saved_tensors_hooks();
  saved_tensors_hooks(const saved_tensors_hooks &) = delete;
  saved_tensors_hooks &operator=(const saved_tensors_hooks &) = delete;
};
/// RAII: no saved-tensor hooks inside the scope (hooks below are suspended).
class disable_saved_tensors_hooks {
public:
  disable_saved_tensors_hooks();
  ~disable_saved_tensors_hooks();

private:
  size_t depth_;
};
} // namespace graph

/// A tensor saved for backward was modified in place before backward read
/// it (PyTorch raises a RuntimeError with the same message). Compiled
/// training raises it at backward too (Note [The joint graph]).
class SavedTensorModifiedError : public Error {
public:
  using Error::Error;
};

class SavedVariable {
public:
  SavedVariable() = default;
  /// is_output: t is an output of the node that saves it; then only the
  /// data is kept (keeping t itself would make a reference cycle) and
  /// unpack(node) reattaches the node as grad_fn.
  SavedVariable(const Tensor &t, bool is_output);

  /// The saved tensor; raises if it was modified in place since it was
  /// saved, or freed by an earlier backward.
  Tensor unpack(const std::shared_ptr<Node> &saved_for = nullptr) const;
  bool defined() const { return was_defined_; }
  /// Frees the data (after backward without retain_graph).
  void reset_data();
  /// Shape of the saved tensor (for the DOT export), empty if none.
  const std::vector<int64_t> &sizes() const { return sizes_; }

private:
  Tensor data_;
  std::shared_ptr<std::any> packed_; // set when hooks packed the tensor
  std::function<Tensor(const std::any &)> unpack_hook_;
  std::vector<int64_t> sizes_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool was_defined_ = false;
  bool is_output_ = false;
  bool is_leaf_ = false;
  bool requires_grad_ = false;
  bool freed_ = false;
  std::string grad_fn_name_; // of the saved tensor, for the error message
  /// A capture tensor's (fake) storage when it was saved: once the tensor is
  /// made real (its graph ran), its version is the real storage's, which
  /// the saved version does not describe; the capture storage's still
  /// counts the writes the graph recorded.
  Storage capture_storage_;
  std::weak_ptr<Node> grad_accumulator_;
};

} // namespace ember::autograd
