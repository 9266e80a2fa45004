#pragma once
/// The primitive functions that pointwise expressions in ops.yaml call
/// (exp, erf, remainder, ...), for every compute type the CPU kernels use:
/// float, double and the integer types (Half/BFloat16 compute in float).
///
/// Note [Pointwise semantics]
/// These are the reference semantics of ember's pointwise ops, the ones the
/// code generators must reproduce: NaN propagates through maximum/minimum and
/// clamp; remainder takes the sign of the divisor (Python's %); integer
/// division by zero raises (checked by the kernel before the loop runs, see
/// PointwiseKernel.h); round is half-to-even.
///
/// Note [Integer overflow wraps]
/// Signed integer arithmetic wraps around in two's complement, as PyTorch's
/// kernels do in practice (INT64_MAX + 1 is INT64_MIN): the translation
/// units that instantiate these functions (the generated pointwise kernels,
/// eager/cpu's arithmetic kernels, codegen's scalar library) are compiled
/// with -fwrapv, so no optimizer may assume otherwise. Division is the
/// exception x86 traps on (MIN / -1): div_int and mod_int give the wrapped
/// quotient (MIN) and 0 there.

#include "eager/VecMath.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ember::pw {

// Every primitive is forced inline: a call left in a kernel's inner loop
// stops GCC from vectorising it (large kernels otherwise exceed GCC's
// inlining budget; see Note [Vectorizable float math]).
#define EMBER_PW_INLINE inline __attribute__((always_inline))

template <class T> constexpr bool is_fp = std::is_floating_point_v<T>;

// Transcendentals: float uses ember's vectorizable implementations
// (VecMath.h); double uses libm.
#define EMBER_PW_UNARY_FP(name, fexpr)                                         \
  EMBER_PW_INLINE float name(float x) { return fexpr; }                        \
  EMBER_PW_INLINE double name(double x) { return std::name(x); }
EMBER_PW_UNARY_FP(exp, vm::exp(x))
EMBER_PW_UNARY_FP(expm1, vm::expm1(x))
EMBER_PW_UNARY_FP(log, vm::log(x))
EMBER_PW_UNARY_FP(log1p, vm::log1p(x))
EMBER_PW_UNARY_FP(tanh, vm::tanh(x))
EMBER_PW_UNARY_FP(erf, vm::erf(x))
EMBER_PW_UNARY_FP(exp2, std::exp2(x))
EMBER_PW_UNARY_FP(log2, std::log2(x))
EMBER_PW_UNARY_FP(log10, std::log10(x))
EMBER_PW_UNARY_FP(sin, std::sin(x))
EMBER_PW_UNARY_FP(cos, std::cos(x))
EMBER_PW_UNARY_FP(tan, std::tan(x))
EMBER_PW_UNARY_FP(asin, std::asin(x))
EMBER_PW_UNARY_FP(acos, std::acos(x))
EMBER_PW_UNARY_FP(atan, std::atan(x))
EMBER_PW_UNARY_FP(sinh, std::sinh(x))
EMBER_PW_UNARY_FP(cosh, std::cosh(x))
EMBER_PW_UNARY_FP(erfc, std::erfc(x))
EMBER_PW_UNARY_FP(sqrt, std::sqrt(x))
#undef EMBER_PW_UNARY_FP

EMBER_PW_INLINE float sigmoid(float x) { return vm::sigmoid(x); }
EMBER_PW_INLINE double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Rounding: identity on integers.
template <class T> EMBER_PW_INLINE T floor(T x) {
  if constexpr (is_fp<T>)
    return std::floor(x);
  else
    return x;
}
template <class T> EMBER_PW_INLINE T ceil(T x) {
  if constexpr (is_fp<T>)
    return std::ceil(x);
  else
    return x;
}
template <class T> EMBER_PW_INLINE T trunc(T x) {
  if constexpr (is_fp<T>)
    return std::trunc(x);
  else
    return x;
}
template <class T> EMBER_PW_INLINE T round_half_even(T x) {
  if constexpr (is_fp<T>)
    return std::nearbyint(x); // default rounding mode: half to even
  else
    return x;
}

template <class T> EMBER_PW_INLINE T abs(T x) {
  if constexpr (is_fp<T>)
    return std::fabs(x);
  else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>)
    return x;
  else
    return x < 0 ? T(-x) : x;
}

/// -1, 0 or 1; 0 for NaN, as PyTorch's kernels ((0 < x) - (x < 0)).
template <class T> EMBER_PW_INLINE T sign(T x) {
  if constexpr (std::is_same_v<T, bool>)
    return x;
  else
    return T((T(0) < x) - (x < T(0)));
}

/// Nonzero test used by the logical ops.
template <class T> EMBER_PW_INLINE bool truthy(T x) { return x != T(0); }

template <class T> EMBER_PW_INLINE T bitwise_not(T x) {
  if constexpr (std::is_same_v<T, bool>)
    return !x;
  else
    return T(~x);
}

/// NaN-propagating maximum / minimum (torch.maximum), IEEE 754-2019's
/// maximum and minimum: -0 < +0, so the result does not depend on the
/// operands' order (LLVM's llvm.maximum, which compiled reductions use).
template <class T> EMBER_PW_INLINE T maximum(T a, T b) {
  if constexpr (is_fp<T>)
    return (a != a || b != b) ? a + b
           : a == b           ? (std::signbit(a) ? b : a)
           : a > b            ? a
                              : b;
  else
    return a > b ? a : b;
}
template <class T> EMBER_PW_INLINE T minimum(T a, T b) {
  if constexpr (is_fp<T>)
    return (a != a || b != b) ? a + b
           : a == b           ? (std::signbit(a) ? a : b)
           : a < b            ? a
                              : b;
  else
    return a < b ? a : b;
}
/// clamp bounds, as PyTorch's: x unless it lies strictly beyond the bound
/// (so clamp(-0.0, 0, 1) is -0.0, where maximum would give +0.0); NaN in x
/// propagates, and a NaN bound gives NaN.
template <class T> EMBER_PW_INLINE T clamp_min(T x, T lo) {
  // (each case computed, then selected with a non-short-circuit `|`: GCC
  // vectorizes _clamp's two nested clamps only so)
  const T m = x < lo ? lo : x;
  if constexpr (is_fp<T>)
    return ((x != x) | (lo != lo)) ? x + lo : m;
  else
    return m;
}
template <class T> EMBER_PW_INLINE T clamp_max(T x, T hi) {
  const T m = x > hi ? hi : x;
  if constexpr (is_fp<T>)
    return ((x != x) | (hi != hi)) ? x + hi : m;
  else
    return m;
}

template <class T> EMBER_PW_INLINE T atan2(T a, T b) {
  return std::atan2(a, b);
}

template <class T> EMBER_PW_INLINE T pow(T a, T b) {
  if constexpr (is_fp<T>) {
    return std::pow(a, b);
  } else if constexpr (std::is_same_v<T, bool>) {
    return a || !b;
  } else {
    // Integer power by squaring; negative exponents follow C integer
    // division of 1 by the power (1 for base 1, +-1 for -1, else 0).
    if (b < 0) {
      if (a == 1)
        return 1;
      if (a == -1)
        return (b & 1) ? T(-1) : T(1);
      return 0;
    }
    using U = std::make_unsigned_t<T>;
    U result = 1, base = U(a);
    for (auto e = b; e; e >>= 1) {
      if (e & 1)
        result = U(result * base);
      base = U(base * base);
    }
    return T(result);
  }
}

/// Integer a / b and a % b (b != 0; Note [Integer overflow wraps]): b == -1
/// is a negation, whose MIN / -1 the hardware would trap on.
template <class T> EMBER_PW_INLINE T div_int(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1))
      return T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a));
  return T(a / b);
}
template <class T> EMBER_PW_INLINE T mod_int(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1))
      return T(0);
  return T(a % b);
}

/// C's fmod: the result takes the sign of the dividend.
template <class T> EMBER_PW_INLINE T fmod(T a, T b) {
  if constexpr (is_fp<T>)
    return std::fmod(a, b);
  else
    return mod_int(a, b);
}
/// Python's %: the result takes the sign of the divisor.
template <class T> EMBER_PW_INLINE T remainder(T a, T b) {
  if constexpr (is_fp<T>) {
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  } else {
    T r = mod_int(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r = T(r + b);
    return r;
  }
}
template <class T> EMBER_PW_INLINE T div_trunc(T a, T b) {
  if constexpr (is_fp<T>)
    return std::trunc(a / b);
  else
    return div_int(a, b);
}
template <class T> EMBER_PW_INLINE T div_floor(T a, T b) {
  if constexpr (is_fp<T>) {
    // Python's floor division: consistent with remainder().
    if (b == 0)
      return a / b;
    T mod = std::fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0)))
      div -= T(1);
    if (div != 0) {
      T fl = std::floor(div);
      if (div - fl > T(0.5))
        fl += T(1);
      return fl;
    }
    return std::copysign(T(0), a / b);
  } else {
    T q = div_int(a, b);
    if ((mod_int(a, b) != 0) && ((a < 0) != (b < 0)))
      q = T(q - 1);
    return q;
  }
}

} // namespace ember::pw
