#pragma once
/// The autograd graph (torch::autograd::Node): each recorded op makes a Node
/// whose apply() maps the gradients of the op's outputs to the gradients of
/// its inputs; next_edges() say where those go.

#include "eager/Tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ember::autograd {

struct Node;
using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

/// Where a gradient flows: input `input_nr` of `function`.
struct Edge {
  Edge() = default;
  Edge(std::shared_ptr<Node> fn, uint32_t nr)
      : function(std::move(fn)), input_nr(nr) {}
  bool is_valid() const { return function != nullptr; }
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
};
using edge_list = std::vector<Edge>;

/// What the gradient arriving at a node's input must look like: the shape,
/// dtype and device of the forward output it belongs to. The engine reduces
/// broadcast gradients to this shape (sum_to) and casts them to the dtype.
struct InputMetadata {
  DimVector shape;
  ScalarType dtype = ScalarType::Float;
  Device device{kCPU};
  TensorOptions options() const {
    return TensorOptions().dtype(dtype).device(device);
  }
};

/// A hook run on the gradient of one of a node's inputs before the node runs
/// (tensor hooks, retain_grad). Returns the possibly replaced gradient.
using GradHook = std::function<Tensor(const Tensor &)>;

/// What a hook returned in place of gradient `grad`: `result` when it is
/// defined (it must keep grad's size, dtype and device, as PyTorch checks),
/// else `grad`.
Tensor hook_result(const Tensor &grad, Tensor result);

struct Node : std::enable_shared_from_this<Node> {
  explicit Node(edge_list next_edges = {});
  /// Releases the graph behind the node without recursion (Note [Deleting
  /// long graphs]).
  virtual ~Node();
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;

  /// Runs the node (the engine calls this).
  variable_list operator()(variable_list &&grads) {
    return apply(std::move(grads));
  }
  virtual variable_list apply(variable_list &&grads) = 0;

  /// "MulBackward0": the class name, as PyTorch prints it.
  virtual std::string name() const = 0;

  // --- edges (one per differentiable forward input) ---------------------
  const edge_list &next_edges() const { return next_edges_; }
  const Edge &next_edge(size_t i) const { return next_edges_.at(i); }
  void set_next_edges(edge_list e) { next_edges_ = std::move(e); }
  void add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }
  /// Number of gradients apply() returns.
  size_t num_outputs() const { return next_edges_.size(); }
  /// Whether output i's gradient is needed (its edge leads somewhere).
  bool should_compute_output(size_t i) const {
    return i < next_edges_.size() && next_edges_[i].is_valid();
  }

  // --- inputs (one per forward output) -----------------------------------
  /// Records a forward output; returns its input number (output_nr).
  uint32_t add_input_metadata(const Tensor &t);
  uint32_t add_input_metadata(InputMetadata m);
  size_t num_inputs() const { return input_metadata_.size(); }
  const InputMetadata &input_metadata(size_t i) const {
    return input_metadata_.at(i);
  }

  /// Creation order; the engine runs later nodes first.
  uint64_t sequence_nr() const { return sequence_nr_; }

  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}
  /// Name and shape of each saved tensor (for the DOT export).
  virtual std::vector<std::pair<std::string, std::vector<int64_t>>>
  saved_tensors_info() const {
    return {};
  }

  // --- hooks ---------------------------------------------------------------
  /// Adds a hook on the gradient of input `input_nr`; returns its id.
  unsigned add_grad_hook(uint32_t input_nr, GradHook hook);
  bool remove_grad_hook(unsigned id);
  /// Runs the hooks of every input over `grads` (in registration order).
  virtual void run_grad_hooks(variable_list &grads) const;
  virtual bool has_grad_hooks() const { return !grad_hooks_.empty(); }

protected:
  edge_list next_edges_;
  std::vector<InputMetadata> input_metadata_;
  uint64_t sequence_nr_;

private:
  struct HookEntry {
    unsigned id;
    uint32_t input_nr;
    GradHook fn;
  };
  std::vector<HookEntry> grad_hooks_;
};

/// The sequence number the next node will get: nodes made after this call
/// have numbers at least this large.
uint64_t peek_sequence_nr();

/// The gradient edge of a tensor: (grad_fn, output_nr) for a non-leaf, the
/// grad accumulator for a leaf that requires grad, invalid otherwise.
Edge gradient_edge(const Tensor &t);
/// The edges of several tensors (undefined tensors give invalid edges).
edge_list collect_next_edges(std::initializer_list<const Tensor *> ts);

} // namespace ember::autograd
