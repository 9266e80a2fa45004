#pragma once
/// dtypes: the one list of element types, and PyTorch's promotion lattice.

#include "runtime/Error.h"
#include "runtime/Half.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace ember {

// Note [The dtype X-macro]
// Every list of dtypes in ember is generated from this one macro: the enum,
// names, sizes, C++ type mapping and the dispatch switches. Order is PyTorch's
// (c10::ScalarType), which the promotion table below is indexed by.
#define EMBER_FORALL_SCALAR_TYPES(_)                                           \
  _(uint8_t, Byte, uint8)                                                      \
  _(int8_t, Char, int8)                                                        \
  _(int16_t, Short, int16)                                                     \
  _(int32_t, Int, int32)                                                       \
  _(int64_t, Long, int64)                                                      \
  _(::ember::Half, Half, float16)                                              \
  _(float, Float, float32)                                                     \
  _(double, Double, float64)                                                   \
  _(bool, Bool, bool)                                                          \
  _(::ember::BFloat16, BFloat16, bfloat16)

enum class ScalarType : int8_t {
#define EMBER_ENUM(ctype, Name, pyname) Name,
  EMBER_FORALL_SCALAR_TYPES(EMBER_ENUM)
#undef EMBER_ENUM
      Undefined,
  NumOptions = Undefined
};

#define EMBER_CONST(ctype, Name, pyname)                                       \
  constexpr ScalarType k##Name = ScalarType::Name;
EMBER_FORALL_SCALAR_TYPES(EMBER_CONST)
#undef EMBER_CONST
constexpr ScalarType kUInt8 = kByte, kInt8 = kChar, kInt16 = kShort,
                     kInt32 = kInt, kInt64 = kLong, kFloat16 = kHalf,
                     kFloat32 = kFloat, kFloat64 = kDouble;

constexpr int kNumScalarTypes = static_cast<int>(ScalarType::NumOptions);

/// The C++ type of a dtype: CppType<kFloat> is float.
template <ScalarType S> struct CppTypeOf;
#define EMBER_CPPTYPE(ctype, Name, pyname)                                     \
  template <> struct CppTypeOf<ScalarType::Name> { using type = ctype; };
EMBER_FORALL_SCALAR_TYPES(EMBER_CPPTYPE)
#undef EMBER_CPPTYPE
template <ScalarType S> using CppType = typename CppTypeOf<S>::type;

/// The dtype of a C++ type: dtype_of<float>() is kFloat.
template <class T> constexpr ScalarType dtype_of();
#define EMBER_DTYPEOF(ctype, Name, pyname)                                     \
  template <> constexpr ScalarType dtype_of<ctype>() {                         \
    return ScalarType::Name;                                                   \
  }
EMBER_FORALL_SCALAR_TYPES(EMBER_DTYPEOF)
#undef EMBER_DTYPEOF

inline size_t elementSize(ScalarType t) {
  switch (t) {
#define EMBER_SIZE(ctype, Name, pyname)                                        \
  case ScalarType::Name:                                                       \
    return sizeof(ctype);
    EMBER_FORALL_SCALAR_TYPES(EMBER_SIZE)
#undef EMBER_SIZE
  default:
    throw Error("elementSize: undefined dtype");
  }
}

/// "float32", "int64", ...: the name after "ember." in reprs.
inline const char *toString(ScalarType t) {
  switch (t) {
#define EMBER_NAME(ctype, Name, pyname)                                        \
  case ScalarType::Name:                                                       \
    return #pyname;
    EMBER_FORALL_SCALAR_TYPES(EMBER_NAME)
#undef EMBER_NAME
  default:
    return "undefined";
  }
}
/// "Float", "Long", ...: the C++ enumerator name, as in PyTorch's messages
/// ("result type Float can't be cast to the desired output type Long").
inline const char *toTypeName(ScalarType t) {
  switch (t) {
#define EMBER_TNAME(ctype, Name, pyname)                                       \
  case ScalarType::Name:                                                       \
    return #Name;
    EMBER_FORALL_SCALAR_TYPES(EMBER_TNAME)
#undef EMBER_TNAME
  default:
    return "Undefined";
  }
}

inline std::ostream &operator<<(std::ostream &os, ScalarType t) {
  return os << "ember." << toString(t);
}

inline bool isFloatingType(ScalarType t) {
  return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16;
}
inline bool isReducedFloatingType(ScalarType t) {
  return t == kHalf || t == kBFloat16;
}
/// Integral types; bool counts only when includeBool.
inline bool isIntegralType(ScalarType t, bool includeBool) {
  return t == kByte || t == kChar || t == kShort || t == kInt || t == kLong ||
         (includeBool && t == kBool);
}
inline bool isSignedType(ScalarType t) { return t != kByte && t != kBool; }

/// PyTorch's promoteTypes: the smallest dtype both a and b convert to safely
/// (within ember's lattice, where int with float gives the float).
ScalarType promoteTypes(ScalarType a, ScalarType b);

/// Default floating dtype (float32 unless set_default_dtype changed it).
ScalarType get_default_dtype();
void set_default_dtype(ScalarType t);

/// The category used by type promotion: bool < integral < floating.
enum class TypeCategory : int8_t { Bool = 0, Integral = 1, Floating = 2 };
inline TypeCategory categoryOf(ScalarType t) {
  return t == kBool          ? TypeCategory::Bool
         : isFloatingType(t) ? TypeCategory::Floating
                             : TypeCategory::Integral;
}

} // namespace ember
