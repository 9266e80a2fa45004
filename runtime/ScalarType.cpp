#include "runtime/ScalarType.h"

#include <atomic>

namespace ember {

ScalarType promoteTypes(ScalarType a, ScalarType b) {
  EMBER_CHECK(a != ScalarType::Undefined && b != ScalarType::Undefined,
              "promoteTypes: undefined dtype");
  // Indexed in the order of EMBER_FORALL_SCALAR_TYPES; the entries are
  // PyTorch's (c10/core/ScalarType.cpp), restricted to ember's dtypes.
  constexpr auto u1 = kByte, i1 = kChar, i2 = kShort, i4 = kInt, i8 = kLong,
                 f2 = kHalf, f4 = kFloat, f8 = kDouble, b1 = kBool,
                 bf = kBFloat16;
  static constexpr ScalarType table[kNumScalarTypes][kNumScalarTypes] = {
      /*        u1  i1  i2  i4  i8  f2  f4  f8  b1  bf */
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, bf, bf},
  };
  static_assert(sizeof(table) / sizeof(table[0]) == kNumScalarTypes,
                "promotion table must cover every dtype");
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

static std::atomic<ScalarType> g_default_dtype{kFloat};
ScalarType get_default_dtype() { return g_default_dtype.load(); }
void set_default_dtype(ScalarType t) {
  EMBER_CHECK_TYPE(t == kFloat || t == kDouble || t == kHalf || t == kBFloat16,
                   "set_default_dtype: only floating dtypes are supported as "
                   "the default, got ",
                   t);
  g_default_dtype = t;
}

} // namespace ember
