#pragma once
/// Float transcendentals written without calls or branches, so that GCC
/// vectorizes loops over them (scalar libm calls in an inner loop are ~15x
/// slower on these machines; see TOOLCHAIN.md).
///
/// These start as libm calls; see Note [Vectorizable float math].

#include <cmath>

namespace ember::vm {

inline float exp(float x) { return std::exp(x); }
inline float expm1(float x) { return std::expm1(x); }
inline float log(float x) { return std::log(x); }
inline float log1p(float x) { return std::log1p(x); }
inline float tanh(float x) { return std::tanh(x); }
inline float erf(float x) { return std::erf(x); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

} // namespace ember::vm
