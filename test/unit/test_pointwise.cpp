// Every pointwise op of the op table against its float64 reference (the
// OpInfo table, test/support/OpInfo.h), over float32/float64/float16/
// bfloat16 and the integer dtypes the entry lists, with broadcast,
// non-contiguous, 0-dim and empty inputs; their in-place and `.Scalar`
// forms; type promotion of the results.
#include "OpInfo.h"
#include "TestUtil.h"
#include "eager/generated/PointwiseFunctors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

using namespace ember;
using namespace ember::test;

namespace {

const ShapeSample &shape_sample(const OpInfo &o, const std::string &label) {
  static std::map<int, std::vector<ShapeSample>> by_arity;
  auto &v = by_arity[o.arity];
  if (v.empty())
    v = pointwise_shapes(o.arity);
  for (const ShapeSample &s : v)
    if (s.label == label)
      return s;
  throw std::runtime_error("no shape sample " + label);
}

bool has(const std::vector<ScalarType> &v, ScalarType dt) {
  return std::find(v.begin(), v.end(), dt) != v.end();
}

/// op on the inputs of sample `s` in dtype dt, against the reference.
void check(const OpInfo &o, ScalarType dt, const ShapeSample &s,
           uint64_t seed) {
  std::vector<Tensor> in = make_inputs(o, s, dt, seed);
  EXPECT_TRUE(matches_reference(o, o.op(in), in, dt))
      << o.name << " on " << dt << " (" << s.label << ")";
}

} // namespace

// See Note [The OpInfo table].
TEST(Pointwise, EveryOpOfTheTableHasACase) {
  std::set<std::string> table = {
#define EMBER_NAME(cname, arity) #cname,
      EMBER_FORALL_POINTWISE_OPS(EMBER_NAME)
#undef EMBER_NAME
  };
  std::map<std::string, int> arity = {
#define EMBER_ARITY(cname, arity) {#cname, arity},
      EMBER_FORALL_POINTWISE_OPS(EMBER_ARITY)
#undef EMBER_ARITY
  };
  for (auto &n : table) {
    const OpInfo *o = find_op_info(n);
    EXPECT_TRUE(o && o->kind == Kind::Pointwise && o->ref && o->op)
        << "pointwise op " << n
        << " has no entry with a reference in test/support/OpInfo.cpp";
    if (o) {
      EXPECT_EQ(o->arity, arity[n]) << n;
    }
  }
  for (const OpInfo *o : pointwise_op_infos())
    EXPECT_TRUE(table.count(o->cname()))
        << "entry " << o->name << " names no pointwise op";
}

// Every form that ops.yaml declares (`inplace`, `scalar_overload`) has a
// call in the table, and every in-place form the table calls is
// registered.
TEST(Pointwise, EveryFormOfTheOpTableHasACall) {
  int pointwise = 0;
  for (const OpTableEntry &e : op_table_entries()) {
    if (!e.pointwise)
      continue;
    ++pointwise;
    const OpInfo *o = find_op_info(e.name);
    ASSERT_TRUE(o) << e.name << " (ops.yaml) has no OpInfo entry";
    EXPECT_EQ(e.inplace, bool(o->op_))
        << e.name << ": ops.yaml inplace: " << e.inplace;
    EXPECT_EQ(e.inplace, !o->inplace.empty()) << e.name;
    EXPECT_EQ(e.scalar_overload, bool(o->scalar))
        << e.name << ": ops.yaml scalar_overload: " << e.scalar_overload;
    EXPECT_EQ(e.scalar_overload && e.inplace, bool(o->scalar_))
        << e.name << ": its in-place .Scalar form";
  }
  EXPECT_EQ(pointwise, int(pointwise_op_infos().size()));
  for (const OpInfo *o : pointwise_op_infos()) {
    EXPECT_TRUE(Dispatcher::singleton().findOp(o->name)) << o->name;
    if (!o->inplace.empty()) {
      EXPECT_TRUE(Dispatcher::singleton().findOp(o->inplace)) << o->inplace;
    }
  }
}

TEST(Pointwise, FloatDtypesMatchFloat64Reference) {
  uint64_t seed = 1;
  for (const OpInfo *o : pointwise_op_infos()) {
    for (ScalarType dt : kFloatDtypes)
      if (has(o->dtypes, dt))
        check(*o, dt, shape_sample(*o, "same shape"), seed++);
    if (has(o->dtypes, kFloat))
      check(*o, kFloat, shape_sample(*o, "non-contiguous"), seed++);
  }
}

TEST(Pointwise, BroadcastZeroDimAndEmpty) {
  uint64_t seed = 100;
  for (const OpInfo *o : pointwise_op_infos()) {
    ScalarType dt = o->dtypes.front();
    for (const ShapeSample &s : pointwise_shapes(o->arity))
      if (s.label != "same shape" && s.label != "non-contiguous")
        check(*o, dt, s, seed++);
  }
}

// Note [Pointwise runs in blocks]: every op of two or more operands with
// some of them 0-dim (each subset but all), on its first and last dtypes and
// float16, over lengths that end inside a block of 256, span several, and
// split across threads, equal to the same op with those operands expanded
// to contiguous copies (the contiguous loop, the same functor: equal bits).
TEST(Pointwise, ZeroDimOperandsMatchTheirContiguousCopies) {
  uint64_t seed = 300;
  size_t checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    if (o->arity < 2)
      continue;
    std::vector<ScalarType> dts{o->dtypes.front(), o->dtypes.back()};
    if (has(o->dtypes, kHalf))
      dts.push_back(kHalf);
    for (ScalarType dt : dts)
      for (int64_t n :
           {int64_t(1), int64_t(255), int64_t(1000), int64_t(70001)})
        for (unsigned subset = 1; subset + 1 < (1u << o->arity); ++subset) {
          ShapeSample s{"wide", {}, false};
          for (int k = 0; k < o->arity; ++k)
            s.shapes.push_back((subset >> k) & 1u ? std::vector<int64_t>{}
                                                  : std::vector<int64_t>{n});
          std::vector<Tensor> in = make_inputs(*o, s, dt, seed++);
          std::vector<Tensor> copies;
          for (const Tensor &t : in)
            copies.push_back(t.dim() == 0 ? t.expand({n}).contiguous() : t);
          Tensor got = o->op(in), want = o->op(copies);
          EXPECT_TRUE(got.equal(want) ||
                      (isFloatingType(got.dtype()) &&
                       allclose(got, want, 0, 0, /*equal_nan=*/true)))
              << o->name << " on " << dt << ", n " << n << ", 0-dim operands "
              << subset;
          ++checked;
        }
  }
  EXPECT_GT(checked, 50u);
}

// Note [Powers by cheaper ops]: PyTorch's values (sqrt's and rsqrt's at
// -0 and -inf, products for 2, 3, -2), ones for the power 0 (NaN
// included), a copy for 1; float16's power 3 rounded once.
TEST(Pointwise, PowersByCheaperOpsGivePyTorchsValues) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor sp = tensor({-0.0f, -inf, inf, NAN, -2.0f, 0.0f, 4.0f});
  auto bits_equal = [](const Tensor &a, const Tensor &b) {
    Tensor ca = a.contiguous(), cb = b.contiguous();
    return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
           std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
  };
  EXPECT_TRUE(bits_equal(sp.pow(0.5), sp.sqrt()));
  EXPECT_TRUE(std::signbit(sp.pow(0.5)[0].item<float>())); // -0, as sqrt
  EXPECT_TRUE(std::isnan(sp.pow(0.5)[1].item<float>()));   // not +inf
  EXPECT_TRUE(bits_equal(sp.pow(-0.5), sp.rsqrt()));
  EXPECT_EQ(sp.pow(-0.5)[0].item<float>(), -inf);
  EXPECT_TRUE(bits_equal(sp.pow(-1), sp.reciprocal()));
  EXPECT_TRUE(bits_equal(sp.pow(0), ones({7})));
  Tensor one = sp.pow(1);
  EXPECT_TRUE(bits_equal(one, sp));
  EXPECT_NE(one.data_ptr(), sp.data_ptr());
  for (ScalarType t : {kFloat, kDouble}) {
    Tensor x = ember::test::random({1000}, t, 60) * 30;
    EXPECT_TRUE(bits_equal(x.pow(2), x * x)) << t;
    EXPECT_TRUE(bits_equal(x.pow(2.0), x * x)) << t;
    EXPECT_TRUE(bits_equal(x.pow(3), x * x * x)) << t;
    EXPECT_TRUE(bits_equal(x.pow(-2), (x * x).reciprocal())) << t;
    // x * x is the square rounded once: float64's reference, rounded.
    if (t == kFloat) {
      EXPECT_TRUE(bits_equal(x.pow(2), (x.to(kDouble) * x.to(kDouble)).to(t)));
    }
  }
  // float16 takes std::pow (rounded once) except for 2 and -1, as
  // PyTorch: pow(-0, 0.5) is +0 there, pow(-inf, -0.5) is 0 (found by a
  // probe); bfloat16 takes the products, each rounded.
  Tensor h = ember::test::random({1000}, kHalf, 61) * 8;
  EXPECT_TRUE(bits_equal(h.pow(2), h * h));
  EXPECT_TRUE(bits_equal(h.pow(3), h.to(kFloat).pow(3).to(kHalf)));
  Tensor hs = sp.to(kHalf);
  EXPECT_FALSE(std::signbit(hs.pow(0.5)[0].item<float>()));
  EXPECT_EQ(hs.pow(0.5)[1].item<float>(), inf);
  EXPECT_EQ(hs.pow(-0.5)[1].item<float>(), 0.0f);
  Tensor b = ember::test::random({1000}, kBFloat16, 62) * 8;
  EXPECT_TRUE(bits_equal(b.pow(3), b * b * b));
  EXPECT_TRUE(bits_equal(b.pow(-2), (b * b).reciprocal()));
  EXPECT_TRUE(bits_equal(b.pow(0.5), b.sqrt()));
  Tensor i = tensor({-3, 0, 7}, TensorOptions(kLong));
  EXPECT_TRUE(i.pow(2).equal(tensor({9, 0, 49}, TensorOptions(kLong))));
  EXPECT_EQ(i.pow(0.5).dtype(), kFloat);
  // An integer tensor to a floating power: converted, then the same forms
  // (PyTorch: 46341^3.0 is the float product 99516749447168).
  Tensor big = tensor({46341}, TensorOptions(kInt));
  EXPECT_EQ(big.pow(3.0).item<float>(), 99516749447168.0f);
  EXPECT_TRUE(bits_equal(big.pow(3.0),
                         big.to(kFloat) * big.to(kFloat) * big.to(kFloat)));
  EXPECT_EMBER_ERROR(tensor({false, true}).pow(-1),
                     "Integers to negative integer powers are not allowed");
  // x.pow_(number): in place, with the same values; a result the dtype
  // cannot hold raises.
  Tensor y = ember::test::random({50}, kFloat, 63), y0 = y.clone();
  EXPECT_TRUE(y.pow_(2).is_same(y));
  EXPECT_TRUE(bits_equal(y, y0 * y0));
  EXPECT_EMBER_ERROR(i.clone().pow_(0.5), "can't be cast to the desired");
}

// Note [Pointwise runs in blocks]: every op of the table on float16,
// over contiguous runs (converted 8 at a time in blocks of 256) and the
// same values strided (converted one by one), gives the same bits on
// inputs without NaNs (a NaN result's payload may differ); lengths across
// blocks and threads.
TEST(Pointwise, Float16RunsInBlocksMatchTheElementwiseLoop) {
  uint64_t seed = 700;
  size_t checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    if (std::find(o->dtypes.begin(), o->dtypes.end(), kHalf) == o->dtypes.end())
      continue;
    for (int64_t n : {int64_t(7), int64_t(1000), int64_t(70001)}) {
      ShapeSample s{"runs", {}, false};
      for (int k = 0; k < o->arity; ++k)
        s.shapes.push_back({n});
      std::vector<Tensor> in = make_inputs(*o, s, kHalf, seed++);
      std::vector<Tensor> strided;
      for (const Tensor &t : in)
        strided.push_back(stack({t, t}, 1).select(1, 0));
      Tensor got = o->op(in), want = o->op(strided).contiguous();
      got = got.contiguous();
      EXPECT_TRUE(got.dtype() == want.dtype() &&
                  std::memcmp(got.data_ptr(), want.data_ptr(), got.nbytes()) ==
                      0)
          << o->name << ", n " << n;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(Pointwise, IntegerDtypes) {
  uint64_t seed = 300;
  for (const OpInfo *o : pointwise_op_infos())
    for (ScalarType dt : kIntDtypes)
      if (has(o->dtypes, dt))
        check(*o, dt, shape_sample(*o, "same shape"), seed++);
}

// Every in-place form writes the functional result into self (on the
// dtypes where that result has self's dtype), with broadcast operands and
// a non-contiguous self.
TEST(Pointwise, InPlaceFormsMatchFloat64Reference) {
  uint64_t seed = 500;
  int checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    if (!o->op_)
      continue;
    for (ScalarType dt : o->dtypes) {
      if (o->result_dtype(dt) != dt)
        continue;
      for (const char *label :
           {"same shape", "non-contiguous", "0-dim with (2,3)"}) {
        if (o->arity == 1 && std::string(label) == "0-dim with (2,3)")
          continue;
        const ShapeSample &s = shape_sample(*o, label);
        std::vector<Tensor> in = make_inputs(*o, s, dt, seed++);
        std::vector<Tensor> before = in;
        before[0] = in[0].clone();
        Tensor out = o->op_(in); // writes in[0], non-contiguous or not
        EXPECT_TRUE(out.is_same(in[0])) << o->inplace << ": returns self";
        EXPECT_TRUE(matches_reference(*o, in[0], before, dt))
            << o->inplace << " on " << dt << " (" << label << ")";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

// Every `.Scalar` form (and `_.Scalar`) computes the op with `other` a
// Scalar: the reference at that value, the dtype of the Tensor form.
TEST(Pointwise, ScalarFormsMatchFloat64Reference) {
  uint64_t seed = 700;
  int checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    if (!o->scalar)
      continue;
    ASSERT_EQ(o->arity, 2) << o->name;
    for (ScalarType dt : o->dtypes) {
      Tensor a = sample_input({4, 5}, dt, o->domain, seed++);
      Tensor b = sample_input({}, dt, o->domain, seed++);
      Scalar other = b.item();
      EXPECT_TRUE(matches_reference(*o, o->scalar(a, other), {a, b}, dt))
          << o->short_name() << " with a Scalar on " << dt;
      ++checked;
      if (o->scalar_ && o->result_dtype(dt) == dt) {
        Tensor x = noncontiguous(a);
        Tensor out = o->scalar_(x, other);
        EXPECT_TRUE(out.is_same(x));
        EXPECT_TRUE(matches_reference(*o, x, {a, b}, dt))
            << o->short_name() << " in place with a Scalar on " << dt;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(Pointwise, InPlaceFormsMatchFunctional) {
  Tensor a = random({4, 5}, kFloat, 1);
  Tensor b = random({5}, kFloat, 2);
  Tensor x = a.clone();
  x.add_(b, 2).mul_(3).sub_(1.5).div_(2).neg_().exp_().log_().tanh_();
  EXPECT_TRUE(close(x, ((a.add(b, 2) * 3 - 1.5) / 2).neg().exp().log().tanh()));
  Tensor y = a.clone();
  y += b;
  y -= 2;
  y *= b;
  y /= 4;
  EXPECT_TRUE(close(y, (a + b - 2) * b / 4));
  Tensor z = a.clone();
  z.clamp_min_(0).clamp_max_(0.5);
  EXPECT_TRUE(close(z, a.clamp(0, 0.5)));
  Tensor w = a.clone();
  w.masked_fill_(a > 0, 0.0);
  EXPECT_TRUE(close(w, a.minimum(zeros({}))));
  // Integer tensor, in place with an integer operand: stays int64.
  Tensor i = arange(6);
  i.add_(2).mul_(3);
  EXPECT_EQ(i.dtype(), kLong);
  EXPECT_TRUE(close(i, (arange(6) + 2) * 3));
  // Float self, double operand: computed in double, stored as float.
  Tensor f = ones({3});
  f.add_(tensor({1.0, 2.0, 3.0}, kDouble));
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_TRUE(close(f, tensor({2.0, 3.0, 4.0})));
  // Overlapping in-place reads are computed as the functional op.
  Tensor sq = arange(9, kFloat).view({3, 3});
  Tensor expect = sq + sq.t();
  sq.add_(sq.t());
  EXPECT_TRUE(close(sq, expect));
}

TEST(Pointwise, TypePromotionOfResults) {
  Tensor i = arange(3);          // int64
  Tensor i32 = arange(3, kInt);  // int32
  Tensor f = ones({3});          // float32
  Tensor d = ones({3}, kDouble); // float64
  Tensor h = ones({3}, kHalf);   // float16
  Tensor b = ones({3}, kBool);
  EXPECT_EQ((i + f).dtype(), kFloat);
  EXPECT_EQ((i + 2.5).dtype(), kFloat); // Python float -> default dtype
  EXPECT_EQ((i32 + 2).dtype(), kInt);   // Python int keeps int32
  EXPECT_EQ((i32 + i).dtype(), kLong);
  EXPECT_EQ((h + 2.5).dtype(), kHalf); // scalar does not upgrade floats
  EXPECT_EQ((h + f).dtype(), kFloat);
  EXPECT_EQ((f + d).dtype(), kDouble);
  EXPECT_EQ((b + b).dtype(), kBool);
  EXPECT_EQ((b + 1).dtype(), kLong);
  EXPECT_EQ((b + 1.5).dtype(), kFloat);
  EXPECT_EQ((f + tensor(2.0, kDouble)).dtype(), kFloat); // 0-dim: same category
  EXPECT_EQ((i + tensor(2.0, kDouble)).dtype(), kDouble); // 0-dim float wins
  EXPECT_EQ((i / 2).dtype(), kFloat);
  EXPECT_EQ((i > 1).dtype(), kBool);
  EXPECT_EQ(ones({2}, kByte).add(ones({2}, kChar)).dtype(), kShort);
  EXPECT_EQ((i.to(kBFloat16) + h).dtype(), kFloat);
  EXPECT_TRUE(close(tensor({-7, 7}).div(2, "floor"), tensor({-4, 3})));
  EXPECT_TRUE(close(tensor({-7, 7}).div(2, "trunc"), tensor({-3, 3})));
  EXPECT_EQ(tensor({-7, 7}).div(2, "floor").dtype(), kLong);
  EXPECT_TRUE(close(tensor({-7, 7}) % 3, tensor({2, 1})));
  EXPECT_TRUE(close(tensor({-7, 7}).fmod(3), tensor({-1, 1})));
  EXPECT_TRUE(close(2 - tensor({1.0, 2.0}), tensor({1.0, 0.0})));
  EXPECT_TRUE(close(1 / tensor({2.0, 4.0}), tensor({0.5, 0.25})));
  EXPECT_TRUE(close(tensor({2, 3}).pow(2), tensor({4, 9})));
  EXPECT_TRUE(close(pow(2, tensor({1, 3})), tensor({2, 8})));
  EXPECT_TRUE(
      close(tensor({1.0, 2.0}).pow(0.5), tensor({1.0, std::sqrt(2.0)})));
}

TEST(Pointwise, NanPropagationAndSpecialValues) {
  double nan = std::nan("");
  Tensor a = tensor({nan, 1.0, -2.0});
  Tensor b = tensor({0.0, nan, -3.0});
  auto va = values(a.maximum(b));
  EXPECT_TRUE(std::isnan(va[0]) && std::isnan(va[1]));
  EXPECT_EQ(va[2], -2.0);
  EXPECT_TRUE(std::isnan(values(a.clamp(0, 1))[0]));
  EXPECT_TRUE(close(tensor({0.5, 1.5, 2.5, -0.5}).round(),
                    tensor({0.0, 2.0, 2.0, -0.0})));
  EXPECT_TRUE(
      close(tensor({-0.0, 0.0, -3.0}).sign(), tensor({0.0, 0.0, -1.0})));
  EXPECT_TRUE(close(tensor({1.0, 0.0}) / 0.0, tensor({INFINITY, nan})));
}

TEST(Pointwise, Errors) {
  Tensor i = arange(4);
  EXPECT_EMBER_ERROR(i.div(0, "floor"), "ZeroDivisionError");
  EXPECT_EMBER_ERROR(i % 0, "ZeroDivisionError");
  EXPECT_EMBER_ERROR(ones({3}) + ones({4}), "must match the size of tensor b");
  EXPECT_EMBER_ERROR(ones({2}, kBool) - ones({2}, kBool),
                     "with two bool tensors is not supported");
  EXPECT_EMBER_ERROR(-ones({2}, kBool), "on a bool tensor is not supported");
  Tensor b = ones({2}, kBool);
  EXPECT_EMBER_ERROR(ember::neg_(b), "on a bool tensor is not supported");
  EXPECT_EMBER_ERROR(ones({2}) & ones({2}),
                     "not implemented for dtype float32");
  EXPECT_EMBER_ERROR(
      i.add_(0.5),
      "result type Float can't be cast to the desired output type Long");
  EXPECT_EMBER_ERROR(ones({3}).add_(ones({2, 3})),
                     "doesn't match the broadcast shape");
  EXPECT_EMBER_ERROR(ones({1}).expand({3}).add_(1),
                     "more than one element of the written-to tensor");
  EXPECT_EMBER_ERROR(ones({2}).gelu("fast"),
                     "approximate must be 'none' or 'tanh'");
  EXPECT_EMBER_ERROR(ones({2}).div(ones({2}), "round"), "rounding_mode");
  EXPECT_EMBER_ERROR(arange(3).pow(-1), "Integers to negative integer powers");
  EXPECT_EMBER_ERROR(
      ones({2}).clamp(std::optional<Scalar>(), std::optional<Scalar>()),
      "At least one of 'min' or 'max'");
  EXPECT_EMBER_ERROR(Tensor() + ones({1}), "undefined");
}

TEST(Pointwise, ClampInPlace) {
  Tensor a = random({4, 5}, kFloat, 3);
  Tensor x = a.clone();
  x.clamp_(-0.5, 0.5);
  EXPECT_TRUE(close(x, a.clamp(-0.5, 0.5)));
  Tensor y = a.clone();
  y.clamp_(std::nullopt, 0.25);
  EXPECT_TRUE(close(y, a.clamp_max(0.25)));
  Tensor lo = random({5}, kFloat, 4);
  Tensor z = a.clone();
  z.clamp_(lo, std::optional<Tensor>());
  EXPECT_TRUE(close(z, a.maximum(lo)));
  EXPECT_EMBER_ERROR(
      a.clone().clamp_(std::optional<Scalar>(), std::optional<Scalar>()),
      "At least one of 'min' or 'max'");
}

// lerp promotes none of its tensors, as PyTorch's ("expected dtype float
// for `end` but got dtype double"); a 0-dim weight of another dtype is
// taken (found by a probe: ember promoted).
TEST(Pointwise, LerpTakesOneDtype) {
  Tensor a = ember::tensor({1.0f, 2.0f}), b = ember::tensor({3.0f, 5.0f});
  EXPECT_EMBER_ERROR(ember::lerp(a, b.to(kDouble), 0.5),
                     "lerp: expected dtype Float for `end` but got dtype "
                     "Double");
  EXPECT_EMBER_ERROR(ember::lerp(a, b.to(kDouble).sum(), 0.5),
                     "for `end` but got dtype Double");
  EXPECT_EMBER_ERROR(ember::lerp(a, b, b.to(kDouble)),
                     "for `weight` but got dtype Double");
  EXPECT_EMBER_ERROR(a.clone().lerp_(b.to(kHalf), 0.5),
                     "for `end` but got dtype Half");
  Tensor w = ember::tensor(0.5, TensorOptions(kDouble));
  EXPECT_TRUE(ember::lerp(a, b, w).equal(ember::tensor({2.0f, 3.5f})));
  EXPECT_EQ(ember::lerp(a, b, w).dtype(), kFloat);
}

// clamp with tensor bounds promotes self and both bounds at once, as
// PyTorch (found by a probe: pairwise, a float16 self rounded an int32
// bound through float16, and a 0-dim float bound made an int32 self
// float32 beside a float16 upper bound).
TEST(Pointwise, ClampWithTensorBoundsPromotesAllThree) {
  Tensor h = ember::tensor({1.0f, -INFINITY}).to(kHalf);
  Tensor lo = ember::tensor({2049, INT32_MIN}, TensorOptions(kInt));
  Tensor hi = ember::tensor({1e6f, 0.5f});
  Tensor r = ember::clamp(h, lo, hi);
  EXPECT_EQ(r.dtype(), kFloat);
  EXPECT_EQ(r[0].item<float>(), 2049.0f);
  EXPECT_EQ(r[1].item<float>(), -2147483648.0f);
  Tensor i = ember::tensor({3, -1}, TensorOptions(kInt));
  Tensor r2 = ember::clamp(i, ember::tensor(0.5f),
                           ember::tensor({2.0f, 2.0f}).to(kHalf));
  EXPECT_EQ(r2.dtype(), kHalf);
  EXPECT_TRUE(r2.to(kFloat).equal(ember::tensor({2.0f, 0.5f})));
}

// masked_fill with a 0-dim value tensor that requires grad: as PyTorch, the
// value's gradient is the sum of the output's gradient over the filled
// points, self's is zero there (found by a probe: the composite read
// value.item(), so the value got no gradient); in place too. Values equal
// those of the Scalar form.
TEST(MaskedFill, TensorValueGetsTheGradientOfTheFilledPoints) {
  for (bool inplace : {false, true}) {
    SCOPED_TRACE(inplace);
    Tensor self = random({3, 4}, kDouble, 7).requires_grad_(true);
    Tensor mask = ember::tensor({true, false, true, false});
    Tensor value = ember::tensor(2.5, TensorOptions(kDouble));
    value.requires_grad_(true);
    Tensor w = random({3, 4}, kDouble, 8);
    Tensor y = self * 1;
    if (inplace)
      y.masked_fill_(mask, value);
    else
      y = y.masked_fill(mask, value);
    (y * w).sum().backward();
    EXPECT_TRUE(close(y.detach(), self.detach().masked_fill(mask, 2.5), 0, 0));
    Tensor filled = mask.to(kDouble).expand({3, 4});
    EXPECT_TRUE(close(value.grad(), (w * filled).sum(), 1e-12, 1e-12));
    EXPECT_TRUE(close(self.grad(), w * (1 - filled), 0, 0));
  }
  // Without a gradient to record, the value's dtype still follows self's.
  Tensor ints = ember::tensor({1, 2, 3});
  EXPECT_EQ(
      ints.masked_fill(ember::tensor({true, false, true}), ember::tensor(7.9))
          .dtype(),
      kLong);
}
