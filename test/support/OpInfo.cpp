// The OpInfo table (Note [The OpInfo table] in OpInfo.h).
#include "OpInfo.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

namespace ember::test {
namespace {

using namespace samples;
using V = std::vector<Tensor>;

double sgn(double x) { return double((0 < x) - (x < 0)); }
double pymod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

// --- generic shape-rule samples
// ------------------------------------------------

/// Every dtype group, contiguous or not, 0-dim and empty.
std::vector<MetaSample> unary_meta() {
  return {{[] {
            return Stack{NC(R({3, 4}))};
          }},
          {[] {
            return Stack{R({3, 4}, kLong)};
          }},
          {[] {
            return Stack{R({2, 3}, kInt)};
          }},
          {[] { return Stack{R({5}, kBool)}; }},
          {[] { return Stack{R({}, kDouble)}; }},
          {[] {
            return Stack{R({0, 3}, kHalf)};
          }},
          {[] { return Stack{R({4}, kBFloat16)}; }}};
}

/// Broadcasts, promotion between dtypes and with wrapped numbers, and
/// shapes that do not broadcast. `alpha`: the op takes alpha (add, sub).
std::vector<MetaSample> binary_meta(bool alpha) {
  auto mk = [alpha](Tensor a, Tensor b) {
    Stack s{std::move(a), std::move(b)};
    if (alpha)
      s.emplace_back(1);
    return s;
  };
  return {
      {[mk] {
        return mk(R({2, 3, 4}), NZ({3, 1}));
      }},
      {[mk] {
        return mk(R({3, 4}, kLong), NZ({4}, kFloat));
      }},
      {[mk] {
        return mk(NZ({3, 4}, kFloat), R({3, 4}, kLong));
      }},
      {[mk] {
        return mk(R({2, 3}, kInt), NZ({}, kLong));
      }},
      {[mk] { return mk(R({3}, kHalf), W(2.5)); }},
      {[mk] { return mk(R({3}, kLong), W(2.5)); }},
      {[mk] { return mk(R({3}, kInt), W(int64_t(3))); }},
      {[mk] { return mk(R({4}, kBool), R({4}, kBool, 2)); }},
      {[mk] {
        return mk(NC(R({2, 3}, kLong)), NC(NZ({2, 3}, kLong)));
      }},
      {[mk] { return mk(R({}, kDouble), NZ({2}, kFloat)); }},
      {[mk] {
        return mk(R({0, 3}), NZ({3}));
      }},
      {[mk] {
        return mk(R({3}), NZ({2, 3}));
      }}, // in place: no fit
      {[mk] {
         return mk(R({2, 3}), NZ({4}));
       },
       kThrows},
      {[mk] {
        return mk(R({3}).expand({2, 3}), NZ({2, 3}));
      }},
  };
}

// --- entry builder
// -------------------------------------------------------------

/// "ember::add.Tensor" -> "ember::add_.Tensor".
std::string inplace_name(const std::string &name) {
  auto dot = name.find('.');
  return dot == std::string::npos
             ? name + "_"
             : name.substr(0, dot) + "_" + name.substr(dot);
}

struct E {
  OpInfo &o;
  E &dom(Domain d) {
    o.domain = d;
    return *this;
  }
  E &dtypes(std::vector<ScalarType> d) {
    o.dtypes = std::move(d);
    return *this;
  }
  E &floats() { return dtypes(kFloatDtypes); }
  E &result(Result r) {
    o.result = r;
    return *this;
  }
  E &tol32(double t) {
    o.tol32 = t;
    return *this;
  }
  /// The in-place form (named after the op: add.Tensor -> add_.Tensor).
  E &ip(TensorFn f) {
    o.inplace = inplace_name(o.name);
    o.op_ = std::move(f);
    return *this;
  }
  E &sc(ScalarFormFn f, ScalarFormFn f_ = {}) {
    o.scalar = std::move(f);
    o.scalar_ = std::move(f_);
    return *this;
  }
  E &grad(std::vector<int> args, std::vector<GradSample> g) {
    o.grad_args = std::move(args);
    o.grad = std::move(g);
    return *this;
  }
  E &more_grad(GradSample g) {
    o.grad.push_back(std::move(g));
    return *this;
  }
  E &meta(std::vector<MetaSample> m) {
    o.meta = std::move(m);
    return *this;
  }
};

struct Builder {
  std::vector<OpInfo> ops;
  E entry(const std::string &name, Kind k) {
    ops.emplace_back();
    ops.back().name = "ember::" + name;
    ops.back().kind = k;
    return E{ops.back()};
  }
  /// A unary pointwise op: f, its reference r; generic shape-rule samples.
  E un(const std::string &name, Unary f, std::function<double(double)> r) {
    E e = entry(name, Kind::Pointwise);
    e.o.arity = 1;
    e.o.op = [f](const V &v) { return f(v[0]); };
    e.o.ref = [r](const std::vector<double> &v) { return r(v[0]); };
    e.o.meta = unary_meta();
    return e;
  }
  E bin(const std::string &name, Binary f,
        std::function<double(double, double)> r, bool alpha = false) {
    E e = entry(name, Kind::Pointwise);
    e.o.arity = 2;
    e.o.op = [f](const V &v) { return f(v[0], v[1]); };
    e.o.ref = [r](const std::vector<double> &v) { return r(v[0], v[1]); };
    e.o.meta = binary_meta(alpha);
    return e;
  }
  E ter(const std::string &name,
        std::function<Tensor(const Tensor &, const Tensor &, const Tensor &)> f,
        std::function<double(double, double, double)> r) {
    E e = entry(name, Kind::Pointwise);
    e.o.arity = 3;
    e.o.op = [f](const V &v) { return f(v[0], v[1], v[2]); };
    e.o.ref = [r](const std::vector<double> &v) { return r(v[0], v[1], v[2]); };
    return e;
  }
};

// In-place forms: x.exp_() on in[0].
#define IP1(m) [](const V &v) { return Tensor(v[0].m()); }
#define IP2(m) [](const V &v) { return Tensor(v[0].m(v[1])); }

Tensor first(std::tuple<Tensor, Tensor> t) { return std::get<0>(t); }

/// maximum/minimum/clamp with tensor bounds: inputs without ties.
std::vector<GradSample> max_min_cases(Binary f) {
  return {binary(
              "same shape",
              [] {
                return distinct_pair({3, 4}, {3, 4}, 1);
              },
              f, true),
          binary(
              "broadcast (3,1)x(1,4)",
              [] {
                return distinct_pair({3, 1}, {1, 4}, 2);
              },
              f, true),
          binary(
              "0-dim x (2,3)",
              [] {
                return distinct_pair({}, {2, 3}, 3);
              },
              f)};
}

// --- pointwise unary
// -------------------------------------------------------------

void unary_ops(Builder &b) {
  const std::vector<int> x = {0};
  b.un(
       "neg", [](auto &x) { return -x; }, [](double x) { return -x; })
      .ip(IP1(neg_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::neg(x); }, true));
  b.un(
       "abs", [](auto &x) { return x.abs(); },
       [](double x) { return std::fabs(x); })
      .ip(IP1(abs_))
      .grad(x, unary_cases(
                   AWAY0, [](auto &x) { return ember::abs(x); }, true));
  b.un(
       "exp", [](auto &x) { return x.exp(); },
       [](double x) { return std::exp(x); })
      .result(Result::Float)
      .ip(IP1(exp_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::exp(x); }, true));
  b.un(
       "exp2", [](auto &x) { return x.exp2(); },
       [](double x) { return std::exp2(x); })
      .result(Result::Float)
      .ip(IP1(exp2_))
      .grad(x, unary_cases(RND, [](auto &x) { return ember::exp2(x); }));
  b.un(
       "expm1", [](auto &x) { return x.expm1(); },
       [](double x) { return std::expm1(x); })
      .result(Result::Float)
      .ip(IP1(expm1_))
      .grad(x, unary_cases(RND, [](auto &x) { return ember::expm1(x); }));
  b.un(
       "log", [](auto &x) { return x.log(); },
       [](double x) { return std::log(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(log_))
      .grad(x, unary_cases(
                   POS, [](auto &x) { return ember::log(x); }, true));
  b.un(
       "log2", [](auto &x) { return x.log2(); },
       [](double x) { return std::log2(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(log2_))
      .grad(x, unary_cases(POS, [](auto &x) { return ember::log2(x); }));
  b.un(
       "log10", [](auto &x) { return x.log10(); },
       [](double x) { return std::log10(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(log10_))
      .grad(x, unary_cases(POS, [](auto &x) { return ember::log10(x); }));
  b.un(
       "log1p", [](auto &x) { return x.log1p(); },
       [](double x) { return std::log1p(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(log1p_))
      .grad(x,
            unary_cases([](IntArrayRef s,
                           uint64_t seed) { return uni(s, -0.5, 3.0, seed); },
                        [](auto &x) { return ember::log1p(x); }));
  b.un(
       "sqrt", [](auto &x) { return x.sqrt(); },
       [](double x) { return std::sqrt(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(sqrt_))
      .grad(x, unary_cases(
                   POS, [](auto &x) { return ember::sqrt(x); }, true));
  // std's square root (its gradient is 0 where the variance is 0:
  // Autograd.GradientsAtSpecialPointsAreTorchs).
  b.un(
       "_std_sqrt", [](auto &x) { return ember::_std_sqrt(x); },
       [](double x) { return std::sqrt(x); })
      .dom(Domain::Positive)
      .floats()
      .grad(x, unary_cases(
                   POS, [](auto &x) { return ember::_std_sqrt(x); }, true));
  b.un(
       "log_sigmoid", [](auto &x) { return ember::log_sigmoid(x); },
       [](double x) {
         return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x));
       })
      .floats()
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::log_sigmoid(x); }, true));
  b.un(
       "rsqrt", [](auto &x) { return x.rsqrt(); },
       [](double x) { return 1 / std::sqrt(x); })
      .dom(Domain::Positive)
      .result(Result::Float)
      .ip(IP1(rsqrt_))
      .grad(x, unary_cases(
                   POS, [](auto &x) { return ember::rsqrt(x); }, true));
  b.un(
       "sin", [](auto &x) { return x.sin(); },
       [](double x) { return std::sin(x); })
      .result(Result::Float)
      .ip(IP1(sin_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::sin(x); }, true));
  b.un(
       "cos", [](auto &x) { return x.cos(); },
       [](double x) { return std::cos(x); })
      .result(Result::Float)
      .ip(IP1(cos_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::cos(x); }, true));
  // Integers in (-0.9, 0.9) would all be 0: the Unit ops are checked on
  // floats.
  b.un(
       "tan", [](auto &x) { return x.tan(); },
       [](double x) { return std::tan(x); })
      .dom(Domain::Unit)
      .floats()
      .result(Result::Float)
      .ip(IP1(tan_))
      .grad(x,
            unary_cases([](IntArrayRef s,
                           uint64_t seed) { return uni(s, -1.2, 1.2, seed); },
                        [](auto &x) { return ember::tan(x); }, true));
  auto in_unit = [](IntArrayRef s, uint64_t seed) {
    return uni(s, -0.9, 0.9, seed);
  };
  b.un(
       "asin", [](auto &x) { return x.asin(); },
       [](double x) { return std::asin(x); })
      .dom(Domain::Unit)
      .floats()
      .result(Result::Float)
      .ip(IP1(asin_))
      .grad(x, unary_cases(
                   in_unit, [](auto &x) { return ember::asin(x); }, true));
  b.un(
       "acos", [](auto &x) { return x.acos(); },
       [](double x) { return std::acos(x); })
      .dom(Domain::Unit)
      .floats()
      .result(Result::Float)
      .ip(IP1(acos_))
      .grad(x, unary_cases(
                   in_unit, [](auto &x) { return ember::acos(x); }, true));
  b.un(
       "atan", [](auto &x) { return x.atan(); },
       [](double x) { return std::atan(x); })
      .result(Result::Float)
      .ip(IP1(atan_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::atan(x); }, true));
  b.un(
       "sinh", [](auto &x) { return x.sinh(); },
       [](double x) { return std::sinh(x); })
      .result(Result::Float)
      .ip(IP1(sinh_))
      .grad(x, unary_cases(RND, [](auto &x) { return ember::sinh(x); }));
  b.un(
       "cosh", [](auto &x) { return x.cosh(); },
       [](double x) { return std::cosh(x); })
      .result(Result::Float)
      .ip(IP1(cosh_))
      .grad(x, unary_cases(RND, [](auto &x) { return ember::cosh(x); }));
  b.un(
       "tanh", [](auto &x) { return x.tanh(); },
       [](double x) { return std::tanh(x); })
      .result(Result::Float)
      .ip(IP1(tanh_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::tanh(x); }, true));
  b.un(
       "sigmoid", [](auto &x) { return x.sigmoid(); },
       [](double x) { return 1 / (1 + std::exp(-x)); })
      .result(Result::Float)
      .ip(IP1(sigmoid_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::sigmoid(x); }, true));
  b.un(
       "relu", [](auto &x) { return x.relu(); },
       [](double x) { return x > 0 ? x : 0; })
      .ip(IP1(relu_))
      .grad(x, unary_cases(
                   AWAY0, [](auto &x) { return ember::relu(x); }, true));
  b.un(
       "_gelu_erf", [](auto &x) { return x.gelu(); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); })
      .floats()
      .result(Result::Float)
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::_gelu_erf(x); }, true));
  b.un(
       "_gelu_tanh", [](auto &x) { return x.gelu("tanh"); },
       [](double x) {
         return 0.5 * x *
                (1 +
                 std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       })
      .floats()
      .result(Result::Float)
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::_gelu_tanh(x); }, true));
  // The fused backward of _gelu_erf (its derivative: gelu's third).
  b.bin(
       "_gelu_erf_backward",
       [](auto &g, auto &x) { return ember::_gelu_erf_backward(g, x); },
       [](double g, double x) {
         return g * (0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
                     x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI));
       })
      .floats()
      .result(Result::Float)
      .grad({0, 1}, binary_cases(
                        RND, RND,
                        [](auto &g, auto &x) {
                          return ember::_gelu_erf_backward(g, x);
                        },
                        true));
  b.un(
       "silu", [](auto &x) { return x.silu(); },
       [](double x) { return x / (1 + std::exp(-x)); })
      .floats()
      .result(Result::Float)
      .ip(IP1(silu_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::silu(x); }, true));
  b.un(
       "softplus", [](auto &x) { return x.softplus(2, 1); },
       [](double x) { return 2 * x > 1 ? x : std::log1p(std::exp(2 * x)) / 2; })
      .floats()
      .result(Result::Float)
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::softplus(x); }, true))
      // beta * x on both sides of the threshold, none near it.
      .more_grad(unary(
          "beta=2 threshold=1",
          [] {
            return vals({-2.0, -0.3, 0.2, 0.9, 1.5, 3.0}, {2, 3});
          },
          [](auto &x) { return ember::softplus(x, 2, 1); }, true))
      .meta({{[] {
               return Stack{R({2, 3}), 1, 20};
             }},
             {[] {
               return Stack{R({2, 3}, kDouble), 2.0, 10.0};
             }},
             {[] {
               return Stack{R({2, 3}, kLong), 1, 20};
             }}});
  b.un(
       "erf", [](auto &x) { return x.erf(); },
       [](double x) { return std::erf(x); })
      .result(Result::Float)
      .ip(IP1(erf_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::erf(x); }, true));
  b.un(
       "erfc", [](auto &x) { return x.erfc(); },
       [](double x) { return std::erfc(x); })
      .result(Result::Float)
      .ip(IP1(erfc_))
      .grad(x, unary_cases(RND, [](auto &x) { return ember::erfc(x); }));
  b.un(
       "sign", [](auto &x) { return x.sign(); }, sgn)
      .ip(IP1(sign_))
      .grad(x, unary_cases(AWAY0, [](auto &x) { return ember::sign(x); }));
  b.un(
       "floor", [](auto &x) { return x.floor(); },
       [](double x) { return std::floor(x); })
      .ip(IP1(floor_))
      .grad(x, unary_cases(AWAY_INT, [](auto &x) { return ember::floor(x); }));
  b.un(
       "ceil", [](auto &x) { return x.ceil(); },
       [](double x) { return std::ceil(x); })
      .ip(IP1(ceil_))
      .grad(x, unary_cases(AWAY_INT, [](auto &x) { return ember::ceil(x); }));
  b.un(
       "round", [](auto &x) { return x.round(); },
       [](double x) { return std::nearbyint(x); })
      .ip(IP1(round_))
      .grad(x, unary_cases(AWAY_INT, [](auto &x) { return ember::round(x); }));
  b.un(
       "trunc", [](auto &x) { return x.trunc(); },
       [](double x) { return std::trunc(x); })
      .ip(IP1(trunc_))
      .grad(x, unary_cases(AWAY_INT, [](auto &x) { return ember::trunc(x); }));
  b.un(
       "frac", [](auto &x) { return x.frac(); },
       [](double x) { return x - std::trunc(x); })
      .floats()
      .ip(IP1(frac_))
      .grad(x, unary_cases(AWAY_INT, [](auto &x) { return ember::frac(x); }));
  b.un(
       "reciprocal", [](auto &x) { return x.reciprocal(); },
       [](double x) { return 1 / x; })
      .dom(Domain::NonZero)
      .result(Result::Float)
      .ip(IP1(reciprocal_))
      .grad(x, unary_cases(
                   AWAY0, [](auto &x) { return ember::reciprocal(x); }, true));
  b.un(
       "square", [](auto &x) { return x.square(); },
       [](double x) { return x * x; })
      .ip(IP1(square_))
      .grad(x, unary_cases(
                   RND, [](auto &x) { return ember::square(x); }, true));
  b.un(
       "logical_not", [](auto &x) { return x.logical_not(); },
       [](double x) { return double(x == 0); })
      .result(Result::Bool);
  b.un(
       "isnan", [](auto &x) { return x.isnan(); },
       [](double x) { return double(std::isnan(x)); })
      .result(Result::Bool);
  b.un(
       "isinf", [](auto &x) { return x.isinf(); },
       [](double x) { return double(std::isinf(x)); })
      .result(Result::Bool);
  b.un(
       "isposinf", [](auto &x) { return x.isposinf(); },
       [](double x) { return double(std::isinf(x) && x > 0); })
      .result(Result::Bool);
  b.un(
       "isneginf", [](auto &x) { return x.isneginf(); },
       [](double x) { return double(std::isinf(x) && x < 0); })
      .result(Result::Bool);
  b.un(
       "isfinite", [](auto &x) { return x.isfinite(); },
       [](double x) { return double(std::isfinite(x)); })
      .result(Result::Bool);
  b.un(
       "_nan_to_num", [](auto &x) { return x.nan_to_num(0.5, 3.0, -3.0); },
       [](double x) {
         return std::isnan(x) ? 0.5 : std::isinf(x) ? (x > 0 ? 3.0 : -3.0) : x;
       })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].nan_to_num_(0.5, 3.0, -3.0)); })
      .grad(x,
            unary_cases(
                RND,
                [](auto &x) { return ember::_nan_to_num(x, 0.5, 3.0, -3.0); },
                true))
      .meta({{[] {
               return Stack{R({3, 4}), 0.5, 3.0, -3.0};
             }},
             {[] {
               return Stack{R({3, 4}, kLong), int64_t(0), int64_t(3),
                            int64_t(-3)};
             }},
             {[] {
               return Stack{R({3}, kHalf), 0.5, 3.0, -3.0};
             }}});
  b.un(
       "bitwise_not", [](auto &x) { return x.bitwise_not(); },
       [](double x) { return -x - 1; })
      .dtypes(kIntDtypes)
      .ip(IP1(bitwise_not_));
}

// --- pointwise binary
// ------------------------------------------------------------

void binary_ops(Builder &b) {
  const std::vector<int> xy = {0, 1};
  b.bin(
       "add.Tensor", [](auto &a, auto &b) { return a.add(b, 2); },
       [](double a, double b) { return a + 2 * b; }, true)
      .ip([](const V &v) { return Tensor(v[0].add_(v[1], 2)); })
      .sc([](auto &a, auto &s) { return a.add(s, 2); },
          [](auto &a, auto &s) { return Tensor(a.add_(s, 2)); })
      .grad(xy, binary_cases(
                    RND, RND, [](auto &a, auto &b) { return ember::add(a, b); },
                    true))
      .more_grad(binary(
          "alpha=2.5",
          [] {
            return variable_list{rnd({3, 1}, 1), rnd({4}, 2)};
          },
          [](auto &a, auto &b) { return ember::add(a, b, 2.5); }, true))
      .more_grad(inplace(
          "in-place add_",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.add_(v[1], -1.5);
            return z;
          }));
  b.bin(
       "sub.Tensor", [](auto &a, auto &b) { return a.sub(b, 3); },
       [](double a, double b) { return a - 3 * b; }, true)
      .ip([](const V &v) { return Tensor(v[0].sub_(v[1], 3)); })
      .sc([](auto &a, auto &s) { return a.sub(s, 3); },
          [](auto &a, auto &s) { return Tensor(a.sub_(s, 3)); })
      .grad(xy, binary_cases(
                    RND, RND, [](auto &a, auto &b) { return ember::sub(a, b); },
                    true))
      .more_grad(binary(
          "alpha=-3",
          [] {
            return variable_list{rnd({3, 1}, 1), rnd({1, 4}, 2)};
          },
          [](auto &a, auto &b) { return ember::sub(a, b, -3); }));
  b.bin(
       "rsub.Tensor", [](auto &a, auto &b) { return rsub(a, b); },
       [](double a, double b) { return b - a; }, true)
      .sc([](auto &a, auto &s) { return rsub(a, s); })
      .grad(xy,
            binary_cases(RND, RND,
                         [](auto &a, auto &b) { return ember::rsub(a, b); }))
      .more_grad(binary(
          "alpha=0.5",
          [] {
            return variable_list{rnd({3, 1}, 1), rnd({1, 4}, 2)};
          },
          [](auto &a, auto &b) { return ember::rsub(a, b, 0.5); }, true));
  b.bin(
       "mul.Tensor", [](auto &a, auto &b) { return a * b; },
       [](double a, double b) { return a * b; })
      .ip(IP2(mul_))
      .sc([](auto &a, auto &s) { return a.mul(s); },
          [](auto &a, auto &s) { return Tensor(a.mul_(s)); })
      .grad(xy, binary_cases(
                    RND, RND, [](auto &a, auto &b) { return ember::mul(a, b); },
                    true))
      .more_grad(inplace(
          "in-place mul_ broadcast",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.mul_(v[1]);
            return z;
          },
          true))
      .more_grad(inplace(
          "in-place mul_ on a view",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 2}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.narrow(1, 1, 2).mul_(v[1]);
            return z;
          },
          true));
  b.bin(
       "div.Tensor", [](auto &a, auto &b) { return a / b; },
       [](double a, double b) { return a / b; })
      .dom(Domain::NonZero)
      .result(Result::Float)
      .ip(IP2(div_))
      .sc([](auto &a, auto &s) { return a.div(s); },
          [](auto &a, auto &s) { return Tensor(a.div_(s)); })
      .grad(xy, binary_cases(
                    RND, AWAY0,
                    [](auto &a, auto &b) { return ember::div(a, b); }, true))
      .more_grad(inplace(
          "in-place div_",
          [] {
            return variable_list{rnd({3, 4}, 1), away0({4})};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.div_(v[1]);
            return z;
          }));
  // Quotients n + f, f in [0.1, 0.4): away from the integer jumps.
  auto rounding_div = [](Binary f) {
    return std::vector<GradSample>{
        binary(
            "same shape",
            [] {
              Tensor b = away0({2, 3}, 0.5, 2.0, 1);
              return variable_list{leaf(away_int({2, 3}, 2) * b), b};
            },
            f),
        binary(
            "broadcast",
            [] {
              Tensor b = away0({1, 4}, 0.5, 2.0, 3);
              return variable_list{leaf(away_int({3, 4}, 4) * b), b};
            },
            f)};
  };
  b.bin(
       "_div_trunc", [](auto &a, auto &b) { return a.div(b, "trunc"); },
       [](double a, double b) { return std::trunc(a / b); })
      .dom(Domain::NonZero)
      .grad(xy, rounding_div(
                    [](auto &a, auto &b) { return ember::_div_trunc(a, b); }));
  b.bin(
       "_div_floor", [](auto &a, auto &b) { return a.div(b, "floor"); },
       [](double a, double b) { return std::floor(a / b); })
      .dom(Domain::NonZero)
      .grad(xy, rounding_div(
                    [](auto &a, auto &b) { return ember::_div_floor(a, b); }));
  b.bin(
       "pow.Tensor_Tensor", [](auto &a, auto &b) { return a.pow(b); },
       [](double a, double b) { return std::pow(a, b); })
      .dom(Domain::Positive)
      .floats()
      .ip(IP2(pow_))
      .grad(xy, binary_cases(
                    POS, RND, [](auto &a, auto &b) { return ember::pow(a, b); },
                    true))
      .more_grad(inplace(
          "in-place pow_",
          [] {
            return variable_list{uni({3, 4}, 0.5, 2.0), rnd({4})};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.pow_(v[1]);
            return z;
          }));
  b.bin(
       "atan2", [](auto &a, auto &b) { return a.atan2(b); },
       [](double a, double b) { return std::atan2(a, b); })
      .result(Result::Float)
      .ip(IP2(atan2_))
      .grad(xy, binary_cases(
                    AWAY0, AWAY0,
                    [](auto &a, auto &b) { return ember::atan2(a, b); }, true));
  b.bin(
       "maximum", [](auto &a, auto &b) { return a.maximum(b); },
       [](double a, double b) { return std::max(a, b); })
      .grad(xy, max_min_cases(
                    [](auto &a, auto &b) { return ember::maximum(a, b); }));
  b.bin(
       "minimum", [](auto &a, auto &b) { return a.minimum(b); },
       [](double a, double b) { return std::min(a, b); })
      .grad(xy, max_min_cases(
                    [](auto &a, auto &b) { return ember::minimum(a, b); }));
  b.bin(
       "fmax", [](auto &a, auto &b) { return a.fmax(b); },
       [](double a, double b) { return std::fmax(a, b); })
      .grad(xy,
            max_min_cases([](auto &a, auto &b) { return ember::fmax(a, b); }));
  b.bin(
       "fmin", [](auto &a, auto &b) { return a.fmin(b); },
       [](double a, double b) { return std::fmin(a, b); })
      .grad(xy,
            max_min_cases([](auto &a, auto &b) { return ember::fmin(a, b); }));
  // The fused backward of hardtanh and of clamp with two numbers (bounds
  // -0.5 and 0.25); their gradient for self is 0.
  auto masked_backward = [&](const char *name, auto op, auto keep) {
    b.bin(
         name, [op](auto &g, auto &x) { return op(g, x, -0.5, 0.25); },
         [keep](double g, double x) { return keep(x) ? g : 0.0; })
        .floats()
        .grad({0, 1},
              binary_cases(
                  RND, RND,
                  [op](auto &g, auto &x) { return op(g, x, -0.5, 0.25); },
                  true))
        .meta({{[] {
                 return Stack{R({3, 4}), R({3, 4}), -0.5, 0.5};
               }},
               {[] {
                 return Stack{R({3, 4}), R({4}, kDouble), -1, 1};
               }},
               {[] {
                 return Stack{R({3}, kHalf), R({3}, kHalf), 0.25, 2.0};
               }}});
  };
  masked_backward(
      "hardtanh_backward",
      [](auto &g, auto &x, double lo, double hi) {
        return ember::hardtanh_backward(g, x, lo, hi);
      },
      [](double x) { return !(x <= -0.5 || x >= 0.25); });
  masked_backward(
      "_clamp_backward",
      [](auto &g, auto &x, double lo, double hi) {
        return ember::_clamp_backward(g, x, lo, hi);
      },
      [](double x) { return x > -0.5 && x < 0.25; });
  b.bin(
       "fmod.Tensor", [](auto &a, auto &b) { return a.fmod(b); },
       [](double a, double b) { return std::fmod(a, b); })
      .dom(Domain::NonZero)
      .ip(IP2(fmod_))
      .sc([](auto &a, auto &s) { return a.fmod(s); },
          [](auto &a, auto &s) { return Tensor(a.fmod_(s)); })
      .grad(xy,
            rounding_div([](auto &a, auto &b) { return ember::fmod(a, b); }));
  b.bin(
       "remainder.Tensor", [](auto &a, auto &b) { return a % b; }, pymod)
      .dom(Domain::NonZero)
      .ip(IP2(remainder_))
      .sc([](auto &a, auto &s) { return a.remainder(s); },
          [](auto &a, auto &s) { return Tensor(a.remainder_(s)); })
      .grad(xy, rounding_div(
                    [](auto &a, auto &b) { return ember::remainder(a, b); }));
  // Comparisons and logical ops: bool results, no gradients.
  b.bin(
       "eq.Tensor", [](auto &a, auto &b) { return a == b; },
       [](double a, double b) { return double(a == b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.eq(s); });
  b.bin(
       "ne.Tensor", [](auto &a, auto &b) { return a != b; },
       [](double a, double b) { return double(a != b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.ne(s); });
  b.bin(
       "lt.Tensor", [](auto &a, auto &b) { return a < b; },
       [](double a, double b) { return double(a < b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.lt(s); });
  b.bin(
       "le.Tensor", [](auto &a, auto &b) { return a <= b; },
       [](double a, double b) { return double(a <= b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.le(s); });
  b.bin(
       "gt.Tensor", [](auto &a, auto &b) { return a > b; },
       [](double a, double b) { return double(a > b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.gt(s); });
  b.bin(
       "ge.Tensor", [](auto &a, auto &b) { return a >= b; },
       [](double a, double b) { return double(a >= b); })
      .result(Result::Bool)
      .sc([](auto &a, auto &s) { return a.ge(s); });
  b.bin(
       "logical_and", [](auto &a, auto &b) { return a.logical_and(b); },
       [](double a, double b) { return double(a != 0 && b != 0); })
      .result(Result::Bool);
  b.bin(
       "logical_or", [](auto &a, auto &b) { return a.logical_or(b); },
       [](double a, double b) { return double(a != 0 || b != 0); })
      .result(Result::Bool);
  b.bin(
       "logical_xor", [](auto &a, auto &b) { return a.logical_xor(b); },
       [](double a, double b) { return double((a != 0) != (b != 0)); })
      .result(Result::Bool);
  b.bin(
       "bitwise_and.Tensor", [](auto &a, auto &b) { return a & b; },
       [](double a, double b) { return double(int64_t(a) & int64_t(b)); })
      .dtypes(kIntDtypes)
      .ip(IP2(bitwise_and_))
      .sc([](auto &a, auto &s) { return a.bitwise_and(s); },
          [](auto &a, auto &s) { return Tensor(a.bitwise_and_(s)); });
  b.bin(
       "bitwise_or.Tensor", [](auto &a, auto &b) { return a | b; },
       [](double a, double b) { return double(int64_t(a) | int64_t(b)); })
      .dtypes(kIntDtypes)
      .ip(IP2(bitwise_or_))
      .sc([](auto &a, auto &s) { return a.bitwise_or(s); },
          [](auto &a, auto &s) { return Tensor(a.bitwise_or_(s)); });
  b.bin(
       "bitwise_xor.Tensor", [](auto &a, auto &b) { return a ^ b; },
       [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); })
      .dtypes(kIntDtypes)
      .ip(IP2(bitwise_xor_))
      .sc([](auto &a, auto &s) { return a.bitwise_xor(s); },
          [](auto &a, auto &s) { return Tensor(a.bitwise_xor_(s)); });
}

// --- clamp, lerp, where, addcmul, masked_fill
// -----------------------------------

void other_pointwise_ops(Builder &b) {
  // Scalar bounds: gradcheck values 0.1 +- [0.2, 2), away from the kink.
  auto around01 = [](IntArrayRef s, uint64_t seed) {
    return leaf(away0(s, 0.2, 2.0, seed) + 0.1);
  };
  auto clamp_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{R({3, 4}), 0.5};
                                   }},
                                   {[] {
                                     return Stack{R({3, 4}, kLong), 0.5};
                                   }},
                                   {[] {
                                     return Stack{R({3, 4}, kLong), int64_t(2)};
                                   }},
                                   {[] {
                                     return Stack{R({3}, kBool), int64_t(1)};
                                   }}};
  };
  b.un(
       "clamp_min", [](auto &a) { return a.clamp_min(0.25); },
       [](double a) { return std::max(a, 0.25); })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].clamp_min_(0.25)); })
      .grad({0}, unary_cases(
                     around01, [](auto &x) { return ember::clamp_min(x, 0.1); },
                     true))
      .more_grad(inplace(
          "in-place clamp_min_",
          [] {
            return variable_list{leaf(away0({3, 4}) + 0.1)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.clamp_min_(0.1);
            return z;
          }))
      .meta(clamp_meta());
  b.un(
       "clamp_max", [](auto &a) { return a.clamp_max(-0.5); },
       [](double a) { return std::min(a, -0.5); })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].clamp_max_(-0.5)); })
      .grad({0}, unary_cases(
                     around01, [](auto &x) { return ember::clamp_max(x, 0.1); },
                     true))
      .meta(clamp_meta());
  // Both bounds (clamp's one pass; hardtanh's node): for the gradients,
  // bounds in the gap of around01's values, so points lie on both sides
  // and none at a kink. Test*.ClampAndHardtanhGradientsAtTheBounds checks
  // the bounds themselves.
  auto two_bounds_meta = [] {
    return std::vector<MetaSample>{
        {[] {
          return Stack{R({3, 4}), -0.5, 0.5};
        }},
        {[] {
          return Stack{R({3, 4}, kLong), -0.5, 0.5};
        }},
        {[] {
          return Stack{R({3, 4}, kLong), int64_t(-2), int64_t(2)};
        }},
        {[] {
          return Stack{R({3}, kBool), int64_t(0), int64_t(1)};
        }}};
  };
  b.un(
       "_clamp", [](auto &a) { return a.clamp(-0.5, 0.25); },
       [](double a) { return std::min(std::max(a, -0.5), 0.25); })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].clamp_(-0.5, 0.25)); })
      .grad({0},
            unary_cases(
                around01, [](auto &x) { return ember::_clamp(x, -0.05, 2.5); },
                true))
      .meta(two_bounds_meta());
  b.un(
       "_hardtanh", [](auto &a) { return ember::hardtanh(a, -0.5, 0.25); },
       [](double a) { return std::min(std::max(a, -0.5), 0.25); })
      .floats()
      .ip([](const V &v) { return Tensor(ember::hardtanh_(v[0], -0.5, 0.25)); })
      .grad({0},
            unary_cases(
                around01,
                [](auto &x) { return ember::_hardtanh(x, -0.05, 2.5); }, true))
      .meta(two_bounds_meta());
  b.bin(
       "clamp_min.Tensor", [](auto &a, auto &b) { return a.clamp_min(b); },
       [](double a, double b) { return std::max(a, b); })
      .ip(IP2(clamp_min_))
      .grad({0, 1}, max_min_cases([](auto &a, auto &b) {
              return ember::clamp_min(a, b);
            }));
  b.bin(
       "clamp_max.Tensor", [](auto &a, auto &b) { return a.clamp_max(b); },
       [](double a, double b) { return std::min(a, b); })
      .ip(IP2(clamp_max_))
      .grad({0, 1}, max_min_cases([](auto &a, auto &b) {
              return ember::clamp_max(a, b);
            }));
  b.bin(
       "lerp.Scalar", [](auto &a, auto &b) { return a.lerp(b, 0.3); },
       [](double a, double b) { return a + 0.3 * (b - a); })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].lerp_(v[1], 0.3)); })
      .grad({0, 1},
            binary_cases(
                RND, RND,
                [](auto &a, auto &b) { return ember::lerp(a, b, 0.3); }, true))
      .meta({{[] {
               return Stack{R({3, 4}), R({4}), 0.3};
             }},
             {[] {
               return Stack{R({3}, kLong), R({3}, kLong), 0.3};
             }},
             {[] {
               return Stack{R({4}), R({3, 4}), 0.3};
             }}});
  b.bin(
       "masked_fill.Scalar",
       [](auto &a, auto &b) { return a.masked_fill(b > 0, 7); },
       [](double a, double b) { return b > 0 ? 7 : a; })
      .ip([](const V &v) { return Tensor(v[0].masked_fill_(v[1] > 0, 7)); })
      .grad({0},
            {unary(
                 "mask (3,4)",
                 [] {
                   return rnd({3, 4}, 1);
                 },
                 [](auto &x) { return ember::masked_fill(x, mask34(), 2.0); },
                 true),
             unary(
                 "broadcast mask (4,)",
                 [] {
                   return rnd({3, 4}, 2);
                 },
                 [](auto &x) {
                   return ember::masked_fill(
                       x,
                       tensor({false, true, true, false}).to(sample_device()),
                       -1.0);
                 }),
             inplace(
                 "in-place masked_fill_",
                 [] {
                   return variable_list{rnd({3, 4}, 3)};
                 },
                 [](const variable_list &v) {
                   Tensor z = v[0].clone();
                   z.masked_fill_(mask34(), 0.5);
                   return z;
                 })})
      .meta({{[] {
               return Stack{R({3, 4}), R({4}, kBool), 1.5};
             }},
             {[] {
               return Stack{R({3, 4}, kLong), R({3, 1}, kBool), 2};
             }},
             {[] {
               return Stack{R({4}), R({3, 4}, kBool), 2};
             }}});
  b.ter(
       "where.self",
       [](auto &c, auto &a, auto &b) { return where(c > 0, a, b); },
       [](double c, double a, double b) { return c > 0 ? a : b; })
      .grad({1, 2},
            {binary(
                 "same shape",
                 [] {
                   return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
                 },
                 [](auto &a, auto &b) { return ember::where(mask34(), a, b); },
                 true),
             binary(
                 "broadcast (3,1)x(1,4)",
                 [] {
                   return variable_list{rnd({3, 1}, 3), rnd({1, 4}, 4)};
                 },
                 [](auto &a, auto &b) { return ember::where(mask34(), a, b); },
                 true),
             binary(
                 "broadcast condition",
                 [] {
                   return variable_list{rnd({3, 4}, 5), rnd({}, 6)};
                 },
                 [](auto &a, auto &b) {
                   return ember::where(
                       tensor({true, false, true, false}).to(sample_device()),
                       a, b);
                 })})
      .meta({{[] {
               return Stack{R({3, 1}, kBool), R({4}), R({3, 4}, kDouble)};
             }},
             {[] {
               return Stack{R({3}, kBool), R({3}, kLong), W(1.5)};
             }},
             {[] {
                return Stack{R({2}, kBool), R({3}), R({3})};
              },
              kThrows}});
  auto three = [](std::string label, std::function<variable_list()> xs,
                  std::function<Tensor(const variable_list &)> f,
                  bool gg = false) {
    return GradSample{
        std::move(label), std::move(xs),
        [f](const variable_list &v) { return variable_list{f(v)}; }, gg};
  };
  b.ter(
       "_clamp_tensor",
       [](auto &a, auto &lo, auto &hi) {
         return a.clamp(std::optional<Tensor>(lo), std::optional<Tensor>(hi));
       },
       [](double a, double lo, double hi) {
         return std::min(std::max(a, lo), hi);
       })
      .floats()
      .ip([](const V &v) {
        return Tensor(v[0].clamp_(std::optional<Tensor>(v[1]),
                                  std::optional<Tensor>(v[2])));
      })
      .grad({0, 1, 2}, {three(
                           "same shape",
                           [] {
                             return variable_list{rnd({2, 3}, 1),
                                                  rnd({2, 3}, 2),
                                                  rnd({2, 3}, 3)};
                           },
                           [](const variable_list &v) {
                             return ember::_clamp_tensor(v[0], v[1], v[2]);
                           },
                           true)})
      .meta({{[] {
               return Stack{R({3, 4}), R({3, 4}), R({4})};
             }},
             {[] {
               return Stack{R({3, 4}, kLong), R({3, 4}, kLong), R({}, kInt)};
             }},
             {[] {
               return Stack{R({3}, kLong), R({3}), R({3}, kHalf)};
             }}});
  b.ter(
       "lerp.Tensor", [](auto &a, auto &b, auto &w) { return a.lerp(b, w); },
       [](double a, double b, double w) { return a + w * (b - a); })
      .floats()
      .ip([](const V &v) { return Tensor(v[0].lerp_(v[1], v[2])); })
      .grad({0, 1, 2}, {three(
                            "same shape",
                            [] {
                              return variable_list{rnd({2, 3}, 1),
                                                   rnd({2, 3}, 2),
                                                   rnd({2, 3}, 3)};
                            },
                            [](const variable_list &v) {
                              return ember::lerp(v[0], v[1], v[2]);
                            },
                            true),
                        three(
                            "broadcast",
                            [] {
                              return variable_list{rnd({3, 1}, 1),
                                                   rnd({1, 4}, 2), rnd({4}, 3)};
                            },
                            [](const variable_list &v) {
                              return ember::lerp(v[0], v[1], v[2]);
                            },
                            true)})
      .meta({{[] {
               return Stack{R({3, 4}), R({4}), R({3, 1})};
             }},
             {[] {
               return Stack{R({3, 4}, kDouble), R({4}), W(0.5)};
             }},
             {[] {
                return Stack{R({2}), R({3}), R({3})};
              },
              kThrows}});
  auto addc_meta = [] {
    return std::vector<MetaSample>{
        {[] {
          return Stack{R({3, 4}), R({4}), NZ({3, 1}), 0.5};
        }},
        {[] {
          return Stack{R({3}, kLong), R({3}, kLong), NZ({3}, kLong), 2};
        }},
        {[] {
          return Stack{R({4}), R({3, 4}), NZ({4}), 1};
        }}};
  };
  b.ter(
       "addcmul", [](auto &a, auto &b, auto &c) { return a.addcmul(b, c, 2); },
       [](double a, double b, double c) { return a + 2 * b * c; })
      .ip([](const V &v) { return Tensor(v[0].addcmul_(v[1], v[2], 2)); })
      .grad({0, 1, 2},
            {three(
                 "value=0.5 broadcast",
                 [] {
                   return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2),
                                        rnd({1, 4}, 3)};
                 },
                 [](const variable_list &v) {
                   return ember::addcmul(v[0], v[1], v[2], 0.5);
                 },
                 true),
             three(
                 "same shape",
                 [] {
                   return variable_list{rnd({2, 3}, 1), rnd({2, 3}, 2),
                                        rnd({2, 3}, 3)};
                 },
                 [](const variable_list &v) {
                   return ember::addcmul(v[0], v[1], v[2]);
                 })})
      .meta(addc_meta());
  b.ter(
       "addcdiv",
       [](auto &a, auto &b, auto &c) { return a.addcdiv(b, c, 0.5); },
       [](double a, double b, double c) { return a + 0.5 * b / c; })
      .dom(Domain::NonZero)
      .floats()
      .ip([](const V &v) { return Tensor(v[0].addcdiv_(v[1], v[2], 0.5)); })
      .grad({0, 1, 2},
            {three(
                 "value=-2 broadcast",
                 [] {
                   return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2),
                                        away0({1, 4}, 0.5, 2, 3)};
                 },
                 [](const variable_list &v) {
                   return ember::addcdiv(v[0], v[1], v[2], -2);
                 },
                 true),
             three(
                 "same shape",
                 [] {
                   return variable_list{rnd({2, 3}, 1), rnd({2, 3}, 2),
                                        away0({2, 3}, 0.5, 2, 3)};
                 },
                 [](const variable_list &v) {
                   return ember::addcdiv(v[0], v[1], v[2]);
                 })})
      .meta(addc_meta());
}

// --- pow with a Scalar (cpu: ops, not pointwise entries of ops.yaml)
// -----------

void pow_ops(Builder &b) {
  b.entry("pow.Tensor_Scalar", Kind::Other)
      .grad({0},
            {
                unary(
                    "x^2.5",
                    [] {
                      return uni({3, 4}, 0.5, 2.0, 1);
                    },
                    [](auto &x) { return ember::pow(x, 2.5); }, true),
                unary(
                    "x^3 negative base",
                    [] {
                      return rnd({3, 4}, 2);
                    },
                    [](auto &x) { return ember::pow(x, 3); }, true),
                unary(
                    "x^-1.5",
                    [] {
                      return uni({2, 3}, 0.5, 2.0, 3);
                    },
                    [](auto &x) { return ember::pow(x, -1.5); }),
                unary(
                    "x^1",
                    [] {
                      return rnd({2, 3}, 4);
                    },
                    [](auto &x) { return ember::pow(x, 1); }),
                unary(
                    "x^0",
                    [] {
                      return rnd({2, 3}, 5);
                    },
                    [](auto &x) { return ember::pow(x, 0); }),
                unary(
                    "0-dim", [] { return uni({}, 0.5, 2.0, 6); },
                    [](auto &x) { return ember::pow(x, 0.5); }),
            })
      .meta({{[] {
               return Stack{R({2, 3}), 2.0};
             }},
             {[] {
               return Stack{R({2, 3}, kLong), 2};
             }},
             {[] {
               return Stack{R({3}, kLong), 0.5};
             }},
             {[] {
               return Stack{R({3}, kHalf), 3};
             }},
             {[] {
                return Stack{R({3}, kLong), -1};
              },
              kThrows}});
  b.entry("pow.Scalar", Kind::Other)
      .grad({0},
            {
                unary(
                    "2.5^x",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::pow(2.5, x); }, true),
                unary(
                    "0.5^x 0-dim", [] { return rnd({}, 2); },
                    [](auto &x) { return ember::pow(0.5, x); }),
            })
      .meta({{[] {
               return Stack{2.0, R({3}, kLong)};
             }},
             {[] {
               return Stack{2, NC(R({2, 3}))};
             }},
             {[] {
               return Stack{2, R({}, kInt)};
             }}});
}

// --- reductions
// ----------------------------------------------------------------------

void reduction_ops(Builder &b) {
  const Kind K = Kind::Reduction;
  const std::vector<int> x = {0};
  b.entry("sum", K)
      .grad(x, {unary(
                    "all",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::sum(x); }, true),
                unary(
                    "0-dim", [] { return rnd({}, 2); },
                    [](auto &x) { return ember::sum(x); })})
      .meta({{[] {
               return Stack{R({2, 3}, kLong), None()};
             }},
             {[] {
               return Stack{NC(R({2, 3})), kDouble};
             }},
             {[] {
               return Stack{R({0}, kBool), None()};
             }}});
  b.entry("sum.dim_IntList", K)
      .grad(x,
            {unary(
                 "dims {0,2}",
                 [] {
                   return rnd({2, 3, 4}, 1);
                 },
                 [](auto &x) {
                   return ember::sum(x, IntArrayRef{0, 2});
                 },
                 true),
             unary(
                 "dim -1 keepdim",
                 [] {
                   return rnd({3, 4}, 2);
                 },
                 [](auto &x) { return ember::sum(x, IntArrayRef{-1}, true); },
                 true),
             unary(
                 "dims {} keepdim",
                 [] {
                   return rnd({2, 3}, 3);
                 },
                 [](auto &x) { return ember::sum(x, IntArrayRef{}, true); })})
      .meta({{[] {
               return Stack{R({2, 3, 4}), L({1, -1}), true, None()};
             }},
             {[] {
               return Stack{R({2, 3}), None(), false, None()};
             }},
             {[] {
               return Stack{R({2, 3}, kInt), L({0}), false, kFloat};
             }},
             {[] {
               return Stack{R({}), L({0}), true, None()};
             }},
             {[] {
                return Stack{R({2, 3}), L({2}), false, None()};
              },
              kThrows},
             {[] {
                return Stack{R({2, 3}), L({1, -1}), false, None()};
              },
              kThrows}});
  b.entry("mean", K)
      .grad(x, {unary(
                   "all",
                   [] {
                     return rnd({3, 4}, 1);
                   },
                   [](auto &x) { return ember::mean(x); }, true)})
      .meta({{[] {
               return Stack{R({2, 3}), None()};
             }},
             {[] {
               return Stack{R({2, 3}, kLong), kFloat};
             }},
             {[] {
                return Stack{R({2, 3}, kLong), None()};
              },
              kThrows},
             {[] {
                return Stack{R({2, 3}), kLong};
              },
              kThrows}});
  b.entry("mean.dim", K)
      .grad(x,
            {unary(
                 "dims {2,0}",
                 [] {
                   return rnd({2, 3, 4}, 1);
                 },
                 [](auto &x) {
                   return ember::mean(x, IntArrayRef{2, 0});
                 },
                 true),
             unary(
                 "dim 1 keepdim",
                 [] {
                   return rnd({3, 4}, 2);
                 },
                 [](auto &x) { return ember::mean(x, IntArrayRef{1}, true); },
                 true)})
      .meta({{[] {
               return Stack{NC(R({2, 3, 4})), L({0, 2}), true, None()};
             }},
             {[] {
               return Stack{R({2, 3}, kHalf), L({-1}), false, None()};
             }},
             {[] {
                return Stack{R({2, 3}, kInt), L({1}), false, None()};
              },
              kThrows}});
  b.entry("prod.dim_int", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return away0({3, 4}, 0.5, 1.5, 1);
                    },
                    [](auto &x) { return ember::prod(x, 1); }, true),
                unary(
                    "dim 0 keepdim",
                    [] {
                      return away0({3, 4}, 0.5, 1.5, 2);
                    },
                    [](auto &x) { return ember::prod(x, 0, true); }, true),
                unary(
                    "0-dim", [] { return away0({}, 0.5, 1.5, 3); },
                    [](auto &x) { return ember::prod(x, 0); })})
      .meta({{[] {
               return Stack{R({2, 3}), -1, true, None()};
             }},
             {[] {
               return Stack{R({3, 2}, kBool), 0, false, None()};
             }},
             {[] {
                return Stack{R({3}), 1, false, None()};
              },
              kThrows}});
  auto max_min_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{NC(R({2, 3})), 1, false};
                                   }},
                                   {[] {
                                     return Stack{R({2, 3}, kLong), 0, true};
                                   }},
                                   {[] {
                                     return Stack{R({2, 0}), 0, false};
                                   }},
                                   {[] {
                                     return Stack{R({}, kBool), 0, false};
                                   }},
                                   {[] {
                                      return Stack{R({0, 3}), 0, false};
                                    },
                                    kThrows}};
  };
  b.entry("max.dim", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return distinct({3, 4}, 1);
                    },
                    [](auto &x) { return first(ember::max(x, 1)); }, true),
                unary(
                    "dim 0 keepdim",
                    [] {
                      return distinct({3, 4}, 2);
                    },
                    [](auto &x) { return first(ember::max(x, 0, true)); })})
      .meta(max_min_meta());
  b.entry("min.dim", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return distinct({3, 4}, 1);
                    },
                    [](auto &x) { return first(ember::min(x, 1)); }, true),
                unary(
                    "dim -1 keepdim",
                    [] {
                      return distinct({2, 3, 2}, 2);
                    },
                    [](auto &x) { return first(ember::min(x, -1, true)); })})
      .meta(max_min_meta());
  auto amax_meta = [] {
    return std::vector<MetaSample>{
        {[] {
          return Stack{R({2, 3, 4}), L({0, 2}), true};
        }},
        {[] {
          return Stack{R({2, 3}, kInt), L({}), false};
        }},
        {[] {
          return Stack{R({0, 3}), L({1}), false};
        }},
        {[] {
           return Stack{R({0, 3}), L({}), false};
         },
         kThrows}};
  };
  b.entry("amax", K)
      .grad(x, {unary(
                    "dims {0,2}",
                    [] {
                      return distinct({2, 3, 4}, 1);
                    },
                    [](auto &x) {
                      return ember::amax(x, {0, 2});
                    },
                    true),
                unary(
                    "dim 1 keepdim",
                    [] {
                      return distinct({3, 4}, 2);
                    },
                    [](auto &x) { return ember::amax(x, {1}, true); }),
                unary(
                    "all dims",
                    [] {
                      return distinct({3, 4}, 3);
                    },
                    [](auto &x) { return ember::amax(x); })})
      .meta(amax_meta());
  b.entry("amin", K)
      .grad(x, {unary(
                    "dims {0,2}",
                    [] {
                      return distinct({2, 3, 4}, 1);
                    },
                    [](auto &x) {
                      return ember::amin(x, {0, 2});
                    },
                    true),
                unary(
                    "dim -1 keepdim",
                    [] {
                      return distinct({3, 4}, 2);
                    },
                    [](auto &x) { return ember::amin(x, {-1}, true); }),
                unary(
                    "all dims",
                    [] {
                      return distinct({3, 4}, 3);
                    },
                    [](auto &x) { return ember::amin(x); })})
      .meta(amax_meta());
  auto argmax_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{NC(R({2, 3})), None(), false};
                                   }},
                                   {[] {
                                     return Stack{R({2, 3}), None(), true};
                                   }},
                                   {[] {
                                     return Stack{R({2, 3}, kLong), -1, true};
                                   }},
                                   {[] {
                                      return Stack{R({3}, kBool), 0, false};
                                    },
                                    kThrows},
                                   {[] {
                                      return Stack{R({0}), None(), false};
                                    },
                                    kThrows}};
  };
  b.entry("argmax", K).meta(argmax_meta());
  b.entry("argmin", K).meta(argmax_meta());
  b.entry("var.correction", K)
      .grad(x, {unary(
                    "all, default correction",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::var(x); }, true),
                unary(
                    "dims {0,2} correction 0",
                    [] {
                      return rnd({2, 3, 4}, 2);
                    },
                    [](auto &x) {
                      return ember::var(x, IntArrayRef{0, 2}, Scalar(0));
                    },
                    true),
                unary(
                    "dim 1 keepdim correction 2",
                    [] {
                      return rnd({3, 5}, 3);
                    },
                    [](auto &x) {
                      return ember::var(x, IntArrayRef{1}, Scalar(2), true);
                    })})
      .meta({{[] {
               return Stack{R({3, 4}), L({1}), None(), false};
             }},
             {[] {
               return Stack{NC(R({3, 4})), None(), 0, true};
             }},
             {[] {
                return Stack{R({3, 4}, kLong), None(), None(), false};
              },
              kThrows}});
  b.entry("norm.ScalarOpt_dim", K)
      .grad(x,
            {unary(
                 "p=2 dim 1",
                 [] {
                   return rnd({3, 4}, 1);
                 },
                 [](auto &x) { return ember::norm(x, Scalar(2), {1}); }, true),
             unary(
                 "p=1 dims {0,1} keepdim",
                 [] {
                   return away0({3, 4}, 0.3, 2, 2);
                 },
                 [](auto &x) {
                   return ember::norm(x, Scalar(1), {0, 1}, true);
                 }),
             unary(
                 "p=3 dim 0",
                 [] {
                   return away0({3, 4}, 0.3, 2, 3);
                 },
                 [](auto &x) { return ember::norm(x, Scalar(3), {0}); }, true),
             unary(
                 "p=inf dim 1",
                 [] {
                   return distinct({3, 4}, 4);
                 },
                 [](auto &x) { return ember::norm(x, Scalar(INFINITY), {1}); }),
             unary(
                 "p=None dim -1",
                 [] {
                   return rnd({2, 3}, 5);
                 },
                 [](auto &x) { return ember::norm(x, std::nullopt, {-1}); })})
      .meta({{[] {
               return Stack{R({3, 4}), 2, L({1}), false};
             }},
             {[] {
               return Stack{R({3, 4}, kDouble), None(), L({0, 1}), true};
             }},
             {[] {
               return Stack{R({0, 4}), 1.0, L({1}), false};
             }},
             {[] {
                return Stack{R({3}, kLong), 2, L({0}), false};
              },
              kThrows},
             {[] {
                return Stack{R({3}), std::nan(""), L({0}), false};
              },
              kThrows},
             {[] {
                return Stack{R({0, 4}), INFINITY, L({0}), false};
              },
              kThrows}});
  b.entry("logsumexp", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::logsumexp(x, {1}); }, true),
                unary(
                    "dims {0,2} keepdim",
                    [] {
                      return rnd({2, 3, 2}, 2);
                    },
                    [](auto &x) {
                      return ember::logsumexp(x, {0, 2}, true);
                    },
                    true)})
      .meta({{[] {
               return Stack{R({3, 4}), L({1}), false};
             }},
             {[] {
               return Stack{R({3, 4}, kLong), L({0}), true};
             }},
             {[] {
                return Stack{R({3}), L({1}), true};
              },
              kThrows}});
  auto all_any_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{R({3, 4}, kBool), 1, false};
                                   }},
                                   {[] {
                                     return Stack{R({3}, kByte), 0, true};
                                   }},
                                   {[] {
                                     return Stack{NC(R({3, 4})), -1, true};
                                   }},
                                   {[] {
                                      return Stack{R({3}), 1, true};
                                    },
                                    kThrows}};
  };
  b.entry("all.dim", K).meta(all_any_meta());
  b.entry("any.dim", K).meta(all_any_meta());
  auto cum_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{R({3, 4}, kInt), 1, None()};
                                   }},
                                   {[] {
                                     return Stack{NC(R({3, 4})), -1, kDouble};
                                   }},
                                   {[] {
                                     return Stack{R({}, kBool), 0, None()};
                                   }},
                                   {[] {
                                      return Stack{R({3}), 1, None()};
                                    },
                                    kThrows}};
  };
  b.entry("cumsum", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::cumsum(x, 1); }, true),
                unary(
                    "dim 0 transposed",
                    [] {
                      return leaf(rnd({4, 3}, 2).t());
                    },
                    [](auto &x) { return ember::cumsum(x, 0); }),
                unary(
                    "0-dim", [] { return rnd({}, 3); },
                    [](auto &x) { return ember::cumsum(x, 0); })})
      .meta(cum_meta());
  b.entry("cumprod", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return away0({3, 4}, 0.5, 1.5, 1);
                    },
                    [](auto &x) { return ember::cumprod(x, 1); }, true),
                unary(
                    "dim -2",
                    [] {
                      return away0({3, 2}, 0.5, 1.5, 2);
                    },
                    [](auto &x) { return ember::cumprod(x, -2); })})
      .meta(cum_meta());
  auto softmax_meta = [] {
    return std::vector<MetaSample>{{[] {
                                     return Stack{NC(R({3, 4})), 1, None()};
                                   }},
                                   {[] {
                                     return Stack{R({3, 4}, kLong), 0, kFloat};
                                   }},
                                   {[] {
                                     return Stack{R({3, 4}, kHalf), -1, None()};
                                   }},
                                   {[] {
                                      return Stack{R({3}, kLong), 0, None()};
                                    },
                                    kThrows},
                                   {[] {
                                      return Stack{R({3}), 2, None()};
                                    },
                                    kThrows}};
  };
  b.entry("softmax.int", K)
      .grad(x, {unary(
                    "dim 1",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::softmax(x, 1); }, true),
                unary(
                    "dim 0 of 3-d",
                    [] {
                      return rnd({3, 2, 2}, 2);
                    },
                    [](auto &x) { return ember::softmax(x, 0); }, true)})
      .meta(softmax_meta());
  b.entry("log_softmax.int", K)
      .grad(x, {unary(
                    "dim -1",
                    [] {
                      return rnd({3, 4}, 1);
                    },
                    [](auto &x) { return ember::log_softmax(x, -1); }, true),
                unary(
                    "dim 1 of 3-d",
                    [] {
                      return rnd({2, 3, 2}, 2);
                    },
                    [](auto &x) { return ember::log_softmax(x, 1); }, true)})
      .meta(softmax_meta());
}

std::vector<OpInfo> build() {
  Builder b;
  unary_ops(b);
  binary_ops(b);
  other_pointwise_ops(b);
  pow_ops(b);
  reduction_ops(b);
  return std::move(b.ops);
}

} // namespace

// --- OpInfo
// ------------------------------------------------------------------------

std::string OpInfo::short_name() const {
  return name.substr(name.find("::") + 2);
}

std::string OpInfo::cname() const {
  std::string n = short_name();
  for (char &c : n)
    if (c == '.')
      c = '_';
  return n;
}

ScalarType OpInfo::result_dtype(ScalarType dt) const {
  switch (result) {
  case Result::Bool:
    return kBool;
  case Result::Float:
    return isFloatingType(dt) ? dt : get_default_dtype();
  case Result::Same:
    break;
  }
  return dt;
}

const std::vector<OpInfo> &op_db() {
  static const std::vector<OpInfo> db = build();
  return db;
}

std::vector<const OpInfo *> pointwise_op_infos() {
  std::vector<const OpInfo *> v;
  for (const OpInfo &o : op_db())
    if (o.kind == Kind::Pointwise)
      v.push_back(&o);
  return v;
}

const OpInfo *find_op_info(const std::string &name) {
  for (const OpInfo &o : op_db())
    if (o.name == name || o.short_name() == name || o.cname() == name)
      return &o;
  return nullptr;
}

// --- inputs and references
// -------------------------------------------------------

Tensor sample_input(IntArrayRef shape, ScalarType dt, Domain d, uint64_t seed) {
  switch (d) {
  case Domain::Positive:
    return isFloatingType(dt) ? random_positive(shape, dt, 0.1, 4.0, seed)
                              : randint(1, 9, shape, Generator(seed)).to(dt);
  case Domain::Unit:
    return (random_positive(shape, kDouble, 0.0, 1.8, seed) - 0.9).to(dt);
  case Domain::NonZero:
    return isFloatingType(dt)
               ? (random_positive(shape, kDouble, 0.3, 3.0, seed) *
                  (randint(0, 2, shape, Generator(seed + 1)) * 2 - 1))
                     .to(dt)
               : (randint(1, 6, shape, Generator(seed)) *
                  (randint(0, 2, shape, Generator(seed + 1)) * 2 - 1))
                     .to(dt);
  case Domain::Any:
    break;
  }
  Tensor t = random(shape, dt, seed);
  if (isFloatingType(dt))
    t = t * 2; // spread out
  return t;
}

std::vector<ShapeSample> pointwise_shapes(int arity) {
  std::vector<ShapeSample> s;
  auto n = size_t(arity);
  s.push_back({"same shape", std::vector<std::vector<int64_t>>(n, {4, 5})});
  s.push_back(
      {"non-contiguous", std::vector<std::vector<int64_t>>(n, {3, 7}), true});
  if (arity > 1) {
    // [3,1,4] with [5,4] (and [4] for a third input)
    std::vector<std::vector<int64_t>> b = {{3, 1, 4}, {5, 4}, {4}};
    b.resize(n);
    s.push_back({"broadcast", b});
    std::vector<std::vector<int64_t>> z = {{2, 3}, {}, {}};
    z.resize(n);
    s.push_back({"0-dim with (2,3)", z});
  }
  s.push_back(
      {"0-dim", std::vector<std::vector<int64_t>>(n, std::vector<int64_t>{})});
  s.push_back({"empty", std::vector<std::vector<int64_t>>(n, {0, 3})});
  return s;
}

std::vector<Tensor> make_inputs(const OpInfo &info, const ShapeSample &s,
                                ScalarType dt, uint64_t seed) {
  std::vector<Tensor> in;
  for (size_t k = 0; k < s.shapes.size(); ++k) {
    Tensor t = sample_input(s.shapes[k], dt, info.domain, seed + k);
    in.push_back(s.noncontig ? noncontiguous(t) : t);
  }
  return in;
}

Tensor reference(const OpInfo &info, const std::vector<Tensor> &in) {
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
    return info.ref(args);
  });
}

::testing::AssertionResult matches_reference(const OpInfo &info,
                                             const Tensor &out,
                                             const std::vector<Tensor> &in,
                                             ScalarType dt) {
  ScalarType want = info.result_dtype(dt);
  if (out.dtype() != want)
    return ::testing::AssertionFailure()
           << "result dtype " << toString(out.dtype()) << ", expected "
           << toString(want);
  double tol = dt == kDouble  ? 1e-12
               : dt == kFloat ? info.tol32
               : dt == kHalf  ? 2e-3
                              : 1.6e-2;
  // Reduced-precision inputs are rounded first, so the reference sees the
  // same values the kernel does; integer results are converted.
  Tensor ref = reference(info, in);
  if (!isFloatingType(out.dtype()) && out.dtype() != kBool)
    ref = ref.to(out.dtype());
  return close(out, ref, tol, tol);
}

// --- ops.yaml
// ------------------------------------------------------------------------

const std::vector<OpTableEntry> &op_table_entries() {
  static const std::vector<OpTableEntry> entries = [] {
    std::vector<OpTableEntry> out;
    std::ifstream f(EMBER_OPS_YAML);
    EXPECT_TRUE(f) << "cannot read " << EMBER_OPS_YAML;
    std::string line;
    auto has = [](const std::string &s, const char *what) {
      return s.find(what) != std::string::npos;
    };
    while (std::getline(f, line)) {
      if (line.rfind("- func: ", 0) == 0) {
        OpTableEntry e;
        std::string sig = line.substr(8);
        e.name = sig.substr(0, sig.find('('));
        e.dispatched = true;
        out.push_back(e);
        continue;
      }
      if (out.empty() || line.empty() || line[0] == '#')
        continue;
      OpTableEntry &e = out.back();
      if (line.rfind("  pointwise:", 0) == 0) {
        e.pointwise = true;
        e.inplace =
            has(line, "inplace: true") || has(line, "inplace: function");
        e.scalar_overload = has(line, "scalar_overload: true");
      } else if (line.rfind("  reduction:", 0) == 0) {
        e.reduction = true;
      } else if (line.rfind("  composite:", 0) == 0) {
        e.dispatched = false;
      }
    }
    EXPECT_GT(out.size(), 100u) << "ops.yaml read wrong?";
    return out;
  }();
  return entries;
}

} // namespace ember::test
