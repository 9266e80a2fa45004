#pragma once
/// Graphviz DOT export of an autograd graph (what torchviz's make_dot
/// draws): one box per node with its name and saved tensor shapes, leaves
/// (AccumulateGrad) labelled with their shape or the given parameter name.

#include "eager/autograd/Node.h"

#include <string>
#include <utility>
#include <vector>

namespace ember::autograd {

/// The graph behind `roots` as DOT text (`dot -Tsvg graph.dot`).
/// `params`: names for leaf tensors (e.g. a module's named_parameters()).
std::string
to_dot(const variable_list &roots,
       const std::vector<std::pair<std::string, Tensor>> &params = {});

} // namespace ember::autograd
