#pragma once
// Input builders for the per-op test data (OpInfo.h) and for the tests'
// remaining hand-written cases: float64 leaves for gradcheck (inside each
// op's differentiable domain) and boxed arguments for the shape-rule tests.
// Values are random, never all zeros.

#include "TestUtil.h"

#include <ember/autograd.h>
#include <ember/ember.h>

#include "eager/IValue.h"

#include <functional>
#include <string>
#include <vector>

namespace ember::test::samples {

using autograd::GradcheckFn;
using autograd::variable_list;

// --- gradcheck inputs (float64 leaves that require grad)
// ----------------------

/// A float64 leaf that requires grad, with the values (and, for float64,
/// the strides: transposed inputs stay non-contiguous) of t.
inline Tensor leaf(const Tensor &t) {
  Tensor d = t.detach();
  if (d.dtype() != kDouble)
    d = d.to(kDouble);
  d.requires_grad_();
  return d;
}

/// Standard normal values.
inline Tensor rnd(IntArrayRef shape, uint64_t seed = 0) {
  return leaf(test::random(shape, kDouble, seed));
}

/// Uniform values in [lo, hi).
inline Tensor uni(IntArrayRef shape, double lo, double hi, uint64_t seed = 0) {
  return leaf(test::random_positive(shape, kDouble, lo, hi, seed));
}

/// Magnitudes in [lo, hi) with random signs: away from 0 (abs, sign, relu,
/// reciprocal, denominators).
inline Tensor away0(IntArrayRef shape, double lo = 0.3, double hi = 2.0,
                    uint64_t seed = 0) {
  Tensor mag = test::random_positive(shape, kDouble, lo, hi, seed);
  Tensor sgn = test::random(shape, kDouble, seed + 101).sign();
  return leaf(mag * where(sgn == 0, ones_like(sgn), sgn));
}

/// Values n + f with integer n in [-3, 3] and f in [0.1, 0.4): away from the
/// jumps of floor/ceil/trunc/round/frac (round's are at n + 0.5).
inline Tensor away_int(IntArrayRef shape, uint64_t seed = 0) {
  Generator g(seed * 31 + 7);
  Tensor n = randint(-3, 4, shape, g).to(kDouble);
  return leaf(n + test::random_positive(shape, kDouble, 0.1, 0.4, seed));
}

/// Distinct values (a random permutation of 0..n-1, centred, spaced 0.37
/// apart, plus a little noise): no ties for max/min/sort/topk/amax/norm(inf).
inline Tensor distinct(IntArrayRef shape, uint64_t seed = 0) {
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
inline variable_list distinct_pair(IntArrayRef a, IntArrayRef b,
                                   uint64_t seed = 0) {
  int64_t na = 1, nb = 1;
  for (int64_t s : a)
    na *= s;
  for (int64_t s : b)
    nb *= s;
  Tensor all = distinct({na + nb}, seed).detach();
  return {leaf(all.narrow(0, 0, na).reshape(a)),
          leaf(all.narrow(0, na, nb).reshape(b))};
}

/// The device a sample's function makes its index and mask tensors on:
/// the CPU, or the device the CUDA harness runs the samples on
/// (every_gradient_on in test/unit/test_cuda_ops.cpp).
inline Device &sample_device() {
  static thread_local Device d(kCPU);
  return d;
}

/// An int64 index tensor on sample_device(): ix({0, 2}); ix2({{0}, {2}}).
inline Tensor ix(std::vector<int64_t> v) {
  return tensor(v).to(sample_device());
}
inline Tensor ix2(detail::TensorDataContainer v) {
  return tensor(v).to(sample_device());
}

/// A float64 leaf with the given values.
inline Tensor vals(std::vector<double> v, IntArrayRef shape) {
  return leaf(tensor(v, TensorOptions(kDouble)).reshape(shape));
}

/// A fixed (3, 4) boolean mask with both values in every row and column.
inline Tensor mask34() {
  return tensor({true, false, false, true, true, false, true, false, false,
                 true, false, true})
      .reshape({3, 4})
      .to(sample_device());
}

/// Generators of gradcheck inputs by shape and seed.
using Gen = std::function<Tensor(IntArrayRef, uint64_t)>;
inline Tensor RND(IntArrayRef s, uint64_t seed) { return rnd(s, seed); }
inline Tensor AWAY0(IntArrayRef s, uint64_t seed) {
  return away0(s, 0.3, 2.0, seed);
}
inline Tensor POS(IntArrayRef s, uint64_t seed) {
  return uni(s, 0.5, 3.0, seed);
}
inline Tensor AWAY_INT(IntArrayRef s, uint64_t seed) {
  return away_int(s, seed);
}

// --- gradcheck samples
// ----------------------------------------------------------

/// One gradcheck of one op: inputs (those that require grad are checked),
/// the function, and whether to check second derivatives too. A label with
/// "transposed" promises a non-contiguous input (test_gradcheck checks it).
struct GradSample {
  std::string label;
  std::function<variable_list()> inputs;
  GradcheckFn fn;
  bool gradgrad = false;
};

using Unary = std::function<Tensor(const Tensor &)>;
using Binary = std::function<Tensor(const Tensor &, const Tensor &)>;

inline GradSample unary(std::string label, std::function<Tensor()> x, Unary f,
                        bool gg = false) {
  return {std::move(label), [x] { return variable_list{x()}; },
          [f](const variable_list &v) { return variable_list{f(v[0])}; }, gg};
}

inline GradSample binary(std::string label, std::function<variable_list()> xs,
                         Binary f, bool gg = false) {
  return {std::move(label), std::move(xs),
          [f](const variable_list &v) { return variable_list{f(v[0], v[1])}; },
          gg};
}

/// `f` builds a fresh tensor from the inputs (clone of a leaf) that it then
/// modifies in place: leaves that require grad cannot be.
inline GradSample inplace(std::string label, std::function<variable_list()> xs,
                          std::function<Tensor(const variable_list &)> f,
                          bool gg = false) {
  return {std::move(label), std::move(xs),
          [f](const variable_list &v) { return variable_list{f(v)}; }, gg};
}

/// A unary op on a (3, 4) tensor, a non-contiguous (transposed) (3, 4)
/// tensor and a 0-dim tensor, all drawn by `gen`.
inline std::vector<GradSample> unary_cases(Gen gen, Unary f, bool gg = false) {
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
inline std::vector<GradSample> binary_cases(Gen gen_a, Gen gen_b, Binary f,
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

// --- boxed arguments for the shape-rule tests
// ---------------------------------

using Shape = std::vector<int64_t>;
/// Random values (test::random).
inline Tensor R(const Shape &s, ScalarType dt = kFloat, uint64_t seed = 1) {
  return test::random(s, dt, seed);
}
/// Non-contiguous copy.
inline Tensor NC(const Tensor &t) { return test::noncontiguous(t); }
/// A wrapped number (as `x + 2` makes).
inline Tensor W(const Scalar &s) { return wrapped_scalar_tensor(s); }
/// Nonzero values (odd integers, or floats away from 0): divisors.
inline Tensor NZ(const Shape &s, ScalarType dt = kFloat, uint64_t seed = 3) {
  if (isFloatingType(dt))
    return test::random_positive(s, dt, 0.5, 3.0, seed);
  return (test::random(s, kLong, seed) * 2 + 1).to(dt);
}
/// Integer indices in [0, n).
inline Tensor Idx(const Shape &s, int64_t n, ScalarType dt = kLong,
                  uint64_t seed = 5) {
  Generator g(seed);
  return randint(0, n, s, g).to(dt);
}
inline IValue L(std::vector<int64_t> v) { return IValue(std::move(v)); }
inline IValue TL(std::vector<Tensor> v) { return IValue(std::move(v)); }
inline IValue None() { return IValue(); }

/// What a shape-rule case expects of eager.
enum MetaFlags : unsigned {
  kNone = 0,
  kThrows = 1,    ///< eager must raise (a misuse case)
  kNeedsData = 2, ///< infer answers needs_data
};

/// One call of an op through the dispatcher: its boxed arguments.
struct MetaSample {
  std::function<Stack()> args;
  unsigned flags = kNone;
};

} // namespace ember::test::samples
