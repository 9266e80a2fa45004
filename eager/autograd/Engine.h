#pragma once
/// The backward engine (torch::autograd::backward / grad).

#include "eager/autograd/Node.h"

#include <optional>

namespace ember::autograd {

/// Accumulates into the grad() of the leaves the gradients of `tensors`
/// (weighted by `grad_tensors`; omitted ones must belong to one-element
/// tensors and default to ones). `inputs`: accumulate only into these.
void backward(const variable_list &tensors,
              const variable_list &grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt,
              bool create_graph = false, const variable_list &inputs = {});

/// Returns the gradients of `outputs` with respect to `inputs` without
/// touching any grad(). With create_graph the results have a graph of their
/// own (higher-order gradients). allow_unused: inputs the outputs do not
/// depend on give undefined tensors instead of an error.
variable_list grad(const variable_list &outputs, const variable_list &inputs,
                   const variable_list &grad_outputs = {},
                   std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);

/// Inside a node's apply(): whether the backward running it keeps the graph
/// (retain_graph); false outside a backward
/// (torch::autograd::get_current_graph_task_keep_graph).
bool current_graph_task_keep_graph();

/// The gradients of `outputs` (weighted by `grad_outputs`, one each) that
/// arrive at each edge of `cut` (undefined where none does), without running
/// the nodes at those edges or anything behind them: the graph is cut
/// there. Nodes run with grad mode off and keep their saved tensors. This is
/// how compiled training traces a captured graph's backward, each graph
/// input's edge a cut (Note [The joint graph] in frontend/Capture.cpp).
variable_list grad_at_edges(const variable_list &outputs,
                            const variable_list &grad_outputs,
                            const edge_list &cut);

} // namespace ember::autograd
