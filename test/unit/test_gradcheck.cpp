// gradcheck (and, for a representative subset, gradgradcheck) of every op
// with a derivative formula in ops.yaml: the analytical Jacobians autograd
// computes against central finite differences, in float64.
//
// Note [One gradcheck case per differentiable op]
// The generator lists every op with a `derivative:` formula in the X-macro
// EMBER_FORALL_DIFFERENTIABLE_OPS. cases() maps each of those names to one or
// more small gradcheck cases; Gradcheck.EveryDifferentiableOpHasACase fails
// when a formula has no case (and when a case names an op without a formula),
// so a new formula cannot land untested. Inputs are chosen inside each op's
// differentiable domain (positive for log/sqrt, away from kinks and integer
// jumps, no ties for max/min/sort): finite differences are meaningless at a
// kink, and a failure here must mean a wrong formula, not a bad input.
#include "TestUtil.h"
#include "eager/generated/AutogradNodes.h"
#include "ember/autograd.h"
#include "ember/ember.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace ember;
using ember::autograd::GradcheckFn;
using ember::autograd::variable_list;

namespace {

/// One gradcheck of one op: inputs (those that require grad are checked),
/// the function, and whether to check second derivatives too.
struct Case {
  std::string label;
  std::function<variable_list()> inputs;
  GradcheckFn fn;
  bool gradgrad = false;
};

// --- inputs
// -------------------------------------------------------------------

/// A float64 leaf that requires grad, with the values (and, for float64,
/// the strides: transposed inputs stay non-contiguous) of t.
Tensor leaf(const Tensor &t) {
  Tensor d = t.detach();
  if (d.dtype() != kDouble)
    d = d.to(kDouble);
  d.requires_grad_();
  return d;
}

/// Standard normal values.
Tensor rnd(IntArrayRef shape, uint64_t seed = 0) {
  return leaf(test::random(shape, kDouble, seed));
}

/// Uniform values in [lo, hi).
Tensor uni(IntArrayRef shape, double lo, double hi, uint64_t seed = 0) {
  return leaf(test::random_positive(shape, kDouble, lo, hi, seed));
}

/// Magnitudes in [lo, hi) with random signs: away from 0 (abs, sign, relu,
/// reciprocal, denominators).
Tensor away0(IntArrayRef shape, double lo = 0.3, double hi = 2.0,
             uint64_t seed = 0) {
  Tensor mag = test::random_positive(shape, kDouble, lo, hi, seed);
  Tensor sgn = test::random(shape, kDouble, seed + 101).sign();
  return leaf(mag * where(sgn == 0, ones_like(sgn), sgn));
}

/// Values n + f with integer n in [-3, 3] and f in [0.1, 0.4): away from the
/// jumps of floor/ceil/trunc/round/frac (round's are at n + 0.5).
Tensor away_int(IntArrayRef shape, uint64_t seed = 0) {
  Generator g(seed * 31 + 7);
  Tensor n = randint(-3, 4, shape, g).to(kDouble);
  return leaf(n + test::random_positive(shape, kDouble, 0.1, 0.4, seed));
}

/// Distinct values (a random permutation of 0..n-1, centred, spaced 0.37
/// apart, plus a little noise): no ties for max/min/sort/topk/amax/norm(inf).
Tensor distinct(IntArrayRef shape, uint64_t seed = 0) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  Generator g(seed * 13 + 5);
  Tensor perm = randperm(n, g, TensorOptions(kDouble));
  Tensor noise = test::random_positive({n}, kDouble, 0.0, 0.05, seed);
  return leaf(((perm - double(n - 1) / 2) * 0.37 + noise).reshape(shape));
}

/// Two tensors of shapes a and b whose elements are all distinct from each
/// other (maximum/minimum/clamp with tensor bounds: no exact ties).
variable_list distinct_pair(IntArrayRef a, IntArrayRef b, uint64_t seed = 0) {
  int64_t na = 1, nb = 1;
  for (int64_t s : a)
    na *= s;
  for (int64_t s : b)
    nb *= s;
  Tensor all = distinct({na + nb}, seed).detach();
  return {leaf(all.narrow(0, 0, na).reshape(a)),
          leaf(all.narrow(0, na, nb).reshape(b))};
}

Tensor ix(std::vector<int64_t> v) { return tensor(v); }

/// A float64 leaf with the given values.
Tensor vals(std::vector<double> v, IntArrayRef shape) {
  return leaf(tensor(v, TensorOptions(kDouble)).reshape(shape));
}

// --- case builders
// ---------------------------------------------------------------

using Unary = std::function<Tensor(const Tensor &)>;
using Binary = std::function<Tensor(const Tensor &, const Tensor &)>;

Case unary(std::string label, std::function<Tensor()> x, Unary f,
           bool gg = false) {
  return {std::move(label), [x] { return variable_list{x()}; },
          [f](const variable_list &v) { return variable_list{f(v[0])}; }, gg};
}

Case binary(std::string label, std::function<variable_list()> xs, Binary f,
            bool gg = false) {
  return {std::move(label), std::move(xs),
          [f](const variable_list &v) { return variable_list{f(v[0], v[1])}; },
          gg};
}

/// A pointwise unary op on a (3, 4) tensor, a non-contiguous (transposed)
/// (3, 4) tensor and a 0-dim tensor, all drawn by `gen`.
std::vector<Case> unary_cases(std::function<Tensor(IntArrayRef, uint64_t)> gen,
                              Unary f, bool gg = false) {
  return {unary(
              "3x4",
              [gen] {
                return gen({3, 4}, 1);
              },
              f, gg),
          unary(
              "transposed",
              [gen] {
                return leaf(gen({4, 3}, 2).detach().t());
              },
              f),
          unary(
              "0-dim", [gen] { return gen({}, 3); }, f)};
}

/// A binary op on same-shape, broadcast (3,1)x(1,4), 0-dim x (2,3) and
/// transposed inputs, drawn by gen_a / gen_b.
std::vector<Case>
binary_cases(std::function<Tensor(IntArrayRef, uint64_t)> gen_a,
             std::function<Tensor(IntArrayRef, uint64_t)> gen_b, Binary f,
             bool gg = false) {
  return {
      binary(
          "same shape",
          [=] {
            return variable_list{gen_a({2, 3}, 1), gen_b({2, 3}, 2)};
          },
          f, gg),
      binary(
          "broadcast (3,1)x(1,4)",
          [=] {
            return variable_list{gen_a({3, 1}, 3), gen_b({1, 4}, 4)};
          },
          f, gg),
      binary(
          "0-dim x (2,3)",
          [=] {
            return variable_list{gen_a({}, 5), gen_b({2, 3}, 6)};
          },
          f),
      binary(
          "transposed",
          [=] {
            return variable_list{leaf(gen_a({3, 2}, 7).detach().t()),
                                 gen_b({2, 3}, 8)};
          },
          f),
  };
}

auto RND = [](IntArrayRef s, uint64_t seed) { return rnd(s, seed); };
auto AWAY0 = [](IntArrayRef s, uint64_t seed) {
  return away0(s, 0.3, 2.0, seed);
};
auto POS = [](IntArrayRef s, uint64_t seed) { return uni(s, 0.5, 3.0, seed); };

/// `make_self` builds a fresh tensor from the inputs (clone of a leaf) that
/// `op` then modifies in place: leaves that require grad cannot be.
Case inplace(std::string label, std::function<variable_list()> xs,
             std::function<Tensor(const variable_list &)> f, bool gg = false) {
  return {std::move(label), std::move(xs),
          [f](const variable_list &v) { return variable_list{f(v)}; }, gg};
}

// --- the table
// ---------------------------------------------------------------------

std::map<std::string, std::vector<Case>> build_cases() {
  std::map<std::string, std::vector<Case>> c;

  // Pointwise unary.
  c["neg"] = unary_cases(
      RND, [](auto &x) { return ember::neg(x); }, true);
  c["abs"] = unary_cases(
      AWAY0, [](auto &x) { return ember::abs(x); }, true);
  c["exp"] = unary_cases(
      RND, [](auto &x) { return ember::exp(x); }, true);
  c["exp2"] = unary_cases(RND, [](auto &x) { return ember::exp2(x); });
  c["expm1"] = unary_cases(RND, [](auto &x) { return ember::expm1(x); });
  c["log"] = unary_cases(
      POS, [](auto &x) { return ember::log(x); }, true);
  c["log2"] = unary_cases(POS, [](auto &x) { return ember::log2(x); });
  c["log10"] = unary_cases(POS, [](auto &x) { return ember::log10(x); });
  c["log1p"] = unary_cases(
      [](IntArrayRef s, uint64_t seed) { return uni(s, -0.5, 3.0, seed); },
      [](auto &x) { return ember::log1p(x); });
  c["sqrt"] = unary_cases(
      POS, [](auto &x) { return ember::sqrt(x); }, true);
  c["rsqrt"] = unary_cases(
      POS, [](auto &x) { return ember::rsqrt(x); }, true);
  c["sin"] = unary_cases(
      RND, [](auto &x) { return ember::sin(x); }, true);
  c["cos"] = unary_cases(
      RND, [](auto &x) { return ember::cos(x); }, true);
  c["tan"] = unary_cases(
      [](IntArrayRef s, uint64_t seed) { return uni(s, -1.2, 1.2, seed); },
      [](auto &x) { return ember::tan(x); }, true);
  auto in_unit = [](IntArrayRef s, uint64_t seed) {
    return uni(s, -0.9, 0.9, seed);
  };
  c["asin"] = unary_cases(
      in_unit, [](auto &x) { return ember::asin(x); }, true);
  c["acos"] = unary_cases(
      in_unit, [](auto &x) { return ember::acos(x); }, true);
  c["atan"] = unary_cases(
      RND, [](auto &x) { return ember::atan(x); }, true);
  c["sinh"] = unary_cases(RND, [](auto &x) { return ember::sinh(x); });
  c["cosh"] = unary_cases(RND, [](auto &x) { return ember::cosh(x); });
  c["tanh"] = unary_cases(
      RND, [](auto &x) { return ember::tanh(x); }, true);
  c["sigmoid"] = unary_cases(
      RND, [](auto &x) { return ember::sigmoid(x); }, true);
  c["relu"] = unary_cases(
      AWAY0, [](auto &x) { return ember::relu(x); }, true);
  c["_gelu_erf"] = unary_cases(
      RND, [](auto &x) { return ember::_gelu_erf(x); }, true);
  c["_gelu_tanh"] = unary_cases(
      RND, [](auto &x) { return ember::_gelu_tanh(x); }, true);
  // The fused backward of _gelu_erf, and its own derivative (gradgrad is
  // the third derivative of gelu).
  c["_gelu_erf_backward"] = binary_cases(
      RND, RND,
      [](auto &g, auto &x) { return ember::_gelu_erf_backward(g, x); }, true);
  c["silu"] = unary_cases(
      RND, [](auto &x) { return ember::silu(x); }, true);
  c["softplus"] = unary_cases(
      RND, [](auto &x) { return ember::softplus(x); }, true);
  // beta * x on both sides of the threshold, none near it.
  c["softplus"].push_back(unary(
      "beta=2 threshold=1",
      [] {
        return vals({-2.0, -0.3, 0.2, 0.9, 1.5, 3.0}, {2, 3});
      },
      [](auto &x) { return ember::softplus(x, 2, 1); }, true));
  c["erf"] = unary_cases(
      RND, [](auto &x) { return ember::erf(x); }, true);
  c["erfc"] = unary_cases(RND, [](auto &x) { return ember::erfc(x); });
  c["sign"] = unary_cases(AWAY0, [](auto &x) { return ember::sign(x); });
  auto AWAY_INT = [](IntArrayRef s, uint64_t seed) {
    return away_int(s, seed);
  };
  c["floor"] = unary_cases(AWAY_INT, [](auto &x) { return ember::floor(x); });
  c["ceil"] = unary_cases(AWAY_INT, [](auto &x) { return ember::ceil(x); });
  c["round"] = unary_cases(AWAY_INT, [](auto &x) { return ember::round(x); });
  c["trunc"] = unary_cases(AWAY_INT, [](auto &x) { return ember::trunc(x); });
  c["frac"] = unary_cases(AWAY_INT, [](auto &x) { return ember::frac(x); });
  c["reciprocal"] = unary_cases(
      AWAY0, [](auto &x) { return ember::reciprocal(x); }, true);
  c["square"] = unary_cases(
      RND, [](auto &x) { return ember::square(x); }, true);

  // Pointwise binary.
  c["add_Tensor"] = binary_cases(
      RND, RND, [](auto &a, auto &b) { return ember::add(a, b); }, true);
  c["add_Tensor"].push_back(binary(
      "alpha=2.5",
      [] {
        return variable_list{rnd({3, 1}, 1), rnd({4}, 2)};
      },
      [](auto &a, auto &b) { return ember::add(a, b, 2.5); }, true));
  c["add_Tensor"].push_back(inplace(
      "in-place add_",
      [] {
        return variable_list{rnd({3, 4}, 1), rnd({4}, 2)};
      },
      [](const variable_list &v) {
        Tensor z = v[0].clone();
        z.add_(v[1], -1.5);
        return z;
      }));
  c["sub_Tensor"] = binary_cases(
      RND, RND, [](auto &a, auto &b) { return ember::sub(a, b); }, true);
  c["sub_Tensor"].push_back(binary(
      "alpha=-3",
      [] {
        return variable_list{rnd({3, 1}, 1), rnd({1, 4}, 2)};
      },
      [](auto &a, auto &b) { return ember::sub(a, b, -3); }));
  c["rsub_Tensor"] = binary_cases(
      RND, RND, [](auto &a, auto &b) { return ember::rsub(a, b); });
  c["rsub_Tensor"].push_back(binary(
      "alpha=0.5",
      [] {
        return variable_list{rnd({3, 1}, 1), rnd({1, 4}, 2)};
      },
      [](auto &a, auto &b) { return ember::rsub(a, b, 0.5); }, true));
  c["mul_Tensor"] = binary_cases(
      RND, RND, [](auto &a, auto &b) { return ember::mul(a, b); }, true);
  c["mul_Tensor"].push_back(inplace(
      "in-place mul_ broadcast",
      [] {
        return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2)};
      },
      [](const variable_list &v) {
        Tensor z = v[0].clone();
        z.mul_(v[1]);
        return z;
      },
      true));
  c["mul_Tensor"].push_back(inplace(
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
  c["div_Tensor"] = binary_cases(
      RND, AWAY0, [](auto &a, auto &b) { return ember::div(a, b); }, true);
  c["div_Tensor"].push_back(inplace(
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
  auto rounding_div =
      [](std::function<Tensor(const Tensor &, const Tensor &)> f) {
        return std::vector<Case>{
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
  c["_div_trunc"] =
      rounding_div([](auto &a, auto &b) { return ember::_div_trunc(a, b); });
  c["_div_floor"] =
      rounding_div([](auto &a, auto &b) { return ember::_div_floor(a, b); });
  c["fmod_Tensor"] =
      rounding_div([](auto &a, auto &b) { return ember::fmod(a, b); });
  c["remainder_Tensor"] =
      rounding_div([](auto &a, auto &b) { return ember::remainder(a, b); });

  c["pow_Tensor_Scalar"] = {
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
  };
  c["pow_Tensor_Tensor"] = binary_cases(
      POS, RND, [](auto &a, auto &b) { return ember::pow(a, b); }, true);
  c["pow_Tensor_Tensor"].push_back(inplace(
      "in-place pow_",
      [] {
        return variable_list{uni({3, 4}, 0.5, 2.0), rnd({4})};
      },
      [](const variable_list &v) {
        Tensor z = v[0].clone();
        z.pow_(v[1]);
        return z;
      }));
  c["pow_Scalar"] = {
      unary(
          "2.5^x",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) { return ember::pow(2.5, x); }, true),
      unary(
          "0.5^x 0-dim", [] { return rnd({}, 2); },
          [](auto &x) { return ember::pow(0.5, x); }),
  };
  c["atan2"] = binary_cases(
      AWAY0, AWAY0, [](auto &a, auto &b) { return ember::atan2(a, b); }, true);

  auto max_min_cases = [](Binary f) {
    return std::vector<Case>{binary(
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
  };
  c["maximum"] =
      max_min_cases([](auto &a, auto &b) { return ember::maximum(a, b); });
  c["minimum"] =
      max_min_cases([](auto &a, auto &b) { return ember::minimum(a, b); });

  auto cond = [] {
    return tensor({true, false, false, true, true, false, true, false, false,
                   true, false, true})
        .reshape({3, 4});
  };
  c["where_self"] = {
      binary(
          "same shape",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
          },
          [cond](auto &a, auto &b) { return ember::where(cond(), a, b); },
          true),
      binary(
          "broadcast (3,1)x(1,4)",
          [] {
            return variable_list{rnd({3, 1}, 3), rnd({1, 4}, 4)};
          },
          [cond](auto &a, auto &b) { return ember::where(cond(), a, b); },
          true),
      binary(
          "broadcast condition",
          [] {
            return variable_list{rnd({3, 4}, 5), rnd({}, 6)};
          },
          [](auto &a, auto &b) {
            return ember::where(tensor({true, false, true, false}), a, b);
          }),
  };

  // Scalar bounds at 0.1: values 0.1 +- [0.2, 2).
  c["clamp_min"] = unary_cases(
      [](IntArrayRef s, uint64_t seed) {
        return leaf(away0(s, 0.2, 2.0, seed) + 0.1);
      },
      [](auto &x) { return ember::clamp_min(x, 0.1); }, true);
  c["clamp_max"] = unary_cases(
      [](IntArrayRef s, uint64_t seed) {
        return leaf(away0(s, 0.2, 2.0, seed) + 0.1);
      },
      [](auto &x) { return ember::clamp_max(x, 0.1); }, true);
  c["clamp_min_Tensor"] =
      max_min_cases([](auto &a, auto &b) { return ember::clamp_min(a, b); });
  c["clamp_max_Tensor"] =
      max_min_cases([](auto &a, auto &b) { return ember::clamp_max(a, b); });
  c["clamp_min"].push_back(inplace(
      "in-place clamp_min_",
      [] {
        return variable_list{leaf(away0({3, 4}) + 0.1)};
      },
      [](const variable_list &v) {
        Tensor z = v[0].clone();
        z.clamp_min_(0.1);
        return z;
      }));

  c["lerp_Scalar"] = binary_cases(
      RND, RND, [](auto &a, auto &b) { return ember::lerp(a, b, 0.3); }, true);
  c["lerp_Tensor"] = {
      {"same shape",
       [] {
         return variable_list{rnd({2, 3}, 1), rnd({2, 3}, 2), rnd({2, 3}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::lerp(v[0], v[1], v[2])};
       },
       true},
      {"broadcast",
       [] {
         return variable_list{rnd({3, 1}, 1), rnd({1, 4}, 2), rnd({4}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::lerp(v[0], v[1], v[2])};
       },
       true},
  };
  c["addcmul"] = {
      {"value=0.5 broadcast",
       [] {
         return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2), rnd({1, 4}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addcmul(v[0], v[1], v[2], 0.5)};
       },
       true},
      {"same shape",
       [] {
         return variable_list{rnd({2, 3}, 1), rnd({2, 3}, 2), rnd({2, 3}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addcmul(v[0], v[1], v[2])};
       }},
  };
  c["addcdiv"] = {
      {"value=-2 broadcast",
       [] {
         return variable_list{rnd({3, 4}, 1), rnd({3, 1}, 2),
                              away0({1, 4}, 0.5, 2, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addcdiv(v[0], v[1], v[2], -2)};
       },
       true},
      {"same shape",
       [] {
         return variable_list{rnd({2, 3}, 1), rnd({2, 3}, 2),
                              away0({2, 3}, 0.5, 2, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addcdiv(v[0], v[1], v[2])};
       }},
  };
  c["masked_fill_Scalar"] = {
      unary(
          "mask (3,4)",
          [] {
            return rnd({3, 4}, 1);
          },
          [cond](auto &x) { return ember::masked_fill(x, cond(), 2.0); }, true),
      unary(
          "broadcast mask (4,)",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::masked_fill(x, tensor({false, true, true, false}),
                                      -1.0);
          }),
      inplace(
          "in-place masked_fill_",
          [] {
            return variable_list{rnd({3, 4}, 3)};
          },
          [cond](const variable_list &v) {
            Tensor z = v[0].clone();
            z.masked_fill_(cond(), 0.5);
            return z;
          }),
  };

  // Copies, fills, dtype conversion.
  c["copy_"] = {
      inplace(
          "into a clone",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.copy_(v[1]);
            return z;
          },
          true),
      inplace(
          "broadcast source",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.copy_(v[1]);
            return z * v[0];
          }),
      inplace(
          "into a view",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 2}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.narrow(1, 1, 2).copy_(v[1]);
            return z;
          },
          true),
  };
  c["fill__Scalar"] = {
      inplace(
          "whole tensor",
          [] {
            return variable_list{rnd({3, 4}, 1)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.fill_(2.0);
            return z;
          }),
      inplace(
          "a row (view)",
          [] {
            return variable_list{rnd({3, 4}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.select(0, 1).fill_(-3.0);
            return z * 2;
          },
          true),
  };
  c["_to_copy"] = {
      unary(
          "same dtype",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) { return ember::_to_copy(x, kDouble); }, true),
      unary(
          "no dtype, transposed",
          [] {
            return leaf(rnd({4, 3}, 2).t());
          },
          [](auto &x) { return ember::_to_copy(x); }),
  };
  c["clone"] = unary_cases(
      RND, [](auto &x) { return ember::clone(x); }, true);

  // Views.
  c["as_strided"] = {
      unary(
          "overlapping windows", [] { return rnd({12}, 1); },
          [](auto &x) {
            return ember::as_strided(x, {3, 4}, {2, 1}, 1);
          },
          true),
      unary(
          "transposing strides",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::as_strided(x, {4, 3}, {1, 4});
          }),
      unary(
          "of a view",
          [] {
            return rnd({4, 5}, 3);
          },
          [](auto &x) {
            return ember::as_strided(x.narrow(0, 1, 3), {2, 2}, {5, 2});
          }),
  };
  c["view"] = {
      unary(
          "(3,4)->(4,3)",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return x.view({4, 3});
          },
          true),
      unary(
          "(2,3,2)->(-1)",
          [] {
            return rnd({2, 3, 2}, 2);
          },
          [](auto &x) { return x.view({-1}); }),
      unary(
          "0-dim->(1,1)", [] { return rnd({}, 3); },
          [](auto &x) {
            return x.view({1, 1});
          }),
  };
  c["squeeze"] = {unary(
      "(3,1,4,1)",
      [] {
        return rnd({3, 1, 4, 1}, 1);
      },
      [](auto &x) { return ember::squeeze(x); }, true)};
  c["squeeze_dim"] = {unary(
                          "dim=-1",
                          [] {
                            return rnd({3, 1, 4, 1}, 1);
                          },
                          [](auto &x) { return ember::squeeze(x, -1); }, true),
                      unary(
                          "non-unit dim",
                          [] {
                            return rnd({3, 4}, 2);
                          },
                          [](auto &x) { return ember::squeeze(x, 0); })};
  c["squeeze_dims"] = {unary(
      "dims {1,3}",
      [] {
        return rnd({3, 1, 4, 1}, 1);
      },
      [](auto &x) {
        return ember::squeeze(x, IntArrayRef{1, 3});
      },
      true)};
  c["unsqueeze"] = {unary(
                        "dim=1",
                        [] {
                          return rnd({3, 4}, 1);
                        },
                        [](auto &x) { return ember::unsqueeze(x, 1); }, true),
                    unary(
                        "dim=-1 of 0-dim", [] { return rnd({}, 2); },
                        [](auto &x) { return ember::unsqueeze(x, -1); })};
  c["transpose_int"] = {unary(
      "(2,3,4) 0<->2",
      [] {
        return rnd({2, 3, 4}, 1);
      },
      [](auto &x) { return ember::transpose(x, 0, -1) * 1.5; }, true)};
  c["t"] = {unary(
                "(3,4)",
                [] {
                  return rnd({3, 4}, 1);
                },
                [](auto &x) { return ember::t(x); }, true),
            unary(
                "1-d", [] { return rnd({4}, 2); },
                [](auto &x) { return ember::t(x); })};
  c["permute"] = {unary(
      "(2,3,4) {2,0,1}",
      [] {
        return rnd({2, 3, 4}, 1);
      },
      [](auto &x) {
        return ember::permute(x, {2, 0, -2});
      },
      true)};
  c["expand"] = {unary(
                     "(3,1)->(2,3,4)",
                     [] {
                       return rnd({3, 1}, 1);
                     },
                     [](auto &x) {
                       return x.expand({2, 3, 4});
                     },
                     true),
                 unary(
                     "0-dim->(2,2)", [] { return rnd({}, 2); },
                     [](auto &x) {
                       return x.expand({2, 2});
                     })};
  c["select_int"] = {unary(
                         "dim=1 index=-1",
                         [] {
                           return rnd({3, 4}, 1);
                         },
                         [](auto &x) { return ember::select(x, 1, -1); }, true),
                     unary(
                         "1-d to 0-dim", [] { return rnd({5}, 2); },
                         [](auto &x) { return ember::select(x, 0, 2); })};
  c["slice_Tensor"] = {unary(
                           "step 2",
                           [] {
                             return rnd({3, 7}, 1);
                           },
                           [](auto &x) { return ember::slice(x, 1, 1, 6, 2); },
                           true),
                       unary(
                           "negative start, open end",
                           [] {
                             return rnd({5, 2}, 2);
                           },
                           [](auto &x) { return ember::slice(x, 0, -3); })};
  c["diagonal"] = {unary(
                       "offset 1",
                       [] {
                         return rnd({3, 4}, 1);
                       },
                       [](auto &x) { return ember::diagonal(x, 1); }, true),
                   unary(
                       "3-d offset -1 dims (2,0)",
                       [] {
                         return rnd({3, 2, 4}, 2);
                       },
                       [](auto &x) { return ember::diagonal(x, -1, 2, 0); })};
  c["unfold"] = {
      unary(
          "overlapping size 3 step 1",
          [] {
            return rnd({2, 6}, 1);
          },
          [](auto &x) { return x.unfold(1, 3, 1); }, true),
      unary(
          "dim 0 size 2 step 1",
          [] {
            return rnd({4, 3}, 2);
          },
          [](auto &x) { return x.unfold(0, 2, 1); }, true),
      unary(
          "gaps size 2 step 3",
          [] {
            return rnd({3, 8}, 3);
          },
          [](auto &x) { return x.unfold(-1, 2, 3); }),
      unary(
          "0-dim", [] { return rnd({}, 4); },
          [](auto &x) { return x.unfold(0, 1, 1); }),
      // The windows' grad_fn is regenerated from the base (an in-place op
      // moved the storage's version): overlapping windows must still add up.
      unary(
          "overlapping view of a base modified in place",
          [] {
            return rnd({2, 5}, 5);
          },
          [](auto &x) {
            Tensor b = x.clone();
            Tensor w = b.unfold(1, 3, 1);
            b.mul_(2);
            return w * 1;
          })};

  // Reductions.
  c["sum"] = {unary(
                  "all",
                  [] {
                    return rnd({3, 4}, 1);
                  },
                  [](auto &x) { return ember::sum(x); }, true),
              unary(
                  "0-dim", [] { return rnd({}, 2); },
                  [](auto &x) { return ember::sum(x); })};
  c["sum_dim_IntList"] = {
      unary(
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
          [](auto &x) { return ember::sum(x, IntArrayRef{-1}, true); }, true),
      unary(
          "dims {} keepdim",
          [] {
            return rnd({2, 3}, 3);
          },
          [](auto &x) { return ember::sum(x, IntArrayRef{}, true); })};
  c["mean"] = {unary(
      "all",
      [] {
        return rnd({3, 4}, 1);
      },
      [](auto &x) { return ember::mean(x); }, true)};
  c["mean_dim"] = {
      unary(
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
          [](auto &x) { return ember::mean(x, IntArrayRef{1}, true); }, true)};
  c["prod_dim_int"] = {unary(
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
                           [](auto &x) { return ember::prod(x, 0, true); },
                           true),
                       unary(
                           "0-dim", [] { return away0({}, 0.5, 1.5, 3); },
                           [](auto &x) { return ember::prod(x, 0); })};
  auto first = [](std::tuple<Tensor, Tensor> t) { return std::get<0>(t); };
  c["max_dim"] = {
      unary(
          "dim 1",
          [] {
            return distinct({3, 4}, 1);
          },
          [first](auto &x) { return first(ember::max(x, 1)); }, true),
      unary(
          "dim 0 keepdim",
          [] {
            return distinct({3, 4}, 2);
          },
          [first](auto &x) { return first(ember::max(x, 0, true)); })};
  c["min_dim"] = {
      unary(
          "dim 1",
          [] {
            return distinct({3, 4}, 1);
          },
          [first](auto &x) { return first(ember::min(x, 1)); }, true),
      unary(
          "dim -1 keepdim",
          [] {
            return distinct({2, 3, 2}, 2);
          },
          [first](auto &x) { return first(ember::min(x, -1, true)); })};
  c["amax"] = {unary(
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
                   [](auto &x) { return ember::amax(x); })};
  c["amin"] = {unary(
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
                   [](auto &x) { return ember::amin(x); })};
  c["var_correction"] = {
      unary(
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
          })};
  c["norm_ScalarOpt_dim"] = {
      unary(
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
          [](auto &x) { return ember::norm(x, std::nullopt, {-1}); })};
  c["logsumexp"] = {unary(
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
                        true)};
  c["cumsum"] = {unary(
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
                     [](auto &x) { return ember::cumsum(x, 0); })};
  c["cumprod"] = {unary(
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
                      [](auto &x) { return ember::cumprod(x, -2); })};
  c["softmax_int"] = {unary(
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
                          [](auto &x) { return ember::softmax(x, 0); }, true)};
  c["log_softmax_int"] = {
      unary(
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
          [](auto &x) { return ember::log_softmax(x, 1); }, true)};

  // The backward kernels of softmax / log_softmax as ops of their own
  // (double backward of softmax differentiates them): any output values,
  // inner, outer and middle dims, a transposed grad_output, 0-dim.
  for (bool log : {false, true}) {
    auto op = [log](const Tensor &g, const Tensor &y, int64_t d) {
      return log ? ember::_log_softmax_backward_data(g, y, d, kDouble)
                 : ember::_softmax_backward_data(g, y, d, kDouble);
    };
    c[log ? "_log_softmax_backward_data" : "_softmax_backward_data"] = {
        binary(
            "dim 1",
            [] {
              return variable_list{rnd({3, 4}, 1), rnd({3, 4}, 2)};
            },
            [op](auto &g, auto &y) { return op(g, y, 1); }, true),
        binary(
            "dim 0 of 3-d",
            [] {
              return variable_list{rnd({3, 2, 2}, 3), rnd({3, 2, 2}, 4)};
            },
            [op](auto &g, auto &y) { return op(g, y, 0); }, true),
        binary(
            "dim 1 of 3-d",
            [] {
              return variable_list{rnd({2, 3, 2}, 5), rnd({2, 3, 2}, 6)};
            },
            [op](auto &g, auto &y) { return op(g, y, 1); }),
        binary(
            "transposed",
            [] {
              return variable_list{leaf(rnd({4, 3}, 7).detach().t()),
                                   rnd({3, 4}, 8)};
            },
            [op](auto &g, auto &y) { return op(g, y, -1); }),
        binary(
            "0-dim",
            [] {
              return variable_list{rnd({}, 9), rnd({}, 10)};
            },
            [op](auto &g, auto &y) { return op(g, y, 0); })};
  }

  // native_layer_norm (F::layer_norm): the output's gradient for input,
  // weight and bias; gradgrad runs the create_graph formula.
  auto ln = [](IntArrayRef shape, bool w, bool b) {
    return [shape = std::vector<int64_t>(shape.begin(), shape.end()), w,
            b](const variable_list &v) {
      std::optional<Tensor> wt, bt;
      size_t k = 1;
      if (w)
        wt = v[k++];
      if (b)
        bt = v[k++];
      return variable_list{
          std::get<0>(ember::native_layer_norm(v[0], shape, wt, bt, 1e-5))};
    };
  };
  c["native_layer_norm"] = {
      {"weight and bias",
       [] {
         return variable_list{rnd({3, 4}, 1), rnd({4}, 2), rnd({4}, 3)};
       },
       ln({4}, true, true), true},
      {"3-d over 2 dims",
       [] {
         return variable_list{rnd({2, 3, 4}, 4), rnd({3, 4}, 5),
                              rnd({3, 4}, 6)};
       },
       ln({3, 4}, true, true), true},
      {"no weight or bias",
       [] {
         return variable_list{rnd({3, 5}, 7)};
       },
       ln({5}, false, false), true},
      {"weight only",
       [] {
         return variable_list{rnd({3, 5}, 8), rnd({5}, 9)};
       },
       ln({5}, true, false)},
      {"bias only",
       [] {
         return variable_list{rnd({3, 5}, 10), rnd({5}, 11)};
       },
       ln({5}, false, true)},
      {"one row",
       [] {
         return variable_list{rnd({1, 6}, 12), rnd({6}, 13), rnd({6}, 14)};
       },
       ln({6}, true, true)},
      {"1-d input",
       [] {
         return variable_list{rnd({6}, 15), rnd({6}, 16), rnd({6}, 17)};
       },
       ln({6}, true, true), true},
      {"transposed",
       [] {
         return variable_list{leaf(rnd({4, 3}, 18).detach().t()), rnd({4}, 19),
                              rnd({4}, 20)};
       },
       ln({4}, true, true)}};

  // Matrix products.
  c["mm"] = {
      binary(
          "(3,4)x(4,2)",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({4, 2}, 2)};
          },
          [](auto &a, auto &b) { return ember::mm(a, b); }, true),
      binary(
          "transposed operand",
          [] {
            return variable_list{leaf(rnd({4, 3}, 3).t()), rnd({4, 2}, 4)};
          },
          [](auto &a, auto &b) { return ember::mm(a, b); })};
  c["bmm"] = {binary(
      "(2,3,4)x(2,4,2)",
      [] {
        return variable_list{rnd({2, 3, 4}, 1), rnd({2, 4, 2}, 2)};
      },
      [](auto &a, auto &b) { return ember::bmm(a, b); }, true)};
  c["addmm"] = {
      {"beta=0.5 alpha=2 bias (2,)",
       [] {
         return variable_list{rnd({2}, 1), rnd({3, 4}, 2), rnd({4, 2}, 3)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addmm(v[0], v[1], v[2], 0.5, 2)};
       },
       true},
      {"defaults",
       [] {
         return variable_list{rnd({3, 2}, 4), rnd({3, 4}, 5), rnd({4, 2}, 6)};
       },
       [](const variable_list &v) {
         return variable_list{ember::addmm(v[0], v[1], v[2])};
       }}};
  c["baddbmm"] = {{"beta=-1 alpha=0.5 bias (3,1)",
                   [] {
                     return variable_list{rnd({3, 1}, 1), rnd({2, 3, 4}, 2),
                                          rnd({2, 4, 2}, 3)};
                   },
                   [](const variable_list &v) {
                     return variable_list{
                         ember::baddbmm(v[0], v[1], v[2], -1, 0.5)};
                   },
                   true}};
  c["dot"] = {binary(
      "(5,)",
      [] {
        return variable_list{rnd({5}, 1), rnd({5}, 2)};
      },
      [](auto &a, auto &b) { return ember::dot(a, b); }, true)};

  // Shape manipulation.
  c["cat"] = {
      {"3 tensors dim 1",
       [] {
         return variable_list{rnd({2, 1}, 1), rnd({2, 3}, 2), rnd({2, 2}, 3)};
       },
       [](const variable_list &v) { return variable_list{ember::cat(v, 1)}; },
       true},
      {"dim 0 with an operand used twice",
       [] {
         return variable_list{rnd({2, 3}, 4), rnd({1, 3}, 5)};
       },
       [](const variable_list &v) {
         return variable_list{ember::cat({v[0], v[1], v[0]}, 0)};
       }}};
  c["flip"] = {unary(
      "dims {0,-1}",
      [] {
        return rnd({2, 3, 2}, 1);
      },
      [](auto &x) {
        return ember::flip(x, {0, -1});
      },
      true)};
  c["tril"] = {unary(
                   "diagonal 0",
                   [] {
                     return rnd({3, 4}, 1);
                   },
                   [](auto &x) { return ember::tril(x); }, true),
               unary(
                   "diagonal -1",
                   [] {
                     return rnd({4, 3}, 2);
                   },
                   [](auto &x) { return ember::tril(x, -1); })};
  c["triu"] = {unary(
                   "diagonal 1",
                   [] {
                     return rnd({3, 4}, 1);
                   },
                   [](auto &x) { return ember::triu(x, 1); }, true),
               unary(
                   "batched",
                   [] {
                     return rnd({2, 3, 3}, 2);
                   },
                   [](auto &x) { return ember::triu(x); })};
  c["constant_pad_nd"] = {
      unary(
          "pad {1,2,0,1}",
          [] {
            return rnd({2, 3}, 1);
          },
          [](auto &x) {
            return ember::constant_pad_nd(x, {1, 2, 0, 1}, 0.5);
          },
          true),
      unary(
          "negative pad (crop)",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::constant_pad_nd(x, {-1, 1});
          })};

  // Indexing (repeated indices wherever the op allows them).
  c["index_select"] = {
      unary(
          "dim 0 repeated",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return ember::index_select(x, 0, ix({0, 2, 0, 1, 2}));
          },
          true),
      unary(
          "dim -1",
          [] {
            return rnd({2, 3}, 2);
          },
          [](auto &x) {
            return ember::index_select(x, -1, ix({2, 2}));
          })};
  c["gather"] = {unary(
                     "dim 1 repeated",
                     [] {
                       return rnd({3, 4}, 1);
                     },
                     [](auto &x) {
                       return ember::gather(
                           x, 1, tensor({{0, 0, 3}, {1, 2, 1}, {3, 3, 3}}));
                     },
                     true),
                 unary(
                     "dim 0",
                     [] {
                       return rnd({3, 2}, 2);
                     },
                     [](auto &x) {
                       return ember::gather(x, 0, tensor({{2, 0}, {2, 2}}));
                     })};
  c["scatter__src"] = {
      inplace(
          "dim 1 distinct indices",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 2}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_(1, tensor({{3, 0}, {1, 2}, {0, 1}}), v[1]);
            return z;
          },
          true),
      inplace(
          "dim 0, larger src",
          [] {
            return variable_list{rnd({3, 2}, 3), rnd({3, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_(0, tensor({{2, 0}, {0, 1}}), v[1]);
            return z;
          })};
  c["scatter_add_"] = {
      inplace(
          "dim 1 repeated",
          [] {
            return variable_list{rnd({3, 4}, 1), rnd({3, 3}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_add_(1, tensor({{1, 1, 3}, {0, 0, 0}, {2, 3, 2}}), v[1]);
            return z;
          },
          true),
      // Only src's leading (3,2) corner (index's shape) is read: the rest
      // of src gets a zero gradient.
      inplace(
          "src larger than index",
          [] {
            return variable_list{rnd({3, 4}, 3), rnd({3, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            z.scatter_add_(1, tensor({{0, 0}, {3, 1}, {2, 2}}), v[1]);
            return z;
          })};
  c["index_add_"] = {inplace(
                         "dim 0 repeated alpha 2",
                         [] {
                           return variable_list{rnd({3, 4}, 1), rnd({4, 4}, 2)};
                         },
                         [](const variable_list &v) {
                           Tensor z = v[0].clone();
                           z.index_add_(0, ix({2, 0, 2, 2}), v[1], 2);
                           return z;
                         },
                         true),
                     inplace(
                         "dim 1",
                         [] {
                           return variable_list{rnd({2, 3}, 3), rnd({2, 2}, 4)};
                         },
                         [](const variable_list &v) {
                           Tensor z = v[0].clone();
                           z.index_add_(1, ix({1, 1}), v[1]);
                           return z;
                         })};
  c["masked_select"] = {
      unary(
          "mask (3,4)",
          [] {
            return rnd({3, 4}, 1);
          },
          [cond](auto &x) { return ember::masked_select(x, cond()); }, true),
      unary(
          "broadcast self (1,4)",
          [] {
            return rnd({1, 4}, 2);
          },
          [cond](auto &x) { return ember::masked_select(x, cond()); })};
  auto values = [](std::tuple<Tensor, Tensor> t) { return std::get<0>(t); };
  c["sort"] = {
      unary(
          "dim -1",
          [] {
            return distinct({3, 4}, 1);
          },
          [values](auto &x) { return values(ember::sort(x)); }, true),
      unary(
          "dim 0 descending",
          [] {
            return distinct({4, 2}, 2);
          },
          [values](auto &x) { return values(ember::sort(x, 0, true)); })};
  c["topk"] = {unary(
                   "k=2 largest",
                   [] {
                     return distinct({3, 5}, 1);
                   },
                   [values](auto &x) { return values(ember::topk(x, 2)); },
                   true),
               unary(
                   "k=3 smallest dim 0 unsorted",
                   [] {
                     return distinct({4, 2}, 2);
                   },
                   [values](auto &x) {
                     return values(ember::topk(x, 3, 0, false, false));
                   })};
  c["index_Tensor"] = {
      unary(
          "one index repeated",
          [] {
            return rnd({3, 4}, 1);
          },
          [](auto &x) {
            return ember::index(x, {ix({2, 0, 2, 1})});
          },
          true),
      unary(
          "two broadcast indices",
          [] {
            return rnd({3, 4}, 2);
          },
          [](auto &x) {
            return ember::index(x, {tensor({{0}, {2}, {0}}), ix({1, 3, 1})});
          },
          true),
      unary(
          "boolean mask",
          [] {
            return rnd({3, 4}, 3);
          },
          [cond](auto &x) { return ember::index(x, {cond()}); })};
  c["index_put_"] = {
      inplace(
          "accumulate repeated",
          [] {
            return variable_list{rnd({4, 3}, 1), rnd({5, 3}, 2)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({0, 2, 0, 3, 0})}, v[1], true);
            return z;
          },
          true),
      inplace(
          "overwrite distinct",
          [] {
            return variable_list{rnd({4, 3}, 3), rnd({2, 3}, 4)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({3, 1})}, v[1], false);
            return z;
          },
          true),
      inplace(
          "two indices, broadcast values",
          [] {
            return variable_list{rnd({3, 4}, 5), rnd({}, 6)};
          },
          [](const variable_list &v) {
            Tensor z = v[0].clone();
            ember::index_put_(z, {ix({0, 2, 2}), ix({1, 3, 1})}, v[1], true);
            return z;
          })};

  // Sliding windows (conv/pool building blocks).
  c["_im2col"] = {
      unary(
          "k 2x2 stride 1",
          [] {
            return rnd({1, 2, 3, 3}, 1);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 2}, {1, 1}, {0, 0}, {1, 1});
          },
          true),
      unary(
          "k 2x3 dil (1,2) pad (1,0) stride (2,1)",
          [] {
            return rnd({2, 1, 4, 5}, 2);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 3}, {1, 2}, {1, 0}, {2, 1});
          }),
      unary(
          "unbatched pad value",
          [] {
            return rnd({2, 3, 3}, 3);
          },
          [](auto &x) {
            return ember::_im2col(x, {2, 2}, {1, 1}, {1, 1}, {2, 2}, 1.5);
          })};
  // Columns: (N, C*kh*kw, L) with L = output positions of the window.
  c["_col2im"] = {
      unary(
          "k 2x2 stride 1 -> 3x3",
          [] {
            return rnd({1, 8, 4}, 1);
          },
          [](auto &x) {
            return ember::_col2im(x, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1});
          },
          true),
      // H: (4 + 2 - 1*(2-1) - 1)/2 + 1 = 3, W: (5 - 2*(3-1) - 1)/1 + 1 = 1.
      unary(
          "k 2x3 dil (1,2) pad (1,0) stride (2,1)",
          [] {
            return rnd({2, 6, 3}, 2);
          },
          [](auto &x) {
            return ember::_col2im(x, {4, 5}, {2, 3}, {1, 2}, {1, 0}, {2, 1});
          })};
  return c;
}

const std::map<std::string, std::vector<Case>> &cases() {
  static const auto table = build_cases();
  return table;
}

#define EMBER_GRADCHECK_OP_NAME(cname, node) #cname,
const std::vector<std::string> kDifferentiableOps = {
    EMBER_FORALL_DIFFERENTIABLE_OPS(EMBER_GRADCHECK_OP_NAME)};
#undef EMBER_GRADCHECK_OP_NAME

} // namespace

// See Note [One gradcheck case per differentiable op].
TEST(Gradcheck, EveryDifferentiableOpHasACase) {
  std::set<std::string> ops(kDifferentiableOps.begin(),
                            kDifferentiableOps.end());
  std::string missing, stale;
  for (const std::string &op : kDifferentiableOps)
    if (!cases().count(op) || cases().at(op).empty())
      missing += " " + op;
  for (const auto &[name, list] : cases())
    if (!ops.count(name))
      stale += " " + name;
  EXPECT_TRUE(missing.empty())
      << "ops with a derivative formula but no gradcheck case in "
         "test_gradcheck.cpp:"
      << missing;
  EXPECT_TRUE(stale.empty())
      << "gradcheck cases for ops that have no derivative formula (renamed?):"
      << stale;
}

class GradcheckOp : public ::testing::TestWithParam<std::string> {};

TEST_P(GradcheckOp, MatchesFiniteDifferences) {
  const std::string &op = GetParam();
  auto it = cases().find(op);
  ASSERT_NE(it, cases().end()) << "no gradcheck case for " << op;
  for (const Case &k : it->second) {
    SCOPED_TRACE(op + " [" + k.label + "]");
    variable_list inputs = k.inputs();
    if (k.label.find("transposed") != std::string::npos) {
      EXPECT_TRUE(
          std::any_of(inputs.begin(), inputs.end(),
                      [](const Tensor &t) { return !t.is_contiguous(); }))
          << "a 'transposed' case needs a non-contiguous input";
    }
    try {
      EXPECT_TRUE(autograd::gradcheck(k.fn, inputs));
    } catch (const std::exception &e) {
      ADD_FAILURE() << "gradcheck: " << e.what();
    }
    if (!k.gradgrad)
      continue;
    // Deterministic grad_outputs (gradgradcheck would draw its own).
    variable_list gos;
    uint64_t seed = 50;
    for (const Tensor &o : k.fn(inputs))
      if (o.defined() && o.is_floating_point())
        gos.push_back(leaf(test::random(o.sizes(), kDouble, seed++)));
    try {
      EXPECT_TRUE(autograd::gradgradcheck(k.fn, inputs, gos));
    } catch (const std::exception &e) {
      ADD_FAILURE() << "gradgradcheck: " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDifferentiableOps, GradcheckOp,
                         ::testing::ValuesIn(kDifferentiableOps),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

TEST(Gradcheck, DetectsAWrongFormula) {
  // The harness itself must fail on a wrong gradient: d/dx (x * stop(x))
  // computed as if both factors were x (2x), numerically 2x too, would pass;
  // x * x.detach() gives analytical x but numerical 2x.
  Tensor x = rnd({3}, 1);
  GradcheckFn f = [](const variable_list &v) {
    return variable_list{v[0] * v[0].detach()};
  };
  EXPECT_FALSE(autograd::gradcheck(f, {x}, 1e-6, 1e-5, 1e-3, false));
}
