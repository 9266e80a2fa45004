#pragma once
/// CUDA devices, streams and events (torch.cuda / c10::cuda). The driver
/// (libcuda.so.1) is loaded at run time, so one build runs with or without a
/// GPU (DESIGN.md, Devices); without one, is_available() is false and every
/// other function raises ember::Error saying so.

#include "runtime/Device.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::profiler {
class DeviceTimer;
} // namespace ember::profiler

namespace ember::cuda {

/// The timer of CUDA work for the profiler (ProfilerActivity::CUDA): driver
/// events (Note [Device activity] in runtime/Profiler.h).
profiler::DeviceTimer *profiler_timer();

/// True when the CUDA driver loads and reports at least one device.
bool is_available();
/// Number of CUDA devices (0 without a driver).
int device_count();
/// This thread's current device (0 until set_device).
int current_device();
/// Makes `device` this thread's current device.
void set_device(int device);
/// Waits for all work on `device` (-1: the current one).
void synchronize(int device = -1);

/// Whether float32 matrix products on CUDA may round their inputs to TF32
/// on tensor cores (torch.backends.cuda.matmul.allow_tf32; libtorch's
/// at::globalContext().setAllowTF32CuBLAS). Off by default, as PyTorch's:
/// float32 products then keep float32's precision (Note [cuBLAS
/// precision]). Process-wide; read at each product, so it also applies to
/// compiled programs already built.
void set_allow_tf32(bool allow);
bool allow_tf32();

struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0; ///< compute capability
  int multi_processor_count = 0;
  size_t total_memory = 0;
};
DeviceProperties get_device_properties(int device = -1);
std::string get_device_name(int device = -1);

/// Resolves -1 to the current device and checks the index, raising
/// ember::Error when CUDA is unavailable or the index is out of range.
int checked_device(int device, const char *fn);

/// A stream of a device (c10::cuda::CUDAStream). The default stream is the
/// driver's legacy null stream; pool streams never block on it.
class CUDAStream {
public:
  CUDAStream(int device, void *handle) : device_(device), handle_(handle) {}
  Device device() const { return Device(kCUDA, device_); }
  int device_index() const { return device_; }
  /// The driver's CUstream (null for the default stream).
  void *stream() const { return handle_; }
  /// A number naming the stream (the caching allocator's stream key).
  int64_t id() const { return int64_t(reinterpret_cast<intptr_t>(handle_)); }
  /// True when all work queued on the stream has finished.
  bool query() const;
  void synchronize() const;
  bool operator==(const CUDAStream &o) const {
    return device_ == o.device_ && handle_ == o.handle_;
  }
  bool operator!=(const CUDAStream &o) const { return !(*this == o); }

private:
  int device_;
  void *handle_;
};

/// The stream kernels of `device` (-1: current) are queued on, on this
/// thread: the default stream unless set.
CUDAStream getCurrentCUDAStream(int device = -1);
CUDAStream getDefaultCUDAStream(int device = -1);
/// One of 32 streams per device and priority, handed out round-robin
/// (created on first use, never destroyed, as c10's pools).
CUDAStream getStreamFromPool(bool isHighPriority = false, int device = -1);
/// Makes `s` the current stream of its device on this thread.
void setCurrentCUDAStream(CUDAStream s);

/// Sets the current device for a scope (c10::cuda::CUDAGuard).
class CUDAGuard {
public:
  explicit CUDAGuard(int device);
  explicit CUDAGuard(Device device);
  ~CUDAGuard();
  CUDAGuard(const CUDAGuard &) = delete;
  CUDAGuard &operator=(const CUDAGuard &) = delete;

private:
  int prev_;
};

/// Sets the current stream of `s`'s device, and the current device, for a
/// scope (c10::cuda::CUDAStreamGuard).
class CUDAStreamGuard {
public:
  explicit CUDAStreamGuard(CUDAStream s);
  ~CUDAStreamGuard();
  CUDAStreamGuard(const CUDAStreamGuard &) = delete;
  CUDAStreamGuard &operator=(const CUDAStreamGuard &) = delete;

private:
  CUDAStream prev_stream_;
  int prev_device_;
};

/// A CUDA event (at::cuda::CUDAEvent, torch.cuda.Event): created on first
/// record, on the recording stream's device.
class CUDAEvent {
public:
  explicit CUDAEvent(bool enable_timing = false)
      : enable_timing_(enable_timing) {}
  ~CUDAEvent();
  CUDAEvent(const CUDAEvent &) = delete;
  CUDAEvent &operator=(const CUDAEvent &) = delete;
  CUDAEvent(CUDAEvent &&o) noexcept;
  CUDAEvent &operator=(CUDAEvent &&o) noexcept;

  /// Records the event on `stream`'s queue now.
  void record(const CUDAStream &stream);
  /// Records on the current stream of the current device.
  void record();
  /// Makes `stream` wait (on the device) until the event has completed.
  void block(const CUDAStream &stream) const;
  /// True when the work recorded before the event has finished (an event
  /// never recorded has).
  bool query() const;
  /// Waits on the host until the event has completed.
  void synchronize() const;
  /// Milliseconds between this event and `end`; both need enable_timing
  /// and must have been recorded and completed.
  float elapsed_time(const CUDAEvent &end) const;
  bool isCreated() const { return handle_ != nullptr; }

private:
  bool enable_timing_;
  int device_ = -1;
  void *handle_ = nullptr;
};
using Event = CUDAEvent;

} // namespace ember::cuda

namespace ember {

/// torch.set_float32_matmul_precision: "highest" (float32 products in full
/// float32, the default) or "high" / "medium" (CUDA products may use TF32:
/// cuda::set_allow_tf32(true)). Anything else raises ember::Error. CPU
/// products are always full float32.
void set_float32_matmul_precision(const std::string &precision);
/// The last precision set ("highest" by default); cuda::set_allow_tf32(true)
/// makes "highest" "high", and (false) makes any "highest", as PyTorch's
/// allow_tf32 flag does.
std::string get_float32_matmul_precision();

} // namespace ember
