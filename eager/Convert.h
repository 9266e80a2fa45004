#pragma once
/// The one conversion between element types: what copy_, to() and type
/// promotion do to a value (PyTorch's c10::convert): to bool is `!= 0`, the
/// 16-bit floats go through float, a float to an 8- or 16-bit integer goes
/// through int32, everything else is static_cast. The compiled kernels use
/// it too (codegen/ScalarLibrary.cpp), so a compiled conversion is the
/// eager one.
///
/// Through int32: a float out of a narrow target's range is undefined
/// behaviour in C++. What x86 does for scalar code is a truncating
/// conversion to int32 whose low bits the target keeps (-5.09 to uint8 is
/// 251, 300.5 to int8 is 44), and PyTorch's users see that; but clang
/// compiles a plain static_cast of a vector of doubles to `fptoui <16 x
/// double> to <16 x i8>`, which the x86 backend saturates (0 and 127): the
/// CPU generator's kernels disagreed with eager until the int32 step was
/// written out. The device header does the same (eager/cuda/
/// PointwiseMath.cuh).

#include "runtime/Half.h"

#include <cstdint>
#include <type_traits>

namespace ember {

template <class To, class From> inline To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (std::is_same_v<From, Half> ||
                       std::is_same_v<From, BFloat16>)
    return To(static_cast<float>(v));
  else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>)
    return To(static_cast<float>(v));
  else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                     sizeof(To) < 4)
    return static_cast<To>(static_cast<int32_t>(v));
  else
    return static_cast<To>(v);
}

} // namespace ember
