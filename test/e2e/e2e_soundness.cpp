// compile() never changes what a program computes: the reproducers of the
// mismatches an independent differential fuzzer found (expanded inputs in
// reductions, views across in-place writes, aliasing lifted tensors,
// folding that returned aliases, as_strided offsets, writes into expanded
// arguments, replay mode's fresh tensors, integer overflow, errors), each
// checked at every optimisation level against eager.
#include "E2EUtil.h"

using namespace ember;
using ember::test::contains;
using ember::test::expect_same;
using ember::test::expect_same_fresh;
using ember::test::random;
using ember::test::same;
using ember::test::same_layout;

namespace {
using Args = std::vector<Tensor>;
} // namespace

// --- 1. reductions fused with expanded (stride-0) inputs -----------------

TEST(E2ESoundness, SumOfExpandedArgumentAndItsFullValue) {
  auto fn = [](const Args &a) {
    Tensor y = a[0] * 2;
    return std::vector<Tensor>{y.sum(0), y};
  };
  expect_same_fresh(fn, [] {
    return Args{arange(4).reshape({1, 4}).expand({3, 4})};
  });
  // The same in float, with the expanded dim innermost.
  expect_same_fresh(fn, [] {
    return Args{random({3, 1}, kFloat, 1).expand({3, 5})};
  });
}

TEST(E2ESoundness, SoftmaxOfExpandedReduction) {
  auto fn = [](const Tensor &x) {
    return x.sum(-1, true).expand({3}).softmax(0);
  };
  expect_same(fn, {tensor({1.0f, 2.0f})});
}

TEST(E2ESoundness, AddRowSumOfExpandedArgument) {
  auto fn = [](const Args &a) { return a[0] + a[0].sum({1}, true); };
  expect_same_fresh(fn, [] {
    return Args{arange(3).reshape({3, 1}).expand({3, 2})};
  });
  expect_same_fresh(fn, [] {
    return Args{random({3, 1}, kDouble, 2).expand({3, 7})};
  });
}

TEST(E2ESoundness, ReductionsOfExpandedArguments) {
  auto make = [] {
    return Args{random({1, 6}, kFloat, 3).expand({4, 6}),
                random({4, 6}, kBool, 4)};
  };
  expect_same_fresh(
      [](const Args &a) { return a[0].masked_fill(a[1], a[0].sum()); }, make);
  expect_same_fresh(
      [](const Args &a) {
        return std::vector<Tensor>{a[0].mean(0), a[0].mean(1, true) * a[0]};
      },
      make);
  expect_same_fresh(
      [](const Args &a) {
        return std::vector<Tensor>{a[0].std(0), a[0].std(1)};
      },
      make);
  expect_same_fresh(
      [](const Args &a) {
        return std::vector<Tensor>{a[0].log_softmax(0), a[0].log_softmax(1),
                                   a[0].softmax(-1)};
      },
      make);
}

TEST(E2ESoundness, OneKernelAcrossStridesOfItsInputs) {
  // The kernel compiled for contiguous inputs, then called with an
  // expanded one (a stride variant): the values it computes at every point
  // must not depend on the strides.
  auto fn = [](const Tensor &x) {
    Tensor e = x.exp();
    return std::make_tuple(e.sum(1, true), e * 3);
  };
  NoGradGuard g;
  auto f = compile(fn);
  for (int call = 0; call < 3; ++call) {
    Tensor x = call == 1 ? random({4, 1}, kFloat, 5).expand({4, 8})
                         : random({4, 8}, kFloat, 6 + call);
    auto [s, m] = f(x);
    auto [es, em] = fn(x);
    EXPECT_TRUE(same(s, es)) << "call " << call;
    EXPECT_TRUE(same(m, em)) << "call " << call;
  }
}

// --- 2. a view made before an in-place write of its base -----------------

TEST(E2ESoundness, ViewBeforeCopyIntoBase) {
  auto fn = [](const Tensor &x, const Tensor &src, const Tensor &w) {
    Tensor v = x.narrow(0, 1, 1);
    x.copy_(src);
    return v + w;
  };
  expect_same(fn, {random({3, 4}, kFloat, 7), random({3, 4}, kFloat, 8),
                   random({4}, kFloat, 9)});
  // The base an intermediate, and the view of a view.
  auto fn2 = [](const Tensor &x, const Tensor &src) {
    Tensor y = x * 2;
    Tensor v = y.narrow(0, 1, 2).select(1, 0);
    y.copy_(src);
    Tensor r = v + 1;
    y.fill_(3);
    return std::make_tuple(r, v * 1, y);
  };
  expect_same(fn2, {random({3, 4}, kFloat, 10), random({4}, kFloat, 11)});
}

// --- 3. aliasing between lifted tensors ----------------------------------

TEST(E2ESoundness, LiftedBufferAndItsLiftedView) {
  auto run = [](bool compiled, int64_t level) {
    Tensor base = zeros({4});
    Tensor view = base.narrow(0, 0, 2);
    auto fn = [&](const Tensor &x) {
      view.fill_(5);
      return base + x;
    };
    Tensor r = compiled
                   ? compile(fn, CompileOptions().opt_level(level))(ones({4}))
                   : fn(ones({4}));
    return std::make_tuple(r, base.clone());
  };
  auto [want, want_base] = run(false, 0);
  EXPECT_TRUE(same(want, tensor({6.0f, 6.0f, 1.0f, 1.0f})));
  for (int64_t level = 0; level <= 2; ++level) {
    auto [got, got_base] = run(true, level);
    EXPECT_TRUE(same(got, want)) << "level " << level;
    EXPECT_TRUE(same(got_base, want_base)) << "level " << level;
  }
}

TEST(E2ESoundness, LiftedViewReadAfterWriteThroughBase) {
  // The view lifted first, the base written afterwards (and the reverse).
  for (int order = 0; order < 2; ++order)
    for (int64_t level = 0; level <= 2; ++level) {
      Tensor results[2], bases[2];
      for (int compiled = 0; compiled < 2; ++compiled) {
        Tensor base = arange(6, TensorOptions(kFloat)).reshape({2, 3});
        Tensor view = base.select(1, 1);
        auto fn = [&](const Tensor &x) {
          Tensor a = order ? base.sum() : view * 1;
          base.mul_(x);
          Tensor b = order ? view * 1 : base.sum();
          view.add_(1);
          return a + b + base.sum();
        };
        if (compiled)
          results[1] = compile(fn, CompileOptions().opt_level(level))(
              full({2, 3}, 2.0f));
        else
          results[0] = fn(full({2, 3}, 2.0f));
        bases[compiled] = base.clone();
      }
      EXPECT_TRUE(same(results[1], results[0]))
          << "order " << order << " level " << level;
      EXPECT_TRUE(same(bases[1], bases[0]))
          << "order " << order << " level " << level;
    }
}

TEST(E2ESoundness, LiftedViewOfArgument) {
  // A captured tensor that is a view of the argument the call receives.
  for (int64_t level = 0; level <= 2; ++level) {
    Tensor results[2], args[2];
    for (int compiled = 0; compiled < 2; ++compiled) {
      Tensor arg = arange(8, TensorOptions(kFloat));
      Tensor view = arg.narrow(0, 2, 3);
      auto fn = [&](const Tensor &x) {
        view.mul_(10);
        return x * 1;
      };
      results[compiled] =
          compiled ? compile(fn, CompileOptions().opt_level(level))(arg)
                   : fn(arg);
      args[compiled] = arg.clone();
    }
    EXPECT_TRUE(same(results[1], results[0])) << "level " << level;
    EXPECT_TRUE(same(args[1], args[0])) << "level " << level;
  }
}

TEST(E2ESoundness, IntermediateAndItsViewAcrossAGraphBreak) {
  auto fn = [](const Tensor &x) {
    Tensor y = x * 2;
    Tensor v = y.narrow(0, 0, 2);
    double s = y.sum().item<double>(); // a graph break
    v.fill_(s);
    return y + 1;
  };
  expect_same(fn, {random({4}, kFloat, 12)});
}

// --- 4. identity folding and aliases --------------------------------------

TEST(E2ESoundness, FoldedIdentityIsANewTensor) {
  auto fn = [](const Tensor &x) { return x.reshape({2, 2}).t() * 1; };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(fn, CompileOptions().opt_level(level));
    Tensor x = arange(4, TensorOptions(kFloat));
    Tensor y = f(x);
    EXPECT_FALSE(y.is_alias_of(x)) << "level " << level;
    y.add_(100);
    EXPECT_TRUE(same(x, arange(4, TensorOptions(kFloat)))) << "level " << level;
    EXPECT_TRUE(same_layout(y, fn(x))) << "level " << level;
  }
  auto flat = [](const Tensor &x) { return (x.t() * 1).view({-1}); };
  expect_same(flat, {random({3, 4}, kFloat, 13)});
  auto inner = [](const Tensor &x) { return (x.exp().t() * 1).view({-1}); };
  expect_same(inner, {random({3, 4}, kFloat, 14)});
}

// --- 5. as_strided at the argument's storage offset ------------------------

TEST(E2ESoundness, AsStridedAtTheArgumentsOffset) {
  auto fn = [](const Args &a) {
    const Tensor &x = a[0];
    return x.as_strided({2, 2}, {1, 2}, x.storage_offset()) + 1;
  };
  expect_same_fresh(fn, [] {
    return Args{arange(12, TensorOptions(kFloat)).narrow(0, 3, 6)};
  });
  auto write = [](const Args &a) {
    const Tensor &x = a[0];
    x.as_strided({2}, {2}, x.storage_offset() + 1).fill_(-1);
    return x * 2;
  };
  expect_same_fresh(write, [] {
    return Args{
        arange(12, TensorOptions(kFloat)).reshape({3, 4}).narrow(0, 1, 2)};
  });
}

// --- 6. writes into a non-overlapping part of an expanded argument ---------

TEST(E2ESoundness, WriteIntoRowOfExpandedArgument) {
  auto fn = [](const Args &a) {
    a[0].select(0, 0).fill_(5);
    return a[0] + 1;
  };
  expect_same_fresh(fn, [] { return Args{zeros({1, 3}).expand({2, 3})}; });
  // A write that overlaps itself raises, compiled as eagerly.
  auto bad = [](const Tensor &v) {
    v.fill_(5);
    return v;
  };
  NoGradGuard g;
  EXPECT_THROW(bad(zeros({1, 3}).expand({2, 3})), Error);
  for (int64_t level = 0; level <= 2; ++level)
    EXPECT_THROW(compile(bad, CompileOptions().opt_level(level))(
                     zeros({1, 3}).expand({2, 3})),
                 Error);
}

// --- 7. replay mode and tensors the function creates -----------------------

TEST(E2ESoundness, ReplayReturnsFreshTensors) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(full_like(x, 2.5), zeros({3}), x + 1);
  };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(fn, CompileOptions().replay(true).opt_level(level));
    Tensor x = random({3}, kFloat, 15);
    for (int call = 0; call < 3; ++call) {
      auto [a, z, y] = f(x);
      EXPECT_TRUE(same(a, full({3}, 2.5f))) << "level " << level;
      EXPECT_TRUE(same(z, zeros({3}))) << "level " << level;
      a.add_(1);
      z.add_(1);
      y.add_(1);
    }
  }
}

// --- 8. integer overflow wraps, as eagerly ----------------------------------

TEST(E2ESoundness, IntegerOverflowWraps) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto fn = [big](const Tensor &b) { return big + b; };
  Tensor want = fn(tensor({true, false}));
  EXPECT_EQ(want[0].item<int64_t>(), std::numeric_limits<int64_t>::min());
  expect_same(fn, {tensor({true, false})});
  auto mul = [](const Tensor &x) { return (x * x * x).neg() + x * 3; };
  expect_same(mul, {tensor({int64_t(1) << 40, -(int64_t(1) << 50), big,
                            std::numeric_limits<int64_t>::min()})});
  expect_same(mul, {tensor({int32_t(1) << 20, std::numeric_limits<int>::max(),
                            std::numeric_limits<int>::min()})});
}

// --- 9. errors -------------------------------------------------------------

TEST(E2ESoundness, ARaisingGraphLeavesItsArgumentsUnchanged) {
  // Note [What compile() may change] (frontend/Compile.h): a graph that
  // raises has applied none of its writes.
  auto fn = [](const Tensor &x, const Tensor &d) {
    x.add_(1);
    return x.div(d, "trunc") + 1;
  };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(fn, CompileOptions().opt_level(level));
    Tensor x = tensor({int64_t(4), 5});
    EXPECT_THROW(f(x, tensor({int64_t(1), 0})), Error) << "level " << level;
    EXPECT_TRUE(same(x, tensor({int64_t(4), 5}))) << "level " << level;
  }
}

// --- views that only the real layout allows ----------------------------------

TEST(E2ESoundness, ViewOfTransposeThatIsContiguousInMemory) {
  // x is transposed in memory, so x.transpose(0, 1) is contiguous and
  // view(-1) works eagerly; written before and after.
  auto fn = [](const Args &a) {
    const Tensor &x = a[0];
    x.add_(1);
    Tensor flat = x.transpose(0, 1).reshape({-1});
    flat.mul_(2);
    Tensor v = x.transpose(0, 1).view({-1});
    return std::vector<Tensor>{v + 1, flat.sum()};
  };
  expect_same_fresh(fn, [] {
    return Args{random({2, 4, 5}, kFloat, 16).transpose(0, 1)};
  });
}

TEST(E2ESoundness, ResultWrittenIntoAViewIsAWholeNewTensor) {
  // The fusion after select() may write its result into the selected row's
  // buffer (its input dies there): the result must still be a tensor of
  // its own, offset 0, as as_strided on it sees eagerly.
  auto fn = [](const Tensor &x) {
    Tensor l = x.log_softmax(1);
    Tensor r = (l.select(0, 1) * -3).log_softmax(0);
    return r.as_strided(r.sizes(), r.strides(), r.storage_offset());
  };
  expect_same(fn, {random({2, 2}, kFloat, 17)});
  expect_same(fn, {random({3, 5}, kFloat, 18).narrow(1, 1, 2)});
}

// --- what an independent probe of compile() found ---------------------------

TEST(E2ESoundness, AnUndefinedResultIsReturnedAsItIs) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(Tensor(), x * 2, std::vector<Tensor>{Tensor()});
  };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(fn, CompileOptions().opt_level(level));
    auto [u, y, l] = f(ones({2}));
    EXPECT_FALSE(u.defined()) << "level " << level;
    EXPECT_TRUE(same(y, full({2}, 2.0f))) << "level " << level;
    ASSERT_EQ(l.size(), 1u);
    EXPECT_FALSE(l[0].defined()) << "level " << level;
  }
}

// An undefined Tensor argument (libtorch's "no bias"), found raising by a
// probe: the call runs eagerly, says why, and a defined one compiles.
TEST(E2ESoundness, AnUndefinedTensorArgumentRunsEagerly) {
  auto fn = [](const Tensor &x, const Tensor &bias) {
    return bias.defined() ? x * 2 + bias : x * 2;
  };
  auto f = compile(fn);
  Tensor x = random({3}, kFloat, 90), b = random({3}, kFloat, 91);
  EXPECT_TRUE(same(f(x, Tensor()), x * 2));
  EXPECT_TRUE(same(f(x, b), x * 2 + b));
  ExplainOutput e = f.explain();
  EXPECT_EQ(e.eager_calls, 1);
  std::ostringstream os;
  os << e;
  EXPECT_TRUE(contains(os.str(), "tensor argument 1 is undefined")) << e;
}

// backward or autograd::grad with create_graph inside a compiled function,
// found silently wrong by a probe (the second derivative lost a path):
// raises, as torch.compile's double backward does.
TEST(E2ESoundness, CreateGraphInsideTheFunctionRaises) {
  auto fn = [](const Tensor &x) {
    Tensor y = (x * x * x).sum();
    return autograd::grad({y}, {x}, {}, std::nullopt, true)[0].sum();
  };
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  fn(x).backward();
  EXPECT_TRUE(same(x.grad(), tensor({6.0, 12.0, 18.0}))); // eager: 6x
  auto f = compile(fn);
  Tensor x2 = tensor({1.0, 2.0, 3.0}).requires_grad_();
  EXPECT_THROW(f(x2), NotImplementedError);
}

TEST(E2ESoundness, AnOptimizerStepUnderNoGradInsideTheFunction) {
  // Note [Graphs run without autograd] (frontend/Executor.cpp): writing into
  // a captured leaf that requires grad is legal under the function's own
  // NoGradGuard, and stays legal when the graph runs after it ended.
  Tensor we = ones({3}).requires_grad_(), wc = ones({3}).requires_grad_();
  (we * we).sum().backward();
  (wc * wc).sum().backward();
  auto step = [](Tensor &w) {
    return [&w] {
      NoGradGuard g;
      w.sub_(w.grad() * 0.25);
    };
  };
  auto eager_step = step(we);
  auto f = compile(step(wc));
  for (int i = 0; i < 2; ++i) {
    eager_step();
    f();
    EXPECT_TRUE(same(wc.detach(), we.detach())) << "call " << i;
    EXPECT_TRUE(wc.requires_grad());
    EXPECT_TRUE(wc.is_leaf());
  }
  // And with the library's optimizer.
  nn::Linear le(3, 2), lc(3, 2);
  {
    NoGradGuard g;
    for (size_t i = 0; i < le->parameters().size(); ++i)
      lc->parameters()[i].copy_(le->parameters()[i]);
  }
  optim::SGD oe(le->parameters(), 0.1), oc(lc->parameters(), 0.1);
  Tensor x = random({4, 3}, kFloat, 201);
  le->forward(x).sum().backward();
  lc->forward(x).sum().backward();
  auto opt_step = compile([&oc] { oc.step(); });
  oe.step();
  opt_step();
  for (size_t i = 0; i < le->parameters().size(); ++i)
    EXPECT_TRUE(
        same(lc->parameters()[i].detach(), le->parameters()[i].detach()));
}

TEST(E2ESoundness, GraphOpsRecordNoHistoryUnderTheFunctionsNoGrad) {
  Tensor w = random({3}, kFloat, 202).requires_grad_();
  auto fn = [&w](const Tensor &x) {
    NoGradGuard g;
    return w * x;
  };
  Tensor x = random({3}, kFloat, 203);
  Tensor e = fn(x), c = compile(fn)(x);
  EXPECT_FALSE(e.requires_grad());
  EXPECT_FALSE(c.requires_grad());
  EXPECT_TRUE(same(c, e));
}

TEST(E2ESoundness, ScalarArgumentsAreGuardedOnTheirKind) {
  auto fn = [](const Tensor &x, const Scalar &s) { return x * s; };
  for (bool replay : {false, true}) {
    auto f = compile(fn, CompileOptions().replay(replay));
    Tensor x = arange(3);
    EXPECT_TRUE(same(f(x, Scalar(int64_t(2))), fn(x, Scalar(int64_t(2)))));
    Tensor c = f(x, Scalar(2.0)), e = fn(x, Scalar(2.0));
    EXPECT_EQ(c.dtype(), kFloat) << "replay " << replay;
    EXPECT_TRUE(same(c, e)) << "replay " << replay;
  }
  // A generic lambda called with an int, then a double.
  auto g = compile([](const Tensor &x, auto s) { return x * s; });
  Tensor x = arange(3);
  EXPECT_EQ(g(x, 2).dtype(), kLong);
  EXPECT_EQ(g(x, 2.0).dtype(), kFloat);
}

TEST(E2ESoundness, RequiresGradSetOnAnArgumentInsideTheFunctionRaises) {
  // Note [What compile() may change]: the function sees a stand-in for the
  // caller's tensor; its gradient could not reach the caller's. A clear
  // error, with what ran before it applied (the write).
  auto fn = [](const Tensor &x) {
    x.add_(1);
    x.requires_grad_();
    return x * 2;
  };
  for (int64_t level = 0; level <= 2; ++level) {
    Tensor b = zeros({3});
    try {
      compile(fn, CompileOptions().opt_level(level))(b);
      ADD_FAILURE() << "no error at level " << level;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("Call requires_grad_() before"),
                std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(same(b, ones({3}))) << "level " << level;
    EXPECT_FALSE(b.requires_grad());
  }
  // Set before the call, it works (the call compiles its backward).
  auto g = [](const Tensor &x) { return x * 2; };
  Tensor a = random({3}, kFloat, 204).requires_grad_();
  compile(g)(a).sum().backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(same(a.grad(), full({3}, 2.0f)));
}

TEST(E2ESoundness, DetachOfAnArgumentIsANewTensor) {
  auto fn = [](const Tensor &x) { return x.detach(); };
  for (int64_t level = 0; level <= 2; ++level) {
    Tensor a = random({2, 3}, kFloat, 205);
    Tensor c = compile(fn, CompileOptions().opt_level(level))(a);
    EXPECT_FALSE(c.is_same(a)) << "level " << level;
    EXPECT_TRUE(c.is_alias_of(a)) << "level " << level;
    c.requires_grad_();
    EXPECT_FALSE(a.requires_grad()) << "level " << level;
  }
  // Under grad mode, of an argument that requires grad.
  Tensor r = random({3}, kFloat, 206).requires_grad_();
  Tensor d = compile(fn)(r);
  EXPECT_FALSE(d.requires_grad());
  EXPECT_FALSE(d.is_same(r));
}

TEST(E2ESoundness, AnExceptionKeepsTheWritesBeforeIt) {
  // Note [A raising call keeps what ran before] (frontend/Frontend.cpp).
  auto user_error = [](const Tensor &x) {
    x.add_(1);
    throw std::runtime_error("user error");
  };
  auto shape_error = [](const Tensor &x) {
    x.mul_(3);
    return x + ones({5}); // [2] + [5]: raises while captured
  };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(user_error, CompileOptions().opt_level(level));
    Tensor x = ones({2});
    EXPECT_THROW(f(x), std::runtime_error);
    EXPECT_TRUE(same(x, full({2}, 2.0f))) << "level " << level;
    auto g = compile(shape_error, CompileOptions().opt_level(level));
    Tensor y = ones({2});
    EXPECT_THROW(g(y), Error);
    EXPECT_TRUE(same(y, full({2}, 3.0f))) << "level " << level;
  }
}
