#pragma once
/// What the generated autograd kernels and nodes use
/// (eager/generated/AutogradKernels.cpp).

#include "eager/Dispatcher.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/SavedVariable.h"
#include "eager/autograd/Variable.h"

namespace ember::autograd {

inline const Tensor *opt_ptr(const std::optional<Tensor> &t) {
  static const Tensor none;
  return t ? &*t : &none;
}

/// Makes `out` an output of `fn`: history for differentiable outputs, only
/// metadata (to keep output numbering) for the others. An output that is
/// one of the inputs (a view op returning its input) keeps its history.
inline void attach_output(const Tensor &out, const std::shared_ptr<Node> &fn,
                          std::initializer_list<const Tensor *> inputs) {
  for (const Tensor *in : inputs)
    if (in->defined() && in->is_same(out)) {
      fn->add_input_metadata(out);
      return;
    }
  if (is_differentiable_type(out.dtype()))
    set_history(out, fn);
  else
    fn->add_input_metadata(out);
}

inline bool any_defined(const variable_list &v) {
  for (const Tensor &t : v)
    if (t.defined())
      return true;
  return false;
}

/// Undefined gradients (outputs nobody used) become zeros, so formulas
/// never see an undefined tensor.
variable_list materialize_grads(const Node &fn, variable_list &&grads);

inline bool any_should_compute(const Node &fn, size_t begin, size_t n) {
  for (size_t i = begin; i < begin + n; ++i)
    if (fn.should_compute_output(i))
      return true;
  return false;
}

/// Installs the Autograd fallback (ops without formulas record a
/// NotImplemented node).
void register_autograd_fallback();

} // namespace ember::autograd
