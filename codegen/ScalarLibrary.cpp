#include "codegen/ScalarLibrary.h"

#include "runtime/Error.h"

#include <string_view>
#include <unordered_set>

namespace ember::codegen {

namespace detail {
// codegen/embed_bitcode.py, from the two clang builds (CMakeLists.txt).
extern const unsigned char kScalarLibrary_baseline[], kScalarLibrary_v3[];
extern const size_t kScalarLibrary_baseline_size, kScalarLibrary_v3_size;
} // namespace detail

const char *find_dtype_tag(ScalarType t) {
  switch (t) {
#define X(type, tag)                                                           \
  case type:                                                                   \
    return tag;
#include "codegen/ScalarLibraryTags.inc"
#undef X
  default:
    return nullptr;
  }
}

const char *dtype_tag(ScalarType t) {
  const char *tag = find_dtype_tag(t);
  EMBER_CHECK(tag, "codegen: no scalar library type for dtype ", int(t));
  return tag;
}

ScalarType compute_dtype(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16 ? ScalarType::Float
                                                            : t;
}

Bitcode scalar_library(bool v3) {
  if (v3)
    return {detail::kScalarLibrary_v3, detail::kScalarLibrary_v3_size,
            "ScalarLibrary_v3"};
  return {detail::kScalarLibrary_baseline, detail::kScalarLibrary_baseline_size,
          "ScalarLibrary_baseline"};
}

std::string pointwise_function(const OperatorHandle &op, ScalarType compute) {
  // "ember::add_.Tensor" -> "add_Tensor": the functional op's C++ name.
  const std::string &qualified = op.name();
  std::string name = qualified.substr(qualified.find("::") + 2);
  std::string overload;
  if (size_t dot = name.find('.'); dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name = name.substr(0, dot);
  }
  if (!name.empty() && name.back() == '_')
    name.pop_back(); // the in-place form computes the same expression
  if (!overload.empty())
    name += "_" + overload;
  return "ember_pw_" + name + "_" + dtype_tag(compute_dtype(compute));
}

bool has_pointwise_function(const OperatorHandle &op, ScalarType compute) {
  static const std::unordered_set<std::string_view> kFunctions = {
#include "codegen/ScalarLibraryIndex.inc"
  };
  return find_dtype_tag(compute_dtype(compute)) &&
         kFunctions.count(pointwise_function(op, compute)) != 0;
}

} // namespace ember::codegen
