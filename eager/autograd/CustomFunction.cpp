#include "eager/autograd/CustomFunction.h"

#include <cxxabi.h>

namespace ember::autograd {

variable_list AutogradContext::get_saved_variables() const {
  EMBER_CHECK(!freed_,
              "Trying to backward through the graph a second time (or "
              "directly access saved tensors after they have already been "
              "freed). Specify retain_graph=True if you need to backward "
              "through the graph a second time.");
  variable_list r;
  auto fn = grad_fn_.lock();
  for (const SavedVariable &v : saved_)
    r.push_back(v.unpack(fn));
  return r;
}

void AutogradContext::mark_dirty(const variable_list &inputs) {
  for (const Tensor &t : inputs)
    dirty_.insert(t.unsafeGetTensorImpl());
}

void AutogradContext::mark_non_differentiable(const variable_list &outputs) {
  for (const Tensor &t : outputs)
    non_differentiable_.insert(t.unsafeGetTensorImpl());
}

bool AutogradContext::needs_input_grad(size_t i) const {
  auto fn = grad_fn_.lock();
  return fn && fn->should_compute_output(i);
}

void AutogradContext::save_variables(const variable_list &outputs) {
  for (const Tensor &t : to_save_) {
    bool is_output = false;
    for (const Tensor &o : outputs)
      is_output = is_output || (t.defined() && o.is_same(t));
    saved_.emplace_back(t, is_output);
  }
  to_save_.clear();
}

std::string demangle_function_name(const char *mangled) {
  int status = 0;
  char *d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : mangled;
  std::free(d);
  // Drop namespaces: "my::MyReLU" -> "MyReLU".
  if (auto p = s.rfind("::"); p != std::string::npos)
    s = s.substr(p + 2);
  return s;
}

variable_list custom_backward_outputs(const Node &fn,
                                      const std::vector<bool> &is_tensor_arg,
                                      variable_list &&grads,
                                      const std::string &name) {
  size_t expected = is_tensor_arg.size();
  if (grads.size() > expected) {
    for (size_t i = expected; i < grads.size(); ++i)
      EMBER_CHECK(!grads[i].defined(), "function ", name,
                  " returned an incorrect number of gradients (expected ",
                  expected, ", got ", grads.size(), ")");
    grads.resize(expected);
  }
  EMBER_CHECK(grads.size() == expected, "function ", name,
              " returned an incorrect number of gradients (expected ", expected,
              ", got ", grads.size(), ")");
  variable_list out;
  for (size_t i = 0; i < expected; ++i) {
    if (!is_tensor_arg[i]) {
      EMBER_CHECK(!grads[i].defined(), "function ", name,
                  " returned a gradient different than None at position ",
                  i + 1,
                  ", but the corresponding forward input was not a "
                  "Variable");
      continue;
    }
    out.push_back(std::move(grads[i]));
  }
  (void)fn;
  return out;
}

void custom_set_outputs(const std::shared_ptr<Node> &node, AutogradContext &ctx,
                        const variable_list &inputs, variable_list &outputs,
                        bool is_executable) {
  for (Tensor &out : outputs) {
    if (!out.defined())
      continue;
    bool is_input = false;
    for (const Tensor &in : inputs)
      is_input = is_input || in.is_same(out);
    bool dirty = ctx.dirty().count(out.unsafeGetTensorImpl()) > 0;
    bool nondiff = ctx.non_differentiable().count(out.unsafeGetTensorImpl());
    if (!is_executable || nondiff || !is_differentiable_type(out.dtype())) {
      node->add_input_metadata(out);
      if (is_input && !dirty)
        out = out.detach();
      continue;
    }
    if (dirty) {
      check_inplace(out, true);
      rebase_history(out, node);
      continue;
    }
    if (is_input) // an input returned as is: a new alias gets the history
      out = out.detach();
    set_history(out, node);
  }
  if (is_executable)
    ctx.save_variables(outputs);
}

} // namespace ember::autograd
