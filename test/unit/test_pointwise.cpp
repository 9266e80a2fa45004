// Every pointwise op of the op table against a float64 reference computed
// here with <cmath>, over float32/float64/float16/bfloat16 and the integer
// dtypes where the op takes them, with broadcast, non-contiguous, 0-dim and
// empty inputs; in-place forms; type promotion of the results.
#include "TestUtil.h"
#include "eager/generated/PointwiseFunctors.h"

#include <map>
#include <set>

using namespace ember;
using namespace ember::test;

namespace {

using Ref = std::function<double(const std::vector<double> &)>;
using Op = std::function<Tensor(const std::vector<Tensor> &)>;

enum Domain { Any, Positive, Unit, NonZero, AboveMinusOne };

struct Case {
  int arity;
  Op op;
  Ref ref;
  Domain domain = Any;
  bool ints = true;       // also run on integer dtypes
  bool bool_out = false;  // result is bool
  bool float_out = false; // integral inputs give the default float dtype
  double tol32 = 1e-5;
};

double sgn(double x) { return double((0 < x) - (x < 0)); }
double pymod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

std::map<std::string, Case> cases() {
  std::map<std::string, Case> m;
  auto U = [&](const std::string &n, std::function<Tensor(const Tensor &)> f,
               std::function<double(double)> r, Domain d = Any,
               bool ints = true, bool fo = false) {
    Case c{1, [f](auto &v) { return f(v[0]); },
           [r](auto &v) { return r(v[0]); }, d, ints};
    c.float_out = fo;
    m[n] = c;
  };
  auto B = [&](const std::string &n,
               std::function<Tensor(const Tensor &, const Tensor &)> f,
               std::function<double(double, double)> r, Domain d = Any,
               bool ints = true) {
    m[n] = Case{2, [f](auto &v) { return f(v[0], v[1]); },
                [r](auto &v) { return r(v[0], v[1]); }, d, ints};
  };
  U(
      "neg", [](auto &x) { return -x; }, [](double x) { return -x; });
  U(
      "abs", [](auto &x) { return x.abs(); },
      [](double x) { return std::fabs(x); });
  U(
      "exp", [](auto &x) { return x.exp(); },
      [](double x) { return std::exp(x); }, Any, true, true);
  U(
      "exp2", [](auto &x) { return x.exp2(); },
      [](double x) { return std::exp2(x); }, Any, true, true);
  U(
      "expm1", [](auto &x) { return x.expm1(); },
      [](double x) { return std::expm1(x); }, Any, true, true);
  U(
      "log", [](auto &x) { return x.log(); },
      [](double x) { return std::log(x); }, Positive, true, true);
  U(
      "log2", [](auto &x) { return x.log2(); },
      [](double x) { return std::log2(x); }, Positive, true, true);
  U(
      "log10", [](auto &x) { return x.log10(); },
      [](double x) { return std::log10(x); }, Positive, true, true);
  U(
      "log1p", [](auto &x) { return x.log1p(); },
      [](double x) { return std::log1p(x); }, Positive, true, true);
  U(
      "sqrt", [](auto &x) { return x.sqrt(); },
      [](double x) { return std::sqrt(x); }, Positive, true, true);
  U(
      "rsqrt", [](auto &x) { return x.rsqrt(); },
      [](double x) { return 1 / std::sqrt(x); }, Positive, true, true);
  U(
      "sin", [](auto &x) { return x.sin(); },
      [](double x) { return std::sin(x); }, Any, true, true);
  U(
      "cos", [](auto &x) { return x.cos(); },
      [](double x) { return std::cos(x); }, Any, true, true);
  U(
      "tan", [](auto &x) { return x.tan(); },
      [](double x) { return std::tan(x); }, Unit, true, true);
  U(
      "asin", [](auto &x) { return x.asin(); },
      [](double x) { return std::asin(x); }, Unit, true, true);
  U(
      "acos", [](auto &x) { return x.acos(); },
      [](double x) { return std::acos(x); }, Unit, true, true);
  U(
      "atan", [](auto &x) { return x.atan(); },
      [](double x) { return std::atan(x); }, Any, true, true);
  U(
      "sinh", [](auto &x) { return x.sinh(); },
      [](double x) { return std::sinh(x); }, Any, true, true);
  U(
      "cosh", [](auto &x) { return x.cosh(); },
      [](double x) { return std::cosh(x); }, Any, true, true);
  U(
      "tanh", [](auto &x) { return x.tanh(); },
      [](double x) { return std::tanh(x); }, Any, true, true);
  U(
      "sigmoid", [](auto &x) { return x.sigmoid(); },
      [](double x) { return 1 / (1 + std::exp(-x)); }, Any, true, true);
  U(
      "relu", [](auto &x) { return x.relu(); },
      [](double x) { return x > 0 ? x : 0; });
  U(
      "_gelu_erf", [](auto &x) { return x.gelu(); },
      [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
      Any, false);
  U(
      "_gelu_tanh", [](auto &x) { return x.gelu("tanh"); },
      [](double x) {
        return 0.5 * x *
               (1 +
                std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      },
      Any, false);
  B(
      "_gelu_erf_backward",
      [](auto &g, auto &x) { return ember::_gelu_erf_backward(g, x); },
      [](double g, double x) {
        return g * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                    x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
      },
      Any, false);
  U(
      "silu", [](auto &x) { return x.silu(); },
      [](double x) { return x / (1 + std::exp(-x)); }, Any, false);
  U(
      "softplus", [](auto &x) { return x.softplus(2, 1); },
      [](double x) { return 2 * x > 1 ? x : std::log1p(std::exp(2 * x)) / 2; },
      Any, false);
  U(
      "erf", [](auto &x) { return x.erf(); },
      [](double x) { return std::erf(x); }, Any, true, true);
  U(
      "erfc", [](auto &x) { return x.erfc(); },
      [](double x) { return std::erfc(x); }, Any, true, true);
  U(
      "sign", [](auto &x) { return x.sign(); }, sgn);
  U(
      "floor", [](auto &x) { return x.floor(); },
      [](double x) { return std::floor(x); });
  U(
      "ceil", [](auto &x) { return x.ceil(); },
      [](double x) { return std::ceil(x); });
  U(
      "round", [](auto &x) { return x.round(); },
      [](double x) { return std::nearbyint(x); });
  U(
      "trunc", [](auto &x) { return x.trunc(); },
      [](double x) { return std::trunc(x); });
  U(
      "frac", [](auto &x) { return x.frac(); },
      [](double x) { return x - std::trunc(x); }, Any, false);
  U(
      "reciprocal", [](auto &x) { return x.reciprocal(); },
      [](double x) { return 1 / x; }, NonZero, true, true);
  U(
      "square", [](auto &x) { return x.square(); },
      [](double x) { return x * x; });
  U(
      "logical_not", [](auto &x) { return x.logical_not(); },
      [](double x) { return double(x == 0); });
  m["logical_not"].bool_out = true;
  U(
      "isnan", [](auto &x) { return x.isnan(); },
      [](double x) { return double(std::isnan(x)); });
  m["isnan"].bool_out = true;
  U(
      "bitwise_not", [](auto &x) { return x.bitwise_not(); },
      [](double x) { return -x - 1; });

  B(
      "add_Tensor", [](auto &a, auto &b) { return a.add(b, 2); },
      [](double a, double b) { return a + 2 * b; });
  B(
      "sub_Tensor", [](auto &a, auto &b) { return a.sub(b, 3); },
      [](double a, double b) { return a - 3 * b; });
  B(
      "rsub_Tensor", [](auto &a, auto &b) { return rsub(a, b); },
      [](double a, double b) { return b - a; });
  B(
      "mul_Tensor", [](auto &a, auto &b) { return a * b; },
      [](double a, double b) { return a * b; });
  B(
      "div_Tensor", [](auto &a, auto &b) { return a / b; },
      [](double a, double b) { return a / b; }, NonZero);
  m["div_Tensor"].float_out = true;
  B(
      "_div_trunc", [](auto &a, auto &b) { return a.div(b, "trunc"); },
      [](double a, double b) { return std::trunc(a / b); }, NonZero);
  B(
      "_div_floor", [](auto &a, auto &b) { return a.div(b, "floor"); },
      [](double a, double b) { return std::floor(a / b); }, NonZero);
  B(
      "pow_Tensor_Tensor", [](auto &a, auto &b) { return a.pow(b); },
      [](double a, double b) { return std::pow(a, b); }, Positive, false);
  B(
      "atan2", [](auto &a, auto &b) { return a.atan2(b); },
      [](double a, double b) { return std::atan2(a, b); });
  m["atan2"].float_out = true;
  B(
      "maximum", [](auto &a, auto &b) { return a.maximum(b); },
      [](double a, double b) { return std::max(a, b); });
  B(
      "minimum", [](auto &a, auto &b) { return a.minimum(b); },
      [](double a, double b) { return std::min(a, b); });
  B(
      "fmod_Tensor", [](auto &a, auto &b) { return a.fmod(b); },
      [](double a, double b) { return std::fmod(a, b); }, NonZero);
  B(
      "remainder_Tensor", [](auto &a, auto &b) { return a % b; }, pymod,
      NonZero);
  B(
      "eq_Tensor", [](auto &a, auto &b) { return a == b; },
      [](double a, double b) { return double(a == b); });
  B(
      "ne_Tensor", [](auto &a, auto &b) { return a != b; },
      [](double a, double b) { return double(a != b); });
  B(
      "lt_Tensor", [](auto &a, auto &b) { return a < b; },
      [](double a, double b) { return double(a < b); });
  B(
      "le_Tensor", [](auto &a, auto &b) { return a <= b; },
      [](double a, double b) { return double(a <= b); });
  B(
      "gt_Tensor", [](auto &a, auto &b) { return a > b; },
      [](double a, double b) { return double(a > b); });
  B(
      "ge_Tensor", [](auto &a, auto &b) { return a >= b; },
      [](double a, double b) { return double(a >= b); });
  B(
      "logical_and", [](auto &a, auto &b) { return a.logical_and(b); },
      [](double a, double b) { return double(a != 0 && b != 0); });
  B(
      "logical_or", [](auto &a, auto &b) { return a.logical_or(b); },
      [](double a, double b) { return double(a != 0 || b != 0); });
  B(
      "logical_xor", [](auto &a, auto &b) { return a.logical_xor(b); },
      [](double a, double b) { return double((a != 0) != (b != 0)); });
  for (auto n :
       {"eq_Tensor", "ne_Tensor", "lt_Tensor", "le_Tensor", "gt_Tensor",
        "ge_Tensor", "logical_and", "logical_or", "logical_xor"})
    m[n].bool_out = true;
  B(
      "bitwise_and_Tensor", [](auto &a, auto &b) { return a & b; },
      [](double a, double b) { return double(int64_t(a) & int64_t(b)); });
  B(
      "bitwise_or_Tensor", [](auto &a, auto &b) { return a | b; },
      [](double a, double b) { return double(int64_t(a) | int64_t(b)); });
  B(
      "bitwise_xor_Tensor", [](auto &a, auto &b) { return a ^ b; },
      [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); });
  U(
      "clamp_min", [](auto &a) { return a.clamp_min(0.25); },
      [](double a) { return std::max(a, 0.25); }, Any, false);
  U(
      "clamp_max", [](auto &a) { return a.clamp_max(-0.5); },
      [](double a) { return std::min(a, -0.5); }, Any, false);
  B(
      "clamp_min_Tensor", [](auto &a, auto &b) { return a.clamp_min(b); },
      [](double a, double b) { return std::max(a, b); });
  B(
      "clamp_max_Tensor", [](auto &a, auto &b) { return a.clamp_max(b); },
      [](double a, double b) { return std::min(a, b); });
  B(
      "lerp_Scalar", [](auto &a, auto &b) { return a.lerp(b, 0.3); },
      [](double a, double b) { return a + 0.3 * (b - a); }, Any, false);
  B(
      "masked_fill_Scalar",
      [](auto &a, auto &b) { return a.masked_fill(b > 0, 7); },
      [](double a, double b) { return b > 0 ? 7 : a; });
  auto T3 =
      [&](const std::string &n,
          std::function<Tensor(const Tensor &, const Tensor &, const Tensor &)>
              f,
          std::function<double(double, double, double)> r, Domain d,
          bool ints) {
        m[n] = Case{3, [f](auto &v) { return f(v[0], v[1], v[2]); },
                    [r](auto &v) { return r(v[0], v[1], v[2]); }, d, ints};
      };
  T3(
      "where_self",
      [](auto &c, auto &a, auto &b) { return where(c > 0, a, b); },
      [](double c, double a, double b) { return c > 0 ? a : b; }, Any, true);
  T3(
      "lerp_Tensor", [](auto &a, auto &b, auto &w) { return a.lerp(b, w); },
      [](double a, double b, double w) { return a + w * (b - a); }, Any, false);
  T3(
      "addcmul", [](auto &a, auto &b, auto &c) { return a.addcmul(b, c, 2); },
      [](double a, double b, double c) { return a + 2 * b * c; }, Any, true);
  T3(
      "addcdiv", [](auto &a, auto &b, auto &c) { return a.addcdiv(b, c, 0.5); },
      [](double a, double b, double c) { return a + 0.5 * b / c; }, NonZero,
      false);
  return m;
}

Tensor input(IntArrayRef shape, ScalarType dt, Domain d, uint64_t seed) {
  Tensor t;
  switch (d) {
  case Positive:
    t = isFloatingType(dt) ? random_positive(shape, dt, 0.1, 4.0, seed)
                           : randint(1, 9, shape, Generator(seed)).to(dt);
    break;
  case Unit:
    t = (random_positive(shape, kDouble, 0.0, 1.8, seed) - 0.9).to(dt);
    break;
  case NonZero:
    t = isFloatingType(dt)
            ? (random_positive(shape, kDouble, 0.3, 3.0, seed) *
               (randint(0, 2, shape, Generator(seed + 1)) * 2 - 1))
                  .to(dt)
            : (randint(1, 6, shape, Generator(seed)) *
               (randint(0, 2, shape, Generator(seed + 1)) * 2 - 1))
                  .to(dt);
    break;
  default:
    t = random(shape, dt, seed);
    if (isFloatingType(dt))
      t = t * 2; // spread out
  }
  return t;
}

// The reference on broadcast float64 copies of the inputs.
Tensor reference(const Case &c, const std::vector<Tensor> &in) {
  std::vector<int64_t> shape(in[0].sizes().begin(), in[0].sizes().end());
  for (auto &t : in) {
    auto s = infer_size(shape, t.sizes());
    shape.assign(s.begin(), s.end());
  }
  std::vector<std::vector<double>> vals;
  for (auto &t : in)
    vals.push_back(values(t.to(kDouble).expand(shape)));
  return from_fn(shape, [&](int64_t i) {
    std::vector<double> args;
    for (auto &v : vals)
      args.push_back(v[size_t(i)]);
    return c.ref(args);
  });
}

void check(const std::string &name, const Case &c, ScalarType dt,
           const std::vector<std::vector<int64_t>> &shapes, bool noncontig,
           uint64_t seed) {
  std::vector<Tensor> in;
  for (int k = 0; k < c.arity; ++k) {
    Tensor t = input(shapes[size_t(k)], dt, c.domain, seed + uint64_t(k));
    in.push_back(noncontig ? noncontiguous(t) : t);
  }
  Tensor out = c.op(in);
  ScalarType want = c.bool_out                             ? kBool
                    : (c.float_out && !isFloatingType(dt)) ? kFloat
                                                           : dt;
  if (name == "logical_not" || name == "isnan")
    want = kBool;
  EXPECT_EQ(out.dtype(), want) << name << " on " << dt;
  double tol = dt == kDouble  ? 1e-12
               : dt == kFloat ? c.tol32
               : dt == kHalf  ? 2e-3
                              : 1.6e-2;
  // Reduced-precision inputs are rounded first, so the reference sees the
  // same values the kernel does; half results are rounded once more.
  Tensor ref = reference(c, in);
  if (!isFloatingType(out.dtype()) && out.dtype() != kBool)
    ref = ref.to(out.dtype());
  EXPECT_TRUE(close(out, ref, tol, tol))
      << name << " on " << dt << (noncontig ? " (non-contiguous)" : "");
}

} // namespace

TEST(Pointwise, EveryOpOfTheTableHasACase) {
  std::set<std::string> table = {
#define EMBER_NAME(cname, arity) #cname,
      EMBER_FORALL_POINTWISE_OPS(EMBER_NAME)
#undef EMBER_NAME
  };
  auto m = cases();
  for (auto &n : table)
    EXPECT_TRUE(m.count(n)) << "pointwise op " << n << " has no test case";
  for (auto &[n, c] : m)
    EXPECT_TRUE(table.count(n)) << "case " << n << " names no op";
}

TEST(Pointwise, FloatDtypesMatchFloat64Reference) {
  auto m = cases();
  uint64_t seed = 1;
  for (auto &[name, c] : m) {
    for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
      if (name.rfind("bitwise", 0) == 0)
        continue;
      std::vector<std::vector<int64_t>> same(3, {4, 5});
      check(name, c, dt, same, false, seed++);
    }
    if (name.rfind("bitwise", 0) != 0) {
      std::vector<std::vector<int64_t>> same(3, {3, 7});
      check(name, c, kFloat, same, true, seed++);
    }
  }
}

TEST(Pointwise, BroadcastZeroDimAndEmpty) {
  auto m = cases();
  uint64_t seed = 100;
  for (auto &[name, c] : m) {
    ScalarType dt = name.rfind("bitwise", 0) == 0 ? kLong : kFloat;
    if (c.arity > 1) {
      // [3,1,4] with [5,4] (and [4] for a third input)
      std::vector<std::vector<int64_t>> b = {{3, 1, 4}, {5, 4}, {4}};
      check(name, c, dt, b, false, seed++);
      std::vector<std::vector<int64_t>> s = {{2, 3}, {}, {}};
      check(name, c, dt, s, false, seed++);
    }
    std::vector<std::vector<int64_t>> z(3, std::vector<int64_t>{});
    check(name, c, dt, z, false, seed++);
    std::vector<std::vector<int64_t>> e(3, {0, 3});
    check(name, c, dt, e, false, seed++);
  }
}

TEST(Pointwise, IntegerDtypes) {
  auto m = cases();
  uint64_t seed = 300;
  for (auto &[name, c] : m) {
    if (!c.ints)
      continue;
    for (ScalarType dt : {kLong, kInt, kShort, kChar}) {
      if (name == "log" || name == "log2" || name == "log10" ||
          name == "log1p" || name == "sqrt" || name == "rsqrt" ||
          name == "asin" || name == "acos" || name == "tan")
        continue; // integer inputs in their domain are covered by floats
      std::vector<std::vector<int64_t>> same(3, {3, 4});
      check(name, c, dt, same, false, seed++);
    }
  }
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
                     "not supported on bool");
  EXPECT_EMBER_ERROR(-ones({2}, kBool), "not supported on bool");
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
