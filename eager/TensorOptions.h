#pragma once
/// TensorOptions: dtype, device and requires_grad for factories, with the
/// libtorch helpers ember::dtype(), ember::device(), ember::requires_grad().

#include "runtime/Device.h"
#include "runtime/ScalarType.h"

#include <optional>

namespace ember {

enum class Layout : int8_t { Strided };
constexpr Layout kStrided = Layout::Strided;

/// Memory format for contiguous()/empty(): only the default row-major one.
enum class MemoryFormat : int8_t { Contiguous, Preserve };

class TensorOptions {
public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) { dtype_ = t; }
  TensorOptions(Device d) { device_ = d; }
  TensorOptions(DeviceType d) { device_ = Device(d); }
  TensorOptions(Layout) {}

  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions dtype(std::optional<ScalarType> t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  template <class T> TensorOptions dtype() const {
    return dtype(dtype_of<T>());
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions device(std::optional<Device> d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
  TensorOptions layout(Layout) const { return *this; }

  /// The dtype, or the default dtype when none was set.
  ScalarType dtype() const { return dtype_ ? *dtype_ : get_default_dtype(); }
  Device device() const { return device_ ? *device_ : Device(kCPU); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }

private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
template <class T> TensorOptions dtype() { return dtype(dtype_of<T>()); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) {
  return TensorOptions().requires_grad(r);
}
inline TensorOptions layout(Layout l) { return TensorOptions(l); }

} // namespace ember
