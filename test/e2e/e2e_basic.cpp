// compile() basics: capture, lifted tensors, mutation, views, breaks,
// recompiles, replay.
#include "E2EUtil.h"

using namespace ember;
using ember::test::expect_same;
using ember::test::random;

TEST(E2EBasic, Pointwise) {
  auto e = expect_same(
      [](const Tensor &x, const Tensor &y) { return (x * y + 1).relu(); },
      {random({4, 8}), random({8})});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_EQ(e.cache_hits, 1);
  EXPECT_EQ(e.graph_break_count, 0);
}

TEST(E2EBasic, ItemBreaks) {
  auto fn = [](const Tensor &x) {
    Tensor s = x.sum();
    if (s.item<double>() > 0)
      return x * 2;
    return x - 1;
  };
  auto e = expect_same(fn, {random({5})});
  EXPECT_EQ(e.graph_break_count, 2) << e;
  EXPECT_NE(e.break_reasons.at(0).reason.find("item"), std::string::npos);
  EXPECT_NE(e.break_reasons.at(0).where.find("e2e_basic.cpp"),
            std::string::npos);
}

TEST(E2EBasic, InplaceOnInputAndView) {
  expect_same(
      [](const Tensor &x) {
        x.add_(1);
        x.select(0, 1).mul_(3);
        return x.sum(0);
      },
      {random({3, 4})});
}

TEST(E2EBasic, LiftedParameterSeesUpdates) {
  Tensor w = random({4});
  auto f = compile([&](const Tensor &x) { return x * w; });
  Tensor x = random({4});
  auto y1 = f(x);
  w.add_(1);
  auto y2 = f(x);
  EXPECT_TRUE(ember::test::same(y2, x * w));
  EXPECT_FALSE(ember::test::same(y1, y2));
}

TEST(E2EBasic, RecompileOnShape) {
  auto f = compile([](const Tensor &x) { return x.exp(); });
  f(random({2, 3}));
  f(random({2, 5}));
  auto e = f.explain();
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_NE(e.recompiles[0].reason.find(
                "size mismatch at index 1. expected 3, actual 5"),
            std::string::npos)
      << e.recompiles[0].reason;
}

TEST(E2EBasic, Replay) {
  int runs = 0;
  auto f = compile(
      [&](const Tensor &x) {
        ++runs;
        return x.t().matmul(x);
      },
      CompileOptions().replay(true));
  Tensor x = random({3, 4});
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(ember::test::same(f(x), x.t().matmul(x)));
  EXPECT_EQ(runs, 1);
}

TEST(E2EBasic, IntermediatesAreFreedAfterTheirLastUse) {
  // Six ops on 1 MiB tensors: the executor frees each intermediate once its
  // last user has run, so the peak holds a few of them, not all six.
  NoGradGuard no_grad;
  auto fn = [](const Tensor &x) {
    return ((((x * 2).exp() + 1).log() - x).abs() + 3).sqrt();
  };
  Tensor x = randn({256, 1024}); // 1 MiB of float32
  auto f = compile(fn);
  Tensor expected = fn(x);
  f(x); // the first call captures and compiles
  const int64_t mib = int64_t(x.nbytes());
  int64_t before = memory_allocated();
  reset_peak_memory_stats(kCPU);
  Tensor y = f(x);
  int64_t peak = max_memory_allocated() - before;
  EXPECT_TRUE(ember::test::same(y, expected));
  // At most an op's input and its output at once (plus the few bytes of
  // wrapped-number constants); keeping every intermediate would be 6 MiB.
  EXPECT_LE(peak, 2 * mib + 1024)
      << "peak " << peak << " bytes over the inputs";
  EXPECT_GE(peak, mib);                        // the result itself
  EXPECT_EQ(memory_allocated() - before, mib); // only the result is left
}

TEST(E2EBasic, FoldedOutputsAreNewTensors) {
  // e * 1 folds to e and CSE merges a and b: the results are still new,
  // distinct tensors, as eagerly (writing one writes nothing else). (x * 1
  // of the argument itself is not folded: Note [Identities].)
  NoGradGuard no_grad;
  auto fn = [](const Tensor &x) {
    Tensor e = x.neg();
    Tensor a = e * 2, b = e * 2;
    return std::make_tuple(e * 1, a, b, e);
  };
  for (int64_t level = 0; level <= 2; ++level) {
    auto f = compile(fn, CompileOptions().opt_level(level));
    Tensor x = random({4}), keep = x.clone();
    auto [y, a, b, e] = f(x);
    EXPECT_FALSE(y.is_alias_of(e)) << "level " << level;
    EXPECT_FALSE(a.is_alias_of(b)) << "level " << level;
    y.fill_(7);
    a.fill_(8);
    EXPECT_TRUE(ember::test::identical(x, keep)) << "level " << level;
    EXPECT_TRUE(ember::test::identical(e, keep.neg())) << "level " << level;
    EXPECT_TRUE(ember::test::identical(b, keep.neg() * 2)) << "level " << level;
    if (level >= 1) { // the folding and the CSE did happen
      std::string ir = f.explain().graphs.at(0).ir_optimized;
      size_t muls = 0;
      for (size_t p = ir.find("ember.mul.Tensor"); p != std::string::npos;
           p = ir.find("ember.mul.Tensor", p + 1))
        ++muls;
      EXPECT_EQ(muls, 1u) << ir;
    }
  }
}
