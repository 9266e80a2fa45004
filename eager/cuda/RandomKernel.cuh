/// The CUDA random kernels' device code (Note [CUDA random numbers] in
/// eager/cuda/Random.cpp): element i of a draw from Philox's bits at
/// counter offset + i under the seed, runtime/Philox.h's functions, with
/// the same arithmetic as the CPU ops (eager/cpu/Random.cpp). NVRTC
/// compiles it after the device math prelude (PointwiseMath.cuh: convert<>,
/// the 16-bit float types) and runtime/Philox.h; without __CUDACC__ it
/// compiles as host C++ (Note [Self-contained device header]), which is how
/// test_cuda checks it against the CPU ops on machines without a GPU.

namespace ember {

#define EMBER_DRAW_UNIFORM 0
#define EMBER_DRAW_NORMAL 1
#define EMBER_DRAW_RANDINT 2

/// The mantissa digits of T: a uniform number with that many random bits
/// is exact in T, so it never rounds up to 1.
template <class T> EMBER_DEVICE_INLINE int uniform_digits() {
  if constexpr (detail::is_same<T, Half>)
    return 11;
  else if constexpr (detail::is_same<T, BFloat16>)
    return 8;
  else if constexpr (detail::is_same<T, float>)
    return 24;
  else
    return 53;
}

/// Element `i` of a draw of kind `Kind` (randint: low + bits mod range,
/// in uint64 arithmetic).
template <int Kind, class T>
EMBER_DEVICE_INLINE T draw_point(uint64_t seed, uint64_t offset, long long i,
                                 long long low, uint64_t range) {
  const philox::Counter c = philox::bits(seed, offset + uint64_t(i));
  if constexpr (Kind == EMBER_DRAW_UNIFORM) {
    return convert<T>(
        philox::uniform(philox::word64(c, 0), uniform_digits<T>()));
  } else if constexpr (Kind == EMBER_DRAW_NORMAL) {
    // Box-Muller, the cosine branch (one normal per element)
    const double u1 = 1.0 - philox::uniform(philox::word64(c, 0), 53);
    const double u2 = philox::uniform(philox::word64(c, 1), 53);
    return convert<T>(::sqrt(-2.0 * ::log(u1)) *
                      ::cos(2.0 * 3.141592653589793 * u2));
  } else {
    return convert<T>(
        static_cast<long long>(uint64_t(low) + philox::word64(c, 0) % range));
  }
}

} // namespace ember
