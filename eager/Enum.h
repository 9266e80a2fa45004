#pragma once
/// ember's enum-like option values, after libtorch's torch/enum.h and
/// ATen/core/Reduction.h: the tag types (ember::kMean, kSum, kNone for loss
/// reductions; kConstant, kReflect, kReplicate, kCircular for pad modes;
/// kValid, kSame for convolution padding) and ember::Reduction.
///
/// ember::Reduction is also at::Reduction: `ember::Reduction::Mean` is the
/// int64_t `reduction` argument of the top-level losses (ember::mse_loss,
/// ember::nll_loss, ... in eager/generated/Functions.h, whose defaults name
/// it), with ATen's values None = 0, Mean = 1, Sum = 2.

#include "runtime/Error.h"

#include <cstdint>
#include <ostream>
#include <string_view>

namespace ember {

/// Tag types of ember's enum-like option values (torch::enumtype).
/// EMBER_ENUM_TAG(Name, "name") declares one (nn::init's are in
/// eager/nn/Init.h).
namespace enumtype {
#define EMBER_ENUM_TAG(Name, str)                                              \
  struct Name {                                                                \
    static constexpr std::string_view name() { return str; }                   \
    bool operator==(const Name &) const = default;                             \
  };
EMBER_ENUM_TAG(kNone, "none")
EMBER_ENUM_TAG(kMean, "mean")
EMBER_ENUM_TAG(kSum, "sum")
EMBER_ENUM_TAG(kConstant, "constant")
EMBER_ENUM_TAG(kReflect, "reflect")
EMBER_ENUM_TAG(kReplicate, "replicate")
EMBER_ENUM_TAG(kCircular, "circular")
EMBER_ENUM_TAG(kValid, "valid")
EMBER_ENUM_TAG(kSame, "same")
} // namespace enumtype

/// Reduction tags: `F::mse_loss(a, b, F::MSELossFuncOptions(ember::kSum))`.
inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
/// Pad mode tags (F::PadFuncOptions::mode).
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
/// Convolution padding tags (F::Conv2dFuncOptions::padding).
inline constexpr enumtype::kValid kValid{};
inline constexpr enumtype::kSame kSame{};

/// How a loss reduces its per-element values: none, mean or sum. Built from
/// ember::kNone / kMean / kSum (as libtorch's reduction_t variant) or from the
/// strings "none" / "mean" / "sum" (as Python's reduction=).
class Reduction {
public:
  enum Kind : uint8_t { None, Mean, Sum };
  constexpr Reduction(enumtype::kNone) : kind_(None) {}
  constexpr Reduction(enumtype::kMean) : kind_(Mean) {}
  constexpr Reduction(enumtype::kSum) : kind_(Sum) {}
  constexpr Reduction(Kind k) : kind_(k) {}
  Reduction(std::string_view s) : kind_(parse(s)) {}
  Reduction(const char *s) : kind_(parse(s)) {}

  /// The reduction an int64_t `reduction` argument names (the top-level
  /// losses, `ember::mse_loss(a, b, ember::Reduction::Sum)`, take it as ATen
  /// does); anything but 0, 1, 2 is a ValueError.
  static Reduction from_int(int64_t r) {
    EMBER_CHECK_VALUE(r >= None && r <= Sum, r,
                      " is not a valid value for reduction; expected "
                      "ember::Reduction::None (0), Mean (1) or Sum (2)");
    return Reduction(Kind(r));
  }

  constexpr Kind kind() const { return kind_; }
  constexpr bool operator==(const Reduction &o) const = default;
  std::string_view name() const {
    return kind_ == None ? "none" : kind_ == Mean ? "mean" : "sum";
  }

private:
  static Kind parse(std::string_view s) {
    if (s == "none")
      return None;
    if (s == "mean")
      return Mean;
    if (s == "sum")
      return Sum;
    throw ValueError(detail::str(
        s, " is not a valid value for reduction; expected 'none', 'mean' or "
           "'sum' (ember::kNone, ember::kMean, ember::kSum)"));
  }
  Kind kind_;
};

inline std::ostream &operator<<(std::ostream &os, const Reduction &r) {
  return os << r.name();
}

static_assert(Reduction::None == 0 && Reduction::Mean == 1 &&
                  Reduction::Sum == 2,
              "the values of at::Reduction, which int64_t reduction "
              "arguments carry");

} // namespace ember
