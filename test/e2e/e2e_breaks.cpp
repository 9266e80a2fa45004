// Compiled vs eager: graph breaks (item(), printing, data_ptr(), nonzero,
// masked_select, boolean-mask indexing) with data-dependent C++ control
// flow; break reasons and where they happened; fullgraph=true.
#include "E2EUtil.h"

#include <sstream>

using namespace ember;
using namespace ember::indexing;
using ember::test::contains;
using ember::test::expect_same;
using ember::test::identical;
using ember::test::random;
using ember::test::same;

namespace {
/// "e2e_breaks.cpp:<line>:" (where() is "file:line:column").
std::string here(int line) {
  return "e2e_breaks.cpp:" + std::to_string(line) + ":";
}
} // namespace

TEST(E2EBreaks, ItemSelectsBranch) {
  constexpr int kLine = __LINE__ + 3;
  auto fn = [](const Tensor &x) {
    Tensor s = x.sum();
    if (s.item<double>() > 0)
      return (x.relu() * 2).sum(0);
    return x.exp().mean(1);
  };
  auto f = compile(fn);
  Tensor pos = random({4, 3}, kFloat, 110).abs() + 0.1;
  Tensor neg = -pos;
  EXPECT_TRUE(same(f(pos), fn(pos)));
  EXPECT_TRUE(same(f(neg), fn(neg)));
  EXPECT_TRUE(same(f(pos), fn(pos)));
  auto e = f.explain();
  EXPECT_EQ(e.graph_count, 2);
  ASSERT_EQ(e.break_reasons.size(), 3u); // one per call
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "Tensor::item()"));
  EXPECT_TRUE(contains(e.break_reasons[0].where, here(kLine)));
  EXPECT_EQ(e.break_reasons[0].graph, 0);
  // The second graph depends on the branch: one recompile, then hits.
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_EQ(e.recompiles[0].graph, 1);
  EXPECT_TRUE(contains(e.recompiles[0].reason, "the captured ops differ"));
  EXPECT_EQ(e.cache_misses, 3); // sum, positive branch, negative branch
  EXPECT_EQ(e.cache_hits, 3);
}

TEST(E2EBreaks, DataDependentLoop) {
  // Halve until every |x| <= 1: the number of graphs depends on the data.
  auto fn = [](const Tensor &x) {
    Tensor y = x * 1;
    int iters = 0;
    while (y.abs().max().item<float>() > 1.0f) {
      y = y * 0.5;
      ++iters;
    }
    return y + iters;
  };
  Tensor x = random({8}, kFloat, 111) * 9; // a few halvings
  auto e = expect_same(fn, {x}, 1);
  Tensor ref = x.clone();
  int iters = 0;
  while (ref.abs().max().item<float>() > 1.0f) {
    ref = ref * 0.5;
    ++iters;
  }
  ASSERT_GE(iters, 2);
  EXPECT_EQ(e.graph_count, iters + 2);
  EXPECT_EQ(e.graph_break_count, iters + 1) << e;
  ASSERT_EQ(int(e.break_reasons.size()), iters + 1);
  EXPECT_EQ(e.break_reasons.back().graph, iters);
}

TEST(E2EBreaks, PrintingInsideCompiled) {
  std::string printed;
  auto make = [](std::string &out) {
    return [&out](const Tensor &x) {
      Tensor y = (x * 3).round();
      std::ostringstream os;
      os << y;
      out = os.str();
      return y.sum(1);
    };
  };
  std::string eager_text;
  Tensor x = random({2, 3}, kFloat, 112);
  Tensor expected = make(eager_text)(x);
  auto f = compile(make(printed));
  EXPECT_TRUE(same(f(x), expected));
  EXPECT_EQ(printed, eager_text);
  EXPECT_TRUE(contains(printed, "tensor(["));
  auto e = f.explain();
  EXPECT_EQ(e.graph_break_count, 1);
  ASSERT_EQ(e.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "printing"));
  // (operator<< cannot know the user's line; never one inside ember)
  EXPECT_FALSE(contains(e.break_reasons[0].where, "Print.cpp"))
      << e.break_reasons[0].where;
  EXPECT_EQ(e.graph_count, 2);
}

TEST(E2EBreaks, DataPtrRead) {
  constexpr int kLine = __LINE__ + 3;
  auto fn = [](const Tensor &x) {
    Tensor c = x.abs().contiguous();
    const float *p = c.data_ptr<float>();
    float first = p[0];
    return x * first + c;
  };
  ember::test::StayOnCpu cpu("the function reads a tensor's memory on the "
                             "host");
  auto e = expect_same(fn, {random({5}, kFloat, 113)});
  ASSERT_FALSE(e.break_reasons.empty());
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "data_ptr"));
  EXPECT_TRUE(contains(e.break_reasons[0].where, here(kLine)));
  EXPECT_EQ(e.graph_count, 2);
}

TEST(E2EBreaks, Nonzero) {
  auto fn = [](const Tensor &x) {
    Tensor idx = (x > 0).nonzero(); // [n, 2], n depends on data
    Tensor rows = idx.select(1, 0);
    return std::make_tuple(idx, x.index_select(0, rows).sum(1) * 2);
  };
  Tensor x = random({6, 4}, kFloat, 114);
  auto e = expect_same(fn, {x});
  ASSERT_FALSE(e.break_reasons.empty());
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "ember::nonzero"));
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "depends on"));
  EXPECT_EQ(e.graph_count, 2);
  EXPECT_EQ(e.graph_break_count, 2); // one per call
}

TEST(E2EBreaks, MaskedSelect) {
  auto fn = [](const Tensor &x, const Tensor &m) {
    Tensor sel = x.masked_select(m);
    return std::make_tuple(sel * 2, sel.sum() + x.mean());
  };
  auto e = ember::explain(fn, random({3, 5}, kFloat, 115),
                          random({3, 5}, kBool, 116));
  EXPECT_EQ(e.graph_break_count, 1);
  ASSERT_EQ(e.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "ember::masked_select"));
  expect_same(fn, {random({3, 5}, kFloat, 115), random({3, 5}, kBool, 116)});
}

TEST(E2EBreaks, BooleanMaskIndexing) {
  auto fn = [](const Tensor &x) {
    Tensor pos = x.index({x > 0}); // data-dependent shape
    Tensor y = x.clone();
    y.index_put_({x < 0}, 0.0); // same shape as y: no break needed
    return std::make_tuple(pos.exp(), y, pos.numel() > 0 ? pos.max() : x.sum());
  };
  Tensor x = random({4, 5}, kFloat, 117);
  auto e = expect_same(fn, {x});
  ASSERT_FALSE(e.break_reasons.empty());
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "ember::index"));
  EXPECT_GE(e.graph_count, 2);
}

TEST(E2EBreaks, ValuesComputedBeforeBreakLiveOn) {
  auto fn = [](const Tensor &x, const Tensor &w) {
    Tensor h = x.matmul(w);             // graph 0
    Tensor keep = h.t();                // a view that outlives the break
    double m = h.mean().item<double>(); // break
    x.add_(m);                          // mutation in graph 1
    return std::make_tuple(keep * 2, h + x.sum(),
                           keep.is_contiguous() ? h : keep);
  };
  auto e = expect_same(
      fn, {random({3, 4}, kFloat, 118), random({4, 2}, kFloat, 119)});
  EXPECT_EQ(e.graph_count, 2);
  ASSERT_GE(e.graphs.size(), 2u);
  EXPECT_EQ(e.graphs[1].mutations, 1);
}

TEST(E2EBreaks, FullgraphRaisesOnBreak) {
  auto f = compile(
      [](const Tensor &x) {
        if (x.sum().item<double>() > 0)
          return x * 2;
        return x;
      },
      CompileOptions().fullgraph(true));
  EXPECT_EMBER_ERROR(f(random({3}, kFloat, 120)), "fullgraph");
  EXPECT_EMBER_ERROR(f(random({3}, kFloat, 120)), "Tensor::item()");
  auto g = compile([](const Tensor &x) { return x.nonzero(); },
                   CompileOptions().fullgraph(true));
  EXPECT_EMBER_ERROR(g(random({3}, kFloat, 121)), "ember::nonzero");
  // Without a break, fullgraph compiles as usual.
  auto h = compile([](const Tensor &x) { return (x * 2).sum(); },
                   CompileOptions().fullgraph(true));
  Tensor x = random({3}, kFloat, 122);
  EXPECT_TRUE(same(h(x), (x * 2).sum()));
  EXPECT_EQ(h.explain().graph_count, 1);
  // The function still works after a raising call (no stale capture state).
  EXPECT_TRUE(same(h(x), (x * 2).sum()));
}

TEST(E2EBreaks, ExceptionInsideCompiledFunctionPropagates) {
  auto f =
      compile([](const Tensor &x, const Tensor &y) { return x.matmul(y); });
  Tensor a = random({2, 3}, kFloat, 123);
  EXPECT_EMBER_ERROR(f(a, random({4, 2}, kFloat, 124)), "");
  Tensor b = random({3, 2}, kFloat, 125);
  EXPECT_TRUE(same(f(a, b), a.matmul(b)));
}

TEST(E2EBreaks, BreakBeforeAnyOpIsReported) {
  // The first thing the function does is a sync point: the graph before it
  // is empty, but the break is still reported (reason and where).
  constexpr int kLine = __LINE__ + 2;
  auto fn = [](const Tensor &x) {
    float v = x.item<float>();
    return x * (v > 0 ? 2 : 3);
  };
  auto e = ember::explain(fn, random({}, kFloat, 126));
  EXPECT_EQ(e.graph_break_count, 1);
  ASSERT_EQ(e.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "Tensor::item()"));
  EXPECT_TRUE(contains(e.break_reasons[0].where, here(kLine)));
  auto g = [](const Tensor &x) { return x.nonzero().sum(0) + 1; };
  auto e2 = ember::explain(g, random({4, 2}, kFloat, 127));
  EXPECT_EQ(e2.graph_break_count, 1);
  ASSERT_EQ(e2.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e2.break_reasons[0].reason, "ember::nonzero"));
  expect_same(fn, {random({}, kFloat, 126)});
  expect_same(g, {random({4, 2}, kFloat, 127)});
}

TEST(E2EBreaks, ItemValueFeedsLaterOps) {
  // A value read with item() is used as a number by later ops: each call
  // must use its own value, even when two values print alike.
  auto fn = [](const Tensor &x) {
    double m = x.mean().item<double>();
    return (x - m) * m;
  };
  auto f = compile(fn);
  Tensor a = full({4}, 1.0, TensorOptions(kDouble));
  Tensor b = a.clone();
  b.index_put_({3}, 1.0000004); // mean 1.0000001
  EXPECT_TRUE(identical(f(a), fn(a)));
  EXPECT_TRUE(identical(f(b), fn(b)));
  EXPECT_FALSE(identical(fn(a), fn(b)));
  Tensor c = random({4}, kDouble, 128);
  EXPECT_TRUE(identical(f(c), fn(c)));
}

TEST(E2EBreaks, BreakInsideInlinedCompiledFunction) {
  constexpr int kLine = __LINE__ + 2;
  auto inner = compile([](const Tensor &x) {
    return x.max().item<float>() > 0.5f ? x * 2 : x - 1;
  });
  auto outer = [&](const Tensor &x) { return inner(x.sin()).sum(0); };
  auto f = compile(outer);
  Tensor x = random({3, 4}, kFloat, 129);
  EXPECT_TRUE(same(f(x), outer(x)));
  auto e = f.explain();
  EXPECT_EQ(e.graph_count, 2);
  ASSERT_EQ(e.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e.break_reasons[0].where, here(kLine)));
}
