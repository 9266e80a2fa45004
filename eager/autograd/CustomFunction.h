#pragma once
/// Custom autograd functions, as libtorch's torch::autograd::Function<T>:
///
///   struct MyReLU : ember::autograd::Function<MyReLU> {
///     static Tensor forward(AutogradContext *ctx, const Tensor &x) {
///       ctx->save_for_backward({x});
///       return x.clamp_min(0);
///     }
///     static variable_list backward(AutogradContext *ctx,
///                                   variable_list grads) {
///       Tensor x = ctx->get_saved_variables()[0];
///       return {grads[0] * (x > 0)};
///     }
///   };
///   Tensor y = MyReLU::apply(x);
///
/// backward returns one gradient per argument of forward (undefined for
/// non-tensor arguments and for inputs that need none).

#include "eager/IValue.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/KernelSupport.h"
#include "eager/autograd/SavedVariable.h"
#include "eager/autograd/Variable.h"

#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

namespace ember::autograd {

/// The tensors a custom Function's backward receives and returns
/// (libtorch's torch::autograd::tensor_list).
using tensor_list = variable_list;

struct AutogradContext {
  AutogradContext() = default;
  AutogradContext(const AutogradContext &) = delete;
  AutogradContext &operator=(const AutogradContext &) = delete;

  /// Values for backward that are not tensors (ints, doubles, strings...).
  std::unordered_map<std::string, IValue> saved_data;

  /// Saves tensors for backward (checked against in-place modification).
  void save_for_backward(variable_list to_save) {
    to_save_ = std::move(to_save);
  }
  /// The tensors saved by save_for_backward.
  variable_list get_saved_variables() const;
  /// Declares inputs that forward modified in place.
  void mark_dirty(const variable_list &inputs);
  /// Declares outputs that have no gradient (indices, masks...).
  void mark_non_differentiable(const variable_list &outputs);
  /// When false, backward receives undefined tensors for outputs that got
  /// no gradient instead of zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// Whether the gradient of forward's `i`-th tensor input is needed.
  bool needs_input_grad(size_t i) const;

  // Used by Function<T>::apply and its node.
  void save_variables(const variable_list &outputs);
  const std::unordered_set<const TensorImpl *> &dirty() const { return dirty_; }
  const std::unordered_set<const TensorImpl *> &non_differentiable() const {
    return non_differentiable_;
  }
  bool materialize_grads() const { return materialize_grads_; }
  void release() {
    saved_.clear();
    freed_ = true;
  }
  std::weak_ptr<Node> grad_fn_;

private:
  variable_list to_save_;
  std::vector<SavedVariable> saved_;
  std::unordered_set<const TensorImpl *> dirty_, non_differentiable_;
  bool materialize_grads_ = true;
  bool freed_ = false;
};

/// The node of a custom function T.
template <class T> struct CppNode final : Node {
  variable_list apply(variable_list &&grads) override;
  std::string name() const override;
  void release_variables() override { ctx_.release(); }

  AutogradContext ctx_;
  /// For each argument of forward: is it a tensor (an edge)?
  std::vector<bool> is_tensor_arg_;
};

/// Shared non-template parts of CppNode<T>.
variable_list custom_backward_outputs(const Node &fn,
                                      const std::vector<bool> &is_tensor_arg,
                                      variable_list &&grads,
                                      const std::string &name);
std::string demangle_function_name(const char *mangled);
/// Connects forward's outputs to `node` (dirty, non-differentiable and
/// returned-input outputs as PyTorch handles them).
void custom_set_outputs(const std::shared_ptr<Node> &node, AutogradContext &ctx,
                        const variable_list &inputs, variable_list &outputs,
                        bool is_executable);

template <class T> variable_list CppNode<T>::apply(variable_list &&grads) {
  if (ctx_.materialize_grads())
    grads = materialize_grads(*this, std::move(grads));
  variable_list r = T::backward(&ctx_, std::move(grads));
  return custom_backward_outputs(*this, is_tensor_arg_, std::move(r), name());
}

template <class T> std::string CppNode<T>::name() const {
  return demangle_function_name(typeid(T).name()) + "Backward";
}

namespace detail {
inline void collect(variable_list &out, std::vector<bool> &is_tensor,
                    const Tensor &t) {
  out.push_back(t);
  is_tensor.push_back(true);
}
inline void collect(variable_list &out, std::vector<bool> &is_tensor,
                    const std::vector<Tensor> &ts) {
  for (const Tensor &t : ts)
    collect(out, is_tensor, t);
}
template <class A>
void collect(variable_list &, std::vector<bool> &is_tensor, const A &) {
  is_tensor.push_back(false);
}
} // namespace detail

template <class T> struct Function {
  /// Runs T::forward and records a node that runs T::backward.
  template <class X = T, class... Args> static auto apply(Args &&...args) {
    auto node = std::make_shared<CppNode<X>>();
    variable_list inputs;
    (detail::collect(inputs, node->is_tensor_arg_, args), ...);
    bool is_executable = any_requires_grad(inputs);
    auto edges_of_inputs = [&] {
      edge_list edges;
      for (const Tensor &t : inputs)
        edges.push_back(gradient_edge(t));
      return edges;
    };
    // (set before forward too: ctx->needs_input_grad() reads them)
    node->set_next_edges(edges_of_inputs());
    node->ctx_.grad_fn_ = node;
    using Out = decltype(X::forward(&node->ctx_, std::forward<Args>(args)...));
    Out out = [&] {
      AutoGradMode no_grad(false);
      return X::forward(&node->ctx_, std::forward<Args>(args)...);
    }();
    // The inputs' edges as they are after forward (which, without grad
    // mode, changes no input's history, unless a graph break of a compiled
    // function inside it made a captured input real: its history is then
    // the compiled graph's node, not the stand-in's).
    node->set_next_edges(edges_of_inputs());
    variable_list outs;
    if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>)
      outs.push_back(out);
    else
      outs = out;
    custom_set_outputs(node, node->ctx_, inputs, outs, is_executable);
    if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>)
      return outs[0];
    else
      return outs;
  }
};

} // namespace ember::autograd
