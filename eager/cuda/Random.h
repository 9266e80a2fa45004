#pragma once
/// Random draws on CUDA tensors (Note [CUDA random numbers] in
/// eager/cuda/Random.cpp).

#include "eager/Tensor.h"

#include <cstdint>
#include <string>

namespace ember::cuda {

/// What a draw computes from each element's random bits: a uniform number
/// in [0, 1), a standard normal, or an integer in [low, low + range).
enum class Draw { Uniform = 0, Normal = 1, Randint = 2 };

/// Fills `out` (contiguous) with elements offset, offset + 1, ... of the
/// stream of `seed`, as the CPU ops _philox_uniform, _philox_normal and
/// _philox_randint do: on its CUDA device (NVRTC-compiled on first use),
/// or, for a CPU tensor, with the device code run on the host (how the
/// tests check it).
void draw(Draw kind, const Tensor &out, uint64_t seed, uint64_t offset,
          int64_t low = 0, uint64_t range = 1);
/// The NVRTC source of the kernel "ember_philox" of `kind` on `dtype`.
std::string draw_source(Draw kind, ScalarType dtype);

} // namespace ember::cuda
