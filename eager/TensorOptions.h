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
  TensorOptions(ScalarType t) : dtype_(t), has_dtype_(true) {}
  TensorOptions(Device d) : device_(d), has_device_(true) {}
  TensorOptions(DeviceType d) : device_(d), has_device_(true) {}
  TensorOptions(Layout) {}

  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    o.has_dtype_ = true;
    return o;
  }
  TensorOptions dtype(std::optional<ScalarType> t) const {
    auto o = *this;
    o.has_dtype_ = t.has_value();
    o.dtype_ = t.value_or(ScalarType::Undefined);
    return o;
  }
  template <class T> TensorOptions dtype() const {
    return dtype(dtype_of<T>());
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    o.has_device_ = true;
    return o;
  }
  /// device(kCUDA), device(kCUDA, 1), device("cuda:1"): libtorch's
  /// spellings.
  TensorOptions device(DeviceType t, int index = -1) const {
    return device(Device(t, index));
  }
  TensorOptions device(const char *d) const { return device(Device(d)); }
  TensorOptions device(const std::string &d) const { return device(Device(d)); }
  TensorOptions device(std::optional<Device> d) const {
    auto o = *this;
    o.has_device_ = d.has_value();
    o.device_ = d.value_or(Device(kCPU));
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
  TensorOptions layout(Layout) const { return *this; }

  /// The dtype, or the default dtype when none was set.
  ScalarType dtype() const { return has_dtype_ ? dtype_ : get_default_dtype(); }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return has_dtype_; }
  bool has_device() const { return has_device_; }
  std::optional<ScalarType> dtype_opt() const {
    return has_dtype_ ? std::optional<ScalarType>(dtype_) : std::nullopt;
  }
  std::optional<Device> device_opt() const {
    return has_device_ ? std::optional<Device>(device_) : std::nullopt;
  }

private:
  // Plain members and flags rather than std::optional: GCC 12 reports
  // optional<Device> copies as -Wmaybe-uninitialized once inlined (a false
  // positive), dozens of times a build.
  ScalarType dtype_ = ScalarType::Undefined;
  Device device_{kCPU};
  bool has_dtype_ = false;
  bool has_device_ = false;
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
