#pragma once
/// Helpers shared by the option structs of ember::nn (functional options and
/// module options), after libtorch's torch/arg.h, torch/expanding_array.h
/// and torch/enum.h:
///
///  - EMBER_ARG(T, name): a field with a chainable setter `name(value)` that
///    returns *this and a getter `name()` (libtorch's TORCH_ARG).
///  - ExpandingArray<D>: D integers given as one int (repeated) or as a
///    braced list of D (kernel_size(3) or kernel_size({3, 5})).
///  - Enum tags (ember::kMean, kSum, kNone, kConstant, ..., and the
///    Reduction type that accepts the reduction tags) come from
///    eager/Enum.h; ConvPadding<D> and PadMode for the padding options of
///    convolutions and F::pad are here.

#include "eager/ArrayRef.h"
#include "eager/Enum.h"
#include "runtime/Error.h"

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string_view>
#include <utility>
#include <vector>

/// Declares a field `name_` of type T with libtorch-style accessors:
/// `auto& name(const T&)` sets it and returns *this (so setters chain),
/// `name()` reads it. Use inside an options struct:
///   struct FooOptions { EMBER_ARG(double, eps) = 1e-5; };
#define EMBER_ARG(T, name)                                                     \
public:                                                                        \
  inline auto &name(const T &new_##name) {                                     \
    this->name##_ = new_##name;                                                \
    return *this;                                                              \
  }                                                                            \
  inline auto &name(T &&new_##name) {                                          \
    this->name##_ = std::move(new_##name);                                     \
    return *this;                                                              \
  }                                                                            \
  inline const T &name() const noexcept { return this->name##_; }              \
  inline T &name() noexcept { return this->name##_; }                          \
                                                                               \
private:                                                                       \
  T name##_ /* NOLINT */

namespace ember {

/// D integers, built from one integer (repeated D times) or from exactly D
/// integers: torch::ExpandingArray. Converts to IntArrayRef.
template <size_t D> class ExpandingArray {
public:
  /// The same value in every dimension.
  ExpandingArray(int64_t single) { values_.fill(single); }
  /// Exactly D values.
  ExpandingArray(std::initializer_list<int64_t> list) {
    check(list.size());
    std::copy(list.begin(), list.end(), values_.begin());
  }
  ExpandingArray(const std::vector<int64_t> &v) {
    check(v.size());
    std::copy(v.begin(), v.end(), values_.begin());
  }
  ExpandingArray(const std::array<int64_t, D> &a) : values_(a) {}
  ExpandingArray(IntArrayRef a) {
    check(a.size());
    std::copy(a.begin(), a.end(), values_.begin());
  }

  int64_t operator[](size_t i) const { return values_[i]; }
  int64_t &operator[](size_t i) { return values_[i]; }
  static constexpr size_t size() { return D; }
  const int64_t *begin() const { return values_.data(); }
  const int64_t *end() const { return values_.data() + D; }
  /// The values as IntArrayRef (libtorch's `*array`).
  IntArrayRef operator*() const { return IntArrayRef(values_.data(), D); }
  operator IntArrayRef() const { return IntArrayRef(values_.data(), D); }
  const std::array<int64_t, D> &array() const { return values_; }
  std::vector<int64_t> vec() const {
    return std::vector<int64_t>(values_.begin(), values_.end());
  }
  bool operator==(const ExpandingArray &o) const = default;

private:
  static void check(size_t n) {
    EMBER_CHECK_VALUE(n == D, "Expected ", D,
                      " values (one per spatial dimension), but got ", n,
                      "; pass one integer to use it for every dimension");
  }
  std::array<int64_t, D> values_{};
};

template <size_t D>
std::ostream &operator<<(std::ostream &os, const ExpandingArray<D> &a) {
  os << '[';
  for (size_t i = 0; i < D; ++i)
    os << (i ? ", " : "") << a[i];
  return os << ']';
}

/// Constructors of a loss options struct from its reduction, so that
/// `F::mse_loss(a, b, ember::kSum)` and `MSELossFuncOptions("sum")` work as
/// in libtorch. The struct declares `EMBER_ARG(Reduction, reduction);`.
#define EMBER_REDUCTION_CTORS(Options)                                         \
  Options(::ember::Reduction reduction = ::ember::kMean)                       \
      : reduction_(reduction) {}                                               \
  Options(::ember::enumtype::kNone r) : reduction_(r) {}                       \
  Options(::ember::enumtype::kMean r) : reduction_(r) {}                       \
  Options(::ember::enumtype::kSum r) : reduction_(r) {}                        \
  Options(const char *r) : reduction_(r) {}                                    \
  Options(std::string_view r) : reduction_(r) {}

namespace nn {

/// Padding of a D-dimensional convolution: explicit amounts (one integer for
/// every dimension or one per dimension) or the strategies ember::kValid (no
/// padding) and ember::kSame (output size = input size, stride 1 only), also
/// accepted as the strings "valid" and "same" (libtorch's padding_t).
template <size_t D> class ConvPadding {
public:
  enum Kind : uint8_t { Explicit, Valid, Same };
  // A template so that the literal 0 picks it, not the const char* form.
  template <std::integral I>
  ConvPadding(I single) : amounts_(int64_t(single)) {}
  ConvPadding(std::initializer_list<int64_t> list) : amounts_(list) {}
  ConvPadding(const ExpandingArray<D> &a) : amounts_(a) {}
  ConvPadding(const std::vector<int64_t> &v) : amounts_(v) {}
  ConvPadding(enumtype::kValid) : amounts_(0), kind_(Valid) {}
  ConvPadding(enumtype::kSame) : amounts_(0), kind_(Same) {}
  ConvPadding(std::string_view s) : amounts_(0), kind_(parse(s)) {}
  ConvPadding(const char *s) : ConvPadding(std::string_view(s)) {}

  Kind kind() const { return kind_; }
  bool is_valid() const { return kind_ == Valid; }
  bool is_same() const { return kind_ == Same; }
  /// The explicit amounts (zeros for kValid and kSame).
  const ExpandingArray<D> &amounts() const { return amounts_; }
  bool operator==(const ConvPadding &) const = default;

private:
  static Kind parse(std::string_view s) {
    EMBER_CHECK_VALUE(s == "valid" || s == "same", "Invalid padding string '",
                      s, "', should be one of {'valid', 'same'}");
    return s == "valid" ? Valid : Same;
  }
  ExpandingArray<D> amounts_;
  Kind kind_ = Explicit;
};

/// Mode of F::pad: ember::kConstant, kReflect, kReplicate, kCircular, or the
/// same names as strings (libtorch's PadFuncOptions::mode_t).
class PadMode {
public:
  enum Kind : uint8_t { Constant, Reflect, Replicate, Circular };
  constexpr PadMode(enumtype::kConstant) : kind_(Constant) {}
  constexpr PadMode(enumtype::kReflect) : kind_(Reflect) {}
  constexpr PadMode(enumtype::kReplicate) : kind_(Replicate) {}
  constexpr PadMode(enumtype::kCircular) : kind_(Circular) {}
  PadMode(std::string_view s) : kind_(parse(s)) {}
  PadMode(const char *s) : kind_(parse(s)) {}

  constexpr Kind kind() const { return kind_; }
  constexpr bool operator==(const PadMode &) const = default;
  std::string_view name() const {
    switch (kind_) {
    case Constant:
      return "constant";
    case Reflect:
      return "reflect";
    case Replicate:
      return "replicate";
    default:
      return "circular";
    }
  }

private:
  static Kind parse(std::string_view s) {
    if (s == "constant")
      return Constant;
    if (s == "reflect")
      return Reflect;
    if (s == "replicate")
      return Replicate;
    if (s == "circular")
      return Circular;
    throw NotImplementedError(detail::str(
        "Unsupported padding mode: ", s,
        "; expected 'constant', 'reflect', 'replicate' or 'circular'"));
  }
  Kind kind_;
};

} // namespace nn

} // namespace ember
