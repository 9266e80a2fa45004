#pragma once
/// The device math prelude compiled as host C++ (Note [Self-contained device
/// header] in eager/cuda/PointwiseMath.cuh), in namespace dev, and a
/// dispatch over its element types: for the CUDA kernels whose device code
/// the tests run on the host, point by point, on CPU tensors (index, sort,
/// random). A kernel's own device header is included after this one, in
/// namespace dev too.

#include "eager/Dtype.h"

#include <cmath>

namespace dev {
// clang-format off
#include "eager/cuda/PointwiseMath.cuh"
// clang-format on
} // namespace dev

namespace ember::cuda::detail {

/// fn.template operator()<T, A>() with the device type of `t` (T) and of its
/// compute type (A: float for the 16-bit floats, else T); raises `op`'s
/// unsupported-dtype error for the others.
template <class F> void dispatch_dev(ScalarType t, const char *op, F &&fn) {
  namespace de = dev::ember;
  switch (t) {
  case kFloat:
    return fn.template operator()<float, float>();
  case kDouble:
    return fn.template operator()<double, double>();
  case kLong:
    return fn.template operator()<de::int64_t, de::int64_t>();
  case kInt:
    return fn.template operator()<de::int32_t, de::int32_t>();
  case kShort:
    return fn.template operator()<de::int16_t, de::int16_t>();
  case kChar:
    return fn.template operator()<de::int8_t, de::int8_t>();
  case kByte:
    return fn.template operator()<de::uint8_t, de::uint8_t>();
  case kBool:
    return fn.template operator()<bool, bool>();
  case kHalf:
    return fn.template operator()<de::Half, float>();
  case kBFloat16:
    return fn.template operator()<de::BFloat16, float>();
  default:
    throw_unsupported_dtype(op, t);
  }
}

} // namespace ember::cuda::detail
