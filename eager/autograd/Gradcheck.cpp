#include "eager/autograd/Gradcheck.h"
#include "eager/Factory.h"
#include "eager/autograd/Engine.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <cmath>
#include <sstream>

namespace ember::autograd {

namespace {

/// Element i (row-major) of t, as a pointer into its storage.
double *element(const Tensor &t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (i % t.size(d)) * t.stride(d);
    i /= t.size(d);
  }
  return t.data_ptr<double>() + off;
}

std::vector<double> flat_values(const variable_list &outs) {
  std::vector<double> v;
  for (const Tensor &o : outs) {
    if (!o.defined() || !o.is_floating_point())
      continue;
    Tensor c = o.detach().to(Device(kCPU), kDouble).contiguous();
    const double *p = c.data_ptr<double>();
    v.insert(v.end(), p, p + c.numel());
  }
  return v;
}

} // namespace

bool gradcheck(const GradcheckFn &fn, const variable_list &inputs, double eps,
               double atol, double rtol, bool raise_exception) {
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      EMBER_CHECK(inputs[i].dtype() == kDouble, "gradcheck: input ", i, " is ",
                  inputs[i].dtype(),
                  "; finite differences need float64 inputs (use "
                  ".to(ember::kDouble))");
      EMBER_CHECK(inputs[i].is_cpu(), "gradcheck: input ", i, " is on ",
                  inputs[i].device(),
                  "; gradcheck perturbs inputs on the host: pass CPU "
                  "tensors (.cpu()) and move them inside the function");
      wrt.push_back(i);
    }
  EMBER_CHECK(!wrt.empty(), "gradcheck expects at least one input tensor to "
                            "require gradient");
  variable_list outs = fn(inputs);
  std::vector<Tensor> diff_outs;
  for (const Tensor &o : outs)
    if (o.defined() && o.is_floating_point())
      diff_outs.push_back(o);
  size_t n_out = flat_values(outs).size();

  for (size_t w : wrt) {
    const Tensor &x = inputs[w];
    int64_t n_in = x.numel();
    // Numerical Jacobian: column j = (f(x + eps e_j) - f(x - eps e_j)) / 2eps.
    std::vector<double> num(size_t(n_in) * n_out), ana(size_t(n_in) * n_out);
    for (int64_t j = 0; j < n_in; ++j) {
      double *p = element(x, j);
      double orig = *p;
      std::vector<double> plus, minus;
      // Grad mode stays on: fn may itself differentiate (gradgradcheck).
      // The perturbation writes the leaf's memory directly, not as an op.
      *p = orig + eps;
      plus = flat_values(fn(inputs));
      *p = orig - eps;
      minus = flat_values(fn(inputs));
      *p = orig;
      EMBER_CHECK(plus.size() == n_out && minus.size() == n_out,
                  "gradcheck: fn returned ", plus.size(),
                  " output elements "
                  "for a perturbed input but ",
                  n_out, " for the original");
      for (size_t r = 0; r < n_out; ++r)
        num[size_t(j) * n_out + r] = (plus[r] - minus[r]) / (2 * eps);
    }
    // Analytical Jacobian: row r = grad of output element r.
    size_t r = 0;
    for (const Tensor &o : diff_outs) {
      for (int64_t k = 0; k < o.numel(); ++k, ++r) {
        Tensor go = zeros_like(o);
        {
          NoGradGuard g;
          go.view({-1})[k].fill_(1.0);
        }
        variable_list gs;
        if (o.requires_grad())
          gs = grad({o}, {x}, {go}, /*retain_graph=*/true, false,
                    /*allow_unused=*/true);
        if (gs.empty() || !gs[0].defined())
          continue;
        Tensor g = gs[0].to(kDouble).contiguous();
        EMBER_CHECK(g.sizes() == x.sizes(), "gradcheck: the gradient of input ",
                    w, " has shape ", g.sizes(), " but the input has shape ",
                    x.sizes());
        const double *gp = g.data_ptr<double>();
        for (int64_t j = 0; j < n_in; ++j)
          ana[size_t(j) * n_out + r] = gp[j];
      }
    }
    for (size_t idx = 0; idx < num.size(); ++idx) {
      double a = ana[idx], n = num[idx];
      if (std::abs(a - n) <= atol + rtol * std::abs(n))
        continue;
      if (!raise_exception)
        return false;
      std::ostringstream os;
      os << "Jacobian mismatch for output 0 with respect to input " << w
         << ",\nat input element " << idx / n_out << ", output element "
         << idx % n_out << ": numerical " << n << " vs analytical " << a;
      throw Error(os.str());
    }
  }
  return true;
}

bool gradgradcheck(const GradcheckFn &fn, const variable_list &inputs,
                   const variable_list &grad_outputs, double eps, double atol,
                   double rtol, bool raise_exception) {
  variable_list gos = grad_outputs;
  if (gos.empty()) {
    for (const Tensor &o : fn(inputs))
      if (o.defined() && o.is_floating_point())
        gos.push_back(randn(o.sizes(), o.options()).requires_grad_());
  }
  std::vector<size_t> wrt;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad())
      wrt.push_back(i);
  size_t n_in = inputs.size();
  variable_list all = inputs;
  all.insert(all.end(), gos.begin(), gos.end());
  GradcheckFn first_grad = [&](const variable_list &xs) {
    variable_list in(xs.begin(), xs.begin() + long(n_in));
    variable_list go(xs.begin() + long(n_in), xs.end());
    variable_list outs = fn(in);
    variable_list diff, gsel;
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i].defined() && outs[i].is_floating_point() &&
          outs[i].requires_grad()) {
        diff.push_back(outs[i]);
        gsel.push_back(go.at(diff.size() - 1));
      }
    variable_list targets;
    for (size_t w : wrt)
      targets.push_back(in[w]);
    if (diff.empty())
      return variable_list{};
    return grad(diff, targets, gsel, true, /*create_graph=*/true,
                /*allow_unused=*/true);
  };
  return gradcheck(first_grad, all, eps, atol, rtol, raise_exception);
}

} // namespace ember::autograd
