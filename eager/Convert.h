#pragma once
/// The one conversion between element types: what copy_, to() and type
/// promotion do to a value (PyTorch's c10::convert): to bool is `!= 0`, the
/// 16-bit floats go through float, everything else is static_cast. The
/// compiled kernels use it too (codegen/ScalarLibrary.cpp), so a compiled
/// conversion is the eager one.

#include "runtime/Half.h"

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
  else
    return static_cast<To>(v);
}

} // namespace ember
