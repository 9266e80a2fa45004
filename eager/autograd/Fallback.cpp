#include "eager/Dispatcher.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/GradMode.h"
#include "eager/autograd/KernelSupport.h"

namespace ember::autograd {

namespace {
void for_each_tensor(const Stack &s,
                     const std::function<void(const Tensor &)> &f) {
  for (const IValue &v : s) {
    if (v.isTensor())
      f(v.toTensor());
    else if (v.isTensorList())
      for (const Tensor &t : v.toTensorList())
        f(t);
  }
}
} // namespace

// Note [Autograd fallback]
// Ops without a derivative entry in ops.yaml (and custom ops) run below
// autograd; when one of their inputs requires grad, their floating outputs
// get a NotImplemented node, so backward raises naming the op instead of
// silently returning a wrong gradient (PyTorch's autogradNotImplemented).
void register_autograd_fallback() {
  Dispatcher::singleton().setFallback(
      DispatchKey::Autograd,
      [](const OperatorHandle &op, DispatchKeySet ks, Stack &stack) {
        bool rg = false;
        if (GradMode::is_enabled())
          for_each_tensor(stack, [&](const Tensor &t) {
            rg = rg || (t.defined() && t.requires_grad());
          });
        std::vector<Tensor> inputs;
        if (rg)
          for_each_tensor(stack, [&](const Tensor &t) {
            if (t.defined())
              inputs.push_back(t);
          });
        {
          ExcludeDispatchKeyGuard below(DispatchKey::Autograd);
          op.redispatchBoxed(ks, stack);
        }
        if (!rg)
          return;
        auto fn = std::make_shared<NotImplemented>(op.name());
        for (const Tensor &t : inputs)
          fn->add_next_edge(gradient_edge(t));
        for_each_tensor(stack, [&](const Tensor &out) {
          bool is_input = false;
          for (const Tensor &t : inputs)
            is_input = is_input || t.is_same(out);
          if (!is_input && out.defined() && is_differentiable_type(out.dtype()))
            set_history(out, fn);
        });
      });
}

} // namespace ember::autograd
