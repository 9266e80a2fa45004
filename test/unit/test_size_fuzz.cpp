// A property fuzzer of the eager API's size, stride, offset, dim and index
// arithmetic: each case calls one op with arguments drawn from the int64
// edges (0, ±1, INT64_MAX, INT64_MIN, 2^31, 2^32, 2^62...) on a small tensor
// (contiguous, transposed, sliced, expanded, 0-dim or empty) and accepts
// either an ember::Error or a result that keeps the invariants: sizes are
// non-negative, every element lies inside the storage (checked by reading
// all of them, which ASan watches in test_size_fuzz_san), and the shape is
// the one the op's definition gives, computed here in 128-bit arithmetic.
// Never a crash, a non-ember exception or a wrong size.
//
// SizeFuzz.Cases runs a fixed number of cases; `scripts/ember.sh fuzz`
// runs SizeFuzzOnDemand with FUZZ_PROGRAMS cases per FUZZ_SEED.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

using namespace ember;

namespace {

using i128 = __int128;

constexpr int64_t kEdges[] = {0,
                              1,
                              2,
                              3,
                              -1,
                              -2,
                              -3,
                              INT64_MAX,
                              INT64_MIN,
                              INT64_MAX - 1,
                              INT64_MIN + 1,
                              INT32_MAX,
                              INT32_MIN,
                              int64_t(1) << 31,
                              int64_t(1) << 32,
                              (int64_t(1) << 32) + 1,
                              int64_t(1) << 62,
                              -(int64_t(1) << 62),
                              INT64_MAX / 2,
                              INT64_MAX / 3 + 1};

/// The largest result a case may allocate and read (elements).
constexpr i128 kMaxTouched = i128(1) << 20;

struct Case {
  std::mt19937_64 rng;
  std::ostringstream log; // what was called, for a failure's message

  explicit Case(uint64_t seed) : rng(seed) {}

  int64_t small(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  /// An int64 argument: an edge value, or a small one near the tensor's
  /// sizes (most valid calls use those).
  int64_t arg() {
    if (small(0, 5) == 0)
      return kEdges[small(0, std::size(kEdges) - 1)];
    return small(-5, 6);
  }
  std::vector<int64_t> args(int64_t max_len) {
    std::vector<int64_t> v(size_t(small(0, max_len)));
    for (int64_t &x : v)
      x = arg();
    return v;
  }

  /// A small tensor of one of the layouts users make.
  Tensor base() {
    switch (small(0, 6)) {
    case 0:
      return tensor(1.5f); // 0-dim
    case 1:
      return empty({0});
    case 2:
      return randn({2, 0, 3});
    case 3:
      return randn({3, 4}).t(); // transposed
    case 4:
      return randn({4, 6}).slice(1, 1, 5, 2); // strided
    case 5:
      return randn({3, 1}).expand({3, 4}); // stride 0
    default:
      return randn({2, 3, 4});
    }
  }
};

std::string str(const std::vector<int64_t> &v) {
  std::ostringstream os;
  os << IntArrayRef(v);
  return os.str();
}

/// a * b for |a| <= 2^63 and b an int64, saturated at 2^63 in magnitude (a
/// "does not fit int64" marker that later products cannot overflow).
i128 sat_mul(i128 a, i128 b) {
  constexpr i128 kCap = i128(1) << 63;
  i128 r = a * b; // |r| <= 2^126
  return r > kCap ? kCap : r < -kCap ? -kCap : r;
}

i128 product(IntArrayRef s) {
  i128 n = 1;
  for (int64_t x : s)
    n = sat_mul(n, x);
  return n;
}

/// The result keeps the invariants, and reading it stays in its storage.
::testing::AssertionResult sound(const Tensor &r) {
  if (!r.defined())
    return ::testing::AssertionSuccess();
  i128 span = r.storage_offset();
  for (int64_t d = 0; d < r.dim(); ++d) {
    if (r.size(d) < 0)
      return ::testing::AssertionFailure() << "negative size " << r.sizes();
    if (r.size(d) == 0)
      return ::testing::AssertionSuccess(); // no element to reach
    if (r.stride(d) < 0)
      return ::testing::AssertionFailure() << "negative stride";
    span += i128(r.size(d) - 1) * r.stride(d);
  }
  if (product(r.sizes()) != r.numel())
    return ::testing::AssertionFailure()
           << "numel " << r.numel() << " for sizes " << r.sizes();
  i128 elements = i128(r.storage().nbytes()) / i128(r.itemsize());
  if (r.numel() > 0 && span >= elements)
    return ::testing::AssertionFailure()
           << "reaches element " << int64_t(span) << " of a storage of "
           << int64_t(elements) << " (sizes " << r.sizes() << ", strides "
           << r.strides() << ", offset " << r.storage_offset() << ")";
  if (r.numel() > 0 && r.numel() <= kMaxTouched)
    (void)r.clone(); // reads every element: ASan sees any out of bounds
  return ::testing::AssertionSuccess();
}

/// One case: an op on edge arguments; returns the results to check and,
/// when the op defines it, the shape they must have.
struct Outcome {
  std::vector<Tensor> results;
  std::optional<std::vector<int64_t>> expected_shape;
};

Outcome run_case(Case &c) {
  Tensor x = c.base();
  Outcome o;
  int64_t a = c.arg(), b = c.arg(), k = c.arg();
  switch (c.small(0, 24)) {
  case 0: { // narrow: [start, start + length) of dim a
    c.log << "narrow(" << a << ", " << b << ", " << k << ")";
    Tensor r = x.narrow(a, b, k);
    o.results = {r};
    auto s = x.sizes().vec();
    s[size_t(a < 0 ? a + x.dim() : a)] = k;
    o.expected_shape = s;
    break;
  }
  case 1: { // slice(dim, start, end, step)
    int64_t step = c.small(0, 3) ? c.small(1, 3) : c.arg();
    c.log << "slice(" << a << ", " << b << ", " << k << ", " << step << ")";
    Tensor r = x.slice(a, b, k, step);
    o.results = {r};
    int64_t d = a < 0 ? a + x.dim() : a, n = x.size(d);
    i128 lo = b < 0 ? i128(b) + n : b, hi = k < 0 ? i128(k) + n : k;
    lo = std::clamp<i128>(lo, 0, n);
    hi = std::clamp<i128>(hi, lo, n);
    auto s = x.sizes().vec();
    s[size_t(d)] = int64_t((hi - lo + step - 1) / step);
    o.expected_shape = s;
    break;
  }
  case 2:
    c.log << "select(" << a << ", " << b << ")";
    o.results = {x.select(a, b)};
    break;
  case 3: {
    auto sizes = c.args(3);
    c.log << "view(" << str(sizes) << ")";
    o.results = {x.view(sizes)};
    break;
  }
  case 4: {
    auto sizes = c.args(3);
    c.log << "reshape(" << str(sizes) << ")";
    o.results = {x.reshape(sizes)};
    break;
  }
  case 5: {
    auto sizes = c.args(4);
    c.log << "expand(" << str(sizes) << ")";
    o.results = {x.expand(sizes)};
    break;
  }
  case 6: {
    auto sizes = c.args(3), strides = c.args(3);
    strides.resize(sizes.size(), 1);
    std::optional<int64_t> off;
    if (c.small(0, 1))
      off = c.arg();
    c.log << "as_strided(" << str(sizes) << ", " << str(strides) << ", "
          << (off ? std::to_string(*off) : "none") << ")";
    o.results = {x.as_strided(sizes, strides, off)};
    break;
  }
  case 7: {
    auto sizes = c.args(3), strides = c.args(3);
    strides.resize(sizes.size(), 1);
    c.log << "empty_strided(" << str(sizes) << ", " << str(strides) << ")";
    // Allocates: only sizes that are small or overflow (an error).
    i128 n = product(sizes);
    if (n > kMaxTouched && n < (i128(1) << 63))
      return o;
    Tensor r = empty_strided(sizes, strides);
    if (r.numel() > 0 && r.numel() <= kMaxTouched)
      r.fill_(1); // writes every element
    o.results = {r};
    break;
  }
  case 8: {
    auto sizes = c.args(3);
    c.log << "zeros(" << str(sizes) << ")";
    i128 n = product(sizes);
    if (n > kMaxTouched && n < (i128(1) << 63))
      return o;
    o.results = {zeros(sizes)};
    o.expected_shape = sizes;
    break;
  }
  case 9: {
    auto reps = c.args(4);
    c.log << "repeat(" << str(reps) << ")";
    if (reps.size() >= size_t(x.dim())) {
      std::vector<int64_t> s(reps.size() - size_t(x.dim()), 1);
      for (int64_t v : x.sizes())
        s.push_back(v);
      i128 n = 1;
      std::vector<int64_t> out;
      bool fits = true;
      for (size_t i = 0; i < s.size(); ++i) {
        i128 e = i128(s[i]) * reps[i];
        fits = fits && e >= 0 && e <= INT64_MAX;
        out.push_back(int64_t(e));
        n = sat_mul(n, fits ? e : 1);
      }
      if (fits && n > kMaxTouched && n < (i128(1) << 63))
        return o;
      if (fits && n < (i128(1) << 63))
        o.expected_shape = out;
    }
    o.results = {x.repeat(reps)};
    break;
  }
  case 10: {
    auto pad = c.args(4);
    c.log << "constant_pad_nd(" << str(pad) << ")";
    if (pad.size() % 2 == 0 && pad.size() / 2 <= size_t(x.dim())) {
      auto s = x.sizes().vec();
      i128 n = 1;
      bool fits = true;
      for (size_t i = 0; i < pad.size() / 2; ++i) {
        size_t d = s.size() - 1 - i;
        i128 e = i128(s[d]) + pad[2 * i] + pad[2 * i + 1];
        fits = fits && e >= 0 && e <= INT64_MAX;
        s[d] = int64_t(e);
      }
      for (int64_t v : s)
        n = sat_mul(n, fits ? v : 1);
      if (fits && n > kMaxTouched && n < (i128(1) << 63))
        return o;
      if (fits && n < (i128(1) << 63))
        o.expected_shape = s;
    }
    o.results = {constant_pad_nd(x, pad, 0)};
    break;
  }
  case 11: {
    int64_t step = c.arg();
    c.log << "arange(" << a << ", " << b << ", " << step << ")";
    i128 n = step == 0 ? 0 : (i128(b) - a + step - (step > 0 ? 1 : -1)) / step;
    if (n > kMaxTouched && n < (i128(1) << 48))
      return o;
    Tensor r = arange(a, b, step);
    o.results = {r};
    o.expected_shape = std::vector<int64_t>{int64_t(n)};
    if (r.numel() > 0) { // the ends are exact
      EXPECT_EQ(r[0].item<int64_t>(), a) << c.log.str();
      EXPECT_EQ(r[-1].item<int64_t>(),
                int64_t(uint64_t(a) + uint64_t(r.numel() - 1) * uint64_t(step)))
          << c.log.str();
    }
    break;
  }
  case 12:
    c.log << "triu(" << a << ")";
    if (x.dim() >= 2) {
      o.results = {x.triu(a), x.tril(a)};
      o.expected_shape = x.sizes().vec();
    } else {
      o.results = {x.triu(a)};
    }
    break;
  case 13:
    c.log << "transpose(" << a << ", " << b << ") permute";
    o.results = {x.transpose(a, b), x.permute(c.args(3))};
    break;
  case 14:
    c.log << "unsqueeze(" << a << ") squeeze(" << b << ")";
    o.results = {x.unsqueeze(a), x.squeeze(b)};
    break;
  case 15:
    c.log << "flatten(" << a << ", " << b << ")";
    o.results = {x.flatten(a, b)};
    break;
  case 16: {
    auto sizes = c.args(3);
    c.log << "unflatten(" << a << ", " << str(sizes) << ")";
    o.results = {x.unflatten(a, sizes)};
    break;
  }
  case 17:
    c.log << "split(" << a << ", " << b << ") chunk(" << k << ", " << b << ")";
    if (a > 0 && x.dim() > 0 && (b >= -x.dim() && b < x.dim()) &&
        i128(x.size(b < 0 ? b + x.dim() : b)) / a > kMaxTouched)
      return o;
    o.results = x.split(a, b);
    for (const Tensor &t : x.chunk(k, b))
      o.results.push_back(t);
    break;
  case 18:
    c.log << "diagonal(" << a << ", " << b << ", " << k << ")";
    o.results = {x.diagonal(a, b, k)};
    break;
  case 19: {
    c.log << "index_select(" << a << ", [" << b << ", " << k << "])";
    o.results = {x.index_select(a, tensor({b, k}))};
    break;
  }
  case 20: {
    c.log << "index([" << b << "]) index_put_";
    o.results = {x.index({tensor({b})})};
    Tensor y = x.clone();
    y.index_put_({tensor({k})}, tensor(2.0f));
    o.results.push_back(y);
    break;
  }
  case 21:
    c.log << "roll(" << a << ", " << b << ") flip";
    o.results = {x.roll({a}, {b}), x.flip({b})};
    break;
  case 22: {
    c.log << "sum/amax/cumsum over " << a;
    std::vector<int64_t> dims{a};
    o.results = {x.sum(dims), x.amax(dims), x.cumsum(a)};
    break;
  }
  case 23: {
    c.log << "topk(" << a << ", " << b << ")";
    auto [v, i] = x.topk(a, b);
    o.results = {v, i};
    break;
  }
  default: {
    c.log << "gather(" << a << ", index " << k << ")";
    Tensor idx = full(x.sizes(), k, kLong);
    o.results = {x.gather(a, idx)};
    break;
  }
  }
  return o;
}

/// Runs `n` cases from `seed`; each case is its own seed, so a failure
/// names one case to rerun.
struct Counts {
  int64_t answered = 0, raised = 0, skipped = 0;
};

Counts run_cases(uint64_t seed, int64_t n) {
  Counts counts;
  for (int64_t i = 0; i < n; ++i) {
    Case c(seed * 1000003u + uint64_t(i));
    try {
      Outcome o = run_case(c);
      ++(o.results.empty() ? counts.skipped : counts.answered);
      for (const Tensor &r : o.results)
        EXPECT_TRUE(sound(r)) << c.log.str();
      if (o.expected_shape && !o.results.empty()) {
        EXPECT_EQ(o.results[0].sizes().vec(), *o.expected_shape) << c.log.str();
      }
    } catch (const Error &) {
      // A clear error is a right answer for an argument out of range.
      ++counts.raised;
    } catch (const std::exception &e) {
      ADD_FAILURE() << c.log.str()
                    << " raised a non-ember exception: " << e.what();
    }
    if (::testing::Test::HasFailure())
      break; // the first failing case is the one to read
  }
  std::cout << "size fuzz, seed " << seed << ": " << n << " cases, "
            << counts.answered << " answered, " << counts.raised
            << " raised ember::Error, " << counts.skipped
            << " skipped (would allocate too much)\n";
  return counts;
}

} // namespace

TEST(SizeFuzz, Cases) {
  // Both outcomes must be common, or the fuzzer tests little: mostly
  // errors (arguments always out of range) or mostly answers (never near
  // the edges).
  Counts c = run_cases(1, 4000);
  EXPECT_GT(c.answered, 500);
  EXPECT_GT(c.raised, 500);
}

TEST(SizeFuzzOnDemand, FromEnvironment) {
  const char *n = std::getenv("FUZZ_PROGRAMS");
  const char *seed = std::getenv("FUZZ_SEED");
  if (!n || !seed)
    GTEST_SKIP() << "set FUZZ_PROGRAMS and FUZZ_SEED (scripts/ember.sh fuzz)";
  run_cases(std::strtoull(seed, nullptr, 10), std::atoll(n));
}
