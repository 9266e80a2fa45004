#pragma once
/// torch.autograd.gradcheck / gradgradcheck: compares the gradients autograd
/// computes with central finite differences, in float64.

#include "eager/autograd/Node.h"

#include <functional>

namespace ember::autograd {

using GradcheckFn = std::function<variable_list(const variable_list &)>;

/// Checks d fn(inputs) / d inputs against finite differences for every
/// input that requires grad (use float64 inputs). On a mismatch returns
/// false, or raises (raise_exception) with the two Jacobians.
bool gradcheck(const GradcheckFn &fn, const variable_list &inputs,
               double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3,
               bool raise_exception = true);

/// Checks second derivatives: gradcheck of the function inputs ->
/// grad(fn(inputs), inputs, grad_outputs, create_graph=true), with random
/// grad_outputs when none are given.
bool gradgradcheck(const GradcheckFn &fn, const variable_list &inputs,
                   const variable_list &grad_outputs = {}, double eps = 1e-6,
                   double atol = 1e-5, double rtol = 1e-3,
                   bool raise_exception = true);

} // namespace ember::autograd
