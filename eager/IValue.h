#pragma once
/// IValue: one boxed value on a dispatcher stack (op arguments and results),
/// as c10::IValue. Modes, custom ops and the capture layer see every op through
/// this one interface.

#include "eager/Tensor.h"

#include <string>
#include <variant>
#include <vector>

namespace ember {

class IValue {
public:
  using Payload = std::variant<std::monostate, Tensor, int64_t, double, bool,
                               std::vector<int64_t>, std::vector<double>,
                               std::vector<Tensor>, std::string, ScalarType,
                               Device, Generator>;

  IValue() = default;
  IValue(std::nullopt_t) {}
  IValue(Tensor t) : v_(std::move(t)) {}
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t(i)) {}
  IValue(double d) : v_(d) {}
  IValue(bool b) : v_(b) {}
  IValue(const Scalar &s) {
    if (s.isFloatingPoint())
      v_ = s.toDouble();
    else if (s.isBoolean())
      v_ = s.toBool();
    else
      v_ = s.toLong();
  }
  IValue(IntArrayRef a) : v_(a.vec()) {}
  IValue(std::vector<int64_t> a) : v_(std::move(a)) {}
  IValue(std::vector<double> a) : v_(std::move(a)) {}
  IValue(TensorList l) : v_(l.vec()) {}
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(std::string_view s) : v_(std::string(s)) {}
  IValue(const char *s) : v_(std::string(s)) {}
  IValue(ScalarType t) : v_(t) {}
  IValue(Device d) : v_(d) {}
  IValue(Generator g) : v_(std::move(g)) {}
  IValue(const OptionalIntArrayRef &o) {
    if (o)
      v_ = o->vec();
  }
  template <class T> IValue(const std::optional<T> &o) {
    if (o)
      *this = IValue(*o);
  }

  bool isNone() const { return v_.index() == 0; }
  bool isTensor() const { return std::holds_alternative<Tensor>(v_); }
  bool isInt() const { return std::holds_alternative<int64_t>(v_); }
  bool isDouble() const { return std::holds_alternative<double>(v_); }
  bool isBool() const { return std::holds_alternative<bool>(v_); }
  bool isScalar() const { return isInt() || isDouble() || isBool(); }
  bool isIntList() const {
    return std::holds_alternative<std::vector<int64_t>>(v_);
  }
  bool isDoubleList() const {
    return std::holds_alternative<std::vector<double>>(v_);
  }
  bool isTensorList() const {
    return std::holds_alternative<std::vector<Tensor>>(v_);
  }
  bool isString() const { return std::holds_alternative<std::string>(v_); }
  bool isScalarType() const { return std::holds_alternative<ScalarType>(v_); }
  bool isDevice() const { return std::holds_alternative<Device>(v_); }
  bool isGenerator() const { return std::holds_alternative<Generator>(v_); }

  const Tensor &toTensor() const { return get<Tensor>("Tensor"); }
  Tensor &toTensor() { return std::get<Tensor>(v_); }
  int64_t toInt() const {
    if (isBool())
      return std::get<bool>(v_);
    return get<int64_t>("int");
  }
  double toDouble() const {
    if (isInt())
      return double(std::get<int64_t>(v_));
    return get<double>("float");
  }
  bool toBool() const { return get<bool>("bool"); }
  Scalar toScalar() const {
    if (isDouble())
      return std::get<double>(v_);
    if (isBool())
      return std::get<bool>(v_);
    return get<int64_t>("Scalar");
  }
  IntArrayRef toIntList() const { return get<std::vector<int64_t>>("int[]"); }
  const std::vector<double> &toDoubleList() const {
    return get<std::vector<double>>("float[]");
  }
  const std::vector<Tensor> &toTensorList() const {
    return get<std::vector<Tensor>>("Tensor[]");
  }
  const std::string &toStringRef() const { return get<std::string>("str"); }
  ScalarType toScalarType() const { return get<ScalarType>("ScalarType"); }
  Device toDevice() const { return get<Device>("Device"); }
  const Generator &toGenerator() const { return get<Generator>("Generator"); }

  /// "Tensor", "int", "None", ...: the schema type of the payload.
  const char *tagName() const;
  const Payload &payload() const { return v_; }

private:
  template <class T> const T &get(const char *what) const {
    const T *p = std::get_if<T>(&v_);
    EMBER_CHECK_TYPE(p, "expected a boxed value of type ", what, " but got ",
                     tagName());
    return *p;
  }
  Payload v_;
};

using Stack = std::vector<IValue>;

std::ostream &operator<<(std::ostream &os, const IValue &v);

} // namespace ember
