// Compiled vs eager: every pointwise op of the OpInfo table
// (test/support/OpInfo.h) alone, with its in-place and `.Scalar` forms, on
// the table's shapes and dtypes; then chains of pointwise ops (unary,
// binary, ternary), comparisons and logical ops, integer and bool dtypes,
// broadcasting, type promotion, 0-dim, empty and non-contiguous inputs.
#include "E2EUtil.h"
#include "OpInfo.h"

using namespace ember;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::noncontiguous;
using ember::test::random;
using ember::test::random_positive;

namespace {

using Args = std::vector<Tensor>;

std::vector<std::string> pointwise_op_names() {
  std::vector<std::string> v;
  for (const ember::test::OpInfo &o : ember::test::op_db())
    if (o.kind == ember::test::Kind::Pointwise)
      v.push_back(o.cname());
  return v;
}

/// fn on the inputs, compiled (fused, opt level 2) and eagerly, on copies
/// of `in` that keep their strides: equal results and equal inputs after.
void compiled_matches_eager(const std::function<Tensor(const Args &)> &fn,
                            const Args &in, const std::string &what) {
  auto copy = [&] {
    Args c;
    for (const Tensor &t : in) {
      Tensor d = empty_strided(t.sizes(), t.strides(), t.options());
      d.copy_(t);
      c.push_back(d);
    }
    return c;
  };
  auto compiled = compile([fn](const Args &a) { return fn(a); });
  Args a = copy(), b = copy();
  Tensor want = fn(a);
  Tensor got = compiled(b);
  EXPECT_TRUE(ember::test::same(got, want)) << what;
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(ember::test::same(b[i], a[i])) << what << ", input " << i;
}

} // namespace

class E2EPointwiseOp : public ::testing::TestWithParam<std::string> {};

// The op alone on every shape sample of the table, on float32 and (when the
// entry has them) int64; its in-place form; its `.Scalar` forms.
TEST_P(E2EPointwiseOp, CompiledMatchesEager) {
  const ember::test::OpInfo &o = *ember::test::find_op_info(GetParam());
  std::vector<ScalarType> dts;
  for (ScalarType dt : {kFloat, kLong})
    if (std::count(o.dtypes.begin(), o.dtypes.end(), dt))
      dts.push_back(dt);
  ASSERT_FALSE(dts.empty()) << o.name;
  uint64_t seed = 1;
  for (ScalarType dt : dts) {
    std::string on = o.name + " on " + std::string(toString(dt));
    for (const auto &s : ember::test::pointwise_shapes(o.arity))
      compiled_matches_eager(o.op, make_inputs(o, s, dt, seed++),
                             on + " (" + s.label + ")");
    const auto same_shape = ember::test::pointwise_shapes(o.arity)[0];
    if (o.op_ && o.result_dtype(dt) == dt)
      compiled_matches_eager([&o](const Args &a) { return o.op_(a); },
                             make_inputs(o, same_shape, dt, seed++),
                             o.inplace + " on " + toString(dt));
    if (o.scalar) {
      Args in = make_inputs(o, same_shape, dt, seed++);
      Scalar other = ember::test::sample_input({}, dt, o.domain, seed++).item();
      compiled_matches_eager(
          [&o, other](const Args &a) { return o.scalar(a[0], other); }, {in[0]},
          on + " with a Scalar");
      if (o.scalar_ && o.result_dtype(dt) == dt)
        compiled_matches_eager(
            [&o, other](const Args &a) { return o.scalar_(a[0], other); },
            {in[0]}, on + " in place with a Scalar");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPointwiseOps, E2EPointwiseOp,
                         ::testing::ValuesIn(pointwise_op_names()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

TEST(E2EPointwise, UnaryChain) {
  auto fn = [](const Tensor &x) {
    Tensor a = x.exp() - x.abs().log1p() + x.tanh() * x.sigmoid();
    Tensor b = x.sin().cos() + x.atan() - x.erf() + x.gelu() + x.silu();
    Tensor c = x.floor() + x.ceil() * 0.5 - x.round() + x.trunc() + x.frac();
    Tensor d = x.square().sqrt() + x.abs().add(1).rsqrt() + x.sign() +
               x.softplus() + x.gelu("tanh") + x.expm1() + x.neg();
    return a * b + c - d;
  };
  auto e = expect_same(fn, {random({6, 7}, kFloat, 1)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(e.cache_misses, 1);
  EXPECT_GE(e.op_count, 25);
  EXPECT_EQ(count_in_traces(e, "ember::exp"), 1);
}

TEST(E2EPointwise, UnaryDomainRestricted) {
  // log/log2/log10/reciprocal/asin/acos on values inside their domains, in
  // float64.
  auto fn = [](const Tensor &p, const Tensor &u) {
    return std::make_tuple(p.log() + p.log2() * p.log10(), p.reciprocal(),
                           u.asin() - u.acos() + u.sinh() * u.cosh(),
                           p.exp2() + u.tan());
  };
  Tensor p = random_positive({5, 4}, kDouble, 0.1, 4.0, 2);
  Tensor u = random_positive({5, 4}, kDouble, -0.9, 0.9, 3);
  auto e = expect_same(fn, {p, u});
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].outputs, 4);
}

TEST(E2EPointwise, BinaryBroadcast) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    Tensor s = a + b - a * b / (b.abs() + 1);
    Tensor m = ember::maximum(a, b) - ember::minimum(a, b);
    Tensor t = ember::atan2(a, b) + ember::fmod(a, b.abs() + 0.5) +
               ember::remainder(a, b.abs() + 0.5);
    Tensor p =
        ember::pow(a.abs() + 0.1, b) + ember::pow(a, 2) + ember::pow(2.0, b);
    return s + m + t + p + a.sub(b, 2.5) + a.add(b, -0.5) + ember::rsub(a, b);
  };
  // [4, 1, 5] with [3, 1] -> [4, 3, 5]
  auto e = expect_same(
      fn, {random({4, 1, 5}, kFloat, 4), random({3, 1}, kFloat, 5)});
  EXPECT_EQ(e.graph_count, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_TRUE(ember::test::contains(e.graphs[0].trace, "f32[4, 3, 5]"));
}

TEST(E2EPointwise, TernaryWhereClampLerpAddcmul) {
  auto fn = [](const Tensor &x, const Tensor &y, const Tensor &w) {
    Tensor r1 = ember::where(x > y, x, y * 2);
    Tensor r2 = x.clamp(-0.5, 0.75) + x.clamp(std::nullopt, 0.1) +
                x.clamp_min(-0.2) + x.clamp_max(0.3);
    Tensor r3 = ember::clamp(x, std::optional<Tensor>(y - 1),
                             std::optional<Tensor>(y + 1));
    Tensor r4 = ember::lerp(x, y, 0.3) + ember::lerp(x, y, w.sigmoid());
    Tensor r5 =
        ember::addcmul(x, y, w, 0.5) + ember::addcdiv(x, y, w.abs() + 1, -2);
    Tensor r6 = x.masked_fill(w > 0, -7.0) +
                ember::where(w < 0, scalar_tensor(1.5, x.options()), x);
    return std::make_tuple(r1, r2, r3, r4, r5, r6);
  };
  auto e = expect_same(fn, {random({3, 8}, kFloat, 6), random({8}, kFloat, 7),
                            random({3, 1}, kFloat, 8)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::where"), 2);
  EXPECT_EQ(count_in_traces(e, "ember::lerp"), 2);
  EXPECT_EQ(count_in_traces(e, "ember::addcmul"), 1);
}

TEST(E2EPointwise, ComparisonsAndLogical) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    Tensor lt = a < b, le = a <= b, gt = a.gt(0.2), ge = a >= b;
    Tensor eq = a.round() == b.round(), ne = a.ne(b);
    Tensor l = ember::logical_and(lt, ne) | ember::logical_or(gt, eq);
    Tensor x = ember::logical_xor(le, ge) ^ ember::logical_not(gt);
    Tensor any_all = ember::stack({l.any(), x.all(), l.any(1).all()});
    return std::make_tuple(l, x, any_all, ember::isnan(a.log()),
                           ember::isclose(a, a + 1e-9));
  };
  auto e =
      expect_same(fn, {random({5, 6}, kFloat, 9), random({6}, kFloat, 10)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
}

TEST(E2EPointwise, IntegerDtypes) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    Tensor nz = b.abs() + 1; // no zero divisors
    Tensor r1 = a + b * 3 - a * a;
    Tensor r2 = ember::bitwise_and(a, b) + ember::bitwise_or(a, b) +
                ember::bitwise_xor(a, 5) + a.bitwise_not();
    Tensor r3 = a.div(nz, "floor") + a.div(nz, "trunc");
    Tensor r4 = ember::remainder(a, nz) + ember::fmod(a, nz) + a.abs() +
                ember::maximum(a, b) + a.clamp(-3, 4);
    Tensor r5 = a / nz;                      // true division: float
    Tensor r6 = a.to(kInt) * b.to(kInt) + 1; // int32
    return std::make_tuple(r1, r2, r3, r4, r5, r6, a.sum(), a.sign());
  };
  Tensor a = random({4, 5}, kLong, 11), b = random({5}, kLong, 12);
  auto e = expect_same(fn, {a, b});
  EXPECT_EQ(e.graph_count, 1);
  Tensor r5 = std::get<4>(fn(a, b));
  EXPECT_EQ(r5.dtype(), kFloat);
}

TEST(E2EPointwise, BoolDtype) {
  auto fn = [](const Tensor &p, const Tensor &q) {
    Tensor r = (p & q) | (p ^ ~q);
    Tensor s = ember::logical_and(p, q.logical_not());
    Tensor n = p.sum() + q.to(kLong).sum(0); // bool sums are int64
    Tensor f = p.to(kFloat) * 2.5 + q;       // bool promotes
    return std::make_tuple(r, s, n, f, p == q);
  };
  Tensor p = random({6, 3}, kBool, 13), q = random({6, 3}, kBool, 14);
  auto e = expect_same(fn, {p, q});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(std::get<2>(fn(p, q)).dtype(), kLong);
}

TEST(E2EPointwise, TypePromotion) {
  // int + float tensor, int tensor with a wrapped double, float32 with a
  // 0-dim float64 tensor (dimensioned wins), int with a 0-dim float tensor,
  // float16 with float32, bfloat16 with a wrapped number, int32 + int64.
  auto fn = [](const Tensor &i64, const Tensor &f32, const Tensor &d0,
               const Tensor &h, const Tensor &i32) {
    return std::make_tuple(i64 + f32, i64 * 2.5, f32 + d0, i64 + d0, h + f32,
                           h * 3, i32 + i64, i32 * 2, f32.to(kBFloat16) + 1.5,
                           i64 / 2, h.to(kDouble) - i32);
  };
  Tensor i64 = random({3, 4}, kLong, 15), f32 = random({4}, kFloat, 16);
  Tensor d0 = random({}, kDouble, 17), h = random({3, 4}, kHalf, 18);
  Tensor i32 = random({3, 1}, kInt, 19);
  auto e = expect_same(fn, {i64, f32, d0, h, i32});
  EXPECT_EQ(e.graph_count, 1);
  auto r = fn(i64, f32, d0, h, i32);
  EXPECT_EQ(std::get<0>(r).dtype(), kFloat);
  EXPECT_EQ(std::get<1>(r).dtype(), kFloat);
  EXPECT_EQ(std::get<2>(r).dtype(), kFloat);
  EXPECT_EQ(std::get<3>(r).dtype(), kDouble);
  EXPECT_EQ(std::get<4>(r).dtype(), kFloat);
  EXPECT_EQ(std::get<5>(r).dtype(), kHalf);
  EXPECT_EQ(std::get<6>(r).dtype(), kLong);
  EXPECT_EQ(std::get<7>(r).dtype(), kInt);
}

TEST(E2EPointwise, ZeroDimTensors) {
  auto fn = [](const Tensor &s, const Tensor &t, const Tensor &v) {
    Tensor a = s * t + s.exp() - t.abs().sqrt();
    Tensor b = v * s + t; // 0-dim broadcast against [5]
    return std::make_tuple(a, b, a.unsqueeze(0), b.sum(), s.clamp(-0.1, 0.1));
  };
  Tensor s = random({}, kFloat, 20), t = random({}, kFloat, 21);
  auto e = expect_same(fn, {s, t, random({5}, kFloat, 22)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(std::get<0>(fn(s, t, random({5}))).dim(), 0);
}

TEST(E2EPointwise, EmptyTensors) {
  // [0, 3] + [3]: sums over the empty dim give zeros, means over a dim of
  // size 3 give [0].
  auto fn = [](const Tensor &x, const Tensor &y) {
    Tensor a = (x + y).exp() * 2;
    return std::make_tuple(a, a.sum(), a.sum(0), a.sum(1), x.mean(1),
                           ember::cat({x, x}, 0), x.t(), y * 0 + a.sum(0));
  };
  Tensor x = empty({0, 3}), y = random({3}, kFloat, 23);
  auto e = expect_same(fn, {x, y});
  EXPECT_EQ(e.graph_count, 1);
  auto f = compile(fn);
  auto r = f(x, y);
  EXPECT_EQ(std::get<0>(r).sizes().vec(), std::vector<int64_t>({0, 3}));
  EXPECT_TRUE(ember::test::same(std::get<2>(r), zeros({3})));
  EXPECT_EQ(std::get<4>(r).sizes().vec(), std::vector<int64_t>({0}));
}

TEST(E2EPointwise, NonContiguousInputs) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    return std::make_tuple(a * b + a.sigmoid(), (a - b).abs().sum(1),
                           a.t().contiguous(), a + b.t().t());
  };
  Tensor a = noncontiguous(random({4, 6}, kFloat, 24));
  Tensor bt = random({6, 4}, kFloat, 25).t(); // transposed: strides (1, 4)
  ASSERT_FALSE(a.is_contiguous());
  ASSERT_FALSE(bt.is_contiguous());
  // expect_same clones inputs (clone keeps strides only if the kernel does),
  // so also run on the exact tensors.
  auto f = compile(fn);
  auto [r0, r1, r2, r3] = f(a, bt);
  auto [e0, e1, e2, e3] = fn(a, bt);
  EXPECT_TRUE(ember::test::same(r0, e0));
  EXPECT_TRUE(ember::test::same(r1, e1));
  EXPECT_TRUE(ember::test::same(r2, e2));
  EXPECT_TRUE(ember::test::same(r3, e3));
  auto e = f.explain();
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_TRUE(ember::test::contains(e.graphs[0].trace, "f32[4, 6]"));
  // The same shapes, contiguous: a stride guard fails.
  f(random({4, 6}), random({4, 6}));
  e = f.explain();
  ASSERT_EQ(e.recompiles.size(), 1u);
  EXPECT_TRUE(ember::test::contains(e.recompiles[0].reason, "stride mismatch"));
}

TEST(E2EPointwise, ReducedPrecision) {
  auto fn = [](const Tensor &h, const Tensor &b) {
    return std::make_tuple((h * h + 1).sqrt().tanh(), h.sum(1), b.exp() - b,
                           b.relu() * 0.5, h.to(kBFloat16) + b);
  };
  auto e = expect_same(
      fn, {random({5, 8}, kHalf, 26), random({5, 8}, kBFloat16, 27)});
  EXPECT_EQ(e.graph_count, 1);
}

TEST(E2EPointwise, CastsAndCopies) {
  auto fn = [](const Tensor &x) {
    Tensor d = x.to(kDouble) * 1e-3;
    Tensor i = (x * 10).to(kLong);
    Tensor h = x.to(kHalf).to(kFloat);
    Tensor c = x.clone();
    Tensor z = x.to(kBool);
    return std::make_tuple(d, i, h, c, z, x.type_as(i));
  };
  auto e = expect_same(fn, {random({3, 7}, kFloat, 28)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::_to_copy"), 4);
}
