// Autograd semantics: the graph, the engine, grad modes, hooks, views and
// in-place ops, custom functions, checkpointing, DOT export.
#include "TestUtil.h"
#include "ember/ember.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>

using namespace ember;
using namespace ember::autograd;
using ember::test::close;

namespace {
Tensor scalar(double v, bool rg = true) {
  return tensor({v}, kDouble).reshape({}).requires_grad_(rg);
}
double val(const Tensor &t) { return t.item<double>(); }
} // namespace

TEST(Autograd, SeedGraphNamesAndGradients) {
  // loss = ((x*y)+1)^2 at x=2, y=3: the seeds' walk-through.
  Tensor x = scalar(2), y = scalar(3);
  Tensor loss = ((x * y) + 1).pow(2);
  ASSERT_TRUE(loss.grad_fn());
  EXPECT_EQ(loss.grad_fn()->name(), "PowBackward0");
  auto add = loss.grad_fn()->next_edges()[0].function;
  EXPECT_EQ(add->name(), "AddBackward0");
  auto mul = add->next_edges()[0].function;
  EXPECT_EQ(mul->name(), "MulBackward0");
  ASSERT_EQ(mul->next_edges().size(), 2u);
  EXPECT_EQ(mul->next_edges()[0].function->name(), "AccumulateGrad");
  EXPECT_EQ(mul->next_edges()[1].function->name(), "AccumulateGrad");
  EXPECT_EQ(mul->next_edges()[0].input_nr, 0u);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(loss.is_leaf());
  loss.backward();
  EXPECT_DOUBLE_EQ(val(x.grad()), 42);
  EXPECT_DOUBLE_EQ(val(y.grad()), 28);
  std::ostringstream os;
  os << loss;
  EXPECT_EQ(os.str(),
            "tensor(49., dtype=ember.float64, grad_fn=<PowBackward0>)");
}

TEST(Autograd, NamesOfCommonNodes) {
  Tensor x = ember::test::random({3, 4}, kFloat).requires_grad_();
  EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(x.sum(1).grad_fn()->name(), "SumBackward1");
  EXPECT_EQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(x.mean(0).grad_fn()->name(), "MeanBackward1");
  EXPECT_EQ((x - 1).grad_fn()->name(), "SubBackward0");
  EXPECT_EQ((x / 2).grad_fn()->name(), "DivBackward0");
  EXPECT_EQ(x.exp().grad_fn()->name(), "ExpBackward0");
  EXPECT_EQ(x.view({12}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.reshape({12}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.t().grad_fn()->name(), "TBackward0");
  EXPECT_EQ(x.relu().grad_fn()->name(), "ReluBackward0");
  EXPECT_EQ(x.mm(x.t()).grad_fn()->name(), "MmBackward0");
}

TEST(Autograd, AccumulatesAcrossBackwardCalls) {
  Tensor x = scalar(3);
  Tensor y = x * x;
  y.backward({}, /*retain_graph=*/true);
  EXPECT_DOUBLE_EQ(val(x.grad()), 6);
  y.backward();
  EXPECT_DOUBLE_EQ(val(x.grad()), 12);
}

TEST(Autograd, BackwardOnTwoThreadsAccumulatesIntoSharedLeaves) {
  // As in PyTorch, threads may run forward and backward at once on graphs
  // that share leaves (Hogwild training): each gets the leaf's one
  // AccumulateGrad, and the gradients add up under the leaf's lock.
  Tensor w = ones({64}).requires_grad_();
  Tensor b = zeros({64}).requires_grad_();
  constexpr int kSteps = 50;
  std::latch start(2);
  auto train = [&] {
    start.arrive_and_wait();
    for (int i = 0; i < kSteps; ++i) {
      Tensor x = full({64}, 2.0);
      ((w * x + b) * 3).sum().backward();
    }
  };
  std::thread t1(train), t2(train);
  t1.join();
  t2.join();
  EXPECT_TRUE(equal(w.grad(), full({64}, 2.0 * kSteps * 6)));
  EXPECT_TRUE(equal(b.grad(), full({64}, 2.0 * kSteps * 3)));
}

TEST(Autograd, SecondBackwardWithoutRetainGraphRaises) {
  Tensor x = scalar(3);
  Tensor y = x * x;
  y.backward();
  EXPECT_EMBER_ERROR(y.backward(), "Trying to backward through the graph a "
                                   "second time");
}

TEST(Autograd, NonScalarOutputNeedsGradient) {
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  Tensor y = x * 2;
  EXPECT_EMBER_ERROR(y.backward(), "grad can be implicitly created only for "
                                   "scalar outputs");
  y.backward(ones_like(y));
  EXPECT_TRUE(close(x.grad(), full({3}, 2.0, kDouble)));
}

TEST(Autograd, BackwardOnTensorWithoutGraphRaises) {
  Tensor x = ember::test::random({3}, kDouble);
  EXPECT_EMBER_ERROR(x.sum().backward(),
                     "element 0 of tensors does not require grad and does "
                     "not have a grad_fn");
}

TEST(Autograd, BroadcastGradientsReduceToInputShape) {
  Tensor a = ember::test::random({3, 1}, kDouble).requires_grad_();
  Tensor b = ember::test::random({1, 4}, kDouble).requires_grad_();
  Tensor c = ember::test::random({4}, kDouble).requires_grad_();
  ((a + b) * c).sum().backward();
  EXPECT_EQ(a.grad().sizes(), a.sizes());
  EXPECT_EQ(b.grad().sizes(), b.sizes());
  EXPECT_EQ(c.grad().sizes(), c.sizes());
  EXPECT_TRUE(close(a.grad(), c.sum().expand({3, 1})));
  EXPECT_TRUE(close(c.grad(), (a + b).sum(0)));
}

TEST(Autograd, MixedDtypesGradientsKeepInputDtype) {
  Tensor a = ember::test::random({3}, kFloat).requires_grad_();
  Tensor b = ember::test::random({3}, kDouble).requires_grad_();
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat);
  EXPECT_EQ(b.grad().dtype(), kDouble);
  EXPECT_TRUE(close(a.grad().to(kDouble), b.detach(), 1e-6));
}

TEST(Autograd, CreateGraphGivesHigherOrderGradients) {
  Tensor x = scalar(2);
  Tensor y = x.pow(3);
  auto g = ember::autograd::grad({y}, {x}, {}, std::nullopt, true);
  EXPECT_DOUBLE_EQ(val(g[0]), 12); // 3x^2
  ASSERT_TRUE(g[0].requires_grad());
  auto gg = ember::autograd::grad({g[0]}, {x});
  EXPECT_DOUBLE_EQ(val(gg[0]), 12); // 6x
  // backward(create_graph) leaves a differentiable .grad.
  Tensor z = scalar(1.5);
  (z * z * z).backward({}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(z.grad().requires_grad());
  auto g3 = ember::autograd::grad({z.grad()}, {z});
  EXPECT_DOUBLE_EQ(val(g3[0]), 9); // 6z
  // As in PyTorch, backward(create_graph) makes a cycle parameter -> grad ->
  // graph -> parameter; clearing the grad breaks it.
  z.mutable_grad() = Tensor();
}

TEST(Autograd, GradDoesNotTouchDotGradAndChecksUnused) {
  Tensor x = scalar(2), y = scalar(5);
  Tensor out = x * x;
  auto g = ember::autograd::grad({out}, {x}, {}, true);
  EXPECT_DOUBLE_EQ(val(g[0]), 4);
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EMBER_ERROR(ember::autograd::grad({out}, {x, y}, {}, true),
                     "appears to not have been used in the graph");
  auto g2 = ember::autograd::grad({out}, {x, y}, {}, true, false,
                                  /*allow_unused=*/true);
  EXPECT_FALSE(g2[1].defined());
  Tensor nograd = tensor({1.0}, kDouble);
  EXPECT_EMBER_ERROR(ember::autograd::grad({out}, {nograd}),
                     "does not require grad");
}

TEST(Autograd, GradWithRespectToIntermediate) {
  Tensor x = scalar(3);
  Tensor h = x * 2;
  Tensor out = h * h;
  auto g = ember::autograd::grad({out}, {h, x});
  EXPECT_DOUBLE_EQ(val(g[0]), 12); // 2h
  EXPECT_DOUBLE_EQ(val(g[1]), 24); // 8x
}

TEST(Autograd, RetainGradOnNonLeaf) {
  Tensor x = scalar(2);
  Tensor h = x * 3;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  (h * h).backward();
  EXPECT_DOUBLE_EQ(val(h.grad()), 12);
  EXPECT_DOUBLE_EQ(val(x.grad()), 36);
  Tensor h2 = x * 3;
  (h2 * h2).backward();
  EXPECT_FALSE(h2.grad().defined()); // non-leaf without retain_grad
}

TEST(Autograd, HooksObserveReplaceAndRemove) {
  Tensor x = scalar(2);
  double seen = 0;
  unsigned h1 = x.register_hook([&](const Tensor &g) { seen = val(g); });
  unsigned h2 = x.register_hook([](const Tensor &g) { return g * 10; });
  (x * 3).backward();
  EXPECT_DOUBLE_EQ(seen, 3);
  EXPECT_DOUBLE_EQ(val(x.grad()), 30);
  x.remove_hook(h2);
  x.mutable_grad() = Tensor();
  (x * 3).backward();
  EXPECT_DOUBLE_EQ(val(x.grad()), 3);
  x.remove_hook(h1);
  EXPECT_EMBER_ERROR(x.remove_hook(h1), "no hook");
  // On an intermediate: replaces the gradient flowing further.
  Tensor y = scalar(1);
  Tensor m = y * 4;
  m.register_hook([](const Tensor &g) { return g * 0.5; });
  (m * 1).backward();
  EXPECT_DOUBLE_EQ(val(y.grad()), 2);
  EXPECT_EMBER_ERROR(tensor({1.0}).register_hook([](const Tensor &) {}),
                     "doesn't require gradient");
}

TEST(Autograd, GradModes) {
  Tensor x = scalar(2);
  {
    NoGradGuard g;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(y.grad_fn());
    {
      AutoGradMode on(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(GradMode::is_enabled());
  set_grad_enabled(false);
  EXPECT_FALSE((x * 2).requires_grad());
  set_grad_enabled(true);
  Tensor inf;
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
    inf = x * 2;
    EXPECT_FALSE(inf.requires_grad());
    EXPECT_TRUE(inf.is_inference());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_EMBER_ERROR((inf * x).sum().backward(),
                     "Inference tensors cannot be saved for backward");
}

TEST(Autograd, DetachSharesDataWithoutHistory) {
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_FALSE(d.grad_fn());
  EXPECT_TRUE(d.is_alias_of(y));
  Tensor z = x * 3;
  z.detach_();
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  EXPECT_EMBER_ERROR(y.set_requires_grad(false),
                     "you can only change requires_grad flags of leaf");
}

TEST(Autograd, ModifiedSavedTensorRaisesAtBackward) {
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  Tensor a = x.sigmoid(); // saves its result
  a.mul_(2);
  EXPECT_EMBER_ERROR(a.sum().backward(),
                     "one of the variables needed for gradient computation "
                     "has been modified by an inplace operation: "
                     "[CPUDoubleType [3]], which is output 0 of "
                     "SigmoidBackward0, is at version 1; expected version 0 "
                     "instead.");
  Tensor b = x * 1;
  Tensor c = b * b; // saves b
  b.add_(1);
  EXPECT_EMBER_ERROR(c.sum().backward(), "modified by an inplace operation");
}

TEST(Autograd, InPlaceOnLeafRaises) {
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  EXPECT_EMBER_ERROR(x.add_(1), "a leaf Variable that requires grad is being "
                                "used in an in-place operation.");
  EXPECT_EMBER_ERROR(x.select(0, 1).mul_(2),
                     "a view of a leaf Variable that requires grad");
  {
    NoGradGuard g; // optimizers update leaves this way
    x.add_(1);
  }
}

TEST(Autograd, InPlaceOpsRecordHistory) {
  Tensor x = ember::test::random({4}, kDouble).requires_grad_();
  Tensor y = x * 1;
  y.mul_(3).exp_();
  EXPECT_EQ(y.grad_fn()->name(), "ExpBackward0");
  y.sum().backward();
  EXPECT_TRUE(close(x.grad(), (x.detach() * 3).exp() * 3));
  // An in-place op writes a requires-grad value into a plain tensor.
  Tensor w = ember::test::random({4}, kDouble).requires_grad_();
  Tensor buf = zeros({4}, kDouble);
  buf.copy_(w * 2);
  EXPECT_TRUE(buf.requires_grad());
  buf.sum().backward();
  EXPECT_TRUE(close(w.grad(), full({4}, 2.0, kDouble)));
}

TEST(Autograd, InPlaceOnViewGoesThroughBase) {
  Tensor x = ember::test::random({3, 4}, kDouble).requires_grad_();
  Tensor y = x.clone();
  y.select(0, 1).mul_(5);
  EXPECT_EQ(y.grad_fn()->name(), "CopySlices");
  (y * y).sum().backward();
  Tensor expect = x.detach() * 2;
  expect.select(0, 1).mul_(25);
  EXPECT_TRUE(close(x.grad(), expect));

  // Writing a requires-grad value into a slice of a plain tensor.
  Tensor w = ember::test::random({4}, kDouble).requires_grad_();
  Tensor out = zeros({3, 4}, kDouble);
  out.select(0, 2).copy_(w);
  EXPECT_TRUE(out.requires_grad());
  (out * out).sum().backward();
  EXPECT_TRUE(close(w.grad(), w.detach() * 2));

  // A view taken before the base changed sees the change.
  Tensor a = x.clone();
  Tensor v = a.narrow(1, 0, 2);
  a.mul_(2);
  v.sum().backward();
  Tensor g = zeros({3, 4}, kDouble);
  g.narrow(1, 0, 2).fill_(2.0);
  EXPECT_TRUE(close(x.grad() - expect, g));
}

TEST(Autograd, IndexPutIntoRequiresGradBuffer) {
  Tensor w = ember::test::random({2}, kDouble).requires_grad_();
  Tensor out = zeros({5}, kDouble);
  out.index_put_({indexing::Slice(1, 3)}, w * 3);
  out.sum().backward();
  EXPECT_TRUE(close(w.grad(), full({2}, 3.0, kDouble)));
}

TEST(Autograd, MultiOutputOps) {
  Tensor x = ember::test::random({3, 5}, kDouble).requires_grad_();
  auto [values, indices] = x.max(1);
  EXPECT_FALSE(indices.requires_grad());
  values.sum().backward();
  Tensor expect = zeros({3, 5}, kDouble);
  for (int64_t i = 0; i < 3; ++i)
    expect[i][indices[i].item<int64_t>()].fill_(1.0);
  EXPECT_TRUE(close(x.grad(), expect));
  // Unused outputs of split get zero gradients.
  Tensor z = ember::test::random({6}, kDouble).requires_grad_();
  auto parts = z.split(2);
  (parts[1] * 3).sum().backward();
  EXPECT_TRUE(close(z.grad(), tensor({0.0, 0.0, 3.0, 3.0, 0.0, 0.0}, kDouble)));
}

TEST(Autograd, OpWithoutFormulaRaisesAtBackward) {
  Library lib("agtest");
  lib.def("twice(Tensor x) -> Tensor");
  lib.impl(
      "twice", kCPU, +[](const Tensor &x) { return x * 2; });
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  auto op = find_op<Tensor(const Tensor &)>("agtest::twice");
  Tensor y = op.call(x);
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "NotImplemented");
  EXPECT_EMBER_ERROR(y.sum().backward(),
                     "the derivative for 'agtest::twice' is not implemented");
}

// --- custom functions -------------------------------------------------------

struct MyReLU : Function<MyReLU> {
  static Tensor forward(AutogradContext *ctx, const Tensor &x) {
    ctx->save_for_backward({x});
    return x.clamp_min(0);
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * (x > 0)};
  }
};

struct ScaleBy : Function<ScaleBy> {
  static Tensor forward(AutogradContext *ctx, const Tensor &x, double k,
                        const Tensor &y) {
    ctx->saved_data["k"] = k;
    ctx->save_for_backward({x, y});
    return x * y * k;
  }
  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    double k = ctx->saved_data["k"].toDouble();
    auto s = ctx->get_saved_variables();
    EXPECT_TRUE(ctx->needs_input_grad(0));
    EXPECT_FALSE(ctx->needs_input_grad(1));
    return {grads[0] * s[1] * k, Tensor(), Tensor()};
  }
};

struct AddOneInPlace : Function<AddOneInPlace> {
  static variable_list forward(AutogradContext *ctx, const Tensor &x) {
    x.add_(1);
    ctx->mark_dirty({x});
    Tensor mask = x > 1;
    ctx->mark_non_differentiable({mask});
    return {x, mask};
  }
  static variable_list backward(AutogradContext *, variable_list grads) {
    return {grads[0]};
  }
};

TEST(Autograd, CustomFunctions) {
  Tensor x = tensor({-1.0, 2.0, -3.0, 4.0}, kDouble).requires_grad_();
  Tensor y = MyReLU::apply(x);
  EXPECT_EQ(y.grad_fn()->name(), "MyReLUBackward");
  y.sum().backward();
  EXPECT_TRUE(close(x.grad(), tensor({0.0, 1.0, 0.0, 1.0}, kDouble)));

  Tensor a = ember::test::random({3}, kDouble).requires_grad_();
  Tensor b = ember::test::random({3}, kDouble);
  ScaleBy::apply(a, 2.5, b).sum().backward();
  EXPECT_TRUE(close(a.grad(), b * 2.5));

  Tensor c = ember::test::random({3}, kDouble).requires_grad_();
  Tensor d = c * 1;
  auto outs = AddOneInPlace::apply(d);
  EXPECT_TRUE(outs[0].is_same(d));
  EXPECT_FALSE(outs[1].requires_grad());
  (outs[0] * 2).sum().backward();
  EXPECT_TRUE(close(c.grad(), full({3}, 2.0, kDouble)));
  EXPECT_TRUE(gradcheck(
      [](const variable_list &in) {
        return variable_list{MyReLU::apply(in[0])};
      },
      {tensor({-1.0, 0.5, 2.0}, kDouble).requires_grad_()}));
}

struct WrongCount : Function<WrongCount> {
  static Tensor forward(AutogradContext *, const Tensor &x, const Tensor &y) {
    return x + y;
  }
  static variable_list backward(AutogradContext *, variable_list grads) {
    return {grads[0]};
  }
};

TEST(Autograd, CustomFunctionWrongGradientCount) {
  Tensor x = scalar(1), y = scalar(2);
  EXPECT_EMBER_ERROR(WrongCount::apply(x, y).backward(),
                     "returned an incorrect number of gradients (expected 2, "
                     "got 1)");
}

// --- gradcheck, checkpoint, DOT
// -------------------------------------------------

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  struct Bad : Function<Bad> {
    static Tensor forward(AutogradContext *, const Tensor &x) { return x * x; }
    static variable_list backward(AutogradContext *, variable_list g) {
      return {g[0]}; // should be 2x g
    }
  };
  Tensor x = ember::test::random({3}, kDouble).requires_grad_();
  auto f = [](const variable_list &in) {
    return variable_list{Bad::apply(in[0])};
  };
  EXPECT_FALSE(gradcheck(f, {x}, 1e-6, 1e-5, 1e-3, /*raise=*/false));
  EXPECT_EMBER_ERROR(gradcheck(f, {x}), "Jacobian mismatch");
  EXPECT_EMBER_ERROR(gradcheck(f, {x.detach().to(kFloat).requires_grad_()}),
                     "float64");
}

TEST(Autograd, GradgradcheckOnComposite) {
  Tensor x = ember::test::random({2, 3}, kDouble).requires_grad_();
  Tensor w = ember::test::random({3, 3}, kDouble).requires_grad_();
  auto f = [](const variable_list &in) {
    return variable_list{(in[0].mm(in[1])).tanh().sum(1)};
  };
  EXPECT_TRUE(gradcheck(f, {x, w}));
  EXPECT_TRUE(gradgradcheck(f, {x, w}));
}

TEST(Autograd, CheckpointGivesSameGradients) {
  manual_seed(1);
  Tensor w1 = ember::test::random({8, 8}, kDouble).requires_grad_();
  Tensor w2 = ember::test::random({8, 8}, kDouble).requires_grad_();
  Tensor x = ember::test::random({4, 8}, kDouble).requires_grad_();
  auto block = [&](const Tensor &h) { return (h.mm(w1)).tanh().mm(w2).relu(); };
  block(block(x)).sum().backward();
  Tensor gx = x.grad().clone(), g1 = w1.grad().clone(), g2 = w2.grad().clone();
  x.mutable_grad() = Tensor();
  w1.mutable_grad() = Tensor();
  w2.mutable_grad() = Tensor();
  Tensor h = checkpoint(block, x);
  checkpoint(block, h).sum().backward();
  EXPECT_TRUE(close(x.grad(), gx));
  EXPECT_TRUE(close(w1.grad(), g1));
  EXPECT_TRUE(close(w2.grad(), g2));
}

TEST(Autograd, CheckpointReplaysRandomness) {
  Tensor x = ember::test::random({64}, kDouble).requires_grad_();
  auto noisy = [](const Tensor &h) {
    return h * (rand_like(h) > 0.5); // a dropout-like mask
  };
  manual_seed(7);
  Tensor mask = (rand_like(x) > 0.5).to(kDouble);
  manual_seed(7);
  checkpoint(noisy, x).sum().backward();
  EXPECT_TRUE(close(x.grad(), mask));
}

TEST(Autograd, DotExportNamesNodesAndShapes) {
  Tensor x = ember::test::random({2, 3}, kDouble).requires_grad_();
  Tensor w = ember::test::random({3, 4}, kDouble).requires_grad_();
  Tensor y = x.mm(w).sigmoid().sum();
  std::string dot = to_dot({y}, {{"weight", w}});
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("SumBackward0"), std::string::npos);
  EXPECT_NE(dot.find("SigmoidBackward0"), std::string::npos);
  EXPECT_NE(dot.find("MmBackward0"), std::string::npos);
  EXPECT_NE(dot.find("weight\\n(3, 4)"), std::string::npos) << dot;
  EXPECT_NE(dot.find("result: (2, 4)"), std::string::npos) << dot;
}

// Gradients at the points where a formula is 0/0 or meets a kink, each
// against PyTorch 2.15's value (found by a differential probe: ember gave
// NaN, inf or another one-sided derivative at each).
TEST(Autograd, GradientsAtSpecialPointsAreTorchs) {
  const double nan = std::nan(""), inf = INFINITY;
  auto t = [](std::vector<double> v) { return tensor(v, kDouble); };
  // The gradients of f(x...).sum() at the given points.
  auto grads = [&](auto f, std::vector<std::vector<double>> points) {
    variable_list xs;
    for (auto &p : points)
      xs.push_back(t(p).requires_grad_(true));
    Tensor y;
    if constexpr (std::is_invocable_v<decltype(f), Tensor>)
      y = f(xs[0]);
    else
      y = f(xs[0], xs[1]);
    y.sum().backward();
    variable_list g;
    for (auto &x : xs)
      g.push_back(x.grad());
    return g;
  };
  auto same = [&](const Tensor &got, std::vector<double> want) {
    return close(got, t(want), 1e-12, 1e-12);
  };
  // log_sigmoid: sigmoid(-x), 1/2 at 0 (was 1: the kinks of min and |x|).
  EXPECT_TRUE(same(grads([](Tensor x) { return nn::functional::logsigmoid(x); },
                         {{0.0, -0.0, 2.0, -800.0, 800.0}})[0],
                   {0.5, 0.5, 0.11920292202211755, 1.0, 0.0}));
  EXPECT_TRUE(
      same(grads(
               [&](Tensor x) {
                 return nn::functional::binary_cross_entropy_with_logits(
                     x, t({1, 0, 1}),
                     nn::functional::BinaryCrossEntropyWithLogitsFuncOptions()
                         .pos_weight(t({3, 3, 3})));
               },
               {{0.0, 0.0, 1.0}})[0],
           {-0.5, 0.16666666666666666, -0.26894142136999505}));
  // cumprod with zeros (was NaN at and after the first zero), weighted so
  // that each output's gradient differs.
  auto weighted_cumprod = [&](Tensor x) {
    return x.cumprod(0) * arange(1, x.size(0) + 1, TensorOptions(kDouble));
  };
  EXPECT_TRUE(same(grads(weighted_cumprod, {{2, 0, 3}})[0], {1, 22, 0}));
  EXPECT_TRUE(same(grads(weighted_cumprod, {{0, 2, 3}})[0], {23, 0, 0}));
  EXPECT_TRUE(same(grads(weighted_cumprod, {{2, 3, 0}})[0], {7, 4, 18}));
  EXPECT_TRUE(same(grads(weighted_cumprod, {{0, 0, 3}})[0], {1, 0, 0}));
  EXPECT_TRUE(
      same(grads(weighted_cumprod, {{2, 0, 3, 0, 5}})[0], {1, 22, 0, 0, 0}));
  Tensor w = t({1, 2, 3, 4, 5, 6}).reshape({2, 3});
  EXPECT_TRUE(same(grads(
                       [&](Tensor x) {
                         return x.reshape({2, 3}).cumprod(1) * w;
                       },
                       {{0, 2, 3, 4, 0, 6}})[0],
                   {23, 0, 0, 4, 164, 0}));
  EXPECT_TRUE(same(grads(
                       [&](Tensor x) {
                         return x.reshape({2, 3}).cumprod(0) * w;
                       },
                       {{0, 2, 3, 4, 0, 6}})[0],
                   {17, 2, 39, 0, 10, 18}));
  // std where the deviation is 0 (was NaN: sqrt's 1/0 times var's 0).
  Tensor s = t({2, 2, 2}).requires_grad_(true).std();
  EXPECT_EQ(s.grad_fn()->name(), "StdBackward0");
  EXPECT_TRUE(
      same(grads([](Tensor x) { return x.std(); }, {{2, 2, 2}})[0], {0, 0, 0}));
  EXPECT_TRUE(same(grads(
                       [](Tensor x) {
                         return x.reshape({2, 2}).std(1);
                       },
                       {{2, 2, 1, 3}})[0],
                   {0, 0, -0.7071067811865475, 0.7071067811865475}));
  // p-norms at 0 (p < 1: |0|^(p-1) is inf).
  EXPECT_TRUE(same(
      grads([](Tensor x) { return x.norm(0.5, {0}); }, {{0, 1}})[0], {0, 1}));
  EXPECT_TRUE(same(
      grads([](Tensor x) { return x.norm(1.5, {0}); }, {{0, -1}})[0], {0, -1}));
  EXPECT_TRUE(same(grads([](Tensor x) { return x.norm(3, {0}); }, {{0, 0}})[0],
                   {0, 0}));
  // atan2 at the origin (was 0/0).
  auto a = grads([](Tensor y, Tensor x) { return ember::atan2(y, x); },
                 {{0, 1, 0}, {0, 1, -2}});
  EXPECT_TRUE(same(a[0], {0, 0.5, -0.5}));
  EXPECT_TRUE(same(a[1], {0, -0.5, 0}));
  // 0 ** x: 0 where x >= 0 (was -inf at x = 0).
  EXPECT_TRUE(same(
      grads([](Tensor x) { return ember::pow(0.0, x); }, {{0, 1, -1, 2}})[0],
      {0, 0, -inf, 0}));
  // maximum/minimum: both get the gradient where either is NaN.
  auto mx = grads([](Tensor x, Tensor y) { return ember::maximum(x, y); },
                  {{nan, 1, 2, 3}, {1, nan, 2, 1}});
  EXPECT_TRUE(same(mx[0], {1, 1, 0.5, 1}));
  EXPECT_TRUE(same(mx[1], {1, 1, 0.5, 0}));
  auto mn = grads([](Tensor x, Tensor y) { return ember::minimum(x, y); },
                  {{nan, 1, 2, 3}, {1, nan, 2, 1}});
  EXPECT_TRUE(same(mn[0], {1, 1, 0.5, 0}));
  EXPECT_TRUE(same(mn[1], {1, 1, 0.5, 1}));
  // Note [Clamp's gradients]: tensor bounds as maximum/minimum.
  auto cm = grads([](Tensor x, Tensor b) { return x.clamp_min(b); },
                  {{-3, -1, 0.5, nan, nan, 2}, {-1, -1, -1, -1, nan, nan}});
  EXPECT_TRUE(same(cm[0], {0, 0.5, 1, 1, 1, 1}));
  EXPECT_TRUE(same(cm[1], {1, 0.5, 0, 1, 1, 1}));
  auto cx = grads([](Tensor x, Tensor b) { return x.clamp_max(b); },
                  {{-3, -1, 0.5, nan, nan, 2}, {-1, -1, -1, -1, nan, nan}});
  EXPECT_TRUE(same(cx[0], {1, 0.5, 0, 1, 1, 1}));
  EXPECT_TRUE(same(cx[1], {0, 0.5, 1, 1, 1, 1}));
  // Number bounds: strictly inside only.
  EXPECT_TRUE(same(grads([](Tensor x) { return x.clamp_min(-1); },
                         {{-3, -1, 0.5, 2, 5, nan}})[0],
                   {0, 0, 1, 1, 1, 0}));
  EXPECT_TRUE(same(grads([](Tensor x) { return x.clamp_max(2); },
                         {{-3, -1, 0.5, 2, 5, nan}})[0],
                   {1, 1, 1, 0, 0, 0}));
  EXPECT_TRUE(same(grads([](Tensor x) { return x.clamp(2, -1); },
                         {{-3, -1, 0.5, 2, 5, nan}})[0],
                   {0, 0, 0, 0, 0, 0}));
}

// sign(NaN) is 0 and scalar_tensor makes the default dtype, as PyTorch's.
TEST(Autograd, SignOfNaNAndScalarTensorDtype) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor n = tensor({std::nan(""), 0.0, -0.0, 3.0, -3.0}, dt);
    EXPECT_TRUE(ember::equal(n.sign(), tensor({0.0, 0.0, 0.0, 1.0, -1.0}, dt)))
        << dt;
    EXPECT_TRUE(ember::equal(
        n.reshape({5, 1}).expand({5, 40}).sign(),
        tensor({0.0, 0.0, 0.0, 1.0, -1.0}, dt).reshape({5, 1}).expand({5, 40})))
        << dt;
  }
  EXPECT_EQ(scalar_tensor(3).dtype(), kFloat);
  EXPECT_EQ(scalar_tensor(true).dtype(), kFloat);
  EXPECT_EQ(scalar_tensor(3, TensorOptions(kLong)).dtype(), kLong);
}

// clamp with two tensor bounds (ember::_clamp_tensor, ClampBackward0): each
// input's gradient on every order of x, min and max from {0, 1, 2}, and at
// a NaN x, against PyTorch 2.15's.
TEST(Autograd, ClampWithTensorBoundsGradientsAreTorchs) {
  struct Case {
    double x, lo, hi, gx, glo, ghi;
  };
  const double nan = std::nan("");
  const Case cases[] = {
      {0, 0, 0, 1, 0, 0},   {0, 0, 1, 0.5, 0.5, 0}, {0, 0, 2, 0.5, 0.5, 0},
      {0, 1, 0, 0, 0, 1},   {0, 1, 1, 0, 1, 0},     {0, 1, 2, 0, 1, 0},
      {0, 2, 0, 0, 0, 1},   {0, 2, 1, 0, 0, 1},     {0, 2, 2, 0, 1, 0},
      {1, 0, 0, 0, 0, 1},   {1, 0, 1, 0.5, 0, 0.5}, {1, 0, 2, 1, 0, 0},
      {1, 1, 0, 0, 0, 1},   {1, 1, 1, 1, 0, 0},     {1, 1, 2, 0.5, 0.5, 0},
      {1, 2, 0, 0, 0, 1},   {1, 2, 1, 0, 0, 1},     {1, 2, 2, 0, 1, 0},
      {2, 0, 0, 0, 0, 1},   {2, 0, 1, 0, 0, 1},     {2, 0, 2, 0.5, 0, 0.5},
      {2, 1, 0, 0, 0, 1},   {2, 1, 1, 0, 0, 1},     {2, 1, 2, 0.5, 0, 0.5},
      {2, 2, 0, 0, 0, 1},   {2, 2, 1, 0, 0, 1},     {2, 2, 2, 1, 0, 0},
      {nan, 0, 2, 1, 0, 0}, {nan, 1, 1, 1, 0, 0},   {0, nan, 2, 1, 0, 0},
      {1, 0, nan, 1, 0, 0}, {0, 1, nan, 0, 0, 0},   {1, 1, nan, 1, 0, 0},
      {1, nan, 0, 0, 0, 0}, {2, nan, 2, 1, 0, 0},   {nan, 1, 0, 1, 0, 1},
      {nan, 2, 1, 1, 0, 1}, {0, nan, nan, 1, 0, 0}};
  std::vector<double> x, lo, hi, gx, glo, ghi;
  for (const Case &c : cases) {
    x.push_back(c.x), lo.push_back(c.lo), hi.push_back(c.hi);
    gx.push_back(c.gx), glo.push_back(c.glo), ghi.push_back(c.ghi);
  }
  Tensor tx = tensor(x, kDouble).requires_grad_(true),
         tlo = tensor(lo, kDouble).requires_grad_(true),
         thi = tensor(hi, kDouble).requires_grad_(true);
  for (bool inplace : {false, true}) {
    SCOPED_TRACE(inplace);
    Tensor y = inplace ? (tx * 1).clamp_(std::optional<Tensor>(tlo),
                                         std::optional<Tensor>(thi))
                       : tx.clamp(std::optional<Tensor>(tlo),
                                  std::optional<Tensor>(thi));
    EXPECT_EQ(y.grad_fn()->name(), "ClampBackward0");
    auto g = autograd::grad({y.sum()}, {tx, tlo, thi});
    EXPECT_TRUE(close(g[0], tensor(gx, kDouble), 0, 0));
    EXPECT_TRUE(close(g[1], tensor(glo, kDouble), 0, 0));
    EXPECT_TRUE(close(g[2], tensor(ghi, kDouble), 0, 0));
  }
  // In place, as out of place, in the type of all three (a 0-dim 300 does
  // not wrap to int8's 44).
  Tensor i8 = tensor({-100, 0, 100}, kChar);
  i8.clamp_(std::optional<Tensor>(tensor({-5}, kLong)),
            std::optional<Tensor>(scalar_tensor(300, kLong)));
  EXPECT_TRUE(equal(i8, tensor({-5, 0, 100}, kChar)));
}
