#pragma once
/// Scalar: a number of any dtype passed to ops (1, 2.5, true), as c10::Scalar.

#include "runtime/Error.h"
#include "runtime/ScalarType.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <type_traits>

namespace ember {

class Scalar;
std::ostream &operator<<(std::ostream &os, const Scalar &s);

class Scalar {
public:
  enum class Tag : int8_t { Double, Int, Bool };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }
  Scalar(float v) : Scalar(double(v)) {}
  Scalar(Half v) : Scalar(double(float(v))) {}
  Scalar(BFloat16 v) : Scalar(double(float(v))) {}
  Scalar(bool v) : tag_(Tag::Bool) { v_.i = v; }
  template <class I,
            std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>,
                             int> = 0>
  Scalar(I v) : tag_(Tag::Int) {
    v_.i = static_cast<int64_t>(v);
  }

  bool isFloatingPoint() const { return tag_ == Tag::Double; }
  bool isIntegral(bool includeBool) const {
    return tag_ == Tag::Int || (includeBool && tag_ == Tag::Bool);
  }
  bool isBoolean() const { return tag_ == Tag::Bool; }
  Tag tag() const { return tag_; }

  /// The dtype a Python number of this kind has: float64, int64 or bool.
  ScalarType type() const {
    return tag_ == Tag::Double ? kDouble : tag_ == Tag::Int ? kLong : kBool;
  }

  /// Converts to T (C++ conversion rules; floats to ints truncate; the
  /// value must fit T: checked_to() checks).
  template <class T> T to() const {
    if (tag_ == Tag::Double) {
      if constexpr (std::is_same_v<T, bool>)
        return v_.d != 0;
      else
        return static_cast<T>(v_.d);
    }
    if constexpr (std::is_same_v<T, bool>)
      return v_.i != 0;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return T(static_cast<float>(v_.i));
    else
      return static_cast<T>(v_.i);
  }
  /// Converts to T, raising when the value does not fit T (c10's
  /// checked_convert, used where PyTorch uses it: fill_, full, item()):
  /// an integer T takes the integers in its range -- an unsigned T also
  /// the negative integers down to -max, which wrap as two's complement --
  /// and the doubles in [lowest, max] (not NaN or inf); a floating T any double
  /// but a finite one beyond its largest value (inf and NaN pass); bool
  /// anything.
  template <class T> T checked_to() const {
    if constexpr (!std::is_same_v<T, bool>) {
      constexpr bool is_int = std::numeric_limits<T>::is_integer;
      double hi = std::is_same_v<T, Half> ? 65504.0
                  : std::is_same_v<T, BFloat16>
                      ? 3.3895313892515355e38
                      : double(std::numeric_limits<T>::max());
      bool fits;
      if (tag_ == Tag::Double) {
        double d = v_.d;
        if constexpr (is_int) {
          // As c10: a double must lie in [lowest, max] (0 for unsigned
          // types: -1.0 does not wrap, only the integer -1 does); for
          // int64, max rounds up to 2^63, which itself does not fit.
          double lo = std::is_unsigned_v<T>
                          ? 0.0
                          : double(std::numeric_limits<T>::lowest());
          fits = d >= lo && (sizeof(T) >= 8 ? d < hi : d <= hi); // NaN fails
        } else {
          fits = !std::isfinite(d) || std::fabs(d) <= hi;
        }
      } else if constexpr (is_int) {
        int64_t i = v_.i;
        if constexpr (std::is_unsigned_v<T>)
          fits =
              i >= -int64_t(std::numeric_limits<T>::max()) &&
              (i < 0 || uint64_t(i) <= uint64_t(std::numeric_limits<T>::max()));
        else
          fits = i >= int64_t(std::numeric_limits<T>::lowest()) &&
                 i <= int64_t(std::numeric_limits<T>::max());
      } else {
        fits = std::fabs(double(v_.i)) <= hi;
      }
      if (!fits)
        throw Error(detail::str("value ", *this,
                                " cannot be converted to type ",
                                toString(dtype_of<T>()), " without overflow"));
    }
    return to<T>();
  }
  double toDouble() const { return to<double>(); }
  float toFloat() const { return to<float>(); }
  int64_t toLong() const { return to<int64_t>(); }
  int toInt() const { return to<int>(); }
  bool toBool() const { return to<bool>(); }

  Scalar operator-() const {
    return tag_ == Tag::Double ? Scalar(-v_.d) : Scalar(-v_.i);
  }
  bool equal(double v) const {
    return tag_ == Tag::Double ? v_.d == v : double(v_.i) == v;
  }

private:
  Tag tag_;
  union {
    double d;
    int64_t i;
  } v_;
};

inline std::ostream &operator<<(std::ostream &os, const Scalar &s) {
  if (s.isFloatingPoint())
    return os << s.toDouble();
  if (s.isBoolean())
    return os << (s.toBool() ? "True" : "False");
  return os << s.toLong();
}

} // namespace ember
