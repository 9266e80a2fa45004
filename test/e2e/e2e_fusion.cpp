// Compiled vs eager: reductions as fusion roots (Note [Reduction kernels] in
// codegen/Kernel.h) and decomposed ops (ember-decompose): the number of
// kernels each program becomes, and equal results at every level.
#include "E2EUtil.h"

using namespace ember;
using ember::test::expect_same;
using ember::test::expect_same_fresh;
using ember::test::noncontiguous;
using ember::test::random;

namespace {

/// The kernels and fallbacks of the single graph an explain() reports.
struct Counts {
  int64_t kernels, fallbacks;
};
Counts counts(const ExplainOutput &e) {
  EXPECT_EQ(e.graphs.size(), 1u);
  if (e.graphs.empty())
    return {-1, -1};
  const GraphInfo &g = e.graphs.back();
  for (const std::string &r : g.fallback_reasons)
    std::cout << "  fallback: " << r << "\n";
  return {g.kernels, g.fallbacks};
}

} // namespace

TEST(E2EFusion, SoftmaxIsOneKernel) {
  auto fn = [](const Tensor &x) { return x.softmax(-1); };
  Counts c = counts(expect_same(fn, {random({33, 70}, kFloat, 1) * 5}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
}

// Results whose shapes differ only in size-1 dims (a 0-dim value and its
// [1, 1, 1] sum with another; [5] and [1, 5] values of one input) fuse:
// their elements lie alike. They ran eagerly ("its results have different
// shapes").
TEST(E2EFusion, ResultsDifferingInSizeOneDimsFuse) {
  auto fn = [](const Tensor &x, const Tensor &y, const Tensor &r,
               const Tensor &q) {
    Tensor e = x.exp();
    return std::make_tuple(e, y.neg() + e, (r * 2).sigmoid(), (r * q).tanh());
  };
  // (each group its own kernel: not combined)
  Counts c =
      counts(expect_same(fn,
                         {random({}, kFloat, 40), random({1, 1, 1}, kFloat, 41),
                          random({5}, kFloat, 42), random({1, 5}, kFloat, 43)},
                         2, CompileOptions().combo_kernels(false)));
  EXPECT_EQ(c.kernels, 2);
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, SoftmaxOverOuterAndMiddleDims) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(x.softmax(0), x.log_softmax(1), x.softmax(2));
  };
  Counts c = counts(expect_same(fn, {random({5, 130, 7}, kFloat, 2) * 3}));
  EXPECT_EQ(c.kernels, 3);
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, LayerNormIsOneKernel) {
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b) {
    return nn::functional::layer_norm(
        x, nn::functional::LayerNormFuncOptions({64}).weight(w).bias(b));
  };
  Counts c = counts(
      expect_same(fn, {random({3, 10, 64}, kFloat, 3), random({64}, kFloat, 4),
                       random({64}, kFloat, 5)}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, ReductionsWithPrologueAndEpilogue) {
  auto fn = [](const Tensor &x, const Tensor &y) {
    Tensor a = ((x * y).exp().sum({1}) + 1).sqrt(); // inner dim
    Tensor b = (x - y).abs().amax({0}, true) * 2;   // outer dim
    Tensor c = x.mean({0, 2}) - y.amin({0, 2});     // middle kept
    Tensor d = (x * x).sum() / x.numel();           // every dim
    Tensor e = x.sum({1}, false, kDouble);          // dtype argument
    return std::make_tuple(a, b, c, d, e);
  };
  Counts c = counts(expect_same(
      fn, {random({6, 50, 9}, kFloat, 6), random({6, 50, 9}, kFloat, 7)}));
  // (a and e fold dim 1 of x: one kernel, Note [Recomputing pointwise
  // values in reductions] in passes/FuseElementwise.cpp)
  EXPECT_EQ(c.kernels, 4);
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, ReductionDtypes) {
  auto fn = [](const Tensor &h, const Tensor &bf, const Tensor &i,
               const Tensor &d) {
    return std::make_tuple((h * 2).sum({1}), bf.amax({0}), (bf + 1).mean({1}),
                           (i * 3).sum({0}), i.amax({1}), d.softmax(1),
                           (i > 2).sum({1}));
  };
  Tensor i = (random({8, 40}, kFloat, 8) * 50).to(kInt);
  Counts c = counts(expect_same(fn, {random({8, 40}, kHalf, 9),
                                     random({8, 40}, kBFloat16, 10), i,
                                     random({8, 40}, kDouble, 11)}));
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, ReductionsOfNonContiguousAndBroadcastInputs) {
  auto fn = [](const Tensor &x, const Tensor &w) {
    return std::make_tuple((x * w).sum({1}, true), (x + w).softmax(0));
  };
  Tensor x = noncontiguous(random({20, 30}, kFloat, 12));
  expect_same(fn, {x, random({30}, kFloat, 13)});
  expect_same(fn, {random({20, 30}, kFloat, 14).t().contiguous().t(),
                   random({30}, kFloat, 15)});
}

TEST(E2EFusion, ReductionEdgeCases) {
  auto fn = [](const Tensor &x, const Tensor &z) {
    // Empty reduced dim: sum 0, mean nan; a one-element dim; NaN and inf
    // propagate through amax and softmax as eager.
    return std::make_tuple(z.sum({1}), z.mean({1}), x.sum({2}), x.amax({1}),
                           x.softmax(1));
  };
  Tensor x = random({4, 6, 1}, kFloat, 16);
  x.index_put_({1, 2, 0}, std::numeric_limits<float>::quiet_NaN());
  x.index_put_({2, 3, 0}, std::numeric_limits<float>::infinity());
  x.index_put_({3}, -std::numeric_limits<float>::infinity());
  Counts c = counts(expect_same(fn, {x, random({3, 0}, kFloat, 17)}));
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, VarStdLogsumexpDecomposeAndFuse) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(x.var({1}), x.std({0}, 0, true), x.logsumexp({1}),
                           x.var());
  };
  Counts c = counts(expect_same(fn, {random({16, 45}, kFloat, 18) * 3}));
  EXPECT_EQ(c.kernels, 4);
  EXPECT_EQ(c.fallbacks, 1); // logsumexp's reshape of its keepdim result
}

TEST(E2EFusion, ExplainNamesReductionKernels) {
  auto fn = [](const Tensor &x) { return x.softmax(1); };
  auto compiled = compile(fn);
  compiled(random({4, 8}, kFloat, 19));
  ExplainOutput e = compiled.explain();
  ASSERT_EQ(e.graphs.size(), 1u);
  ASSERT_EQ(e.graphs[0].kernel_list.size(), 1u);
  EXPECT_TRUE(ember::test::contains(e.graphs[0].ir_optimized, "ember.amax"));
  EXPECT_TRUE(ember::test::contains(e.graphs[0].ir_optimized, "ember.fusion"));
  EXPECT_FALSE(ember::test::contains(e.graphs[0].ir_optimized, "softmax"));
  // Each pass of the pipeline with its time, in order.
  std::vector<std::string> names;
  for (const PassTime &p : e.graphs[0].pass_times) {
    names.push_back(p.name);
    EXPECT_GE(p.seconds, 0);
  }
  EXPECT_EQ(names, pipeline_passes(2));
  EXPECT_EQ(names.size(), 8u);
  std::vector<std::string> no_combos = pipeline_passes(2, true, false);
  EXPECT_EQ(no_combos.size(), 7u);
  EXPECT_FALSE(
      std::count(no_combos.begin(), no_combos.end(), "ember-fuse-horizontal"));
  EXPECT_EQ(pipeline_passes(1),
            (std::vector<std::string>{"canonicalize", "cse"}));
  EXPECT_TRUE(pipeline_passes(0).empty());
  EXPECT_TRUE(ember::test::contains(e.str(), "passes: canonicalize"));
}

TEST(E2EFusion, InPlaceBuffersSameResultsLessMemory) {
  // Each matmul's result dies in the fusion after it (bias, relu): with the
  // buffer plan the fusion writes into it instead of a new buffer.
  auto fn = [](const Tensor &x, const Tensor &w1, const Tensor &b1,
               const Tensor &w2) {
    Tensor h = (x.mm(w1) + b1).relu();
    return (h.mm(w2) * 0.5).tanh() + 1;
  };
  Tensor in[] = {random({256, 128}, kFloat, 20), random({128, 256}, kFloat, 21),
                 random({256}, kFloat, 22), random({256, 256}, kFloat, 23)};
  expect_same(fn, in);
  // One layer: the matmul's result is the only buffer the call needs.
  auto layer = [](const Tensor &x, const Tensor &w1, const Tensor &b1) {
    return (x.mm(w1) + b1).relu();
  };
  auto peak_of = [&](bool inplace) {
    auto f = compile(layer, CompileOptions().inplace_buffers(inplace));
    f(in[0], in[1], in[2]); // compile
    int64_t before = memory_allocated();
    reset_peak_memory_stats(kCPU);
    Tensor y = f(in[0], in[1], in[2]);
    int64_t peak = max_memory_allocated() - before;
    EXPECT_TRUE(ember::test::same(y, layer(in[0], in[1], in[2])));
    return peak;
  };
  const int64_t buffer = 256 * 256 * 4;
  EXPECT_EQ(peak_of(true), buffer);
  EXPECT_EQ(peak_of(false), 2 * buffer);
}

TEST(E2EFusion, InPlaceNotWhenTheBufferIsShared) {
  // The matmul's result is also returned (and viewed): never written over.
  auto fn = [](const Tensor &a, const Tensor &b) {
    Tensor m = a.mm(b);
    return std::make_tuple(m.exp(), m.t());
  };
  expect_same(fn, {random({32, 16}, kFloat, 24), random({16, 32}, kFloat, 25)});
  auto fn2 = [](const Tensor &a, const Tensor &b) {
    Tensor m = a.mm(b);
    Tensor v = m.view({-1});
    return std::make_tuple((m * 2).sigmoid(), v.sum());
  };
  expect_same(fn2, {random({8, 16}, kFloat, 26), random({16, 8}, kFloat, 27)});
}

TEST(E2EFusion, ConversionsFuse) {
  // .to(dtype) on one device is a conversion step of the kernel: float16
  // layer_norm (computed in float, as eager) and a mixed-dtype chain are one
  // kernel each.
  auto ln = [](const Tensor &x) {
    return nn::functional::layer_norm(
        x, nn::functional::LayerNormFuncOptions({32}));
  };
  Counts c = counts(expect_same(ln, {random({6, 32}, kHalf, 28)}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
  auto mixed = [](const Tensor &x, const Tensor &i) {
    return (x.to(kDouble) * i.to(kDouble)).exp().to(kBFloat16).to(kFloat) + 1;
  };
  c = counts(expect_same(mixed, {random({40}, kFloat, 29),
                                 (random({40}, kFloat, 30) * 3).to(kInt)}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
}

TEST(E2EFusion, AnOpTheGeneratorDoesNotTakeLeavesTheRestFused) {
  // Note [Per-op capability]: an integer remainder must raise on a zero
  // divisor, which only its eager kernel checks, so the CPU generator does
  // not take it. It runs eagerly on its own; the float chain around it is
  // still one kernel, and explain() says why the remainder is eager.
  auto fn = [](const Tensor &x, const Tensor &i, const Tensor &j) {
    return ((x * x + i.remainder(j)) * 0.5).exp();
  };
  Tensor x = random({6, 9}, kFloat, 31);
  Tensor i = (random({6, 9}, kFloat, 32) * 50).to(kLong);
  Tensor j = (random({9}, kFloat, 33).abs() * 7 + 1).to(kLong);
  ExplainOutput e = expect_same(fn, {x, i, j});
  ASSERT_EQ(e.graphs.size(), 1u);
  const GraphInfo &g = e.graphs[0];
  EXPECT_EQ(g.kernels, 1);
  EXPECT_EQ(g.fallbacks, 1);
  ASSERT_EQ(g.kernel_list.size(), 1u);
  EXPECT_EQ(g.kernel_list[0].ops.size(), 4u); // mul, add, mul, exp
  ASSERT_EQ(g.fallback_reasons.size(), 1u);
  EXPECT_NE(g.fallback_reasons[0].find("ember::remainder.Tensor"),
            std::string::npos)
      << g.fallback_reasons[0];
  EXPECT_NE(g.fallback_reasons[0].find("zero divisor must raise"),
            std::string::npos)
      << g.fallback_reasons[0];

  // And the compiled program raises where eager raises.
  Tensor zero = j.clone();
  zero.select(0, 3).fill_(0);
  auto compiled = compile(fn);
  EXPECT_THROW(fn(x, i, zero), Error);
  EXPECT_THROW(compiled(x, i, zero), Error);
}

TEST(E2EFusion, SquareLayerNormIsOneKernel) {
  // The weight and bias [64] of a [64, 64] layer_norm have the shape of the
  // kept points; as kernel inputs they are rows (Note [Reduction fusion]),
  // so the affine fuses with the normalization, and a column-shaped value
  // of the same shape (a reduction's result) is still read as a column.
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b) {
    Tensor y = nn::functional::layer_norm(
        x, nn::functional::LayerNormFuncOptions({64}).weight(w).bias(b));
    return std::make_tuple(y, x.sum({1}) + w, x - x.mean({1}));
  };
  Counts c = counts(
      expect_same(fn, {random({64, 64}, kFloat, 40), random({64}, kFloat, 41),
                       random({64}, kFloat, 42)}));
  EXPECT_EQ(c.fallbacks, 0);
  EXPECT_LE(c.kernels, 3);
}

TEST(E2EFusion, SplitReductionsEqualEager) {
  // Note [Split reductions]: full reductions and folds with few outputs run
  // as a partial kernel over parts and a combine. Contiguous, strided and
  // broadcast inputs, NaN, integers, 16-bit floats, a mean (divided by the
  // whole count), a fold with an epilogue (not split), a prime folded dim
  // (not split), kept points.
  auto fn = [](const Tensor &x, const Tensor &t, const Tensor &w,
               const Tensor &i, const Tensor &h, const Tensor &c) {
    return std::make_tuple(x.sum(), (x * w).exp().mean(), t.amax(), t.amin(),
                           i.sum(), h.sum(), x.sum() * 2 + 1, c.sum({0}),
                           x.sum({0}, false, kDouble), c.t().sum({1}),
                           (x * 0.5).mean({1}));
  };
  Tensor x = random({300, 256}, kFloat, 43);
  Tensor t = noncontiguous(random({300, 256}, kFloat, 44));
  t.index_put_({5, 6}, std::numeric_limits<float>::quiet_NaN());
  Tensor i = (random({300, 256}, kFloat, 45) * 1000).to(kInt);
  Tensor h = random({300, 256}, kHalf, 46);
  Tensor c = random({40000, 3}, kFloat, 47);
  Counts n =
      counts(expect_same(fn, {x, t, random({256}, kFloat, 48), i, h, c}));
  EXPECT_EQ(n.fallbacks, 1); // c.t(), a view
  expect_same([](const Tensor &p) { return p.sum(); },
              {random({257, 301}, kFloat, 49)});
}

TEST(E2EFusion, SplitReductionNamesBothKernels) {
  // explain() and the debug directory name a split reduction's partial and
  // combine kernels, which are two symbols (Note [Split reductions]).
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &x) { return (x.exp() * 2).sum(); });
  Tensor x = random({1 << 20}, kFloat, 50);
  EXPECT_TRUE(allclose(f(x), (x.exp() * 2).sum(), 1e-5, 1e-3));
  auto e = f.explain();
  ASSERT_EQ(e.graphs.size(), 1u);
  ASSERT_EQ(e.graphs[0].kernel_list.size(), 1u);
  const std::string &name = e.graphs[0].kernel_list[0].name;
  EXPECT_NE(name.find("ember_kernel_"), std::string::npos) << name;
  EXPECT_NE(name.find(" + ember_kernel_"), std::string::npos) << name;
}

TEST(E2EFusion, NumbersInReducedPrecision) {
  // Note [Numbers in reduced precision]: in float16/bfloat16, mul and div
  // keep a C++ number in float (PyTorch's opmath scalar: h * 0.1 is
  // half(float(h) * 0.1f)); add and sub round it to the dtype first (h + 0.3
  // is half(float(h) + float(half(0.3)))). Eager and compiled agree exactly.
  NoGradGuard no_grad;
  for (ScalarType t : {kHalf, kBFloat16}) {
    Tensor x = (random({4096}, kFloat, 60) * 100).to(t);
    Tensor xf = x.to(kFloat);
    float r3 = tensor({0.3}).to(t).item<float>();
    EXPECT_TRUE(equal(x * 0.1, (xf * 0.1).to(t))) << toString(t);
    EXPECT_TRUE(equal(x / 3.7, (xf / 3.7).to(t))) << toString(t);
    EXPECT_TRUE(equal(x + 0.3, (xf + r3).to(t))) << toString(t);
    // A number first is filled into x's dtype, then divided (libtorch's
    // operator/(Scalar, Tensor): empty_like(x).fill_(1.7).div_(x)).
    Tensor filled = empty_like(x).fill_(1.7);
    EXPECT_TRUE(equal(1.7 / x, filled / x)) << toString(t);
    EXPECT_TRUE(equal(0.1 * x, x * 0.1)) << toString(t); // x.mul(0.1)
    Tensor y = x.clone();
    y.mul_(0.1);
    EXPECT_TRUE(equal(y, x * 0.1)) << toString(t);
    auto f = compile([](const Tensor &a) { return (a * 0.1 + 0.3) / 3.7; });
    EXPECT_TRUE(equal(f(x), (x * 0.1 + 0.3) / 3.7)) << toString(t);
    auto g = compile([](const Tensor &a) { return 1.7 / (a + 1); });
    EXPECT_TRUE(equal(g(x), 1.7 / (x + 1))) << toString(t);
  }
  // PyTorch 2.x: torch.tensor([3.], dtype=torch.half) * 0.1 is 0.3000
  // (0x34CD); with 0.1 rounded to float16 first it would be 0.2998.
  Tensor h = tensor({3.0f}).to(kHalf);
  EXPECT_EQ((h * 0.1).item<float>(), tensor({0.3f}).to(kHalf).item<float>());
  EXPECT_NE((h * 0.1).item<float>(), 0.2998046875f);
}

TEST(E2EFusion, ExplainNamesKernelsFromTheMemoryCache) {
  // Note [Fusion size]: a 12,388-op chain is cut into fusions of 4096 ops;
  // the second and third compute the same kernel (each writing into its
  // input), compiled once: explain() says where each came from and counts
  // the compile time once. Its texts are made when asked (Note [Graph texts
  // when asked]).
  NoGradGuard no_grad;
  auto chain = [](const Tensor &x) {
    Tensor y = x;
    for (int i = 0; i < 3 * 4096 + 100; ++i)
      y = (i % 2) ? y * 1.0001 : y + 0.0001; // both weigh 1
    return y;
  };
  auto f = compile(chain);
  Tensor x = random({8}, kFloat, 70);
  EXPECT_TRUE(allclose(f(x), chain(x), 1e-4, 1e-5));
  auto e = f.explain();
  ASSERT_EQ(e.graphs.size(), 1u);
  const auto &ks = e.graphs[0].kernel_list;
  ASSERT_EQ(ks.size(), 4u);
  EXPECT_EQ(ks[1].name, ks[2].name);
  EXPECT_NE(ks[0].name, ks[1].name);
  EXPECT_EQ(ks[2].origin, "memory cache");
  EXPECT_EQ(ks[2].compile_seconds, 0.0);
  EXPECT_TRUE(ember::test::contains(e.graphs[0].ir, "ember.mul.Tensor"));
  EXPECT_TRUE(ember::test::contains(e.graphs[0].ir_optimized, "ember.fusion"));
  EXPECT_TRUE(ember::test::contains(e.graphs[0].trace, "ember::add.Tensor"));
  EXPECT_TRUE(ember::test::contains(e.graphs[0].dot, "digraph"));
}

TEST(E2EFusion, PlannedInPlaceKernelIsCompiledWithTheGraph) {
  // ember-plan-memory writes the epilogue's result into the matmul's dying
  // buffer; that in-place kernel is the one compiled with the graph (its
  // spec, logged under EMBER_LOGS=kernels, says so), so the first call
  // compiles nothing more: it used to compile it at run time, outside the
  // compile time explain() reports. Every LLVM compile logs one
  // "instructions in function" line.
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &x, const Tensor &w) {
    return relu(mm(relu(x * 2), w) + 1);
  });
  Tensor x = random({16, 8}, kFloat, 80), w = random({8, 12}, kFloat, 81);
  logging::set_logs("kernels");
  testing::internal::CaptureStderr();
  Tensor got = f(x, w);
  std::string log = testing::internal::GetCapturedStderr();
  logging::set_logs("");
  EXPECT_TRUE(allclose(got, relu(mm(relu(x * 2), w) + 1), 1e-5, 1e-6));
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t p = log.find(what); p != std::string::npos;
         p = log.find(what, p + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("(in place of input 0)"), 1u) << log;
  EXPECT_EQ(count("instructions in function"), count("(compiled")) << log;
  EXPECT_EQ(count("(compiled") + count("(disk cache") + count("(memory cache"),
            2u)
      << log;
}

TEST(E2EFusion, CombinedKernelsEqualEager) {
  // Independent updates of the arguments (ember-fuse-horizontal) run as one
  // combined kernel (Note [Combined kernels]): parameters of many shapes,
  // 0-dim and empty ones, a transposed one (a strided variant of its part),
  // float16 and float64 ones, updates written in place. The biggest is
  // large enough for the thread pool to split the joint loop across parts.
  auto fn = [](std::vector<Tensor> a) {
    for (size_t i = 0; i + 1 < a.size(); i += 2)
      a[i].sub_(a[i + 1] * 0.5).mul_(0.9);
    return std::vector<Tensor>();
  };
  auto make = [] {
    std::vector<std::vector<int64_t>> shapes = {
        {300, 257}, {7}, {}, {0, 3}, {33, 5}, {1}, {1000}, {4, 4, 4}};
    std::vector<Tensor> a;
    uint64_t seed = 40;
    for (const auto &s : shapes) {
      a.push_back(random(s, kFloat, seed++));
      a.push_back(random(s, kFloat, seed++));
    }
    a.push_back(random({6, 9}, kFloat, seed++).t()); // transposed parameter
    a.push_back(random({9, 6}, kFloat, seed++));
    a.push_back(random({40}, kHalf, seed++));
    a.push_back(random({40}, kHalf, seed++));
    a.push_back(random({3, 2}, kDouble, seed++));
    a.push_back(random({3, 2}, kDouble, seed++));
    return a;
  };
  // (each thread its run of chunks, then the others' remains: Note
  // [Combined launches]; a chunk skipped or run twice changes the updates)
  const int threads = get_num_threads();
  for (int t : {1, 2, 3, 5}) {
    SCOPED_TRACE("threads " + std::to_string(t));
    set_num_threads(t);
    expect_same_fresh(fn, make);
  }
  set_num_threads(threads);
  auto compiled = compile(fn);
  compiled(make());
  ExplainOutput e = compiled.explain();
  const GraphInfo &g = e.graphs.at(0);
  // (the empty parameter's update is no kernel: nothing to compute)
  EXPECT_EQ(g.kernels, 1) << e;
  EXPECT_EQ(g.fallbacks, 0) << e;
  // One kernel per update without them.
  auto separate = compile(fn, CompileOptions().combo_kernels(false));
  separate(make());
  EXPECT_GE(separate.explain().graphs.at(0).kernels, 9) << separate.explain();
}

TEST(E2EFusion, CombinedKernelPartsReadingWhatAnotherWrites) {
  // Three parts, in the joint loop's order: the update of a [64, 4096]
  // parameter reading %g broadcast (expensive: a sin and an exp per
  // point), a
  // cheap update of as many points, and %g's own update, which overwrites
  // %g. The parts run side by side: on 2 threads the second thread does
  // the cheap part and reaches %g's update while the first still reads %g
  // in the expensive one, so the last part must not write into %g's buffer
  // (ember-plan-memory). Seen to fail when that rule is dropped.
  auto fn = [](std::vector<Tensor> a) {
    a[0].sub_(a[1]).sin_().exp_();
    a[2].mul_(2);
    a[1].cos_();
    return std::vector<Tensor>();
  };
  auto make = [] {
    return std::vector<Tensor>{random({64, 4096}, kFloat, 60),
                               random({4096}, kFloat, 61),
                               random({64 * 4096}, kFloat, 62)};
  };
  int threads = get_num_threads();
  set_num_threads(2);
  expect_same_fresh(fn, make, 3);
  auto compiled = compile(fn);
  compiled(make());
  EXPECT_EQ(compiled.explain().graphs.at(0).kernels, 1) << compiled.explain();
  set_num_threads(threads);
}

// Note [Powers by cheaper ops]: a power by a number decomposes to the eager
// kernel's form (x * x, sqrt, ...) or to pow.Tensor_Tensor with a constant,
// and fuses with its neighbours (it ran eagerly, a kernel a power): an RMS
// norm and a mix of powers, each one kernel, equal to eager at every level.
TEST(E2EFusion, PowersByNumbersFuse) {
  auto rms = [](const Tensor &x) {
    return x * (x.pow(2).mean({-1}, true) + 1e-6).pow(-0.5);
  };
  Counts c = counts(expect_same(rms, {random({16, 64}, kFloat, 50)}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
  auto mix = [](const Tensor &x) {
    Tensor a = x.abs() + 0.5;
    return a.pow(3) - a.pow(-2) + a.pow(0.5) * a.pow(1.7) + a.pow(1) -
           a.pow(-1);
  };
  c = counts(expect_same(mix, {random({40, 30}, kFloat, 51)}));
  EXPECT_EQ(c.kernels, 1);
  EXPECT_EQ(c.fallbacks, 0);
}
