#pragma once
/// 16-bit floating types. Storage only: arithmetic converts to float, which is
/// how every kernel computes on them (Note [Reduced precision compute]).
///
/// Note [Reduced precision compute]
/// float16 and bfloat16 are storage types: every kernel (eager's pointwise,
/// reduction and softmax kernels, the decompositions, compiled kernels)
/// loads them as float, computes in float (sums accumulate in double, as
/// for float32), and rounds to the 16-bit type once, when it stores the
/// result, as PyTorch's CPU kernels do (opmath_type, acc_type). Each op
/// rounds its own result: a compiled kernel, which keeps a 16-bit value in
/// a float register, rounds after each op too, so it matches eager bit for
/// bit (Note [One scalar semantics] in codegen/ScalarLibrary.h).

#include <cstdint>
#include <cstring>
#include <ostream>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace ember {

namespace detail {
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
} // namespace detail

/// IEEE 754 binary16.
struct Half {
  uint16_t x = 0;
  struct from_bits_t {};
  Half() = default;
  constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  Half(float f) : x(from_float(f)) {}
  operator float() const { return to_float(x); }

  static uint16_t from_float(float f) {
#if defined(__F16C__)
    return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#endif
    // Round to nearest even, handling subnormals, inf and NaN.
    uint32_t u = detail::f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u) // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u |
                                   (mag > 0x7f800000u ? 0x200u : 0u));
    if (mag >= 0x477ff000u) // overflows to inf after rounding
      return static_cast<uint16_t>(sign | 0x7c00u);
    if (mag < 0x38800000u) {                  // subnormal or zero in half
      float a = detail::bits_f32(mag) + 0.5f; // 0.5 = 2^-1: aligns to 2^-24
      return static_cast<uint16_t>(sign | (detail::f32_bits(a) - 0x3f000000u));
    }
    uint32_t odd = (mag >> 13) & 1u;
    mag += 0xc8000fffu + odd; // rebias exponent (-112 << 23) and round
    return static_cast<uint16_t>(sign | (mag >> 13));
  }
  static float to_float(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#endif
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f)
      return detail::bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
      if (man == 0)
        return detail::bits_f32(sign);
      // subnormal: value = man * 2^-24
      float v = static_cast<float>(man) * 5.9604644775390625e-8f;
      return sign ? -v : v;
    }
    return detail::bits_f32(sign | ((exp + 112) << 23) | (man << 13));
  }
};

/// bfloat16: the top half of a float32, round to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  struct from_bits_t {};
  BFloat16() = default;
  constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  BFloat16(float f) : x(from_float(f)) {}
  operator float() const { return detail::bits_f32(uint32_t(x) << 16); }
  static uint16_t from_float(float f) {
    uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
      return static_cast<uint16_t>((u >> 16) | 0x40u); // quiet nan
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
};

inline std::ostream &operator<<(std::ostream &os, Half h) {
  return os << static_cast<float>(h);
}
inline std::ostream &operator<<(std::ostream &os, BFloat16 h) {
  return os << static_cast<float>(h);
}

} // namespace ember
