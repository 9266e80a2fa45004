#pragma once
/// The profiler core (like PyTorch's RecordFunction + the kineto CPU
/// collector): a global "is a profiler running" flag that every op call reads,
/// per-thread buffers of begin/end events with parent links, memory events
/// from the allocators, and the record_function RAII guard. The public API
/// (ember::profiler::profile, key_averages, tables, Chrome traces) is in
/// eager/profiler/Profiler.h.

#include "runtime/Device.h"

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#ifndef EMBER_LIKELY
#define EMBER_LIKELY(x) __builtin_expect(!!(x), 1)
#endif
#ifndef EMBER_UNLIKELY
#define EMBER_UNLIKELY(x) __builtin_expect(!!(x), 0)
#endif

namespace ember::profiler {

namespace detail {
/// True while a profiler session records (read on every op call).
extern std::atomic<bool> g_active;
class ThreadBuffer;
} // namespace detail

// Note [Profiler fast path]
// Every op call through the dispatcher, every record_function and every
// allocation asks active() first. With no profiler running that is one
// relaxed load of a global and a branch predicted not taken (~1 ns); all the
// recording machinery sits behind out-of-line, cold functions. A session
// flips the flag on start() and off on stop(); events that are in flight when
// it stops are closed at the stop time (Note [Stopping mid-scope]).

/// True while a profiler records events (on any thread).
inline bool active() noexcept {
  return detail::g_active.load(std::memory_order_relaxed);
}

/// What an event stands for, as PyTorch's at::RecordScope.
enum class RecordScope : uint8_t {
  /// An op called through the dispatcher ("ember::add").
  FUNCTION,
  /// A backward node run by the autograd engine; its row is named
  /// "autograd::engine::evaluate_function: <node name>", as in PyTorch.
  BACKWARD_FUNCTION,
  /// A user scope (record_function("my_scope")).
  USER_SCOPE,
};

/// RAII scope that appears as a row in the profiler's tables and as a slice
/// in its traces, like torch.profiler.record_function:
///
///   { ember::profiler::record_function guard("forward");  ...ops... }
///
/// Scopes nest with each other and with the ops run inside them (the ops'
/// time is part of the scope's CPU total, not of its self time). With no
/// profiler running a guard costs one flag test.
class record_function {
public:
  explicit record_function(std::string_view name,
                           RecordScope scope = RecordScope::USER_SCOPE) {
    if (EMBER_UNLIKELY(active()))
      begin(name, scope);
  }
  explicit record_function(const char *name,
                           RecordScope scope = RecordScope::USER_SCOPE)
      : record_function(std::string_view(name), scope) {}
  explicit record_function(const std::string &name,
                           RecordScope scope = RecordScope::USER_SCOPE)
      : record_function(std::string_view(name), scope) {}
  ~record_function() {
    if (EMBER_UNLIKELY(buf_ != nullptr))
      end();
  }
  record_function(const record_function &) = delete;
  record_function &operator=(const record_function &) = delete;

  /// True when this guard records an event (a profiler was running when it
  /// began).
  bool is_recording() const { return buf_ != nullptr; }
  /// True when the running profiler wants input shapes (record_shapes) and
  /// this guard records.
  bool needs_inputs() const { return buf_ != nullptr && needs_inputs_; }
  /// Appends one argument's shape and type to this event (call in argument
  /// order; non-tensor arguments pass an empty shape). `type` must be a
  /// string literal or otherwise live for the whole program.
  void record_input(std::span<const int64_t> shape, const char *type);

private:
  void begin(std::string_view name, RecordScope scope);
  void end();

  detail::ThreadBuffer *buf_ = nullptr;
  uint64_t session_ = 0;
  size_t index_ = 0;
  bool needs_inputs_ = false;
};

/// Records an allocation (bytes > 0) or a free (bytes < 0) for
/// profile_memory; allocators call it when active(). The totals are the
/// allocator's statistics right after the event.
void record_memory(const void *ptr, int64_t bytes, int64_t total_allocated,
                   int64_t total_reserved, Device device);

// ---------------------------------------------------------------------------
// Sessions: used by eager/profiler (the public API), not by user code.
// ---------------------------------------------------------------------------

struct RecordOptions {
  bool record_shapes = false;
  bool profile_memory = false;
  /// Record device work (ProfilerActivity::CUDA): the record_device scopes,
  /// timed on the device by the session's DeviceTimer.
  bool record_device = false;
};

// Note [Device activity]
// With ProfilerActivity::CUDA, each piece of work a thread submits to a
// device (a kernel launch, a copy, a cuBLAS call) is a record_device scope
// around the submission. The scope queues a mark on the stream before and
// after the work (CUDA events) and remembers the CPU event open on the
// thread, the op that launched it, as PyTorch's kineto correlates a kernel
// with its launching op. When the session stops, the timer reads each mark
// (waiting for the device) as a time on the session's clock: the CUDA timer
// takes one reference mark per device, recorded on an idle device at a known
// CPU time, and adds the device's elapsed time since it. The public profiler
// turns the records into kernel rows (device time) and gives each op the
// device time of the kernels it launched (eager/profiler/Profiler.cpp).

/// Times device work in stream order: the CUDA driver's events
/// (cuda::profiler_timer()), or a fake in tests.
class DeviceTimer {
public:
  virtual ~DeviceTimer() = default;
  /// A mark of the point `stream` of `device` has reached, queued on the
  /// stream now.
  virtual void *mark(Device device, uint64_t stream) = 0;
  /// When the device passed `mark`, on now_ns()'s clock (waits until it
  /// has), releasing the mark.
  virtual int64_t time_ns(void *mark) = 0;
  /// Releases a mark that will not be read.
  virtual void release(void *mark) = 0;
  /// The session ended: forget its reference points.
  virtual void reset() {}
};

/// Device work submitted while alive (a kernel, a copy, a library call) on
/// `stream` (the driver's handle) of `device`: a device event of the
/// running profiler when it records device activity (Note [Device
/// activity]); with no profiler running, one flag test.
class record_device {
public:
  record_device(std::string_view name, Device device, uint64_t stream) {
    if (EMBER_UNLIKELY(active()))
      begin(name, device, stream);
  }
  ~record_device() {
    if (EMBER_UNLIKELY(buf_ != nullptr))
      end();
  }
  record_device(const record_device &) = delete;
  record_device &operator=(const record_device &) = delete;

private:
  void begin(std::string_view name, Device device, uint64_t stream);
  void end();

  detail::ThreadBuffer *buf_ = nullptr;
  uint64_t session_ = 0;
  size_t index_ = 0;
  Device device_{kCUDA};
  uint64_t stream_ = 0;
};

/// One finished event. Events of one thread are in the order they began;
/// `parent` indexes Trace::events (-1 for a top-level event).
struct EventRecord {
  std::string name;
  RecordScope scope = RecordScope::FUNCTION;
  uint64_t thread = 0; // OS thread id
  int64_t start_ns = 0, end_ns = 0;
  int64_t parent = -1;
  int32_t depth = 0;
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<const char *> input_types;
  /// Bytes allocated minus bytes freed while this was the innermost event on
  /// its thread.
  int64_t self_memory = 0;
};

/// One allocation (bytes > 0) or free (bytes < 0).
struct MemoryRecord {
  int64_t ts_ns = 0;
  uint64_t thread = 0;
  uintptr_t addr = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0, total_reserved = 0;
  Device device{kCPU};
  /// The innermost event open on the thread (index into Trace::events), or
  /// -1 when the memory event happened outside every event.
  int64_t parent = -1;
};

/// One piece of device work (a record_device scope), with its device times.
struct DeviceRecord {
  std::string name;
  Device device{kCUDA};
  uint64_t stream = 0;
  uint64_t thread = 0; // the thread that submitted it
  int64_t start_ns = 0, end_ns = 0;
  /// The innermost event open on the submitting thread (index into
  /// Trace::events), or -1.
  int64_t parent = -1;
};

/// What a session recorded.
struct Trace {
  RecordOptions options;
  int64_t start_ns = 0, end_ns = 0;
  std::vector<EventRecord> events;
  std::vector<MemoryRecord> memory;
  std::vector<DeviceRecord> device;
};

/// Starts recording on every thread. Throws if a session is already running
/// (profilers do not nest). `timer` times device work when
/// options.record_device (without one, none is recorded).
void start_session(const RecordOptions &options, DeviceTimer *timer = nullptr);
/// Stops recording and returns what was recorded; events still open are
/// closed at the stop time.
Trace stop_session();
/// The steady clock the events use, in nanoseconds.
int64_t now_ns();

} // namespace ember::profiler
