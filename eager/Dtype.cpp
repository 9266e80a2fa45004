#include "eager/Dtype.h"

namespace ember {

bool in_group(ScalarType t, DtypeGroup g) {
  switch (g) {
  case DtypeGroup::All:
    return true;
  case DtypeGroup::NoBool:
    return t != kBool;
  case DtypeGroup::Integral:
    return isIntegralType(t, /*includeBool=*/true);
  case DtypeGroup::Float:
    return isFloatingType(t);
  }
  return false;
}

void throw_unsupported_dtype(const char *op, ScalarType t) {
  std::string hint;
  if (isFloatingType(t))
    hint = " (it is defined for integer and bool tensors only)";
  else if (t == kBool)
    hint = " (for bool tensors use the logical_* ops, or convert with "
           ".to(ember::kInt))";
  else
    hint = " (convert the input to a floating dtype with .to(ember::kFloat))";
  throw TypeError(std::string("\"") + op + "\" is not implemented for " +
                  "dtype " + toString(t) + hint);
}

} // namespace ember
