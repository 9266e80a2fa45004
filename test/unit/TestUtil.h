#pragma once
// Shared helpers for ember's unit tests: random inputs (never all zeros),
// non-contiguous variants, float64 references and tolerant comparison.

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace ember::test {

/// The elements of any tensor (any dtype, any strides) in row-major logical
/// order, as doubles.
inline std::vector<double> values(const Tensor &t) {
  Tensor d = t.to(kDouble).contiguous();
  const double *p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

/// Random values of `dtype`: normal for floats, in [-9, 9] for signed ints,
/// [0, 9] for uint8, random for bool. Deterministic for a seed.
inline Tensor random(IntArrayRef shape, ScalarType dtype = kFloat,
                     uint64_t seed = 0) {
  Generator g(seed * 7919 + 17);
  if (isFloatingType(dtype))
    return randn(shape, g, TensorOptions(kDouble)).to(dtype);
  if (dtype == kBool)
    return randint(0, 2, shape, g).to(kBool);
  if (dtype == kByte)
    return randint(0, 10, shape, g).to(kByte);
  return randint(-9, 10, shape, g).to(dtype);
}

/// Positive random floats in [lo, hi) (for log, sqrt, ...).
inline Tensor random_positive(IntArrayRef shape, ScalarType dtype = kFloat,
                              double lo = 0.1, double hi = 4.0,
                              uint64_t seed = 0) {
  Generator g(seed * 7919 + 29);
  return (rand(shape, g, TensorOptions(kDouble)) * (hi - lo) + lo).to(dtype);
}

/// The same values as `t` in a non-contiguous tensor (every other element of
/// a larger buffer along the last dim).
inline Tensor noncontiguous(const Tensor &t) {
  if (t.dim() == 0)
    return t;
  std::vector<int64_t> big(t.sizes().begin(), t.sizes().end());
  big.back() *= 2;
  Tensor buf = zeros(big, t.options());
  Tensor view = buf.slice(-1, 0, std::nullopt, 2);
  view.copy_(t);
  EXPECT_FALSE(view.is_contiguous() && t.numel() > 1);
  return view;
}

/// Element-wise closeness |a - e| <= atol + rtol * |e|, NaNs equal, infs
/// equal; shapes must match. Reports the first mismatches.
inline ::testing::AssertionResult close(const Tensor &actual,
                                        const Tensor &expected,
                                        double rtol = 1e-5,
                                        double atol = 1e-6) {
  if (actual.sizes() != expected.sizes()) {
    std::ostringstream os;
    os << "shape " << actual.sizes() << " != expected " << expected.sizes();
    return ::testing::AssertionFailure() << os.str();
  }
  auto a = values(actual), e = values(expected);
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < a.size(); ++i) {
    bool ok = (std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i] ||
              std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
    if (!ok && bad++ < 5)
      os << "\n  at flat index " << i << ": got " << a[i] << ", expected "
         << e[i];
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << a.size() << " elements differ" << os.str();
  return ::testing::AssertionSuccess();
}

/// A float64 tensor of `shape` whose elements are f(i) for the row-major
/// index i (build references with it).
inline Tensor from_fn(IntArrayRef shape,
                      const std::function<double(int64_t)> &f) {
  Tensor t = empty(shape, TensorOptions(kDouble));
  double *p = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = f(i);
  return t;
}

/// Row-major coordinates of flat index i in `s`, and back.
using Shape = std::vector<int64_t>;
inline Shape unravel(int64_t i, const Shape &s) {
  Shape c(s.size());
  for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
    c[size_t(d)] = i % s[size_t(d)];
    i /= s[size_t(d)];
  }
  return c;
}
inline int64_t ravel(const Shape &c, const Shape &s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d)
    i = i * s[d] + c[d];
  return i;
}
inline Shape shapeOf(const Tensor &t) {
  return Shape(t.sizes().begin(), t.sizes().end());
}
/// A float64 reference tensor of `shape` from f(coordinates).
inline Tensor ref(const Shape &shape,
                  const std::function<double(const Shape &)> &f) {
  return from_fn(shape, [&](int64_t i) { return f(unravel(i, shape)); });
}

/// Runs `run` (which returns tensors) with 1 and with 4 threads and expects
/// bit-identical results: kernels split work by shape, not thread count.
template <class F> void expect_same_across_thread_counts(F &&run) {
  int saved = get_num_threads();
  set_num_threads(1);
  std::vector<Tensor> one = run();
  set_num_threads(4);
  std::vector<Tensor> four = run();
  set_num_threads(saved);
  ASSERT_EQ(one.size(), four.size());
  for (size_t k = 0; k < one.size(); ++k)
    EXPECT_TRUE(close(one[k], four[k], 0, 0)) << "result " << k;
}

/// Expects `stmt` to throw ember::Error (or a subclass) whose message
/// contains `substr`.
#define EXPECT_EMBER_ERROR(stmt, substr)                                       \
  do {                                                                         \
    try {                                                                      \
      stmt;                                                                    \
      ADD_FAILURE() << "expected ember::Error containing '" << substr          \
                    << "' from: " #stmt;                                       \
    } catch (const ::ember::Error &e) {                                        \
      EXPECT_NE(std::string(e.what()).find(substr), std::string::npos)         \
          << "message was: " << e.what();                                      \
    }                                                                          \
  } while (0)

} // namespace ember::test
