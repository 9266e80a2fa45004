#pragma once
/// Philox4x32-10, the counter-based generator of Salmon et al., "Parallel
/// Random Numbers: As Easy as 1, 2, 3" (SC'11), which PyTorch's CUDA
/// generator and Inductor's random ops use.
///
/// Note [Counter-based random numbers]
/// Every ember generator is a (seed, offset) pair. A draw of n numbers
/// takes the offsets [offset, offset + n) and advances the generator by n:
/// element i of the draw is a pure function of the seed (the key) and
/// offset + i (the counter), whatever order, thread or device computes it.
/// So a draw can be recomputed from its 16 bytes of state: a compiled
/// graph's random op is a pure op of a (seed, offset) tensor, which
/// ember-remat may recompute in the backward and get the forward's values
/// (Note [Random ops in a compiled function] in eager/Factory.cpp), and a
/// checkpoint() region replays its dropout masks by restoring the pair.
/// Header-only and free of the standard library: NVRTC compiles this same
/// file for the CUDA random kernels (after the device prelude, which
/// declares the fixed-width integers: Note [CUDA random numbers] in
/// eager/cuda/Random.cpp), so both devices compute one function.

#if !defined(__CUDACC_RTC__)
#include <cstdint>
#endif

#if defined(__CUDACC__)
#define EMBER_PHILOX_FN __host__ __device__ constexpr
#else
#define EMBER_PHILOX_FN constexpr
#endif

namespace ember::philox {

/// 4 x 32 bits: a counter, or the random bits at one.
struct Counter {
  uint32_t w[4];
  EMBER_PHILOX_FN uint32_t operator[](int i) const { return w[i]; }
  EMBER_PHILOX_FN bool operator==(const Counter &o) const {
    return w[0] == o.w[0] && w[1] == o.w[1] && w[2] == o.w[2] && w[3] == o.w[3];
  }
};

/// The 4 x 32 random bits at `counter` under `key` (10 rounds).
EMBER_PHILOX_FN Counter philox4x32_10(Counter c, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = uint64_t(kM0) * c[0];
    const uint64_t p1 = uint64_t(kM1) * c[2];
    c = Counter{{uint32_t(p1 >> 32) ^ c[1] ^ k0, uint32_t(p1),
                 uint32_t(p0 >> 32) ^ c[3] ^ k1, uint32_t(p0)}};
  }
  return c;
}

/// The random bits of element `index` of the stream of `seed`: the counter
/// is the 64-bit index, the key the 64-bit seed.
EMBER_PHILOX_FN Counter bits(uint64_t seed, uint64_t index) {
  return philox4x32_10(Counter{{uint32_t(index), uint32_t(index >> 32), 0, 0}},
                       uint32_t(seed), uint32_t(seed >> 32));
}

/// 64 of the bits: words 0 and 1, or 2 and 3.
EMBER_PHILOX_FN uint64_t word64(const Counter &c, int half) {
  return uint64_t(c[2 * half]) | (uint64_t(c[2 * half + 1]) << 32);
}

/// A uniform number in [0, 1) with `digits` random bits (the mantissa
/// digits of the result type: 24 for float, 53 for double), so that the
/// value is exact in that type and never rounds up to 1. The scale
/// 2^-digits is exact either way; it was a loop of `digits` halvings, a
/// chain of dependent multiplies that GCC kept: two thirds of randn's time
/// (53 of them twice an element), a third of rand's.
EMBER_PHILOX_FN double uniform(uint64_t bits64, int digits) {
  return double(bits64 >> (64 - digits)) *
         (1.0 / double(uint64_t(1) << digits));
}

} // namespace ember::philox
