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

/// What a session recorded.
struct Trace {
  RecordOptions options;
  int64_t start_ns = 0, end_ns = 0;
  std::vector<EventRecord> events;
  std::vector<MemoryRecord> memory;
};

/// Starts recording on every thread. Throws if a session is already running
/// (profilers do not nest).
void start_session(const RecordOptions &options);
/// Stops recording and returns what was recorded; events still open are
/// closed at the stop time.
Trace stop_session();
/// The steady clock the events use, in nanoseconds.
int64_t now_ns();

} // namespace ember::profiler
