#pragma once
/// The device twin of eager/PointwiseMath.h, runtime/Half.h and
/// eager/Convert.h: the primitives that pointwise expressions in ops.yaml call
/// (exp, erf, remainder, ...), the 16-bit float storage types and convert<>,
/// for the eager CUDA kernels, which are generated and compiled at run time
/// by NVRTC. Same names, same semantics (Note [Pointwise semantics],
/// Note [Integer overflow wraps]); compute types are float, double, bool and
/// the integer types (Half/BFloat16 compute in float, Note [Reduced precision
/// compute]).
///
/// Note [Self-contained device header]
/// NVRTC compiles this file with no include path: it includes nothing (no
/// system headers, no cuda_fp16.h) and uses only what NVRTC declares
/// implicitly, the CUDA math functions (expf, ::exp(double), signbit, ...)
/// and the bit-cast intrinsics. It defines what it needs itself: the
/// fixed-width integer types, a few type traits, Half and BFloat16 (bit
/// manipulation, exactly Half.h's software conversions, not the hardware
/// cvt, whose NaN results differ). Without __CUDACC__ it compiles as plain
/// C++ (include <math.h> first), which is how the host tests check it
/// against the CPU headers.
///
/// Note [Device functors live in ember]
/// Every float primitive here shares its name with a CUDA math function that
/// NVRTC declares in the global namespace (exp(float), floor(float), ...). A
/// functor that calls them unqualified must be declared in a namespace inside
/// ember, after `using namespace ember::pw;` there, as PointwiseFunctors.h
/// does:
///   namespace ember::fn {
///   using namespace ember::pw;
///   template <class T> struct add_Tensor_op { ... };
///   }
/// The using-directive makes ember::pw's names visible as if declared in
/// ember, so unqualified lookup finds them before the global ones. At global
/// scope (or in a namespace outside ember) both are visible and a call such
/// as exp(x) on a float is ambiguous.

#if defined(__CUDACC__)
#define EMBER_DEVICE_INLINE __device__ __forceinline__
#else // host compilers: tests only (Note [Self-contained device header])
#define EMBER_DEVICE_INLINE inline
#endif

namespace ember {

// Fixed-width integers: the platform's own when <stdint.h> came first, else
// the same types it would define (int64_t is long on LP64, as glibc's).
#if defined(INT8_MAX)
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::int8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::uint8_t;
#else
using int8_t = signed char;
using uint8_t = unsigned char;
using int16_t = short;
using uint16_t = unsigned short;
using int32_t = int;
using uint32_t = unsigned int;
#if defined(__LP64__)
using int64_t = long;
using uint64_t = unsigned long;
#else
using int64_t = long long;
using uint64_t = unsigned long long;
#endif
#endif

namespace detail {

template <class A, class B> inline constexpr bool is_same = false;
template <class A> inline constexpr bool is_same<A, A> = true;

template <class T>
inline constexpr bool is_floating_point =
    is_same<T, float> || is_same<T, double>;

// bool is unsigned, as std::is_unsigned says.
template <class T>
inline constexpr bool is_unsigned =
    is_same<T, bool> || is_same<T, unsigned char> ||
    is_same<T, unsigned short> || is_same<T, unsigned int> ||
    is_same<T, unsigned long> || is_same<T, unsigned long long>;
template <class T>
inline constexpr bool is_signed =
    is_floating_point<T> || is_same<T, signed char> || is_same<T, short> ||
    is_same<T, int> || is_same<T, long> || is_same<T, long long>;
template <class T>
inline constexpr bool is_integral = is_unsigned<T> ||
                                    (is_signed<T> && !is_floating_point<T>);

template <class T> struct make_unsigned;
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<unsigned char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<unsigned short> {
  using type = unsigned short;
};
template <> struct make_unsigned<int> { using type = unsigned int; };
template <> struct make_unsigned<unsigned int> { using type = unsigned int; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<unsigned long> { using type = unsigned long; };
template <> struct make_unsigned<long long> {
  using type = unsigned long long;
};
template <> struct make_unsigned<unsigned long long> {
  using type = unsigned long long;
};
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

/// The unsigned type T's arithmetic wraps in: at least unsigned int, so that
/// no operand is promoted to (signed) int, whose overflow is undefined
/// (65535u16 * 65535u16 overflows int).
template <class T>
using wrap_unsigned_t =
    typename make_unsigned<decltype(T(0) + 0)>::type; // after promotion

EMBER_DEVICE_INLINE uint32_t f32_bits(float f) {
#if defined(__CUDACC__)
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(uint32_t, f);
#endif
}
EMBER_DEVICE_INLINE float bits_f32(uint32_t u) {
#if defined(__CUDACC__)
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}

} // namespace detail

// Note [Reduced precision compute]: storage only; kernels load them as
// float, compute in float and round once when they store. The conversions
// give runtime/Half.h's software results, bit for bit, without branches:
// each case is computed and the right one selected. Branches made a held
// float16 row of layer_norm (Note [Persistent rows]) 147 KB of PTX, half of
// it conversions, and its cold NVRTC compile 0.6 s on the development VM.

/// IEEE 754 binary16. Trivially constructible, so it can live in __shared__
/// arrays (Half.h's zero-initializes).
struct Half {
  unsigned short x;
  Half() = default;
  EMBER_DEVICE_INLINE Half(float f) : x(from_float(f)) {}
  EMBER_DEVICE_INLINE operator float() const { return to_float(x); }
  static EMBER_DEVICE_INLINE Half from_bits(unsigned short bits) {
    Half h;
    h.x = bits;
    return h;
  }

  /// Round to nearest even, handling subnormals, inf and NaN (any NaN
  /// becomes the quiet NaN of its sign).
  static EMBER_DEVICE_INLINE unsigned short from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7fffffffu;
    // A normal half: rebias the exponent (-112 << 23) and round to even.
    uint32_t r = (mag + 0xc8000fffu + ((mag >> 13) & 1u)) >> 13;
    // A subnormal half or zero: adding 0.5 = 2^-1 aligns the sum's last
    // mantissa bit to 2^-24, so the float addition rounds to nearest even
    // (exact under flush-to-zero too: float subnormals round to a zero).
    uint32_t sub = detail::f32_bits(detail::bits_f32(mag) + 0.5f) - 0x3f000000u;
    r = mag < 0x38800000u ? sub : r;
    r = mag >= 0x477ff000u ? 0x7c00u : r; // overflows to inf after rounding
    r = mag >= 0x7f800000u ? (mag > 0x7f800000u ? 0x7e00u : 0x7c00u) : r;
    return static_cast<unsigned short>(sign | r);
  }
  static EMBER_DEVICE_INLINE float to_float(unsigned short h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    // A normal half: rebias the exponent (+112 << 23). A subnormal one (or
    // zero): man * 2^-24, a normal float product (exact, and under
    // flush-to-zero too, as from_float's).
    uint32_t normal = (em << 13) + (112u << 23);
    uint32_t sub = detail::f32_bits(static_cast<float>(em) * 0x1p-24f);
    uint32_t special = 0x7f800000u | (em << 13); // inf, NaN (payload kept)
    uint32_t r = em < 0x400u ? sub : normal;
    return detail::bits_f32(sign | (em >= 0x7c00u ? special : r));
  }
};

/// bfloat16: the top half of a float32, round to nearest even.
struct BFloat16 {
  unsigned short x;
  BFloat16() = default;
  EMBER_DEVICE_INLINE BFloat16(float f) : x(from_float(f)) {}
  EMBER_DEVICE_INLINE operator float() const {
    return detail::bits_f32(uint32_t(x) << 16);
  }
  static EMBER_DEVICE_INLINE BFloat16 from_bits(unsigned short bits) {
    BFloat16 b;
    b.x = bits;
    return b;
  }
  static EMBER_DEVICE_INLINE unsigned short from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      return static_cast<unsigned short>((u >> 16) | 0x40u); // quiet nan
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<unsigned short>(u >> 16);
  }
};

namespace detail {
template <class T>
inline constexpr bool is_16bit_float = is_same<T, Half> || is_same<T, BFloat16>;
} // namespace detail

/// Note [Float to narrow integer]
/// The one conversion between element types, Convert.h's: to bool is
/// `!= 0`, the 16-bit floats go through float, everything else is
/// static_cast. A float out of the target's range is undefined behaviour in
/// C++; what the CPU does there is x86's truncating conversion to a 32-bit
/// (or 64-bit) integer, whose low bits a narrower target keeps (-1.0 to
/// uint8 is 255, 300.0 to int8 is 44). The GPU's conversion to 8 and 16 bits
/// saturates instead (0 and 127), so floats go to those types through int32,
/// as on the CPU, and agree with it wherever the value fits in an int32
/// (PyTorch's c10::convert goes to uint8 through int64 for the same reason).
/// Beyond that (and for int32/int64 targets) the GPU saturates, NaN gives
/// 0, and x86 gives the minimum integer.
template <class To, class From> EMBER_DEVICE_INLINE To convert(From v) {
  if constexpr (detail::is_16bit_float<From>)
    return convert<To>(static_cast<float>(v));
  else if constexpr (detail::is_same<To, bool>)
    return v != From(0);
  else if constexpr (detail::is_16bit_float<To>)
    return To(static_cast<float>(v));
  else if constexpr (detail::is_floating_point<From> &&
                     detail::is_integral<To> && sizeof(To) < 4)
    return static_cast<To>(static_cast<int32_t>(v));
  else
    return static_cast<To>(v);
}

namespace pw {

template <class T> inline constexpr bool is_fp = detail::is_floating_point<T>;

// Transcendentals: float uses the CUDA float functions (expf, ...), double
// the double ones. Not bit-identical to the CPU's (VecMath.h, libm): each
// is within a few ulp of the exact result; special values agree.
#define EMBER_CUDA_PW_UNARY_FP(name)                                           \
  EMBER_DEVICE_INLINE float name(float x) { return ::name##f(x); }             \
  EMBER_DEVICE_INLINE double name(double x) { return ::name(x); }
EMBER_CUDA_PW_UNARY_FP(exp)
EMBER_CUDA_PW_UNARY_FP(expm1)
EMBER_CUDA_PW_UNARY_FP(log)
EMBER_CUDA_PW_UNARY_FP(log1p)
EMBER_CUDA_PW_UNARY_FP(tanh)
EMBER_CUDA_PW_UNARY_FP(erf)
EMBER_CUDA_PW_UNARY_FP(exp2)
EMBER_CUDA_PW_UNARY_FP(log2)
EMBER_CUDA_PW_UNARY_FP(log10)
EMBER_CUDA_PW_UNARY_FP(sin)
EMBER_CUDA_PW_UNARY_FP(cos)
EMBER_CUDA_PW_UNARY_FP(tan)
EMBER_CUDA_PW_UNARY_FP(asin)
EMBER_CUDA_PW_UNARY_FP(acos)
EMBER_CUDA_PW_UNARY_FP(atan)
EMBER_CUDA_PW_UNARY_FP(sinh)
EMBER_CUDA_PW_UNARY_FP(cosh)
EMBER_CUDA_PW_UNARY_FP(erfc)
EMBER_CUDA_PW_UNARY_FP(sqrt)
#undef EMBER_CUDA_PW_UNARY_FP

/// 1/(1+e^-|x|) or e^-|x|/(1+e^-|x|) by sign, as VecMath.h's: never forms
/// 1 + huge, so results down to the subnormals survive. double is the CPU's
/// formula.
EMBER_DEVICE_INLINE float sigmoid(float x) {
  float e = ::expf(-::fabsf(x));
  float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}
EMBER_DEVICE_INLINE double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }

// Rounding: identity on integers.
template <class T> EMBER_DEVICE_INLINE T floor(T x) {
  if constexpr (detail::is_same<T, float>)
    return ::floorf(x);
  else if constexpr (detail::is_same<T, double>)
    return ::floor(x);
  else
    return x;
}
template <class T> EMBER_DEVICE_INLINE T ceil(T x) {
  if constexpr (detail::is_same<T, float>)
    return ::ceilf(x);
  else if constexpr (detail::is_same<T, double>)
    return ::ceil(x);
  else
    return x;
}
template <class T> EMBER_DEVICE_INLINE T trunc(T x) {
  if constexpr (detail::is_same<T, float>)
    return ::truncf(x);
  else if constexpr (detail::is_same<T, double>)
    return ::trunc(x);
  else
    return x;
}
/// rint rounds half to even (the CPU's nearbyint in the default mode).
template <class T> EMBER_DEVICE_INLINE T round_half_even(T x) {
  if constexpr (detail::is_same<T, float>)
    return ::rintf(x);
  else if constexpr (detail::is_same<T, double>)
    return ::rint(x);
  else
    return x;
}

/// |x|; abs(MIN) wraps to MIN (Note [Integer overflow wraps]).
template <class T> EMBER_DEVICE_INLINE T abs(T x) {
  if constexpr (detail::is_same<T, float>)
    return ::fabsf(x);
  else if constexpr (detail::is_same<T, double>)
    return ::fabs(x);
  else if constexpr (detail::is_unsigned<T>)
    return x;
  else
    return x < 0 ? T(detail::wrap_unsigned_t<T>(0) -
                     detail::wrap_unsigned_t<T>(x))
                 : x;
}

/// -1, 0 or 1; 0 for NaN, as PyTorch's kernels ((0 < x) - (x < 0)).
template <class T> EMBER_DEVICE_INLINE T sign(T x) {
  if constexpr (detail::is_same<T, bool>)
    return x;
  else if constexpr (detail::is_unsigned<T>)
    return T(x != 0);
  else
    return T((T(0) < x) - (x < T(0)));
}

/// Nonzero test used by the logical ops.
template <class T> EMBER_DEVICE_INLINE bool truthy(T x) { return x != T(0); }

template <class T> EMBER_DEVICE_INLINE T bitwise_not(T x) {
  if constexpr (detail::is_same<T, bool>)
    return !x;
  else
    return T(~x);
}

/// NaN-propagating maximum / minimum (torch.maximum), IEEE 754-2019's
/// maximum and minimum: -0 < +0 (not fmaxf/fminf, which drop NaNs). Each
/// case is computed and selected: the nested conditional compiled to two
/// branches a call, and a held row's max fold (Note [Persistent rows])
/// unrolls 16 of them a thread.
template <class T> EMBER_DEVICE_INLINE T maximum(T a, T b) {
  if constexpr (is_fp<T>) {
    const T larger = a > b ? a : b, zero = signbit(a) ? b : a;
    const T m = a == b ? zero : larger;
    return (a != a || b != b) ? a + b : m;
  } else {
    return a > b ? a : b;
  }
}
template <class T> EMBER_DEVICE_INLINE T minimum(T a, T b) {
  if constexpr (is_fp<T>) {
    const T smaller = a < b ? a : b, zero = signbit(a) ? a : b;
    const T m = a == b ? zero : smaller;
    return (a != a || b != b) ? a + b : m;
  } else {
    return a < b ? a : b;
  }
}
/// clamp bounds, as PyTorch's: x unless it lies strictly beyond the bound
/// (clamp(-0.0, 0, 1) is -0.0); NaN in x propagates, and a NaN bound gives
/// NaN. Both cases computed and selected, as maximum's.
template <class T> EMBER_DEVICE_INLINE T clamp_min(T x, T lo) {
  const T m = x < lo ? lo : x;
  if constexpr (is_fp<T>)
    return (x != x || lo != lo) ? x + lo : m;
  else
    return m;
}
template <class T> EMBER_DEVICE_INLINE T clamp_max(T x, T hi) {
  const T m = x > hi ? hi : x;
  if constexpr (is_fp<T>)
    return (x != x || hi != hi) ? x + hi : m;
  else
    return m;
}

/// Integers compute in double, as std::atan2 on integers does.
template <class T> EMBER_DEVICE_INLINE T atan2(T a, T b) {
  if constexpr (detail::is_same<T, float>)
    return ::atan2f(a, b);
  else
    return T(::atan2(double(a), double(b)));
}

template <class T> EMBER_DEVICE_INLINE T pow(T a, T b) {
  if constexpr (detail::is_same<T, float>) {
    return ::powf(a, b);
  } else if constexpr (detail::is_same<T, double>) {
    return ::pow(a, b);
  } else if constexpr (detail::is_same<T, bool>) {
    return a || !b;
  } else {
    // Integer power by squaring; negative exponents follow C integer
    // division of 1 by the power (1 for base 1, +-1 for -1, else 0).
    if constexpr (detail::is_signed<T>) {
      if (b < 0) {
        if (a == 1)
          return 1;
        if (a == -1)
          return (b & 1) ? T(-1) : T(1);
        return 0;
      }
    }
    using U = detail::wrap_unsigned_t<T>;
    U result = 1, base = U(a);
    for (U e = U(b); e; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return T(result);
  }
}

/// Integer a / b and a % b (b != 0; Note [Integer overflow wraps]): b == -1
/// is a negation, whose MIN / -1 the hardware would not wrap.
template <class T> EMBER_DEVICE_INLINE T div_int(T a, T b) {
  if constexpr (detail::is_signed<T>)
    if (b == T(-1))
      return T(detail::wrap_unsigned_t<T>(0) - detail::wrap_unsigned_t<T>(a));
  return T(a / b);
}
template <class T> EMBER_DEVICE_INLINE T mod_int(T a, T b) {
  if constexpr (detail::is_signed<T>)
    if (b == T(-1))
      return T(0);
  return T(a % b);
}

/// C's fmod: the result takes the sign of the dividend.
template <class T> EMBER_DEVICE_INLINE T fmod(T a, T b) {
  if constexpr (detail::is_same<T, float>)
    return ::fmodf(a, b);
  else if constexpr (detail::is_same<T, double>)
    return ::fmod(a, b);
  else
    return mod_int(a, b);
}
/// Python's %: the result takes the sign of the divisor.
template <class T> EMBER_DEVICE_INLINE T remainder(T a, T b) {
  if constexpr (is_fp<T>) {
    T r = fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  } else if constexpr (detail::is_unsigned<T>) {
    return mod_int(a, b);
  } else {
    T r = mod_int(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r = T(r + b); // opposite signs: cannot overflow
    return r;
  }
}
template <class T> EMBER_DEVICE_INLINE T div_trunc(T a, T b) {
  if constexpr (is_fp<T>)
    return trunc(T(a / b));
  else
    return div_int(a, b);
}
template <class T> EMBER_DEVICE_INLINE T div_floor(T a, T b) {
  if constexpr (is_fp<T>) {
    // Python's floor division: consistent with remainder().
    if (b == 0)
      return a / b;
    T mod = fmod(a, b);
    T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0)))
      div -= T(1);
    if (div != 0) {
      T fl = floor(div);
      if (div - fl > T(0.5))
        fl += T(1);
      return fl;
    }
    if constexpr (detail::is_same<T, float>)
      return ::copysignf(0.0f, a / b);
    else
      return ::copysign(0.0, a / b);
  } else if constexpr (detail::is_unsigned<T>) {
    return div_int(a, b);
  } else {
    T q = div_int(a, b);
    if ((mod_int(a, b) != 0) && ((a < 0) != (b < 0)))
      q = T(q - 1); // q <= 0 here: cannot overflow
    return q;
  }
}

} // namespace pw
} // namespace ember
