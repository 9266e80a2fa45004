// Compiled vs eager: in-place ops on inputs, on views of inputs and on lifted
// buffers (recorded functionally, written back); lifted parameters updated
// between calls; returning inputs and views of inputs (aliasing as eager).
#include "E2EUtil.h"

using namespace ember;
using namespace ember::indexing;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::random;
using ember::test::same;

TEST(E2EMutation, InplaceChainOnInput) {
  auto fn = [](const Tensor &x, const Tensor &y) {
    x.mul_(2).add_(y, 0.5);
    x.clamp_(-1.5, 1.5);
    x.sigmoid_();
    y.relu_();
    x.add_(y);
    return x.sum() + y.sum();
  };
  auto e =
      expect_same(fn, {random({4, 5}, kFloat, 80), random({5}, kFloat, 81)}, 3);
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 2); // x and y written back
  EXPECT_EQ(e.cache_hits, 2);
}

TEST(E2EMutation, InplaceOnViewsOfInput) {
  auto fn = [](const Tensor &x) {
    Tensor before = x.select(0, 2); // made before the mutations, used after
    x.narrow(1, 1, 2).mul_(-3);
    x.t().select(0, 0).zero_(); // column 0 through a transposed view
    x.index({Slice(None, None, 2)}).add_(10); // every other row
    x.diagonal().fill_(7);
    return std::make_tuple(before * 1, x.sum(1));
  };
  auto e = expect_same(fn, {random({5, 4}, kFloat, 82)});
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 1);
  EXPECT_GE(count_in_traces(e, "ember::as_strided_scatter"), 4);
}

TEST(E2EMutation, ViewSeesLaterMutationOfBase) {
  auto fn = [](const Tensor &x) {
    Tensor row = x[1];
    Tensor col = x.select(1, 0);
    x.add_(1);
    Tensor a = row * 2; // sees +1
    col.mul_(10);       // writes through to x and to row[0]
    return std::make_tuple(a, row.clone(), x.clone());
  };
  auto e = expect_same(fn, {random({3, 3}, kFloat, 83)});
  EXPECT_EQ(e.graph_count, 1);
}

TEST(E2EMutation, CopyFillMaskedScatterIndexPutOnInput) {
  auto fn = [](const Tensor &x, const Tensor &src, const Tensor &mask,
               const Tensor &idx) {
    x.slice(0, 0, 2).copy_(src);
    x.masked_fill_(mask, 0.25);
    Tensor(x).index_put_({idx}, x.index({idx}) * -1);
    x.scatter_(1, idx.unsqueeze(0).expand({5, 2}),
               src.narrow(0, 0, 1).expand({5, 6}));
    x.index_add_(0, idx, x.narrow(0, 3, 2));
    x.scatter_add_(1, idx.unsqueeze(0), src.narrow(0, 1, 1));
    return x.mean();
  };
  Tensor idx = tensor({4, 1}).to(kLong);
  auto e =
      expect_same(fn, {random({5, 6}, kFloat, 84), random({2, 6}, kFloat, 85),
                       random({5, 6}, kBool, 86), idx});
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 1);
}

TEST(E2EMutation, IntermediateInplaceIsNotAMutation) {
  auto fn = [](const Tensor &x) {
    Tensor y = x * 2;
    y.add_(1);
    y.t().select(0, 1).mul_(3);
    Tensor z = y.exp_();
    return std::make_tuple(y, z.sum());
  };
  Tensor x = random({4, 3}, kFloat, 87);
  Tensor keep = x.clone();
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 0);
  compile(fn)(x);
  EXPECT_TRUE(same(x, keep)); // the input is untouched
}

TEST(E2EMutation, LiftedBufferMutated) {
  // A running statistic (as BatchNorm's running_mean) and a counter, captured
  // by reference: updated in place by every call, as eagerly.
  Tensor running_e = zeros({4}), count_e = zeros({}, TensorOptions(kLong));
  Tensor running_c = zeros({4}), count_c = zeros({}, TensorOptions(kLong));
  auto make = [](Tensor &running, Tensor &count) {
    return [&running, &count](const Tensor &x) {
      running.mul_(0.9).add_(x.mean(0), 0.1);
      count.add_(1);
      return x - running;
    };
  };
  auto eager_fn = make(running_e, count_e);
  auto f = compile(make(running_c, count_c));
  for (int i = 0; i < 4; ++i) {
    Tensor x = random({8, 4}, kFloat, 88 + i);
    EXPECT_TRUE(same(f(x), eager_fn(x))) << "call " << i;
    EXPECT_TRUE(same(running_c, running_e)) << "call " << i;
  }
  EXPECT_EQ(count_c.item<int64_t>(), 4);
  auto e = f.explain();
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_EQ(e.cache_hits, 3);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 2);
}

TEST(E2EMutation, LiftedParameterUpdatedInPlaceBetweenCalls) {
  Tensor w = random({5, 3}, kFloat, 92), b = random({3}, kFloat, 93);
  auto fn = [&](const Tensor &x) { return (x.matmul(w) + b).tanh(); };
  auto f = compile(fn);
  Tensor x = random({2, 5}, kFloat, 94);
  Tensor y0 = f(x);
  EXPECT_TRUE(same(y0, fn(x)));
  w.mul_(0.5);
  b.sub_(1);
  Tensor y1 = f(x);
  EXPECT_TRUE(same(y1, fn(x)));
  EXPECT_FALSE(same(y1, y0));
  // Rebinding the captured Tensor variable to a new tensor of the same
  // shape is seen too (it is read at every call).
  w = random({5, 3}, kFloat, 95);
  Tensor y2 = f(x);
  EXPECT_TRUE(same(y2, fn(x)));
  EXPECT_FALSE(same(y2, y1));
  EXPECT_EQ(f.explain().graph_count, 1);
}

TEST(E2EMutation, OptimizerStepBetweenCalls) {
  manual_seed(7);
  nn::Linear lin(4, 2);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  auto fn = [&](const Tensor &x) { return lin->forward(x).softmax(-1); };
  auto f = compile(fn);
  Tensor x = random({3, 4}, kFloat, 96);
  Tensor prev;
  for (int step = 0; step < 3; ++step) {
    Tensor y;
    {
      NoGradGuard ng;
      y = f(x);
      EXPECT_TRUE(same(y, fn(x))) << "step " << step;
    }
    if (prev.defined()) {
      EXPECT_FALSE(same(y, prev)) << "the update is seen at step " << step;
    }
    prev = y;
    opt.zero_grad();
    lin->forward(x).pow(2).sum().backward();
    opt.step();
  }
  auto e = f.explain();
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_EQ(e.cache_hits, 2);
  EXPECT_EQ(e.eager_calls, 0);
}

TEST(E2EMutation, ReturnInputAndViewsOfInput) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(x, x.t(), x[1], x.unsqueeze(0), x.view({-1}));
  };
  Tensor x = random({3, 4}, kFloat, 97);
  auto e = expect_same(fn, {x});
  auto f = compile(fn);
  auto [r, rt, r1, ru, rv] = f(x);
  EXPECT_TRUE(r.is_same(x)); // eager returns the input itself
  EXPECT_TRUE(rt.is_alias_of(x));
  EXPECT_TRUE(r1.is_alias_of(x));
  EXPECT_TRUE(ru.is_alias_of(x));
  EXPECT_TRUE(rv.is_alias_of(x));
  EXPECT_EQ(rt.strides().vec(), std::vector<int64_t>({1, 4}));
  EXPECT_EQ(r1.storage_offset(), 4);
  // Writing through the returned view changes the input, as eagerly.
  rt.select(0, 0).fill_(42);
  EXPECT_EQ(x.select(1, 0).sum().item<float>(), 3 * 42.f);
}

TEST(E2EMutation, ReturnMutatedInputAfterBreak) {
  auto fn = [](const Tensor &x) {
    x.mul_(2);
    double s = x.sum().item<double>(); // a break between two mutations
    x.add_(s > 0 ? 1.0 : -1.0);
    return x;
  };
  auto e = expect_same(fn, {random({6}, kFloat, 98)});
  EXPECT_EQ(e.graph_count, 2);
  Tensor x = random({6}, kFloat, 98);
  Tensor r = compile(fn)(x);
  EXPECT_TRUE(r.is_same(x));
}

TEST(E2EMutation, MutationOnlyFunctionReturnsNothing) {
  // Returns no tensor (an empty list): its only effect is on its inputs.
  auto fn = [](const Tensor &x, const Tensor &y) {
    x.copy_(y.t());
    y.neg_();
    return std::vector<Tensor>{};
  };
  Tensor x = random({3, 2}, kFloat, 99), y = random({2, 3}, kFloat, 100);
  Tensor xe = x.clone(), ye = y.clone();
  fn(xe, ye);
  auto f = compile(fn);
  f(x, y);
  EXPECT_TRUE(same(x, xe));
  EXPECT_TRUE(same(y, ye));
  auto e = f.explain();
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 2);
}

TEST(E2EMutation, SameTensorPassedTwice) {
  // Two arguments that are the same tensor: a write through one is seen
  // through the other, as eagerly.
  auto fn = [](const Tensor &a, const Tensor &b) {
    a.add_(1);
    return b * 2;
  };
  Tensor x = random({4}, kFloat, 101), xe = x.clone();
  Tensor expected = fn(xe, xe);
  auto f = compile(fn);
  Tensor r = f(x, x);
  EXPECT_TRUE(same(r, expected));
  EXPECT_TRUE(same(x, xe));
}

TEST(E2EMutation, ArgumentIsAViewOfAnotherArgument) {
  auto fn = [](const Tensor &base, const Tensor &row) {
    row.mul_(3); // also changes base
    return base.sum(0);
  };
  Tensor x = random({3, 4}, kFloat, 102), xe = x.clone();
  Tensor expected = fn(xe, xe[1]);
  auto f = compile(fn);
  Tensor r = f(x, x[1]);
  EXPECT_TRUE(same(r, expected));
  EXPECT_TRUE(same(x, xe));
}

TEST(E2EMutation, InplaceOnViewOfLiftedBuffer) {
  // A captured table whose rows the function updates through views.
  Tensor table_e = random({4, 3}, kFloat, 103), table_c = table_e.clone();
  auto make = [](Tensor &table) {
    return [&table](const Tensor &row, const Tensor &delta) {
      table.select(0, 1).add_(delta);
      table.narrow(0, 2, 2).t().mul_(row.unsqueeze(1));
      return table.sum(0);
    };
  };
  auto eager_fn = make(table_e);
  auto f = compile(make(table_c));
  for (int i = 0; i < 3; ++i) {
    Tensor row = random({3}, kFloat, 104 + i),
           delta = random({3}, kFloat, 108 + i);
    EXPECT_TRUE(same(f(row, delta), eager_fn(row, delta))) << "call " << i;
    EXPECT_TRUE(same(table_c, table_e)) << "call " << i;
  }
  auto e = f.explain();
  EXPECT_EQ(e.cache_misses, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 1);
}

TEST(E2EMutation, ReturnSameTensorTwiceAndItsView) {
  auto fn = [](const Tensor &x) {
    Tensor y = x.exp();
    return std::make_tuple(y, y, y.t(), x);
  };
  Tensor x = random({2, 3}, kFloat, 112);
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
  auto [a, b, c, d] = compile(fn)(x);
  EXPECT_TRUE(a.is_same(b)); // one tensor, returned twice
  EXPECT_TRUE(c.is_alias_of(a));
  EXPECT_EQ(c.strides().vec(), std::vector<int64_t>({1, 3}));
  EXPECT_TRUE(d.is_same(x));
}

TEST(E2EMutation, AliasingBetweenArgumentsIsGuarded) {
  // The same function called with aliased and then distinct arguments (and
  // back): each pattern has its own graph, in replay mode too.
  auto fn = [](const Tensor &a, const Tensor &b) {
    a.add_(1);
    return b * 2;
  };
  for (bool replay : {false, true}) {
    auto f = compile(fn, CompileOptions().replay(replay));
    for (int call = 0; call < 3; ++call) {
      Tensor x = random({4}, kFloat, 113 + call), y = random({4}, kFloat, 117);
      Tensor xe = x.clone(), ye = y.clone();
      bool aliased = call != 1;
      Tensor expected = aliased ? fn(xe, xe) : fn(xe, ye);
      Tensor r = aliased ? f(x, x) : f(x, y);
      EXPECT_TRUE(same(r, expected)) << "replay " << replay << " call " << call;
      EXPECT_TRUE(same(x, xe)) << "replay " << replay << " call " << call;
      EXPECT_TRUE(same(y, ye)) << "replay " << replay << " call " << call;
    }
    EXPECT_EQ(f.explain().cache_misses, 2) << "replay " << replay;
  }
}

TEST(E2EMutation, ReplayKeepsViewArgumentsAliased) {
  // A row of x passed beside x, in replay mode: the write through the row is
  // seen by x at every call.
  auto fn = [](const Tensor &base, const Tensor &row) {
    row.mul_(3);
    return base.sum(0);
  };
  auto f = compile(fn, CompileOptions().replay(true));
  for (int call = 0; call < 3; ++call) {
    Tensor x = random({3, 4}, kFloat, 120 + call), xe = x.clone();
    Tensor expected = fn(xe, xe[call]);
    EXPECT_TRUE(same(f(x, x[call]), expected)) << "call " << call;
    EXPECT_TRUE(same(x, xe)) << "call " << call;
  }
}
