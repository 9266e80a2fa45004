// Accuracy of ember's vectorizable float math (eager/VecMath.h) against the
// double-precision libm result: strided sweeps over all 2^32 float bit
// patterns (subnormals, infinities and NaNs included) plus exact special
// values. See Note [Vectorizable float math].

#include "eager/VecMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();
constexpr float kFloatMin = std::numeric_limits<float>::min();
constexpr float kFloatMax = std::numeric_limits<float>::max();

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

/// The spacing of floats at |ref| (2^-149 in the subnormal range).
double ulp_of(double ref) {
  uint64_t b;
  std::memcpy(&b, &ref, sizeof b);
  int e = int((b >> 52) & 0x7ff) - 1023; // |ref| in [2^e, 2^(e+1))
  e = e < -126 ? -126 : e;
  uint64_t u = uint64_t(e - 23 + 1023) << 52;
  double ulp;
  std::memcpy(&ulp, &u, sizeof ulp);
  return ulp;
}

/// Error of `got` in ulps of the exact (double) result `ref`; infinite when a
/// NaN, an infinity or an overflow does not match.
double ulp_error(float got, double ref) {
  if (std::isnan(ref))
    return std::isnan(got) ? 0.0 : kInf;
  if (std::isnan(got))
    return kInf;
  float rounded = float(ref);
  if (std::isinf(rounded)) // exact result overflows float
    return got == rounded ? 0.0 : kInf;
  if (std::isinf(got))
    return kInf;
  return std::fabs(double(got) - ref) / ulp_of(ref);
}

struct Worst {
  double ulp = 0;
  float x = 0, got = 0;
  double ref = 0;
  uint64_t count = 0;
  std::string str() const {
    std::ostringstream os;
    os.precision(9);
    os << "max error " << ulp << " ulp at x = " << x << " (bits 0x" << std::hex
       << to_bits(x) << std::dec << "): got " << got << ", expected "
       << std::setprecision(17) << ref << " (" << count << " points)";
    return os.str();
  }
};

using Eval = void (*)(const float *, float *, int);

/// Checks every `stride`-th float bit pattern in [begin, end), evaluated in
/// blocks through `eval` (a plain loop, which is what the compiler
/// vectorizes).
template <class Ref>
void sweep(Eval eval, Ref ref, uint64_t begin, uint64_t end, uint32_t stride,
           Worst &w) {
  constexpr int kBlock = 4096;
  float in[kBlock], out[kBlock];
  uint64_t b = begin;
  while (b < end) {
    int k = 0;
    for (; k < kBlock && b < end; ++k, b += stride)
      in[k] = from_bits(uint32_t(b));
    eval(in, out, k);
    for (int i = 0; i < k; ++i) {
      double r = ref(double(in[i]));
      double e = ulp_error(out[i], r);
      if (!(e <= w.ulp)) {
        w.ulp = e;
        w.x = in[i];
        w.got = out[i];
        w.ref = r;
      }
    }
    w.count += uint64_t(k);
  }
}

/// Every `stride`-th of all 2^32 bit patterns (subnormals, infinities, NaNs,
/// both signs), and every `core_stride`-th of those with |x| in
/// [core_lo, core_hi], where the function is not simply saturated, 0, 1 or x.
template <class Ref>
Worst sweep_all(Eval eval, Ref ref, float core_lo, float core_hi,
                uint32_t core_stride, uint32_t stride) {
  Worst w;
  sweep(eval, ref, 0, uint64_t(1) << 32, stride, w);
  for (uint32_t sign : {0u, 0x80000000u})
    sweep(eval, ref, sign | to_bits(core_lo), uint64_t(sign | to_bits(core_hi)),
          core_stride, w);
  return w;
}

// Loops over the public functions (fused multiply-add where the target has
// it, as the library itself is compiled) and over the plain-multiply-add
// variant that targets without FMA use. The latter is compiled with
// contraction off, so that the compiler does not fuse a*b+c behind our back
// and the test sees exactly what a non-FMA target computes.
#if defined(__clang__)
#define EMBER_NO_CONTRACT
#define EMBER_NO_CONTRACT_BODY _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define EMBER_NO_CONTRACT __attribute__((optimize("fp-contract=off")))
#define EMBER_NO_CONTRACT_BODY
#else
#define EMBER_NO_CONTRACT
#define EMBER_NO_CONTRACT_BODY
#endif

#define EMBER_VM_EVAL(name)                                                    \
  void eval_##name(const float *in, float *out, int n) {                       \
    for (int i = 0; i < n; ++i)                                                \
      out[i] = ember::vm::name(in[i]);                                         \
  }                                                                            \
  EMBER_NO_CONTRACT void eval_unfused_##name(const float *in, float *out,      \
                                             int n) {                          \
    EMBER_NO_CONTRACT_BODY                                                     \
    for (int i = 0; i < n; ++i)                                                \
      out[i] = ember::vm::detail::name<false>(in[i]);                          \
  }
EMBER_VM_EVAL(exp)
EMBER_VM_EVAL(expm1)
EMBER_VM_EVAL(log)
EMBER_VM_EVAL(log1p)
EMBER_VM_EVAL(tanh)
EMBER_VM_EVAL(erf)
EMBER_VM_EVAL(sigmoid)
#undef EMBER_VM_EVAL

double ref_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Every 97th bit pattern where the function does work (3M-6M points) and
// every 997th elsewhere (4M) for the public functions; the unfused variant,
// which this machine's builds do not use, at a tenth of the density.
#define EMBER_VM_SWEEP_TEST(Name, name, ref, lo, hi, bound)                    \
  TEST(VecMath, Name##Accuracy) {                                              \
    Worst w = sweep_all(eval_##name, ref, lo, hi, 97, 997);                    \
    EXPECT_LE(w.ulp, bound) << w.str();                                        \
  }                                                                            \
  TEST(VecMath, Name##AccuracyUnfused) {                                       \
    Worst w = sweep_all(eval_unfused_##name, ref, lo, hi, 997, 9973);          \
    EXPECT_LE(w.ulp, bound) << w.str();                                        \
  }
EMBER_VM_SWEEP_TEST(
    Exp, exp, [](double x) { return std::exp(x); }, 0x1p-26f, 104.0f, 2.0)
EMBER_VM_SWEEP_TEST(
    Expm1, expm1, [](double x) { return std::expm1(x); }, 0x1p-26f, 104.0f, 2.0)
EMBER_VM_SWEEP_TEST(
    Log, log, [](double x) { return std::log(x); }, 0x1p-8f, 0x1p8f, 2.0)
EMBER_VM_SWEEP_TEST(
    Log1p, log1p, [](double x) { return std::log1p(x); }, 0x1p-26f, 0x1p8f, 2.0)
EMBER_VM_SWEEP_TEST(
    Tanh, tanh, [](double x) { return std::tanh(x); }, 0x1p-14f, 10.0f, 3.0)
EMBER_VM_SWEEP_TEST(
    Erf, erf, [](double x) { return std::erf(x); }, 0x1p-14f, 4.0f, 3.0)
EMBER_VM_SWEEP_TEST(Sigmoid, sigmoid, ref_sigmoid, 0x1p-26f, 104.0f, 3.0)
#undef EMBER_VM_SWEEP_TEST

/// Bit-exact comparison (distinguishes -0 from +0; any NaN matches any NaN).
::testing::AssertionResult Same(const char *, const char *, float expected,
                                float got) {
  if ((std::isnan(expected) && std::isnan(got)) ||
      to_bits(expected) == to_bits(got))
    return ::testing::AssertionSuccess();
  std::ostringstream os;
  os.precision(9);
  os << "expected " << expected << " (bits 0x" << std::hex << to_bits(expected)
     << "), got " << got << " (bits 0x" << to_bits(got) << ")";
  return ::testing::AssertionFailure() << os.str();
}
#define EXPECT_SAME(expected, got) EXPECT_PRED_FORMAT2(Same, expected, got)

/// got is within `bound` ulp of the double result ref.
#define EXPECT_ULP(ref, got, bound)                                            \
  do {                                                                         \
    double ref_ = (ref);                                                       \
    float got_ = (got);                                                        \
    EXPECT_LE(ulp_error(got_, ref_), bound)                                    \
        << #got << " = " << std::setprecision(9) << got_ << ", expected "      \
        << std::setprecision(17) << ref_;                                      \
  } while (0)

TEST(VecMath, ExpSpecialValues) {
  using ember::vm::exp;
  EXPECT_SAME(0.0f, exp(-kInf));
  EXPECT_SAME(kInf, exp(kInf));
  EXPECT_SAME(kNaN, exp(kNaN));
  EXPECT_SAME(kNaN, exp(-kNaN));
  EXPECT_SAME(1.0f, exp(0.0f));
  EXPECT_SAME(1.0f, exp(-0.0f));
  EXPECT_SAME(1.0f, exp(kDenormMin));
  EXPECT_SAME(1.0f, exp(-kDenormMin));
  EXPECT_SAME(kInf, exp(88.73f)); // overflow
  EXPECT_SAME(kInf, exp(kFloatMax));
  EXPECT_SAME(0.0f, exp(-104.0f)); // underflow
  EXPECT_SAME(0.0f, exp(-kFloatMax));
  // Just below FLT_MAX.
  EXPECT_ULP(std::exp(double(88.72283f)), exp(88.72283f), 2.0);
  // Subnormal results: e^-100 = 3.72e-44 = 26.5 * 2^-149.
  EXPECT_ULP(std::exp(-100.0), exp(-100.0f), 1.0);
  EXPECT_SAME(kDenormMin, exp(-103.9f));
  EXPECT_ULP(std::exp(1.0), exp(1.0f), 2.0);
}

TEST(VecMath, Expm1SpecialValues) {
  using ember::vm::expm1;
  EXPECT_SAME(-1.0f, expm1(-kInf));
  EXPECT_SAME(kInf, expm1(kInf));
  EXPECT_SAME(kNaN, expm1(kNaN));
  EXPECT_SAME(0.0f, expm1(0.0f));
  EXPECT_SAME(-0.0f, expm1(-0.0f));
  EXPECT_SAME(1e-10f, expm1(1e-10f)); // no cancellation near 0
  EXPECT_SAME(-1e-10f, expm1(-1e-10f));
  EXPECT_SAME(kDenormMin, expm1(kDenormMin));
  EXPECT_SAME(-kFloatMin, expm1(-kFloatMin));
  EXPECT_SAME(kInf, expm1(88.73f));
  EXPECT_ULP(std::expm1(double(88.72283f)), expm1(88.72283f), 2.0);
  EXPECT_SAME(-1.0f, expm1(-20.0f));
  EXPECT_SAME(-1.0f, expm1(-kFloatMax));
  EXPECT_ULP(std::expm1(1.0), expm1(1.0f), 2.0);
}

TEST(VecMath, LogSpecialValues) {
  using ember::vm::log;
  EXPECT_SAME(-kInf, log(0.0f));
  EXPECT_SAME(-kInf, log(-0.0f));
  EXPECT_SAME(kNaN, log(-1.0f));
  EXPECT_SAME(kNaN, log(-kDenormMin));
  EXPECT_SAME(kNaN, log(-kInf));
  EXPECT_SAME(kInf, log(kInf));
  EXPECT_SAME(kNaN, log(kNaN));
  EXPECT_SAME(0.0f, log(1.0f));
  EXPECT_ULP(-149 * std::log(2.0), log(kDenormMin), 2.0);
  EXPECT_ULP(-126 * std::log(2.0), log(kFloatMin), 2.0);
  EXPECT_ULP(std::log(double(kFloatMax)), log(kFloatMax), 2.0);
  EXPECT_ULP(std::log(0.1), log(0.1f), 2.0);
}

TEST(VecMath, Log1pSpecialValues) {
  using ember::vm::log1p;
  EXPECT_SAME(-kInf, log1p(-1.0f));
  EXPECT_SAME(kNaN, log1p(-1.0000001f));
  EXPECT_SAME(kNaN, log1p(-2.0f));
  EXPECT_SAME(kNaN, log1p(-kInf));
  EXPECT_SAME(kInf, log1p(kInf));
  EXPECT_SAME(kNaN, log1p(kNaN));
  EXPECT_SAME(0.0f, log1p(0.0f));
  EXPECT_SAME(-0.0f, log1p(-0.0f));
  EXPECT_SAME(1e-10f, log1p(1e-10f)); // no cancellation near 0
  EXPECT_SAME(-1e-10f, log1p(-1e-10f));
  EXPECT_SAME(kDenormMin, log1p(kDenormMin));
  EXPECT_ULP(std::log1p(double(kFloatMax)), log1p(kFloatMax), 2.0);
  EXPECT_ULP(std::log1p(double(5e-8f)), log1p(5e-8f), 2.0);
  EXPECT_ULP(std::log1p(double(-5e-8f)), log1p(-5e-8f), 2.0);
  EXPECT_ULP(std::log(2.0), log1p(1.0f), 2.0);
}

TEST(VecMath, TanhSpecialValues) {
  using ember::vm::tanh;
  EXPECT_SAME(1.0f, tanh(kInf));
  EXPECT_SAME(-1.0f, tanh(-kInf));
  EXPECT_SAME(kNaN, tanh(kNaN));
  EXPECT_SAME(0.0f, tanh(0.0f));
  EXPECT_SAME(-0.0f, tanh(-0.0f));
  EXPECT_SAME(kDenormMin, tanh(kDenormMin));
  EXPECT_SAME(-kFloatMin, tanh(-kFloatMin));
  EXPECT_SAME(1e-10f, tanh(1e-10f));
  EXPECT_SAME(1.0f, tanh(10.0f));
  EXPECT_SAME(-1.0f, tanh(-kFloatMax));
  EXPECT_ULP(std::tanh(1.0), tanh(1.0f), 3.0);
}

TEST(VecMath, ErfSpecialValues) {
  using ember::vm::erf;
  EXPECT_SAME(1.0f, erf(kInf));
  EXPECT_SAME(-1.0f, erf(-kInf));
  EXPECT_SAME(kNaN, erf(kNaN));
  EXPECT_SAME(0.0f, erf(0.0f));
  EXPECT_SAME(-0.0f, erf(-0.0f));
  EXPECT_SAME(1.0f, erf(4.0f));
  EXPECT_SAME(-1.0f, erf(-kFloatMax));
  EXPECT_ULP(std::erf(double(1e-30f)), erf(1e-30f), 3.0);
  EXPECT_ULP(std::erf(double(kDenormMin)), erf(kDenormMin), 3.0);
  EXPECT_ULP(std::erf(1.0), erf(1.0f), 3.0);
}

TEST(VecMath, SigmoidSpecialValues) {
  using ember::vm::sigmoid;
  EXPECT_SAME(1.0f, sigmoid(kInf));
  EXPECT_SAME(0.0f, sigmoid(-kInf));
  EXPECT_SAME(kNaN, sigmoid(kNaN));
  EXPECT_SAME(0.5f, sigmoid(0.0f));
  EXPECT_SAME(0.5f, sigmoid(-0.0f));
  EXPECT_SAME(1.0f, sigmoid(20.0f));
  EXPECT_SAME(0.0f, sigmoid(-104.0f));
  // Subnormal results are kept: sigmoid(-100) = e^-100 / (1 + e^-100).
  EXPECT_ULP(std::exp(-100.0), sigmoid(-100.0f), 1.0);
  EXPECT_ULP(1.0 / (1.0 + std::exp(-1.0)), sigmoid(1.0f), 3.0);
}

/// Odd functions are exactly odd; every function maps NaN to NaN for any
/// sign or payload.
TEST(VecMath, SymmetryAndNaNPayloads) {
  for (float x : {1e-30f, 0.3f, 0.625f, 0.99f, 1.0f, 2.5f, 3.9f, 9.0f, 1e10f}) {
    EXPECT_SAME(-ember::vm::tanh(x), ember::vm::tanh(-x)) << x;
    EXPECT_SAME(-ember::vm::erf(x), ember::vm::erf(-x)) << x;
  }
  for (uint32_t bits :
       {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0xffbfffffu}) {
    float nan = from_bits(bits);
    EXPECT_TRUE(std::isnan(ember::vm::exp(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::expm1(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::log(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::log1p(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::tanh(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::erf(nan)));
    EXPECT_TRUE(std::isnan(ember::vm::sigmoid(nan)));
  }
}

/// Dense sweeps where the reductions switch formulas (|x| near ln2/2 for
/// expm1, the tanh and erf polynomial boundaries, log near 1, the subnormal
/// boundary), every float in a window around each.
TEST(VecMath, FormulaBoundaries) {
  auto dense = [](Eval eval, double (*ref)(double), float center, double bound,
                  const char *name) {
    constexpr int kHalf = 1 << 15;
    static float in[2 * kHalf], out[2 * kHalf];
    uint32_t c = to_bits(center);
    for (int i = 0; i < 2 * kHalf; ++i)
      in[i] = from_bits(c - kHalf + uint32_t(i));
    eval(in, out, 2 * kHalf);
    for (int i = 0; i < 2 * kHalf; ++i) {
      double e = ulp_error(out[i], ref(double(in[i])));
      if (!(e <= bound)) {
        ADD_FAILURE() << name << "(" << in[i] << ") off by " << e << " ulp";
        return;
      }
    }
  };
  double (*exp_ref)(double) = [](double x) { return std::exp(x); };
  double (*expm1_ref)(double) = [](double x) { return std::expm1(x); };
  double (*log_ref)(double) = [](double x) { return std::log(x); };
  double (*log1p_ref)(double) = [](double x) { return std::log1p(x); };
  double (*tanh_ref)(double) = [](double x) { return std::tanh(x); };
  double (*erf_ref)(double) = [](double x) { return std::erf(x); };
  for (float s : {1.0f, -1.0f}) {
    dense(eval_exp, exp_ref, s * 0.3465736f, 2.0, "exp");
    dense(eval_expm1, expm1_ref, s * 0.3465736f, 2.0, "expm1");
    dense(eval_expm1, expm1_ref, s * 1.0397208f, 2.0, "expm1");
    dense(eval_tanh, tanh_ref, s * 0.625f, 3.0, "tanh");
    dense(eval_erf, erf_ref, s * 1.0f, 3.0, "erf");
    dense(eval_erf, erf_ref, s * 3.9f, 3.0, "erf");
    dense(eval_log1p, log1p_ref, s * 1e-3f, 2.0, "log1p");
  }
  dense(eval_exp, exp_ref, -87.33655f, 2.0, "exp");  // results near FLT_MIN
  dense(eval_exp, exp_ref, 88.72283f, 2.0, "exp");   // near overflow
  dense(eval_expm1, expm1_ref, 88.0f, 2.0, "expm1"); // formula switch
  dense(eval_log, log_ref, 1.0f, 2.0, "log");        // log near its zero
  dense(eval_log, log_ref, 0.70710677f, 2.0, "log"); // mantissa wrap
  dense(eval_log, log_ref, kFloatMin, 2.0, "log");   // subnormal inputs
  dense(eval_log1p, log1p_ref, -0.9999f, 2.0, "log1p");
  dense(eval_sigmoid, ref_sigmoid, -87.0f, 3.0, "sigmoid");
}

} // namespace
