// Compiled vs eager: custom ops (ember::Library). With a fake (shape)
// implementation registered through ember::meta::register_fake, compile()
// captures the op into the graph; without one, a call is a graph break that
// names the op.
#include "E2EUtil.h"

#include <atomic>

#include "eager/Meta.h"

using namespace ember;
using ember::test::contains;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::random;
using ember::test::same;

namespace {

Tensor softsign_scale(const Tensor &x, double a) {
  return x / (x.abs() + 1) * a;
}

Tensor opaque_rowsum(const Tensor &x) { return x.sum(-1, true) * 0.5; }

/// e2e::tick counts its calls (an op with an effect the graph cannot see).
std::atomic<int> ticks{0};
Tensor tick(const Tensor &x) {
  ++ticks;
  return x.clone();
}

/// Registers the e2e ops once: softsign_scale and minmax with fake
/// implementations, opaque_rowsum without.
void register_ops() {
  static Library lib("e2e");
  static bool once = [] {
    lib.def("softsign_scale(Tensor x, float a) -> Tensor", &softsign_scale);
    lib.def("opaque_rowsum(Tensor x) -> Tensor", &opaque_rowsum);
    lib.def("tick(Tensor x) -> Tensor", &tick);
    meta::register_fake("e2e::tick", [](const Stack &args) {
      const Tensor &x = args[0].toTensor();
      return std::vector<Tensor>{meta::fake(x.sizes(), x.dtype(), x.device())};
    });
    lib.def("minmax(Tensor x, int dim) -> (Tensor, Tensor)");
    lib.impl_boxed("minmax", kCPU,
                   [](const OperatorHandle &, DispatchKeySet, Stack &s) {
                     Tensor x = s[0].toTensor();
                     int64_t d = s[1].toInt();
                     s.clear();
                     s.emplace_back(x.amin({d}));
                     s.emplace_back(x.amax({d}));
                   });
    meta::register_fake("e2e::softsign_scale", [](const Stack &args) {
      const Tensor &x = args[0].toTensor();
      return std::vector<Tensor>{meta::fake(x.sizes(), x.dtype(), x.device())};
    });
    meta::register_fake("e2e::minmax", [](const Stack &args) {
      const Tensor &x = args[0].toTensor();
      int64_t d = args[1].toInt();
      d = d < 0 ? d + x.dim() : d;
      std::vector<int64_t> s = x.sizes().vec();
      s.erase(s.begin() + d);
      return std::vector<Tensor>{meta::fake(s, x.dtype(), x.device()),
                                 meta::fake(s, x.dtype(), x.device())};
    });
    return true;
  }();
  (void)once;
}

Tensor call_softsign(const Tensor &x, double a) {
  static auto op =
      find_op<Tensor(const Tensor &, double)>("e2e::softsign_scale");
  return op.call(x, a);
}

Tensor call_opaque(const Tensor &x) {
  static auto op = find_op<Tensor(const Tensor &)>("e2e::opaque_rowsum");
  return op.call(x);
}

std::tuple<Tensor, Tensor> call_minmax(const Tensor &x, int64_t dim) {
  Stack out = call_op("e2e::minmax", {x, dim});
  return {out.at(0).toTensor(), out.at(1).toTensor()};
}

} // namespace

TEST(E2ECustom, FakeImplementationIsCaptured) {
  ember::test::StayOnCpu cpu("the custom op has a CPU kernel only");
  register_ops();
  auto fn = [](const Tensor &x) {
    Tensor y = call_softsign(x * 2, 1.5);
    return call_softsign(y.exp(), -0.5) + y;
  };
  auto e = expect_same(fn, {random({4, 5}, kFloat, 230)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(count_in_traces(e, "e2e::softsign_scale"), 2);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_TRUE(contains(e.graphs[0].trace, "a=1.5"));
}

TEST(E2ECustom, MultiOutputCustomOpWithFake) {
  ember::test::StayOnCpu cpu("the custom op has a CPU kernel only");
  register_ops();
  auto fn = [](const Tensor &x) {
    auto [lo, hi] = call_minmax(x.tanh(), 1);
    return std::make_tuple(hi - lo, lo, hi.sum());
  };
  auto e = expect_same(fn, {random({3, 7}, kFloat, 231)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(count_in_traces(e, "e2e::minmax"), 1);
}

TEST(E2ECustom, NoFakeImplementationIsAGraphBreak) {
  ember::test::StayOnCpu cpu("the custom op has a CPU kernel only");
  register_ops();
  auto fn = [](const Tensor &x) {
    Tensor h = x.relu() + 1;
    Tensor r = call_opaque(h);
    return (r * x).sum(0);
  };
  Tensor x = random({3, 4}, kFloat, 232);
  auto e = expect_same(fn, {x}, 1);
  EXPECT_EQ(e.graph_count, 2);
  EXPECT_EQ(e.graph_break_count, 1);
  ASSERT_EQ(e.break_reasons.size(), 1u);
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "e2e::opaque_rowsum"));
  EXPECT_TRUE(contains(e.break_reasons[0].reason, "register_fake"));
  EXPECT_EQ(count_in_traces(e, "e2e::opaque_rowsum"), 0);
  // With fullgraph the break raises, naming the op.
  auto g = compile(fn, CompileOptions().fullgraph(true));
  EXPECT_EMBER_ERROR(g(x), "e2e::opaque_rowsum");
}

TEST(E2ECustom, CustomOpOnLiftedParameter) {
  register_ops();
  Tensor w = random({5}, kFloat, 233);
  auto fn = [&](const Tensor &x) { return x * call_softsign(w, 3.0); };
  auto f = compile(fn);
  Tensor x = random({2, 5}, kFloat, 234);
  EXPECT_TRUE(same(f(x), fn(x)));
  w.add_(0.5);
  EXPECT_TRUE(same(f(x), fn(x)));
  auto e = f.explain();
  EXPECT_EQ(e.cache_hits, 1);
  EXPECT_EQ(count_in_traces(e, "e2e::softsign_scale"), 1);
}

TEST(E2ECustom, RegisterFakeRejectsBuiltinOps) {
  EXPECT_EMBER_ERROR(
      meta::register_fake("ember::exp",
                          [](const Stack &) { return std::vector<Tensor>{}; }),
      "built in");
}

TEST(E2ECustom, ACustomOpWhoseResultIsUnusedStillRunsInTraining) {
  // A custom op is an op with effects (ember.eager_call): it runs as
  // eagerly, once per call, even when nothing reads its result, in a
  // training graph's forward too (ember-remat keeps it).
  register_ops();
  static auto op = find_op<Tensor(const Tensor &)>("e2e::tick");
  Tensor w = random({4, 4}, kDouble, 231).requires_grad_();
  Tensor x = random({4, 4}, kDouble, 232);
  auto fn = [&] {
    Tensor h = x.mm(w);
    op.call(h.detach()); // result unused
    return h.sin().sum();
  };
  for (int64_t budget : {int64_t(-1), int64_t(0)}) {
    auto f = compile(fn, CompileOptions().memory_budget(budget));
    int before = ticks;
    for (int call = 0; call < 3; ++call)
      f().backward();
    EXPECT_EQ(ticks - before, 3) << "budget " << budget;
  }
}
