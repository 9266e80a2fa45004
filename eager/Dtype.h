#pragma once
/// Dispatch on a dtype to a templated body (PyTorch's AT_DISPATCH macros, as
/// C++20 template lambdas): dispatch_dtype(t, "op", [&]<class T>() {...}).

#include "runtime/ScalarType.h"

#include <string>
#include <type_traits>

namespace ember {

/// Groups of dtypes a kernel may accept.
enum class DtypeGroup : int8_t { All, NoBool, Integral, Float };

bool in_group(ScalarType t, DtypeGroup g);
[[noreturn]] void throw_unsupported_dtype(const char *op, ScalarType t);

/// Calls body.template operator()<T>() with T the C++ type of `t`.
template <class F>
decltype(auto) dispatch_dtype(ScalarType t, const char *op, F &&body) {
  switch (t) {
#define EMBER_DISPATCH_CASE(ctype, Name, pyname)                               \
  case ScalarType::Name:                                                       \
    return body.template operator()<ctype>();
    EMBER_FORALL_SCALAR_TYPES(EMBER_DISPATCH_CASE)
#undef EMBER_DISPATCH_CASE
  default:
    throw_unsupported_dtype(op, t);
  }
}

/// Whether C++ type T is in group G, at compile time.
template <class T, DtypeGroup G> constexpr bool in_group_v() {
  constexpr bool fp = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                      std::is_same_v<T, BFloat16>;
  if constexpr (G == DtypeGroup::All)
    return true;
  else if constexpr (G == DtypeGroup::NoBool)
    return !std::is_same_v<T, bool>;
  else if constexpr (G == DtypeGroup::Integral)
    return !fp;
  else
    return fp;
}

/// Like dispatch_dtype, but instantiates the body only for the dtypes of
/// group G (a dtype outside it raises).
template <DtypeGroup G, class F>
void dispatch_in(ScalarType t, const char *op, F &&body) {
  dispatch_dtype(t, op, [&]<class T>() {
    if constexpr (in_group_v<T, G>())
      body.template operator()<T>();
    else
      throw_unsupported_dtype(op, t);
  });
}

/// Like dispatch_dtype, but only for the dtypes of group `g`.
template <class F>
decltype(auto) dispatch_group(ScalarType t, DtypeGroup g, const char *op,
                              F &&body) {
  if (!in_group(t, g))
    throw_unsupported_dtype(op, t);
  return dispatch_dtype(t, op, std::forward<F>(body));
}

/// Float and double only (with Half/BFloat16 computed in float by callers).
template <class F>
decltype(auto) dispatch_floating(ScalarType t, const char *op, F &&body) {
  switch (t) {
  case kFloat:
    return body.template operator()<float>();
  case kDouble:
    return body.template operator()<double>();
  case kHalf:
    return body.template operator()<Half>();
  case kBFloat16:
    return body.template operator()<BFloat16>();
  default:
    throw_unsupported_dtype(op, t);
  }
}

/// Calls body.template operator()<U>() with U an unsigned integer type of the
/// given element size: ops that only move elements need no arithmetic.
template <class F> void dispatch_by_size(size_t es, F &&body) {
  switch (es) {
  case 1:
    return body.template operator()<uint8_t>();
  case 2:
    return body.template operator()<uint16_t>();
  case 4:
    return body.template operator()<uint32_t>();
  case 8:
    return body.template operator()<uint64_t>();
  default:
    throw Error("dispatch_by_size: no unsigned type of " + std::to_string(es) +
                " bytes");
  }
}

/// The type arithmetic on T is done in: float for the 16-bit floats.
template <class T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<Half> { using type = float; };
template <> struct ComputeTypeOf<BFloat16> { using type = float; };
template <class T> using compute_t = typename ComputeTypeOf<T>::type;

/// The type sums of T accumulate in: double for floats, int64 for integers.
template <class T> struct AccTypeOf {
  using type = std::conditional_t<std::is_floating_point_v<compute_t<T>>,
                                  double, int64_t>;
};
template <class T> using acc_t = typename AccTypeOf<T>::type;

} // namespace ember
