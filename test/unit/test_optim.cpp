// ember::optim: optimizers (SGD, Adam, AdamW, RMSprop) against float64
// references written from PyTorch's documented algorithms, param groups,
// zero_grad, state save/load, and the StepLR / CosineAnnealingLR schedules.

#include "TestUtil.h"

#include <ember/optim.h>

#include "eager/autograd/GradMode.h"

#include <cmath>
#include <filesystem>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace ember;
using ember::test::close;
using ember::test::values;
namespace optim = ember::optim;

namespace {

using Vec = std::vector<double>;

/// A parameter of `n` random values (a leaf that requires grad).
Tensor make_param(int64_t n, ScalarType dtype, uint64_t seed) {
  Tensor p = ember::test::random({n}, dtype, seed);
  p.set_requires_grad(true);
  return p;
}

/// The gradient for step k of a parameter of n elements (random, nonzero).
Tensor make_grad(int64_t n, ScalarType dtype, int k, uint64_t seed = 100) {
  return ember::test::random({n}, dtype, seed + uint64_t(k));
}

constexpr int kSteps = 3;
constexpr int64_t kN = 7;

/// Runs kSteps of `opt` over the single parameter `p` with the gradients of
/// make_grad(), checking p after each step against `ref_step`, which updates
/// its double copy of p from the double gradient (PyTorch's pseudo-code).
template <class RefStep>
void check_steps(optim::Optimizer &opt, const Tensor &p, RefStep ref_step,
                 double rtol, double atol) {
  Vec ref = values(p);
  for (int k = 0; k < kSteps; ++k) {
    Tensor g = make_grad(kN, p.dtype(), k);
    p.mutable_grad() = g;
    ref_step(ref, values(g));
    opt.step();
    Tensor expected = ember::tensor(ref, TensorOptions(kDouble));
    ASSERT_TRUE(close(p, expected, rtol, atol))
        << "after step " << k + 1 << " (" << p.dtype() << ")";
  }
}

double tol(ScalarType t) { return t == kDouble ? 1e-12 : 2e-5; }

// --- float64 references (torch.optim docs' algorithms) ---------------------

struct SGDRef {
  double lr, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  Vec buf = {};
  int t = 0;
  void operator()(Vec &p, const Vec &grad) {
    if (buf.empty())
      buf.assign(p.size(), 0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (weight_decay != 0)
        g += weight_decay * p[i];
      if (momentum != 0) {
        buf[i] = t == 1 ? g : momentum * buf[i] + (1 - dampening) * g;
        g = nesterov ? g + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * g;
    }
  }
};

struct AdamRef {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, decoupled = false;
  Vec m = {}, v = {}, vmax = {};
  int t = 0;
  void operator()(Vec &p, const Vec &grad) {
    if (m.empty())
      m.assign(p.size(), 0), v.assign(p.size(), 0), vmax.assign(p.size(), 0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled)
        p[i] -= lr * weight_decay * p[i];
      else if (weight_decay != 0)
        g += weight_decay * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      double m_hat = m[i] / (1 - std::pow(beta1, t));
      double v_use = v[i];
      if (amsgrad) {
        vmax[i] = std::max(vmax[i], v[i]);
        v_use = vmax[i];
      }
      double v_hat = v_use / (1 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

struct RMSpropRef {
  double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false;
  Vec sq = {}, gavg = {}, buf = {};
  void operator()(Vec &p, const Vec &grad) {
    if (sq.empty())
      sq.assign(p.size(), 0), gavg.assign(p.size(), 0), buf.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i] + weight_decay * p[i];
      sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
      double var = sq[i];
      if (centered) {
        gavg[i] = alpha * gavg[i] + (1 - alpha) * g;
        var -= gavg[i] * gavg[i];
      }
      double denom = std::sqrt(var) + eps;
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / denom;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / denom;
      }
    }
  }
};

const ScalarType kDtypes[] = {kFloat, kDouble};

} // namespace

// --- SGD
// ------------------------------------------------------------------------

TEST(Optim, SGDByHand) {
  // p = 1, g = 0.5, lr = 0.1: p = 1 - 0.05 = 0.95; with momentum 0.9 the
  // second step uses b = 0.9 * 0.5 + 0.5 = 0.95: p = 0.95 - 0.095 = 0.855.
  Tensor p = ember::tensor({1.0}, TensorOptions(kDouble));
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  p.mutable_grad() = ember::tensor({0.5}, TensorOptions(kDouble));
  opt.step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.95);
  opt.step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 0.855);
}

TEST(Optim, SGDMatchesReference) {
  struct Case {
    optim::SGDOptions opts;
    SGDRef ref;
  };
  std::vector<Case> cases = {
      {optim::SGDOptions(0.1), SGDRef{.lr = 0.1}},
      {optim::SGDOptions(0.05).momentum(0.9),
       SGDRef{.lr = 0.05, .momentum = 0.9}},
      {optim::SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(0.1),
       SGDRef{
           .lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 0.1}},
      {optim::SGDOptions(0.02).momentum(0.9).nesterov(true).weight_decay(0.01),
       SGDRef{.lr = 0.02,
              .momentum = 0.9,
              .weight_decay = 0.01,
              .nesterov = true}},
      {optim::SGDOptions(0.1).weight_decay(0.5),
       SGDRef{.lr = 0.1, .weight_decay = 0.5}},
  };
  for (ScalarType dt : kDtypes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("case " + std::to_string(c));
      Tensor p = make_param(kN, dt, c);
      optim::SGD opt({p}, cases[c].opts);
      check_steps(opt, p, SGDRef(cases[c].ref), tol(dt), tol(dt));
    }
  }
}

TEST(Optim, SGDLearningRateConvertsFromDouble) {
  // ember::optim::SGD(params, lr): a double converts to SGDOptions.
  Tensor p = ember::tensor({2.0, -1.0}, TensorOptions(kDouble));
  optim::SGD opt({p}, 0.5);
  EXPECT_EQ(static_cast<optim::SGDOptions &>(opt.defaults()).lr(), 0.5);
  p.mutable_grad() = ember::tensor({1.0, 1.0}, TensorOptions(kDouble));
  opt.step();
  EXPECT_TRUE(
      close(p, ember::tensor({1.5, -1.5}, TensorOptions(kDouble)), 0, 0));
  std::vector<Tensor> params = {p};
  optim::SGD opt2(params, 0.1);
  EXPECT_EQ(opt2.param_groups().size(), 1u);
  EXPECT_EQ(opt2.param_groups()[0].options().get_lr(), 0.1);
}

// --- Adam / AdamW
// ---------------------------------------------------------------

TEST(Optim, AdamMatchesReference) {
  struct Case {
    optim::AdamOptions opts;
    AdamRef ref;
  };
  std::vector<Case> cases = {
      {optim::AdamOptions(), AdamRef{}},
      {optim::AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6),
       AdamRef{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6}},
      {optim::AdamOptions(0.01).weight_decay(0.1),
       AdamRef{.lr = 0.01, .weight_decay = 0.1}},
      {optim::AdamOptions(0.02).amsgrad(true).betas({0.5, 0.6}),
       AdamRef{.lr = 0.02, .beta1 = 0.5, .beta2 = 0.6, .amsgrad = true}},
  };
  for (ScalarType dt : kDtypes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("case " + std::to_string(c));
      Tensor p = make_param(kN, dt, 10 + c);
      optim::Adam opt({p}, cases[c].opts);
      check_steps(opt, p, AdamRef(cases[c].ref), tol(dt), tol(dt));
      auto &st = static_cast<optim::AdamParamState &>(
          *opt.state().at(p.unsafeGetTensorImpl()));
      EXPECT_EQ(st.step(), kSteps);
      EXPECT_EQ(st.max_exp_avg_sq().defined(), cases[c].opts.amsgrad());
    }
  }
}

TEST(Optim, AdamAmsgradUsesRunningMax) {
  // With decreasing gradients, v falls below its running max, so amsgrad
  // and plain Adam differ from the second step on.
  AdamRef ams{.lr = 0.1, .beta1 = 0.5, .beta2 = 0.5, .amsgrad = true};
  Tensor p = ember::tensor({1.0, -2.0}, TensorOptions(kDouble));
  optim::Adam opt({p}, optim::AdamOptions(0.1).betas({0.5, 0.5}).amsgrad(true));
  Vec ref = values(p);
  for (double scale : {4.0, 1.0, 0.25}) {
    Tensor g = ember::tensor({scale, -scale}, TensorOptions(kDouble));
    p.mutable_grad() = g;
    opt.step();
    ams(ref, values(g));
    EXPECT_TRUE(
        close(p, ember::tensor(ref, TensorOptions(kDouble)), 1e-12, 1e-12));
  }
  EXPECT_GT(ams.vmax[0], ams.v[0]);
}

TEST(Optim, AdamWMatchesReference) {
  struct Case {
    optim::AdamWOptions opts;
    AdamRef ref;
  };
  AdamRef defaults;
  defaults.weight_decay = 1e-2;
  defaults.decoupled = true;
  std::vector<Case> cases = {
      {optim::AdamWOptions(), defaults},
      {optim::AdamWOptions(0.05).weight_decay(0.3).betas({0.85, 0.95}),
       AdamRef{.lr = 0.05,
               .beta1 = 0.85,
               .beta2 = 0.95,
               .weight_decay = 0.3,
               .decoupled = true}},
      {optim::AdamWOptions(0.05).amsgrad(true).eps(1e-4),
       AdamRef{.lr = 0.05,
               .eps = 1e-4,
               .weight_decay = 1e-2,
               .amsgrad = true,
               .decoupled = true}},
  };
  EXPECT_EQ(optim::AdamWOptions().weight_decay(), 1e-2);
  for (ScalarType dt : kDtypes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("case " + std::to_string(c));
      Tensor p = make_param(kN, dt, 20 + c);
      optim::AdamW opt({p}, cases[c].opts);
      check_steps(opt, p, AdamRef(cases[c].ref), tol(dt), tol(dt));
    }
  }
}

// --- RMSprop
// ----------------------------------------------------------------------

TEST(Optim, RMSpropMatchesReference) {
  struct Case {
    optim::RMSpropOptions opts;
    RMSpropRef ref;
  };
  std::vector<Case> cases = {
      {optim::RMSpropOptions(), RMSpropRef{}},
      {optim::RMSpropOptions(0.01).alpha(0.9).centered(true),
       RMSpropRef{.lr = 0.01, .alpha = 0.9, .centered = true}},
      {optim::RMSpropOptions(0.005).momentum(0.9).weight_decay(0.1),
       RMSpropRef{.lr = 0.005, .weight_decay = 0.1, .momentum = 0.9}},
      {optim::RMSpropOptions(0.01).momentum(0.5).centered(true).eps(1e-3),
       RMSpropRef{.lr = 0.01, .eps = 1e-3, .momentum = 0.5, .centered = true}},
  };
  for (ScalarType dt : kDtypes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      SCOPED_TRACE("case " + std::to_string(c));
      Tensor p = make_param(kN, dt, 30 + c);
      optim::RMSprop opt({p}, cases[c].opts);
      check_steps(opt, p, RMSpropRef(cases[c].ref), tol(dt), tol(dt));
      auto &st = static_cast<optim::RMSpropParamState &>(
          *opt.state().at(p.unsafeGetTensorImpl()));
      EXPECT_EQ(st.step(), kSteps);
      EXPECT_EQ(st.momentum_buffer().defined(), cases[c].opts.momentum() > 0);
      EXPECT_EQ(st.grad_avg().defined(), cases[c].opts.centered());
    }
  }
}

// --- param groups, zero_grad, skipping
// ------------------------------------------

TEST(Optim, ParamGroupsWithDifferentLearningRates) {
  Tensor a = make_param(3, kDouble, 1), b = make_param(4, kDouble, 2);
  Tensor c = make_param(2, kDouble, 3);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b},
                      std::make_unique<optim::SGDOptions>(
                          optim::SGDOptions(0.5).momentum(0.5)));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  opt.add_param_group(optim::OptimizerParamGroup(
      {c}, std::make_unique<optim::SGDOptions>(0.01)));
  ASSERT_EQ(opt.param_groups().size(), 3u);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.5);
  EXPECT_EQ(opt.param_groups()[2].options().get_lr(), 0.01);
  EXPECT_EQ(opt.size(), 3u);

  SGDRef ra{.lr = 0.1}, rb{.lr = 0.5, .momentum = 0.5}, rc{.lr = 0.01};
  Vec va = values(a), vb = values(b), vc = values(c);
  for (int k = 0; k < kSteps; ++k) {
    Tensor ga = make_grad(3, kDouble, k, 1), gb = make_grad(4, kDouble, k, 2),
           gc = make_grad(2, kDouble, k, 3);
    a.mutable_grad() = ga;
    b.mutable_grad() = gb;
    c.mutable_grad() = gc;
    opt.step();
    ra(va, values(ga));
    rb(vb, values(gb));
    rc(vc, values(gc));
    EXPECT_TRUE(
        close(a, ember::tensor(va, TensorOptions(kDouble)), 1e-12, 1e-12));
    EXPECT_TRUE(
        close(b, ember::tensor(vb, TensorOptions(kDouble)), 1e-12, 1e-12));
    EXPECT_TRUE(
        close(c, ember::tensor(vc, TensorOptions(kDouble)), 1e-12, 1e-12));
  }
  // Only group 1 has momentum, so only b has state.
  EXPECT_EQ(opt.state().size(), 1u);
  EXPECT_TRUE(opt.state().count(b.unsafeGetTensorImpl()));

  // Changing one group's lr through its options affects that group only.
  static_cast<optim::SGDOptions &>(opt.param_groups()[0].options()).lr(1.0);
  Tensor before_c = c.clone();
  a.mutable_grad() = ember::ones({3}, TensorOptions(kDouble));
  b.mutable_grad() = Tensor();
  c.mutable_grad() = Tensor();
  Tensor before_a = a.clone();
  opt.step();
  EXPECT_TRUE(close(a, before_a - 1.0, 0, 1e-15));
  EXPECT_TRUE(close(c, before_c, 0, 0));
}

TEST(Optim, AddParamGroupErrors) {
  Tensor a = make_param(3, kFloat, 1), b = make_param(3, kFloat, 2);
  optim::SGD opt({a}, 0.1);
  EXPECT_EMBER_ERROR(opt.add_param_group(optim::OptimizerParamGroup({a})),
                     "some parameters appear in more than one parameter "
                     "group");
  EXPECT_EMBER_ERROR(
      opt.add_param_group(optim::OptimizerParamGroup({b, b})),
      "optimizer contains a parameter group with duplicate parameters");
  EXPECT_EMBER_ERROR(opt.add_param_group(optim::OptimizerParamGroup(
                         {b}, std::make_unique<optim::AdamOptions>(0.1))),
                     "must have the same type as the optimizer's defaults");
  Tensor nonleaf = a * 2;
  EXPECT_EMBER_ERROR(opt.add_param_group(optim::OptimizerParamGroup({nonleaf})),
                     "can't optimize a non-leaf Tensor");
  EXPECT_EQ(opt.param_groups().size(), 1u);
  opt.add_parameters({b});
  EXPECT_EQ(opt.parameters().size(), 2u);
  EXPECT_EMBER_ERROR(opt.add_parameters({b}), "more than one parameter group");
}

TEST(Optim, ZeroGrad) {
  Tensor a = make_param(3, kFloat, 1), b = make_param(2, kFloat, 2);
  optim::Adam opt({a, b});
  a.mutable_grad() = ember::ones({3});
  b.mutable_grad() = ember::ones({2});
  Tensor grad_a = a.grad();
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_same(grad_a)); // zeroed in place
  EXPECT_TRUE(close(a.grad(), ember::zeros({3}), 0, 0));
  EXPECT_TRUE(close(b.grad(), ember::zeros({2}), 0, 0));
  EXPECT_FALSE(a.grad().requires_grad());

  opt.zero_grad(); // PyTorch 2 default: set_to_none = true
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  opt.zero_grad(false); // no gradients: nothing to do
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optim, SkipsParametersWithoutGrad) {
  Tensor a = make_param(3, kDouble, 1), b = make_param(2, kDouble, 2);
  Tensor a0 = a.clone(), b0 = b.clone();
  auto run = [&](optim::Optimizer &opt) {
    a.mutable_grad() = Tensor();
    b.mutable_grad() = ember::ones({2}, TensorOptions(kDouble));
    opt.step();
    EXPECT_TRUE(close(a, a0, 0, 0));
    EXPECT_FALSE(close(b, b0, 0, 0));
    EXPECT_FALSE(opt.state().count(a.unsafeGetTensorImpl()));
    b.detach().copy_(b0);
  };
  optim::SGD sgd({a, b}, optim::SGDOptions(0.1).momentum(0.9));
  run(sgd);
  optim::Adam adam({a, b});
  run(adam);
  optim::AdamW adamw({a, b});
  run(adamw);
  optim::RMSprop rms({a, b});
  run(rms);
  // AdamW's decoupled decay also skips a parameter without gradient.
  optim::AdamW decay({a, b}, optim::AdamWOptions(0.1).weight_decay(0.5));
  run(decay);
}

TEST(Optim, StepWithClosure) {
  Tensor p = ember::tensor({3.0}, TensorOptions(kDouble));
  optim::SGD opt({p}, 0.25);
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    EXPECT_TRUE(ember::is_grad_enabled());
    p.mutable_grad() = p.detach() * 2; // d(p^2)/dp
    return p.detach() * p.detach();
  });
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(loss.item<double>(), 9.0);
  EXPECT_DOUBLE_EQ(p.item<double>(), 3.0 - 0.25 * 6.0);
  EXPECT_FALSE(opt.step().defined());
}

// --- errors
// -----------------------------------------------------------------------

TEST(Optim, InvalidOptions) {
  Tensor p = make_param(2, kFloat, 1);
  EXPECT_EMBER_ERROR(optim::SGD({p}, -0.1), "Invalid learning rate: -0.1");
  EXPECT_EMBER_ERROR(optim::SGD({p}, optim::SGDOptions(0.1).momentum(-1)),
                     "Invalid momentum value: -1");
  EXPECT_EMBER_ERROR(optim::SGD({p}, optim::SGDOptions(0.1).weight_decay(-0.5)),
                     "Invalid weight_decay value: -0.5");
  EXPECT_EMBER_ERROR(optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)),
                     "Nesterov momentum requires a momentum and zero "
                     "dampening");
  EXPECT_EMBER_ERROR(
      optim::SGD(
          {p},
          optim::SGDOptions(0.1).nesterov(true).momentum(0.9).dampening(0.1)),
      "Nesterov momentum requires a momentum and zero dampening");
  try {
    optim::SGD({p}, -0.1);
    ADD_FAILURE() << "expected ValueError";
  } catch (const ValueError &) {
  }

  EXPECT_EMBER_ERROR(optim::Adam({p}, optim::AdamOptions(-1e-3)),
                     "Invalid learning rate: -0.001");
  EXPECT_EMBER_ERROR(optim::Adam({p}, optim::AdamOptions().eps(-1)),
                     "Invalid epsilon value: -1");
  EXPECT_EMBER_ERROR(optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.9})),
                     "Invalid beta parameter at index 0: 1");
  EXPECT_EMBER_ERROR(
      optim::AdamW({p}, optim::AdamWOptions().betas({0.9, -0.1})),
      "Invalid beta parameter at index 1: -0.1");
  EXPECT_EMBER_ERROR(optim::AdamW({p}, optim::AdamWOptions().weight_decay(-1)),
                     "Invalid weight_decay value: -1");
  EXPECT_EMBER_ERROR(optim::RMSprop({p}, optim::RMSpropOptions(-0.1)),
                     "Invalid learning rate: -0.1");
  EXPECT_EMBER_ERROR(optim::RMSprop({p}, optim::RMSpropOptions().alpha(-0.5)),
                     "Invalid alpha value: -0.5");
  EXPECT_EMBER_ERROR(
      optim::RMSprop({p}, optim::RMSpropOptions().momentum(-0.5)),
      "Invalid momentum value: -0.5");
  EXPECT_EMBER_ERROR(optim::RMSprop({p}, optim::RMSpropOptions().eps(-1)),
                     "Invalid epsilon value: -1");
}

TEST(Optim, EmptyParameterList) {
  EXPECT_EMBER_ERROR(optim::SGD(std::vector<Tensor>{}, 0.1),
                     "optimizer got an empty parameter list");
  EXPECT_EMBER_ERROR(optim::Adam(std::vector<optim::OptimizerParamGroup>{}),
                     "optimizer got an empty parameter list");
  EXPECT_EMBER_ERROR(optim::RMSprop(std::vector<Tensor>{}),
                     "optimizer got an empty parameter list");
}

TEST(Optim, GradientShapeMismatch) {
  Tensor p = make_param(3, kFloat, 1);
  optim::SGD opt({p}, 0.1);
  p.mutable_grad() = ember::ones({2});
  EXPECT_EMBER_ERROR(opt.step(), "has a gradient of shape [2]");
}

// --- schedulers
// -------------------------------------------------------------------

namespace {
/// An SGD optimizer over two groups with learning rates 0.1 and 0.03.
struct TwoGroups {
  Tensor a = ember::zeros({2}), b = ember::zeros({3});
  optim::SGD opt;
  TwoGroups() : opt(make_groups(a, b), 0.1) {}
  static std::vector<optim::OptimizerParamGroup> make_groups(Tensor a,
                                                             Tensor b) {
    std::vector<optim::OptimizerParamGroup> g;
    g.emplace_back(std::vector<Tensor>{a});
    g.emplace_back(std::vector<Tensor>{b},
                   std::make_unique<optim::SGDOptions>(0.03));
    return g;
  }
};
} // namespace

TEST(Optim, StepLRSchedule) {
  TwoGroups t;
  optim::StepLR sched(t.opt, /*step_size=*/3, /*gamma=*/0.5);
  const double base[] = {0.1, 0.03};
  for (int epoch = 0; epoch <= 30; ++epoch) {
    if (epoch > 0)
      sched.step();
    ASSERT_EQ(sched.get_last_lr().size(), 2u);
    for (size_t g = 0; g < 2; ++g) {
      double expected = base[g] * std::pow(0.5, epoch / 3);
      EXPECT_NEAR(sched.get_last_lr()[g], expected, 1e-15 * base[g])
          << "epoch " << epoch;
      EXPECT_EQ(t.opt.param_groups()[g].options().get_lr(),
                sched.get_last_lr()[g]);
    }
  }
  EXPECT_EQ(sched.last_epoch(), 30);
  // The default gamma is 0.1.
  TwoGroups u;
  optim::StepLR def(u.opt, 2);
  def.step();
  def.step();
  EXPECT_NEAR(def.get_last_lr()[0], 0.01, 1e-17);
  EXPECT_EMBER_ERROR(optim::StepLR(u.opt, 0), "step_size must be a positive");
}

TEST(Optim, CosineAnnealingLRSchedule) {
  // Past T_max the schedule goes back up (the cosine's period is 2 T_max);
  // 30 epochs with T_max = 7 cross several half-periods, including the
  // epochs where PyTorch's recursive form switches branch.
  for (double eta_min : {0.0, 0.001}) {
    TwoGroups t;
    const int64_t T_max = 7;
    optim::CosineAnnealingLR sched(t.opt, T_max, eta_min);
    const double base[] = {0.1, 0.03};
    for (int epoch = 0; epoch <= 30; ++epoch) {
      if (epoch > 0)
        sched.step();
      for (size_t g = 0; g < 2; ++g) {
        double expected =
            eta_min + (base[g] - eta_min) *
                          (1 + std::cos(std::numbers::pi * epoch / T_max)) / 2;
        EXPECT_NEAR(sched.get_last_lr()[g], expected, 1e-12)
            << "epoch " << epoch << " eta_min " << eta_min;
        EXPECT_EQ(t.opt.param_groups()[g].options().get_lr(),
                  sched.get_last_lr()[g]);
      }
    }
  }
  TwoGroups t;
  EXPECT_EMBER_ERROR(optim::CosineAnnealingLR(t.opt, 0),
                     "T_max must be a positive");
}

TEST(Optim, SchedulerDrivesOptimizer) {
  // The rates a scheduler sets are the ones step() uses.
  Tensor p = ember::tensor({1.0}, TensorOptions(kDouble));
  optim::SGD opt({p}, 1.0);
  optim::StepLR sched(opt, 1, 0.5);
  double expected = 1.0;
  for (int e = 0; e < 4; ++e) {
    p.mutable_grad() = ember::ones({1}, TensorOptions(kDouble));
    opt.step();
    expected -= std::pow(0.5, e);
    sched.step();
  }
  EXPECT_DOUBLE_EQ(p.item<double>(), expected);
}

// --- state save / load
// ------------------------------------------------------------

namespace {
/// Two groups (the second with its own options) over params of 3 and 4
/// elements; `make` builds the optimizer from them.
template <class Opt, class Options>
std::unique_ptr<Opt> make_two_group_optimizer(const Tensor &a, const Tensor &b,
                                              const Options &first,
                                              const Options &second) {
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b},
                      std::make_unique<Options>(second));
  return std::make_unique<Opt>(groups, first);
}

/// Steps `opt` over (a, b) with the gradients of step k.
void step_two(optim::Optimizer &opt, const Tensor &a, const Tensor &b, int k) {
  a.mutable_grad() = make_grad(3, a.dtype(), k, 7);
  // b gets no gradient on step 1, so its state starts one step later.
  b.mutable_grad() = k == 1 ? Tensor() : make_grad(4, b.dtype(), k, 8);
  opt.step();
}

/// Runs 3 steps, saves, loads into a fresh optimizer (built with other
/// options) over copies of the parameters, then checks that 3 more steps
/// of both give bit-identical parameters.
template <class Opt, class Options>
void check_round_trip(const Options &first, const Options &second,
                      const Options &other, bool through_file) {
  Tensor a = make_param(3, kFloat, 41), b = make_param(4, kFloat, 42);
  auto opt = make_two_group_optimizer<Opt>(a, b, first, second);
  for (int k = 0; k < 3; ++k)
    step_two(*opt, a, b, k);

  Tensor a2 = a.detach().clone(), b2 = b.detach().clone();
  a2.set_requires_grad(true);
  b2.set_requires_grad(true);
  auto opt2 = make_two_group_optimizer<Opt>(a2, b2, other, other);
  if (through_file) {
    auto path = std::filesystem::temp_directory_path() /
                ("ember_test_optim_" + std::to_string(::getpid()) + ".bin");
    ember::save(*opt, path.string());
    ember::load(*opt2, path.string());
    std::filesystem::remove(path);
  } else {
    std::stringstream ss;
    ember::save(*opt, ss);
    ember::load(*opt2, ss);
  }
  ASSERT_EQ(opt2->state().size(), opt->state().size());
  for (size_t g = 0; g < 2; ++g)
    EXPECT_EQ(static_cast<const Options &>(opt2->param_groups()[g].options()),
              static_cast<const Options &>(opt->param_groups()[g].options()))
        << "group " << g;
  for (int k = 3; k < 6; ++k) {
    step_two(*opt, a, b, k);
    step_two(*opt2, a2, b2, k);
    ASSERT_TRUE(close(a2, a, 0, 0)) << "step " << k;
    ASSERT_TRUE(close(b2, b, 0, 0)) << "step " << k;
  }
}
} // namespace

TEST(Optim, SaveLoadRoundTrip) {
  check_round_trip<optim::SGD>(
      optim::SGDOptions(0.1).momentum(0.9).nesterov(true),
      optim::SGDOptions(0.05).momentum(0.5).dampening(0.1).weight_decay(0.1),
      optim::SGDOptions(1.0), /*through_file=*/true);
  check_round_trip<optim::Adam>(
      optim::AdamOptions(0.01).amsgrad(true),
      optim::AdamOptions(0.02).betas({0.8, 0.9}).weight_decay(0.1),
      optim::AdamOptions(), /*through_file=*/false);
  check_round_trip<optim::AdamW>(
      optim::AdamWOptions(0.01), optim::AdamWOptions(0.03).amsgrad(true),
      optim::AdamWOptions(0.5).weight_decay(0), /*through_file=*/true);
  check_round_trip<optim::RMSprop>(
      optim::RMSpropOptions(0.01).centered(true).momentum(0.9),
      optim::RMSpropOptions(0.02).alpha(0.9).weight_decay(0.1),
      optim::RMSpropOptions(), /*through_file=*/false);
}

TEST(Optim, SaveLoadKeepsScheduledLearningRate) {
  Tensor p = make_param(3, kFloat, 1);
  optim::SGD opt({p}, 0.1);
  optim::StepLR sched(opt, 1, 0.5);
  sched.step();
  std::stringstream ss;
  ember::save(opt, ss);
  Tensor q = make_param(3, kFloat, 2);
  optim::SGD opt2({q}, 0.7);
  ember::load(opt2, ss);
  EXPECT_EQ(opt2.param_groups()[0].options().get_lr(), 0.05);
}

TEST(Optim, LoadMismatches) {
  Tensor a = make_param(3, kFloat, 1), b = make_param(4, kFloat, 2);
  optim::SGD sgd({a, b}, optim::SGDOptions(0.1).momentum(0.9));
  std::stringstream saved;
  ember::save(sgd, saved);
  const std::string bytes = saved.str();
  auto load_into = [&](optim::Optimizer &opt) {
    std::stringstream ss(bytes);
    ember::load(opt, ss);
  };

  optim::Adam adam({a, b});
  EXPECT_EMBER_ERROR(load_into(adam),
                     "cannot load the state saved by optimizer SGD into "
                     "optimizer Adam");
  optim::SGD one_param({a}, 0.1);
  EXPECT_EMBER_ERROR(load_into(one_param),
                     "loaded state dict contains a parameter group that "
                     "doesn't match the size of optimizer's group");
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b});
  optim::SGD two_groups(groups, 0.1);
  EXPECT_EMBER_ERROR(load_into(two_groups),
                     "loaded state dict has a different number of parameter "
                     "groups");
  Tensor c = make_param(5, kFloat, 3);
  optim::SGD other_shape({a, c}, optim::SGDOptions(0.3));
  EXPECT_EMBER_ERROR(load_into(other_shape),
                     "parameter 1 of param group 0 has shape [5] but the "
                     "loaded state is for shape [4]");
  // A failed load leaves the optimizer as it was.
  EXPECT_EQ(other_shape.param_groups()[0].options().get_lr(), 0.3);
}
