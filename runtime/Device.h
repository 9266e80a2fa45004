#pragma once
/// Device: where a tensor's memory lives.

#include "runtime/Error.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace ember {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

/// A device and its index: Device(kCPU), Device(kCUDA, 0), Device("cuda:1").
struct Device {
  DeviceType type_ = kCPU;
  int8_t index_ = -1;

  Device(DeviceType t, int index = -1) : type_(t), index_(int8_t(index)) {
    EMBER_CHECK(index >= -1 && index < 64, "Device index must be -1 or in ",
                "[0, 64), got ", index);
    EMBER_CHECK(t != kCPU || index <= 0,
                "CPU device index must be -1 or 0, got ", index);
  }
  /// Parses "cpu", "cuda", "cuda:1".
  Device(const std::string &s);
  Device(const char *s) : Device(std::string(s)) {}

  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  std::string str() const;
  bool operator==(const Device &o) const {
    return type_ == o.type_ && index_ == o.index_;
  }
  bool operator!=(const Device &o) const { return !(*this == o); }
};

inline const char *toString(DeviceType t) { return t == kCPU ? "cpu" : "cuda"; }
inline std::ostream &operator<<(std::ostream &os, DeviceType t) {
  return os << toString(t);
}
inline std::ostream &operator<<(std::ostream &os, const Device &d) {
  return os << d.str();
}

} // namespace ember
