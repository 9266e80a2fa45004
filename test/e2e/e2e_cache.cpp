// Compiled vs eager: guards and the compile cache (recompiles on shape,
// rank, dtype, stride, non-tensor arguments and grad mode, with their
// reasons), the recompile limit, replay mode, nested compiled functions,
// tuple/vector returns, explain(), threads compiling and calling at once.
#include "E2EUtil.h"

#include <cmath>
#include <iostream>
#include <latch>
#include <sstream>
#include <thread>

using namespace ember;
using ember::test::contains;
using ember::test::expect_same;
using ember::test::identical;
using ember::test::random;
using ember::test::same;

TEST(E2ECache, HitsAndMissesOverManyCalls) {
  auto fn = [](const Tensor &x, const Tensor &y) {
    return (x.matmul(y) + 1).relu().sum(0);
  };
  auto f = compile(fn, CompileOptions().name("mlp_head"));
  for (int i = 0; i < 5; ++i) {
    Tensor x = random({3, 4}, kFloat, 130 + i),
           y = random({4, 2}, kFloat, 140 + i);
    EXPECT_TRUE(same(f(x, y), fn(x, y))) << "call " << i;
  }
  auto e = f.explain();
  EXPECT_EQ(e.name, "mlp_head");
  EXPECT_EQ(e.calls, 5);
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_EQ(e.cache_hits, 4);
  EXPECT_TRUE(e.recompiles.empty());
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].name, "mlp_head_graph0");
  EXPECT_EQ(e.graphs[0].inputs, 2);
  EXPECT_EQ(e.graphs[0].outputs, 1);
}

TEST(E2ECache, ThreadsCompileAndCallAtOnce) {
  // Two threads compile functions of their own and call a shared one, with
  // new shapes (recompiles) while the other thread compiles: compiles share
  // the MLIR context and the kernel cache, a shared function's cache is
  // held by one call at a time (TSan checks).
  auto shared_fn = [](const Tensor &x) { return (x * 2 + 1).relu().sum(-1); };
  auto shared = compile(shared_fn, CompileOptions().name("shared"));
  constexpr int kCalls = 6;
  std::latch start(2); // both threads run from the first compile on
  auto worker = [&](int id) {
    auto own_fn = [id](const Tensor &x) { return x.exp() * double(id + 1); };
    auto own = compile(own_fn);
    start.arrive_and_wait();
    for (int i = 0; i < kCalls; ++i) {
      Tensor x = random({2 + i % 3, 5}, kFloat, uint64_t(160 + 10 * id + i));
      EXPECT_TRUE(same(own(x), own_fn(x))) << "thread " << id << " call " << i;
      EXPECT_TRUE(same(shared(x), shared_fn(x)))
          << "thread " << id << " call " << i;
    }
    EXPECT_EQ(own.explain().calls, kCalls);
    EXPECT_EQ(own.explain().cache_misses, 3);
  };
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  auto e = shared.explain();
  EXPECT_EQ(e.calls, 2 * kCalls);
  EXPECT_EQ(e.cache_misses, 3);
  EXPECT_EQ(e.cache_hits, 2 * kCalls - 3);
}

TEST(E2ECache, RecompileOnShapeAndRank) {
  auto fn = [](const Tensor &x) { return x.softmax(-1) * 2; };
  auto f = compile(fn);
  Tensor a = random({2, 3}, kFloat, 150), b = random({4, 3}, kFloat, 151);
  Tensor c = random({2, 2, 3}, kFloat, 152);
  EXPECT_TRUE(same(f(a), fn(a)));
  EXPECT_TRUE(same(f(b), fn(b)));
  EXPECT_TRUE(same(f(c), fn(c)));
  EXPECT_TRUE(same(f(a), fn(a))); // the first entry is still cached
  auto e = f.explain();
  ASSERT_EQ(e.recompiles.size(), 2u);
  EXPECT_TRUE(
      contains(e.recompiles[0].reason,
               "tensor 'arg0' size mismatch at index 0. expected 2, actual 4"));
  EXPECT_TRUE(contains(e.recompiles[1].reason,
                       "tensor 'arg0' rank mismatch. expected 2, actual 3"));
  EXPECT_EQ(e.cache_misses, 3);
  EXPECT_EQ(e.cache_hits, 1);
  EXPECT_EQ(e.graphs.size(), 3u);
}

TEST(E2ECache, RecompileOnDtype) {
  auto fn = [](const Tensor &x, const Tensor &y) { return x * y + x.abs(); };
  auto f = compile(fn);
  Tensor y = random({5}, kFloat, 153);
  Tensor xf = random({5}, kFloat, 154);
  Tensor xd = xf.to(kDouble), xi = random({5}, kLong, 155);
  EXPECT_TRUE(same(f(xf, y), fn(xf, y)));
  Tensor rd = f(xd, y);
  EXPECT_TRUE(same(rd, fn(xd, y)));
  EXPECT_EQ(rd.dtype(), kDouble);
  EXPECT_TRUE(same(f(xi, y), fn(xi, y)));
  auto e = f.explain();
  ASSERT_EQ(e.recompiles.size(), 2u);
  EXPECT_TRUE(contains(
      e.recompiles[0].reason,
      "tensor 'arg0' dtype mismatch. expected float32, actual float64"));
  EXPECT_TRUE(contains(e.recompiles[1].reason, "dtype mismatch"));
  EXPECT_TRUE(contains(e.recompiles[1].reason, "actual int64"));
}

TEST(E2ECache, RecompileLimitFallsBackToEager) {
  auto fn = [](const Tensor &x) { return x.cumsum(0) * 3; };
  auto f = compile(fn, CompileOptions().recompile_limit(2));
  std::vector<Tensor> xs;
  for (int n = 1; n <= 5; ++n)
    xs.push_back(random({n}, kFloat, 160 + n));
  // Silence the one warning (stderr).
  std::ostringstream sink;
  auto *old = std::cerr.rdbuf(sink.rdbuf());
  std::vector<Tensor> ys;
  for (const Tensor &x : xs)
    ys.push_back(f(x));
  // Earlier shapes: their entries still run them (torch.compile's RUN_ONLY
  // past its limit; a probe found every later call eager); a new one runs
  // eagerly.
  ys.push_back(f(xs[0]));
  ys.push_back(f(xs[1]));
  ys.push_back(f(xs[4]));
  std::cerr.rdbuf(old);
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_TRUE(same(ys[i], fn(xs[i]))) << "call " << i;
  EXPECT_TRUE(same(ys[5], fn(xs[0])));
  EXPECT_TRUE(same(ys[6], fn(xs[1])));
  EXPECT_TRUE(same(ys[7], fn(xs[4])));
  auto e = f.explain();
  EXPECT_EQ(e.graphs.size(), 2u); // two compiled entries, no more
  EXPECT_EQ(e.calls, 8);
  EXPECT_EQ(e.eager_calls, 4);  // calls 3, 4, 5 and 8
  EXPECT_EQ(e.cache_hits, 2);   // calls 6 and 7
  EXPECT_EQ(e.cache_misses, 6); // the compiles, and the calls past the limit
  ASSERT_FALSE(e.eager_reasons.empty());
  for (const std::string &r : e.eager_reasons)
    EXPECT_TRUE(contains(r, "recompile limit (2)"));
  EXPECT_TRUE(contains(sink.str(), "recompile limit"));
  // One warning, not one per call.
  std::string w = sink.str();
  EXPECT_EQ(w.find("warning"), w.rfind("warning"));
  // Only the recompile that happened is listed (the misses past the limit
  // are not recompiles: a probe found the list growing at every call).
  EXPECT_EQ(e.recompiles.size(), 1u) << e;

  // A graph after a break with no room left: the reason says so (a probe
  // found "last recompile: " with nothing after it).
  auto g = compile(
      [](const Tensor &x) {
        float s = (x * 2).sum().item<float>();
        return x + s;
      },
      CompileOptions().recompile_limit(1));
  std::ostringstream sink2;
  old = std::cerr.rdbuf(sink2.rdbuf());
  Tensor y = g(ones({3}));
  std::cerr.rdbuf(old);
  EXPECT_TRUE(same(y, full({3}, 7.0f)));
  ASSERT_EQ(g.explain().eager_reasons.size(), 1u);
  EXPECT_TRUE(
      contains(g.explain().eager_reasons[0], "graph 1 of the call is new"))
      << g.explain();
}

TEST(E2ECache, NonTensorArgumentsGuardedByValue) {
  auto fn = [](const Tensor &x, int64_t k, double scale, bool flip) {
    Tensor y = std::get<0>(x.topk(k)) * scale;
    return flip ? y.flip({0}) : y;
  };
  auto f = compile(fn);
  Tensor x = random({6}, kFloat, 170);
  EXPECT_TRUE(same(f(x, int64_t(2), 0.5, false), fn(x, 2, 0.5, false)));
  EXPECT_TRUE(same(f(x, int64_t(3), 0.5, false), fn(x, 3, 0.5, false)));
  EXPECT_TRUE(same(f(x, int64_t(3), 1.25, false), fn(x, 3, 1.25, false)));
  EXPECT_TRUE(same(f(x, int64_t(3), 1.25, true), fn(x, 3, 1.25, true)));
  EXPECT_TRUE(same(f(x, int64_t(2), 0.5, false), fn(x, 2, 0.5, false)));
  auto e = f.explain();
  EXPECT_EQ(e.cache_misses, 4);
  EXPECT_EQ(e.cache_hits, 1);
  ASSERT_EQ(e.recompiles.size(), 3u);
  EXPECT_TRUE(contains(e.recompiles[0].reason,
                       "non-tensor argument 0 changed. expected 2, actual 3"));
  EXPECT_TRUE(
      contains(e.recompiles[1].reason,
               "non-tensor argument 1 changed. expected 0.5, actual 1.25"));
  EXPECT_TRUE(
      contains(e.recompiles[2].reason,
               "non-tensor argument 2 changed. expected false, actual true"));
}

TEST(E2ECache, DoubleArgumentsDifferingInLateDigits) {
  // 1.0 and 1.0000001 print alike with 6 digits but are different floats.
  auto fn = [](const Tensor &x, double s) { return x * s; };
  Tensor x = full({4}, 1.0f) + random({4}, kFloat, 171) * 1e-3;
  auto f = compile(fn);
  Tensor a = f(x, 1.0);
  Tensor b = f(x, 1.0000001);
  EXPECT_TRUE(identical(a, fn(x, 1.0)));
  EXPECT_TRUE(identical(b, fn(x, 1.0000001)));
  EXPECT_FALSE(identical(fn(x, 1.0), fn(x, 1.0000001))); // the test can tell
  auto g = compile(fn, CompileOptions().replay(true));
  g(x, 1.0);
  EXPECT_TRUE(identical(g(x, 1.0000001), fn(x, 1.0000001)));
}

TEST(E2ECache, ValuesReadByItemAreKeyedExactly) {
  // A number read with item() becomes a constant of the next graph: -0.0
  // and 0.0 are different graphs (x * -0.0 is -0 for positive x), and a NaN
  // read twice is one graph, not a recompile at every call.
  auto fn = [](const Tensor &x, const Tensor &s) {
    return x * s.item<double>();
  };
  auto f = compile(fn);
  Tensor x = random({4}, kFloat, 174).abs() + 1;
  for (double s : {0.0, -0.0, std::nan(""), std::nan("")}) {
    Tensor k = scalar_tensor(s, kDouble);
    Tensor got = f(x, k), want = fn(x, k);
    EXPECT_TRUE(same(got, want)) << s;
    if (s == 0) { // the sign of zero shows as 1 / 0 = +-inf
      EXPECT_EQ((got.reciprocal() < 0).all().item<bool>(), std::signbit(s));
    }
  }
  auto e = f.explain();
  // item() on an argument needs no graph before it: one graph per call,
  // compiled for 0, -0 and NaN, found again for the second NaN.
  EXPECT_EQ(e.cache_misses, 3);
  EXPECT_EQ(e.cache_hits, 1);
}

TEST(E2ECache, GradModeChangeRecompiles) {
  Tensor w = random({4, 3}, kFloat, 172); // no grad needed
  auto fn = [&](const Tensor &x) { return x.matmul(w).tanh(); };
  auto f = compile(fn);
  Tensor x = random({2, 4}, kFloat, 173);
  Tensor y1 = f(x); // grad mode on, nothing requires grad: compiled
  Tensor y2;
  {
    NoGradGuard ng;
    y2 = f(x);
  }
  Tensor y3 = f(x);
  EXPECT_TRUE(same(y1, fn(x)));
  EXPECT_TRUE(same(y2, fn(x)));
  EXPECT_TRUE(same(y3, fn(x)));
  auto e = f.explain();
  EXPECT_EQ(e.eager_calls, 0);
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_TRUE(contains(e.recompiles[0].reason,
                       "grad mode changed. expected enabled, actual disabled"));
  EXPECT_EQ(e.cache_misses, 2);
  EXPECT_EQ(e.cache_hits, 1);
}

TEST(E2ECache, ReplayRunsFunctionOnce) {
  int runs = 0;
  Tensor bias = random({3}, kFloat, 174);
  auto fn = [&](const Tensor &x, const Tensor &y) {
    ++runs;
    return std::make_tuple(ember::linear(x, y, bias), x.t(), (x * 2).sum(1));
  };
  auto f = compile(fn, CompileOptions().replay(true));
  for (int i = 0; i < 4; ++i) {
    Tensor x = random({2, 5}, kFloat, 175 + i),
           y = random({3, 5}, kFloat, 180 + i);
    auto [a, t, s] = f(x, y);
    int before = runs;
    auto [ea, et, es] = fn(x, y);
    runs = before;
    EXPECT_TRUE(same(a, ea)) << "call " << i;
    EXPECT_TRUE(same(t, et)) << "call " << i;
    EXPECT_TRUE(t.is_alias_of(x)) << "a view of the input, as eagerly";
    EXPECT_TRUE(same(s, es)) << "call " << i;
    if (i == 2)
      bias.mul_(-2); // a lifted tensor updated in place: seen in replay
  }
  EXPECT_EQ(runs, 1);
  auto e = f.explain();
  EXPECT_EQ(e.calls, 4);
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_EQ(e.cache_hits, 3);
}

TEST(E2ECache, ReplayRecapturesOnNewGuards) {
  int runs = 0;
  auto fn = [&](const Tensor &x) {
    ++runs;
    return x.log_softmax(0);
  };
  auto f = compile(fn, CompileOptions().replay(true));
  Tensor a = random({4}, kFloat, 185), b = random({6}, kFloat, 186);
  EXPECT_TRUE(same(f(a), a.log_softmax(0)));
  EXPECT_TRUE(same(f(b), b.log_softmax(0)));
  EXPECT_TRUE(same(f(a * 2), (a * 2).log_softmax(0)));
  EXPECT_TRUE(same(f(b + 1), (b + 1).log_softmax(0)));
  EXPECT_TRUE(same(f(a.to(kDouble)), a.to(kDouble).log_softmax(0)));
  EXPECT_EQ(runs, 3); // one capture per guard set
}

TEST(E2ECache, ReplayWithMutationOfInputAndBuffer) {
  int runs = 0;
  Tensor steps = zeros({}, TensorOptions(kLong));
  auto fn = [&](const Tensor &x) {
    ++runs;
    steps.add_(1);
    x.mul_(0.5);
    return x.sum();
  };
  auto f = compile(fn, CompileOptions().replay(true));
  Tensor x = random({3}, kFloat, 187), xe = x.clone();
  for (int i = 0; i < 3; ++i) {
    Tensor s = f(x);
    xe.mul_(0.5);
    EXPECT_TRUE(same(s, xe.sum())) << "call " << i;
    EXPECT_TRUE(same(x, xe)) << "call " << i;
  }
  EXPECT_EQ(steps.item<int64_t>(), 3);
  EXPECT_EQ(runs, 1);
}

// A module switched between train() and eval() makes replay capture again:
// BatchNorm in eval mode normalizes with its running statistics and leaves
// them alone. Found by a probe: the training graph was replayed.
TEST(E2ECache, ReplayCapturesAgainAfterTrainOrEval) {
  manual_seed(3);
  nn::BatchNorm1d bn(3);
  auto f = compile([&](const Tensor &x) { return bn->forward(x); },
                   CompileOptions().replay(true));
  NoGradGuard ng;
  Tensor x = random({6, 3}, kFloat, 171);
  bn->train();
  f(x);
  for (bool training : {false, true, false}) {
    bn->train(training);
    Tensor mean = bn->running_mean.clone();
    Tensor got = f(x);
    Tensor after = bn->running_mean.clone();
    bn->running_mean.copy_(mean);
    Tensor want = bn->forward(x);
    EXPECT_TRUE(same(got, want)) << training;
    EXPECT_TRUE(same(after, bn->running_mean)) << training;
  }
}

TEST(E2ECache, ReplayWithBreakCapturesEveryCall) {
  int runs = 0;
  auto fn = [&](const Tensor &x) {
    ++runs;
    return x.sum().item<double>() > 0 ? x * 2 : x * -2;
  };
  auto f = compile(fn, CompileOptions().replay(true));
  Tensor p = random({4}, kFloat, 188).abs() + 0.1;
  EXPECT_TRUE(same(f(p), p * 2));
  EXPECT_TRUE(same(f(-p), p * 2)); // -p * -2: the branch is re-decided
  EXPECT_EQ(runs, 2);
  auto e = f.explain();
  ASSERT_FALSE(e.eager_reasons.empty());
  EXPECT_TRUE(contains(e.eager_reasons[0], "replay"));
}

TEST(E2ECache, NestedCompiledFunctionIsInlined) {
  auto inner = compile([](const Tensor &x) { return x.exp() - 1; });
  auto outer = compile([&](const Tensor &x, const Tensor &y) {
    return inner(x * 2) + inner(y).sum();
  });
  Tensor x = random({3, 2}, kFloat, 189), y = random({5}, kFloat, 190);
  Tensor r = outer(x, y);
  EXPECT_TRUE(same(r, ((x * 2).exp() - 1) + (y.exp() - 1).sum()));
  auto e = outer.explain();
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(ember::test::count_in_traces(e, "ember::exp"), 2);
  EXPECT_EQ(inner.explain().graphs.size(), 0u); // nothing compiled on its own
  // Called on its own, the inner function compiles its own graph.
  EXPECT_TRUE(same(inner(x), x.exp() - 1));
  EXPECT_EQ(inner.explain().graphs.size(), 1u);
}

TEST(E2ECache, TupleAndVectorReturns) {
  auto fn = [](const Tensor &x, const std::vector<Tensor> &ws) {
    std::vector<Tensor> hs;
    for (const Tensor &w : ws)
      hs.push_back(x.matmul(w));
    return std::make_tuple(ember::cat(hs, 1), hs,
                           std::make_pair(x.sum(), x.t()));
  };
  Tensor x = random({2, 3}, kFloat, 191);
  std::vector<Tensor> ws{random({3, 1}, kFloat, 192),
                         random({3, 4}, kFloat, 193),
                         random({3, 2}, kFloat, 194)};
  auto f = compile(fn);
  auto [c, hs, p] = f(x, ws);
  auto [ec, ehs, ep] = fn(x, ws);
  EXPECT_TRUE(same(c, ec));
  ASSERT_EQ(hs.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(same(hs[i], ehs[i])) << i;
  EXPECT_TRUE(same(p.first, ep.first));
  EXPECT_TRUE(same(p.second, ep.second));
  // A list of another length is another guard.
  ws.pop_back();
  auto [c2, hs2, p2] = f(x, ws);
  EXPECT_EQ(hs2.size(), 2u);
  EXPECT_TRUE(same(c2, std::get<0>(fn(x, ws))));
  EXPECT_EQ(f.explain().cache_misses, 2);
}

TEST(E2ECache, ExplainTextHasMainSections) {
  Tensor w = random({4}, kFloat, 195);
  auto fn = [&](const Tensor &x) {
    Tensor y = x * w;
    if (y.sum().item<double>() > 0)
      return y.relu();
    return y.abs();
  };
  auto f = compile(fn, CompileOptions().name("sections"));
  f(random({4}, kFloat, 196));
  f(random({2, 4}, kFloat, 197)); // a recompile (rank)
  std::ostringstream os;
  os << f.explain();
  std::string s = os.str();
  EXPECT_EQ(s, f.explain().str());
  for (const char *part :
       {"sections", "Graph Count: 2", "Graph Break Count: 2",
        "Op Count:", "Break Reasons:", "Tensor::item()",
        "User Stack:", "e2e_cache.cpp:", "Recompiles:", "rank mismatch",
        "Compiled Graphs:", "sections_graph0", "sections_graph1",
        "Compile Times:", "Cache:"})
    EXPECT_TRUE(contains(s, part)) << part;
  auto e = ember::explain([](const Tensor &x) { return (x + 1).nonzero(); },
                          random({3}, kFloat, 198));
  EXPECT_EQ(e.calls, 1);
  EXPECT_TRUE(contains(e.str(), "ember::nonzero"));
}

TEST(E2ECache, RequiresGradIsGuarded) {
  // Under NoGradGuard a tensor that requires grad compiles, but it is a
  // different entry from one that does not.
  NoGradGuard ng;
  auto fn = [](const Tensor &x, const Tensor &w) { return x.matmul(w).relu(); };
  auto f = compile(fn);
  Tensor x = random({2, 3}, kFloat, 199), w = random({3, 3}, kFloat, 200);
  EXPECT_TRUE(same(f(x, w), fn(x, w)));
  Tensor wg = w.clone().set_requires_grad(true);
  Tensor r = f(x, wg);
  EXPECT_TRUE(same(r, fn(x, w)));
  EXPECT_FALSE(r.requires_grad());
  auto e = f.explain();
  EXPECT_EQ(e.eager_calls, 0);
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_TRUE(
      contains(e.recompiles[0].reason, "tensor 'arg1' requires_grad mismatch"));
}

TEST(E2ECache, ReplayModeDoesNotRepeatRandomNumbers) {
  // A graph that draws random numbers reads the generator's state at each
  // call (Note [Random ops in a compiled function]): replay mode, which
  // would reuse the first call's state, is not used, and explain says why.
  auto fn = [](const Tensor &x) {
    return nn::functional::dropout(x, 0.5, /*training=*/true);
  };
  auto f = compile(fn, CompileOptions().replay(true));
  NoGradGuard no_grad;
  Tensor x = ones({64});
  for (int call = 0; call < 3; ++call) {
    manual_seed(40 + uint64_t(call));
    Tensor e = fn(x);
    uint64_t offset = default_generator().get_offset();
    manual_seed(40 + uint64_t(call));
    EXPECT_TRUE(same(f(x), e)) << "call " << call;
    EXPECT_EQ(default_generator().get_offset(), offset);
  }
  ExplainOutput e = f.explain();
  EXPECT_EQ(e.graph_count, 1) << e;
  bool said = false;
  for (const std::string &why : e.eager_reasons)
    said = said || why.find("draws random numbers") != std::string::npos;
  EXPECT_TRUE(said) << e;
}

TEST(E2ECache, ReplayedCallsCountTheirGraphsOnce) {
  // graph_count and op_count describe the last call, replayed or not.
  auto f = compile([](const Tensor &x) { return (x * 2).exp(); },
                   CompileOptions().replay(true));
  Tensor x = random({4}, kFloat, 191);
  for (int i = 0; i < 4; ++i)
    f(x);
  ExplainOutput e = f.explain();
  EXPECT_EQ(e.graph_count, 1) << e;
  EXPECT_EQ(e.op_count, 2) << e;
  EXPECT_GE(e.cache_hits, 3) << e;
}
