#pragma once
/// float16 <-> float conversions of contiguous runs, 8 at a time with F16C
/// (the scalar conversions' instruction, so every value is the same as
/// Half's own conversion), for the kernels that convert float16 in blocks
/// (Note [Pointwise runs in blocks] in PointwiseKernel.h, float16 sums in
/// Reduce.cpp). Without F16C, kHalfBlocks is false and callers keep their
/// element-wise loops.

#include "runtime/Half.h"

#include <cstdint>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace ember::native {

#if defined(__F16C__) && defined(__AVX__)
inline constexpr bool kHalfBlocks = true;

inline void widen_half(const Half *h, float *to, int64_t len) {
  int64_t k = 0;
  for (; k + 8 <= len; k += 8)
    _mm256_storeu_ps(to + k, _mm256_cvtph_ps(_mm_loadu_si128(
                                 reinterpret_cast<const __m128i *>(h + k))));
  for (; k < len; ++k)
    to[k] = float(h[k]);
}
inline void narrow_half(const float *f, Half *to, int64_t len) {
  int64_t k = 0;
  for (; k + 8 <= len; k += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(to + k),
        _mm256_cvtps_ph(_mm256_loadu_ps(f + k), _MM_FROUND_TO_NEAREST_INT));
  for (; k < len; ++k)
    to[k] = Half(f[k]);
}
#else
inline constexpr bool kHalfBlocks = false;
inline void widen_half(const Half *h, float *to, int64_t len) {
  for (int64_t k = 0; k < len; ++k)
    to[k] = float(h[k]);
}
inline void narrow_half(const float *f, Half *to, int64_t len) {
  for (int64_t k = 0; k < len; ++k)
    to[k] = Half(f[k]);
}
#endif

} // namespace ember::native
