// The CUDA device math prelude (eager/cuda/PointwiseMath.cuh), compiled
// here as host C++ (Note [Self-contained device header]), against the CPU's
// eager/PointwiseMath.h, runtime/Half.h and eager/Convert.h: every primitive
// with exact semantics (all but the transcendentals, whose last bits differ
// between libm, ember's vector math and CUDA's) on every compute type, over
// special and random values, bit for bit. This runs on every machine, so a
// change to either twin that breaks Note [Pointwise semantics] on the other
// fails here before it reaches a GPU; test_cuda checks the compiled kernels
// on the GPU itself.
#include "eager/Convert.h"
#include "eager/PointwiseMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <math.h>
#include <random>
#include <vector>

namespace dev {
#include "eager/cuda/PointwiseMath.cuh"
} // namespace dev

namespace {

template <class T> uint64_t bits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof v);
  return b;
}

/// Equal bit for bit, or both NaN (NaN payloads are not part of the
/// semantics).
template <class T> bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (a != a && b != b)
      return true;
  return bits(a) == bits(b);
}

/// Special and random values of T.
template <class T> std::vector<T> samples() {
  std::vector<T> v;
  std::mt19937_64 rng(42);
  if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    v = {T(0),          -T(0),          T(1),          T(-1),
         T(0.5),        T(-0.5),        T(1.5),        T(2.5),
         T(-2.5),       T(3),           T(-7),         T(7.25),
         L::max(),      -L::max(),      L::min(),      L::denorm_min(),
         L::infinity(), -L::infinity(), L::quiet_NaN()};
    std::normal_distribution<double> n(0, 50);
    for (int i = 0; i < 60; ++i)
      v.push_back(T(n(rng)));
  } else if constexpr (std::is_same_v<T, bool>) {
    v = {false, true};
  } else {
    using L = std::numeric_limits<T>;
    v = {T(0), T(1), L::max(), L::min(), T(L::max() - 1), T(7), T(3)};
    if constexpr (std::is_signed_v<T>)
      for (T x : {T(-1), T(-7), T(-3), T(L::min() + 1)})
        v.push_back(x);
    for (int i = 0; i < 40; ++i)
      v.push_back(T(rng() % 2 ? int64_t(rng() % 19) - 9 : int64_t(rng())));
  }
  return v;
}

template <class T> void check_type() {
  namespace h = ember::pw;
  namespace d = dev::ember::pw;
  const std::vector<T> xs = samples<T>();
  int checked = 0;
#define EMBER_SAME(expr_h, expr_d)                                             \
  do {                                                                         \
    T want = expr_h, got = expr_d;                                             \
    EXPECT_TRUE(same(want, got)) << #expr_h << " for a=" << +a << " b=" << +b  \
                                 << ": cpu " << +want << ", device " << +got;  \
    ++checked;                                                                 \
  } while (0)
  for (T a : xs) {
    T b = a;
    if constexpr (!std::is_same_v<T, bool>) {
      EMBER_SAME(h::abs(a), d::abs(a));
      EMBER_SAME(h::sign(a), d::sign(a));
      EMBER_SAME(h::floor(a), d::floor(a));
      EMBER_SAME(h::ceil(a), d::ceil(a));
      EMBER_SAME(h::trunc(a), d::trunc(a));
      EMBER_SAME(h::round_half_even(a), d::round_half_even(a));
    }
    EXPECT_EQ(h::truthy(a), d::truthy(a));
    if constexpr (!std::is_floating_point_v<T>)
      EMBER_SAME(h::bitwise_not(a), d::bitwise_not(a));
    for (T bb : xs) {
      b = bb;
      EMBER_SAME(h::maximum(a, b), d::maximum(a, b));
      EMBER_SAME(h::minimum(a, b), d::minimum(a, b));
      EMBER_SAME(h::clamp_min(a, b), d::clamp_min(a, b));
      EMBER_SAME(h::clamp_max(a, b), d::clamp_max(a, b));
      if constexpr (std::is_same_v<T, bool>)
        continue;
      else if constexpr (std::is_floating_point_v<T>) {
        EMBER_SAME(h::fmod(a, b), d::fmod(a, b));
        EMBER_SAME(h::remainder(a, b), d::remainder(a, b));
        EMBER_SAME(h::div_floor(a, b), d::div_floor(a, b));
        EMBER_SAME(h::div_trunc(a, b), d::div_trunc(a, b));
      } else {
        // (integer division by zero raises before any kernel runs)
        EMBER_SAME(h::pow(a, T(b % 9)), d::pow(a, T(b % 9)));
        if (b != 0) {
          EMBER_SAME(h::div_int(a, b), d::div_int(a, b));
          EMBER_SAME(h::mod_int(a, b), d::mod_int(a, b));
          EMBER_SAME(h::remainder(a, b), d::remainder(a, b));
          EMBER_SAME(h::div_floor(a, b), d::div_floor(a, b));
          EMBER_SAME(h::div_trunc(a, b), d::div_trunc(a, b));
        }
      }
    }
  }
#undef EMBER_SAME
  EXPECT_GT(checked, 10);
}

} // namespace

TEST(CudaMath, PrimitivesMatchTheCpuOnEveryComputeType) {
  check_type<float>();
  check_type<double>();
  check_type<int64_t>();
  check_type<int32_t>();
  check_type<int16_t>();
  check_type<int8_t>();
  check_type<uint8_t>();
  check_type<bool>();
}

// Half and BFloat16 from every float of a random sample and the special
// classes (and back from every 16-bit pattern), against runtime/Half.h.
TEST(CudaMath, SixteenBitFloatsMatchHalfH) {
  std::mt19937 rng(7);
  std::vector<uint32_t> patterns = {0u,          0x80000000u, 0x7f800000u,
                                    0xff800000u, 0x7fc00000u, 0x00000001u,
                                    0x477ff000u, 0x477fefffu, 0x38800000u,
                                    0x387fffffu, 0x33000000u, 0x33000001u};
  for (int i = 0; i < 2000000; ++i)
    patterns.push_back(rng());
  // Within float16's range, and exact ties of both roundings.
  for (int i = 0; i < 200000; ++i) {
    uint32_t p = (rng() & 0x80000000u) | ((103u + rng() % 40u) << 23) |
                 (rng() & 0x7fffffu);
    patterns.push_back(p);
    patterns.push_back((p & ~0x1fffu) | 0x1000u); // half tie
    patterns.push_back((p & ~0xffffu) | 0x8000u); // bfloat16 tie
  }
  int mismatches = 0, nan_mismatches = 0;
  for (uint32_t p : patterns) {
    float f;
    std::memcpy(&f, &p, 4);
    if (f != f) {
      // NaN payloads: Half.h's F16C path keeps them; the device's (Half.h's
      // software path) gives the quiet NaN of the sign.
      nan_mismatches +=
          dev::ember::Half(f).x != (((p >> 16) & 0x8000u) | 0x7e00u);
      continue;
    }
    mismatches += ember::Half(f).x != dev::ember::Half(f).x;
    mismatches += ember::BFloat16(f).x != dev::ember::BFloat16(f).x;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(nan_mismatches, 0);
  for (uint32_t u = 0; u < 0x10000u; ++u) {
    auto h = static_cast<uint16_t>(u);
    float a = float(ember::Half(h, ember::Half::from_bits_t{}));
    float b = float(dev::ember::Half::from_bits(h));
    EXPECT_TRUE(same(a, b)) << "half bits " << u;
    if ((u & 0x7fffu) > 0x7c00u) { // a NaN keeps its sign and payload
      uint32_t bits;
      std::memcpy(&bits, &b, 4);
      EXPECT_EQ(bits,
                ((u & 0x8000u) << 16) | 0x7f800000u | ((u & 0x3ffu) << 13))
          << "half bits " << u;
    }
    a = float(ember::BFloat16(h, ember::BFloat16::from_bits_t{}));
    b = float(dev::ember::BFloat16::from_bits(h));
    EXPECT_TRUE(same(a, b)) << "bfloat16 bits " << u;
  }
}

// convert<To, From> between the dtypes, where C++ defines the result (a
// float out of an integer's range is the one place the GPU differs: Note
// [Float to narrow integer]).
TEST(CudaMath, ConversionsMatchConvertH) {
  for (double v : {0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 100.75, -100.75, 65504.0,
                   1e-8, 3.4e38, 1e300}) {
    EXPECT_TRUE(same(ember::convert<float>(v), dev::ember::convert<float>(v)));
    EXPECT_EQ(ember::convert<bool>(v), dev::ember::convert<bool>(v));
    EXPECT_EQ(ember::convert<ember::Half>(v).x,
              dev::ember::convert<dev::ember::Half>(v).x);
    EXPECT_EQ(ember::convert<ember::BFloat16>(float(v)).x,
              dev::ember::convert<dev::ember::BFloat16>(float(v)).x);
    if (std::fabs(v) < 127) {
      EXPECT_EQ(ember::convert<int8_t>(v), dev::ember::convert<int8_t>(v));
      EXPECT_EQ(ember::convert<int64_t>(v), dev::ember::convert<int64_t>(v));
    }
    if (v > -1 && v < 255) {
      EXPECT_EQ(ember::convert<uint8_t>(v), dev::ember::convert<uint8_t>(v));
    }
  }
  for (int64_t v : {int64_t(0), int64_t(-1), int64_t(300), INT64_MIN, INT64_MAX,
                    int64_t(1) << 40}) {
    EXPECT_EQ(ember::convert<int8_t>(v), dev::ember::convert<int8_t>(v));
    EXPECT_EQ(ember::convert<uint8_t>(v), dev::ember::convert<uint8_t>(v));
    EXPECT_EQ(ember::convert<int32_t>(v), dev::ember::convert<int32_t>(v));
    EXPECT_TRUE(
        same(ember::convert<double>(v), dev::ember::convert<double>(v)));
    EXPECT_EQ(ember::convert<bool>(v), dev::ember::convert<bool>(v));
  }
  // -1.0 to uint8 is 255 on both (through int32, as x86 does).
  EXPECT_EQ(dev::ember::convert<uint8_t>(-1.0f), 255);
}
