#pragma once
/// Float transcendentals written without calls or branches, so that GCC
/// vectorizes loops over them (scalar libm calls in an inner loop are ~15x
/// slower on these machines; see TOOLCHAIN.md). See
/// Note [Vectorizable float math].
///
/// Accuracy, measured against the double-precision libm result over the whole
/// float range (subnormals included): exp, expm1, log, log1p within 2 ulp;
/// tanh, erf, sigmoid within 3 ulp. IEEE special values are exact (see each
/// function). test/unit/test_vecmath.cpp checks all of it.

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

// Note [Vectorizable float math]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// GCC vectorizes `for (i) out[i] = f(in[i])` only when f inlines into
// straight-line code: no calls (libm's expf is an opaque call), no branches
// that if-conversion cannot remove, no lookup tables (gathers are slow). So
// every function here is
//   * range reduction with exact float tricks: exp writes x = n*ln2 + r with
//     |r| <= ln2/2, rounding x*log2(e) to an integer by adding 1.5*2^23 (the
//     integer then sits in the low mantissa bits), and subtracting n*ln2 in
//     two parts (Cody-Waite: n*kLn2Hi is exact because kLn2Hi has 9 bits);
//     log splits x = 2^e * m with m in [sqrt(1/2), sqrt(2)) by integer
//     arithmetic on the bit pattern (std::bit_cast, which vectorizes to
//     nothing);
//   * a minimax polynomial on the reduced range, evaluated by Horner's rule.
//     The coefficients were fitted by a Remez exchange (mpmath, 40 digits)
//     for the weighted error shown next to each table and rounded to float;
//     each polynomial is accurate to 2^-26 or better, so the ulp budget goes
//     to the few rounded operations around it;
//   * special cases (0, inf, NaN, overflow, underflow, subnormals) handled by
//     clamping the input and by detail::select(c, a, b), a bitwise blend of
//     two values that are both computed. Not `c ? a : b`: GCC sinks an arm
//     that is used only there into a branch (and specializes code after a
//     clamp per branch), and a float operation under a branch may trap, so
//     if-conversion gives up and the loop stays scalar on targets without
//     AVX-512 masking (seen with -march=haswell and x86-64). GCC turns the
//     blends back into vector blends / masked moves. Clamps are written
//     select(x > hi, hi, x) so that NaN passes through to the result.
// Integer work stays in 32 bits (int32 <-> float conversions and shifts
// vectorize; 64-bit ones would halve the width), and nothing converts a float
// to an integer with a C++ cast (UB for NaN): the magic-number rounding above
// extracts n from the bit pattern instead.
//
// Accuracy tricks worth knowing before changing anything:
//   * exp scales by 2^n as two multiplications by 2^(n/2) and 2^(n - n/2), so
//     results in the subnormal range (x down to -103.97) round once, correctly,
//     and overflow gives inf, without any special-casing.
//   * expm1 keeps the reduced argument as rhi + rlo and forms
//     (2^n - 1) + 2^n*rhi exactly before adding the small rest, so there is no
//     cancellation near x = ln2/2; for |x| < ln2/2 it is x + x^2 P(x).
//   * log1p adds the rounding error of u = 1 + x (computed exactly by
//     Fast2Sum) back as err/u, so log1p(x) == x for tiny x.
//   * tanh is x + x^3 P(x^2) below 0.625 and expm1(2|x|) / (expm1(2|x|) + 2)
//     up to 10 (beyond, it rounds to 1): the relative error of expm1 shrinks
//     through the quotient; only the rounding of expm1 + 2 would cost near
//     0, where the polynomial takes over.
//   * sigmoid is 1/(1+e^-|x|) or e^-|x|/(1+e^-|x|) by sign, so it never forms
//     1 + huge and keeps subnormal results for x down to -103.
//   * erf is x + x P(x^2) on |x| < 1 and 1 - exp(Q(|x|)) on [1, 4], where Q
//     approximates log(erfc); beyond 4 the result rounds to +-1.
//
// Each function is a template on whether a fused multiply-add is used
// (detail::*<Fma>); the public ones use it when the target has FMA
// (-march=native on these machines), plain a*b+c otherwise. Both variants
// meet the bounds above (the test checks both). Do not compile this with
// -ffast-math: reassociation destroys the magic-number rounding and the
// Fast2Sum error terms. -ffp-contract=fast (GCC's default in GNU mode) is fine.

#if defined(__GNUC__)
#define EMBER_VM_INLINE inline __attribute__((always_inline))
#else
#define EMBER_VM_INLINE inline
#endif

namespace ember::vm {
namespace detail {

#if defined(__FMA__) || defined(__FP_FAST_FMAF)
inline constexpr bool kHasFma = true;
#else
inline constexpr bool kHasFma = false;
#endif

EMBER_VM_INLINE uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }
EMBER_VM_INLINE float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

/// a*b + c, fused (one rounding) when Fma.
template <bool Fma> EMBER_VM_INLINE float mad(float a, float b, float c) {
  if constexpr (Fma)
    return std::fma(a, b, c);
  else
    return a * b + c;
}

/// c0 + x*(c1 + x*(c2 + ...)).
template <bool Fma, class... C>
EMBER_VM_INLINE float horner(float x, float c0, C... c) {
  if constexpr (sizeof...(C) == 0)
    return c0;
  else
    return mad<Fma>(horner<Fma>(x, c...), x, c0);
}

EMBER_VM_INLINE float fabs(float x) { return from_bits(bits(x) & 0x7fffffffu); }

/// |mag| with the sign bit of sgn.
EMBER_VM_INLINE float copysign(float mag, float sgn) {
  return from_bits((bits(mag) & 0x7fffffffu) | (bits(sgn) & 0x80000000u));
}

/// c ? a : b without control flow; both arms are always evaluated. See
/// Note [Vectorizable float math] for why not `c ? a : b`.
EMBER_VM_INLINE float select(bool c, float a, float b) {
  uint32_t m = 0u - uint32_t(c);
  return from_bits((bits(a) & m) | (bits(b) & ~m));
}

/// 2^k for k in [-126, 127].
EMBER_VM_INLINE float pow2i(int32_t k) {
  return from_bits((uint32_t(k) + 127u) << 23); // no UB for any k (NaN paths)
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kLog2e = 0x1.715476p+0f;
// ln2 = kLn2Hi + kLn2Lo; kLn2Hi = 355/512 has 9 significant bits, so n*kLn2Hi
// is exact for |n| < 2^15.
inline constexpr float kLn2Hi = 0x1.63p-1f;
inline constexpr float kLn2Lo = -0x1.bd0106p-13f;
// Adding 1.5*2^23 rounds a float of magnitude < 2^22 to an integer, which
// lands in the low mantissa bits.
inline constexpr float kShift = 0x1.8p23f;
// Bit pattern of sqrt(1/2) rounded up: log's mantissa range starts here.
inline constexpr uint32_t kSqrtHalfBits = 0x3f3504f3u;

/// Range reduction x = n*ln2 + rhi + rlo, |rhi + rlo| <= ln2/2 (+ a rounding
/// slack). rhi = x - n*kLn2Hi is exact; ni == n as an integer.
struct ExpReduced {
  float n;
  int32_t ni;
  float rhi;
};
template <bool Fma> EMBER_VM_INLINE ExpReduced exp_reduce(float x) {
  float kn = mad<Fma>(x, kLog2e, kShift);
  float n = kn - kShift;
  int32_t ni = int32_t(bits(kn) - bits(kShift));
  return {n, ni, mad<Fma>(n, -kLn2Hi, x)};
}

/// (e^r - 1 - r) / r^2 on |r| <= ln2/2, minimax for the relative error of
/// e^r: 2^-28.3.
template <bool Fma> EMBER_VM_INLINE float exp_poly(float r) {
  return horner<Fma>(r, 0x1.fffffcp-2f, 0x1.55549p-3f, 0x1.5558f4p-5f,
                     0x1.123a2ap-7f, 0x1.6a23bcp-10f);
}

/// (e^r - 1 - r) / r^2 on |r| <= ln2/2, minimax for the relative error of
/// e^r - 1: 2^-32.
template <bool Fma> EMBER_VM_INLINE float expm1_poly(float r) {
  return horner<Fma>(r, 0x1p-1f, 0x1.555554p-3f, 0x1.5554bp-5f, 0x1.11118ap-7f,
                     0x1.6d724cp-10f, 0x1.a032c6p-13f);
}

/// (log1p(f) - f) / f^2 on [sqrt(1/2) - 1, sqrt(2) - 1], minimax for the
/// relative error of log1p(f): 2^-27.9.
template <bool Fma> EMBER_VM_INLINE float log_poly(float f) {
  return horner<Fma>(f, -0x1.fffff8p-2f, 0x1.55555p-2f, -0x1.000426p-2f,
                     0x1.99a3f4p-3f, -0x1.54276ep-3f, 0x1.22719ap-3f,
                     -0x1.0f3764p-3f, 0x1.08486ap-3f, -0x1.383034p-4f);
}

template <bool Fma> EMBER_VM_INLINE float exp(float x) {
  // Beyond these the result is inf / 0 anyway; clamping keeps n in
  // [-150, 128] so both halves of the scale are normal floats.
  x = select(x > 89.0f, 89.0f, x);
  x = select(x < -104.0f, -104.0f, x);
  ExpReduced red = exp_reduce<Fma>(x);
  float rlo = red.n * -kLn2Lo;
  float r = red.rhi + rlo;
  // e^r = 1 + rhi + (rlo + r^2 P(r)): add 1 + rhi with its exact rounding
  // error (Fast2Sum) so that only the last addition rounds noticeably.
  float s = 1.0f + red.rhi;
  float serr = (1.0f - s) + red.rhi;
  float p = s + (mad<Fma>(r * r, exp_poly<Fma>(r), rlo) + serr);
  int32_t n1 = red.ni >> 1;
  return p * pow2i(n1) * pow2i(red.ni - n1);
}

/// e^x - 1 for x in [-30, 88] (n in [-44, 127]), +-0 excepted.
template <bool Fma> EMBER_VM_INLINE float expm1_core(float x) {
  ExpReduced red = exp_reduce<Fma>(x);
  float rlo = red.n * -kLn2Lo;
  float r = red.rhi + rlo;
  float tail = mad<Fma>(r * r, expm1_poly<Fma>(r), rlo);
  float t = pow2i(red.ni);
  // (t - 1) + t*rhi is exact when cancellation could hurt (|n| <= 1).
  return mad<Fma>(t, tail, mad<Fma>(t, red.rhi, t - 1.0f));
}

template <bool Fma> EMBER_VM_INLINE float expm1(float x) {
  // Below -17.4, e^x - 1 rounds to -1; the clamp keeps 2^n normal.
  float xc = select(x < -30.0f, -30.0f, x);
  xc = select(xc > 88.0f, 88.0f, xc);
  float small = expm1_core<Fma>(xc);
  // Above 88 (n = 128), e^x - 1 rounds to e^x: use exp's scaling (inf past
  // 88.72).
  float big = exp<Fma>(x);
  float r = select(x > 88.0f, big, small);
  return select(x == 0.0f, x, r); // keeps the sign of -0
}

/// log(u) for positive normal u (finite), plus `extra`, which must be tiny
/// against the result's ulp times u's magnitude (log1p's correction term).
template <bool Fma>
EMBER_VM_INLINE float log_core(float u, float eadj, float extra) {
  // u = 2^e * m, m in [sqrt(1/2), sqrt(2)).
  int32_t ix = int32_t(bits(u) - kSqrtHalfBits);
  float e = float(ix >> 23) + eadj;
  float m = from_bits((uint32_t(ix) & 0x007fffffu) + kSqrtHalfBits);
  float f = m - 1.0f; // exact (Sterbenz)
  float lo = mad<Fma>(f * f, log_poly<Fma>(f), mad<Fma>(e, kLn2Lo, extra));
  return mad<Fma>(e, kLn2Hi, f + lo);
}

template <bool Fma> EMBER_VM_INLINE float log(float x) {
  // Subnormals: scale into the normal range first.
  bool sub = x < 0x1p-126f;
  float xs = select(sub, x * 0x1p23f, x);
  float r = log_core<Fma>(xs, select(sub, -23.0f, 0.0f), 0.0f);
  r = select(x < kInf, r, x); // inf -> inf, NaN -> NaN
  float special = select(x == 0.0f, -kInf, kNaN);
  return select(x > 0.0f, r, special);
}

template <bool Fma> EMBER_VM_INLINE float log1p(float x) {
  float u = 1.0f + x;
  // Fast2Sum: err = (1 + x) - u exactly (operands ordered by magnitude).
  bool big = x > 1.0f;
  float a = select(big, x, 1.0f);
  float b = select(big, 1.0f, x);
  float err = (a - u) + b;
  // log(u + err) = log(u) + err/u + O(ulp^2). u is 0 or >= 2^-24 (never
  // subnormal) when x >= -1.
  float r = log_core<Fma>(u, 0.0f, err / u);
  r = select(x < kInf, r, x);
  float special = select(u == 0.0f, -kInf, kNaN);
  r = select(u > 0.0f, r, special);
  return select(x == 0.0f, x, r); // keeps the sign of -0
}

template <bool Fma> EMBER_VM_INLINE float tanh(float x) {
  // tanh(10) rounds to 1; the clamp also keeps expm1 finite. NaN passes.
  float ax = fabs(x);
  ax = select(ax > 10.0f, 10.0f, ax);
  float em = expm1_core<Fma>(2.0f * ax);
  float big = em / (em + 2.0f);
  // |x| < 0.625: x + x^3 P(x^2), where rounding em + 2 would cost up to an
  // ulp. P minimax for tanh's relative error: 2^-32.5.
  float s = ax * ax;
  float small =
      mad<Fma>(ax * s,
               horner<Fma>(s, -0x1.555554p-2f, 0x1.111066p-3f, -0x1.b9ee9p-5f,
                           0x1.638b58p-6f, -0x1.0bf4fcp-7f, 0x1.18e1dap-9f),
               ax);
  return copysign(select(ax < 0.625f, small, big), x); // odd, tanh(-0) = -0
}

template <bool Fma> EMBER_VM_INLINE float sigmoid(float x) {
  float t = exp<Fma>(-fabs(x)); // in [0, 1]: no overflow, subnormals kept
  float num = select(x < 0.0f, t, 1.0f);
  float d = 1.0f + t;
  float derr = (1.0f - d) + t; // exact rounding error of d (Fast2Sum)
  float y = num / d;
  // num / (d + derr) = y * (1 - derr/d) to first order; derr/d is at most
  // 2^-24, so 1/d needs only a few correct bits: 1/d = y for x >= 0 and
  // 1 - y for x < 0.
  float inv_d = select(x < 0.0f, 1.0f - y, y);
  return mad<Fma>(-y, derr * inv_d, y);
}

/// e^x for x in [-87, 88] only (2^n stays normal: no clamps), summed as
/// (r + r^2 P(r)) + 1 without exp's exact sum of 1 + rhi; within 1.01 ulp
/// there (every 13th float), against exp's 2 ulp bound over every input.
template <bool Fma> EMBER_VM_INLINE float exp_inner(float x) {
  ExpReduced red = exp_reduce<Fma>(x);
  float r = mad<Fma>(red.n, -kLn2Lo, red.rhi);
  return (mad<Fma>(r * r, exp_poly<Fma>(r), r) + 1.0f) * pow2i(red.ni);
}

template <bool Fma> EMBER_VM_INLINE float erf(float x) {
  float ax = fabs(x);
  // |x| < 1: x + x*P(x^2); P minimax for erf's relative error: 2^-29.6.
  float small =
      mad<Fma>(x,
               horner<Fma>(x * x, 0x1.06eba8p-3f, -0x1.81273ep-2f,
                           0x1.ce2cf8p-4f, -0x1.b7f90ep-6f, 0x1.5405b2p-8f,
                           -0x1.a3f7p-11f, 0x1.496a32p-14f),
               x);
  // 1 <= |x| <= 4: 1 - exp(Q(|x|)), Q ~ log(erfc), minimax for erf's
  // relative error: 2^-29.8. erf(4) rounds to 1, so clamp there (NaN passes).
  // Q is in [-18, -1.8]: exp_inner's error, scaled by e^Q <= 0.16 against
  // 1 - e^Q >= 0.84, stays under a third of an ulp of the result (the
  // full exp's clamps and exact sum cost half of erf's time for nothing).
  float t = select(ax > 4.0f, 4.0f, ax);
  float q = horner<Fma>(t, -0x1.661d56p-12f, -0x1.2088eap+0f, -0x1.46baecp-1f,
                        -0x1.a65342p-4f, 0x1.65cb76p-6f, -0x1.825af6p-9f,
                        0x1.86dd82p-13f);
  float big = copysign(1.0f - exp_inner<Fma>(q), x);
  return select(ax < 1.0f, small, big);
}

} // namespace detail

/// e^x. exp(-inf) = 0, exp(inf) = inf, overflow -> inf, underflow -> 0,
/// subnormal results kept (gradual underflow); within 2 ulp.
EMBER_VM_INLINE float exp(float x) { return detail::exp<detail::kHasFma>(x); }

/// e^x - 1, accurate near 0 (expm1(1e-10f) == 1e-10f); expm1(-inf) = -1,
/// expm1(inf) = inf; within 2 ulp.
EMBER_VM_INLINE float expm1(float x) {
  return detail::expm1<detail::kHasFma>(x);
}

/// Natural log. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf; subnormal
/// inputs handled; within 2 ulp.
EMBER_VM_INLINE float log(float x) { return detail::log<detail::kHasFma>(x); }

/// log(1 + x), accurate near 0 (log1p(x) == x for tiny x); log1p(-1) = -inf,
/// log1p(x < -1) = NaN, log1p(inf) = inf; within 2 ulp.
EMBER_VM_INLINE float log1p(float x) {
  return detail::log1p<detail::kHasFma>(x);
}

/// Hyperbolic tangent; tanh(+-inf) = +-1; within 3 ulp.
EMBER_VM_INLINE float tanh(float x) { return detail::tanh<detail::kHasFma>(x); }

/// Error function; erf(+-inf) = +-1; within 3 ulp.
EMBER_VM_INLINE float erf(float x) { return detail::erf<detail::kHasFma>(x); }

/// 1 / (1 + e^-x); sigmoid(-inf) = 0, sigmoid(inf) = 1, subnormal results for
/// x down to -103; within 3 ulp.
EMBER_VM_INLINE float sigmoid(float x) {
  return detail::sigmoid<detail::kHasFma>(x);
}

} // namespace ember::vm

#undef EMBER_VM_INLINE
