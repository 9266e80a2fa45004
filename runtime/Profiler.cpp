#include "runtime/Profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>

namespace ember::profiler {

namespace detail {
std::atomic<bool> g_active{false};

// Note [Per-thread event buffers]
// Each thread records into its own buffer, created on its first event of a
// session and registered with that session. A buffer has its own mutex: the
// owning thread takes it (uncontended) for every begin/end, and stop() takes
// it once to mark the buffer closed and move its events out. After that the
// thread's guards still hold a pointer to the buffer (kept alive by the
// thread-local shared_ptr), see it closed, and record nothing. A buffer
// belongs to one session; the next session gives the thread a new one, so a
// guard from an old session never touches a new session's events. Events
// live in deques: growing one never moves the events already recorded (a
// vector's regrowth tripled the cost of an event).
class ThreadBuffer {
public:
  ThreadBuffer(uint64_t session, const RecordOptions &options)
      : session(session), thread(uint64_t(::syscall(SYS_gettid))),
        options(options) {}
  std::mutex mu;
  const uint64_t session;
  const uint64_t thread;
  const RecordOptions options;
  bool closed = false;             // guarded by mu
  std::deque<EventRecord> events;  // guarded by mu; end_ns < 0 while open
  std::deque<MemoryRecord> memory; // guarded by mu
  std::vector<size_t> open;        // guarded by mu: indices of open events
  /// Device work and its marks (the end mark null while open), guarded by
  /// mu; timer: the session's, or null when it records no device work.
  struct Pending {
    DeviceRecord record;
    void *start = nullptr, *end = nullptr;
  };
  std::deque<Pending> device;
  DeviceTimer *timer = nullptr;
};
} // namespace detail

using detail::ThreadBuffer;

namespace {

struct Session {
  uint64_t id = 0;
  RecordOptions options;
  DeviceTimer *timer = nullptr;
  int64_t start_ns = 0;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

std::mutex g_mu; // guards g_session and g_next_id
std::unique_ptr<Session> g_session;
uint64_t g_next_id = 1;
/// The id of the running session, 0 when none (read without g_mu).
std::atomic<uint64_t> g_session_id{0};
thread_local std::shared_ptr<ThreadBuffer> t_buffer;

/// This thread's buffer for the running session, or null when none runs.
ThreadBuffer *currentBuffer() {
  uint64_t sid = g_session_id.load(std::memory_order_acquire);
  if (sid == 0)
    return nullptr;
  if (t_buffer && t_buffer->session == sid)
    return t_buffer.get();
  std::lock_guard<std::mutex> g(g_mu);
  if (!g_session || g_session->id != sid)
    return nullptr;
  auto b = std::make_shared<ThreadBuffer>(sid, g_session->options);
  b->timer = g_session->timer;
  g_session->buffers.push_back(b);
  t_buffer = std::move(b);
  return t_buffer.get();
}

constexpr std::string_view kBackwardPrefix =
    "autograd::engine::evaluate_function: ";

} // namespace

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_function::begin(std::string_view name, RecordScope scope) {
  ThreadBuffer *b = currentBuffer();
  if (!b)
    return;
  std::lock_guard<std::mutex> g(b->mu);
  if (b->closed)
    return;
  size_t index = b->events.size();
  EventRecord &e = b->events.emplace_back();
  if (scope == RecordScope::BACKWARD_FUNCTION) {
    e.name.reserve(kBackwardPrefix.size() + name.size());
    e.name.append(kBackwardPrefix).append(name);
  } else {
    e.name.assign(name);
  }
  e.scope = scope;
  e.thread = b->thread;
  e.parent = b->open.empty() ? -1 : int64_t(b->open.back());
  e.depth = int32_t(b->open.size());
  e.end_ns = -1;
  b->open.push_back(index);
  buf_ = b;
  session_ = b->session;
  index_ = index;
  needs_inputs_ = b->options.record_shapes;
  e.start_ns = now_ns(); // last: the bookkeeping is not part of the event
}

void record_function::end() {
  int64_t t = now_ns(); // first: the bookkeeping is not part of the event
  ThreadBuffer *b = buf_;
  buf_ = nullptr;
  // A guard ends on the thread it began on; when that thread's buffer is no
  // longer b, b's session is over and its events were taken.
  if (t_buffer.get() != b || b->session != session_)
    return;
  std::lock_guard<std::mutex> g(b->mu);
  if (b->closed)
    return;
  b->events[index_].end_ns = t;
  if (!b->open.empty() && b->open.back() == index_) {
    b->open.pop_back();
  } else { // guards destroyed out of order (not scoped): drop ours only
    auto it = std::find(b->open.begin(), b->open.end(), index_);
    if (it != b->open.end())
      b->open.erase(it);
  }
}

void record_function::record_input(std::span<const int64_t> shape,
                                   const char *type) {
  ThreadBuffer *b = buf_;
  if (!b || t_buffer.get() != b || b->session != session_)
    return;
  std::lock_guard<std::mutex> g(b->mu);
  if (b->closed)
    return;
  EventRecord &e = b->events[index_];
  e.input_shapes.emplace_back(shape.begin(), shape.end());
  e.input_types.push_back(type);
}

void record_memory(const void *ptr, int64_t bytes, int64_t total_allocated,
                   int64_t total_reserved, Device device) {
  ThreadBuffer *b = currentBuffer();
  if (!b || !b->options.profile_memory)
    return;
  int64_t t = now_ns();
  std::lock_guard<std::mutex> g(b->mu);
  if (b->closed)
    return;
  MemoryRecord &m = b->memory.emplace_back();
  m.ts_ns = t;
  m.thread = b->thread;
  m.addr = reinterpret_cast<uintptr_t>(ptr);
  m.bytes = bytes;
  m.total_allocated = total_allocated;
  m.total_reserved = total_reserved;
  m.device = device;
  m.parent = b->open.empty() ? -1 : int64_t(b->open.back());
  if (m.parent >= 0)
    b->events[size_t(m.parent)].self_memory += bytes;
}

void record_device::begin(std::string_view name, Device device,
                          uint64_t stream) {
  ThreadBuffer *b = currentBuffer();
  if (!b || !b->timer)
    return;
  void *start = b->timer->mark(device, stream);
  std::unique_lock<std::mutex> g(b->mu);
  if (b->closed) {
    g.unlock();
    b->timer->release(start);
    return;
  }
  size_t index = b->device.size();
  ThreadBuffer::Pending &p = b->device.emplace_back();
  p.record.name.assign(name);
  p.record.device = device;
  p.record.stream = stream;
  p.record.thread = b->thread;
  p.record.parent = b->open.empty() ? -1 : int64_t(b->open.back());
  p.start = start;
  buf_ = b;
  session_ = b->session;
  index_ = index;
  device_ = device;
  stream_ = stream;
}

void record_device::end() {
  ThreadBuffer *b = buf_;
  buf_ = nullptr;
  if (t_buffer.get() != b || b->session != session_)
    return;
  void *end = b->timer->mark(device_, stream_);
  std::unique_lock<std::mutex> g(b->mu);
  if (b->closed) {
    g.unlock();
    b->timer->release(end);
    return;
  }
  b->device[index_].end = end;
}

void start_session(const RecordOptions &options, DeviceTimer *timer) {
  std::lock_guard<std::mutex> g(g_mu);
  EMBER_CHECK(!g_session,
              "ember::profiler: a profiler is already running; profilers do "
              "not nest. Stop the running one (profile::stop(), or let its "
              "guard go out of scope) before starting another.");
  auto s = std::make_unique<Session>();
  s->id = g_next_id++;
  s->options = options;
  s->timer = options.record_device ? timer : nullptr;
  s->start_ns = now_ns();
  g_session_id.store(s->id, std::memory_order_release);
  g_session = std::move(s);
  detail::g_active.store(true, std::memory_order_release);
}

// Note [Stopping mid-scope]
// A profiler may stop while scopes (record_function guards, ops) are still
// open on some thread, e.g. prof.stop() called inside a user scope. Those
// events are kept and end at the stop time, so their children stay nested
// inside them; the guards, when they finally end, find their buffer closed
// and do nothing.
Trace stop_session() {
  std::unique_ptr<Session> s;
  {
    std::lock_guard<std::mutex> g(g_mu);
    EMBER_CHECK(g_session, "ember::profiler: no profiler is running");
    detail::g_active.store(false, std::memory_order_release);
    g_session_id.store(0, std::memory_order_release);
    s = std::move(g_session);
  }
  Trace tr;
  tr.options = s->options;
  tr.start_ns = s->start_ns;
  tr.end_ns = now_ns();
  for (auto &b : s->buffers) {
    std::lock_guard<std::mutex> g(b->mu);
    b->closed = true;
    for (size_t i : b->open)
      b->events[i].end_ns = std::max(tr.end_ns, b->events[i].start_ns);
    b->open.clear();
    int64_t offset = int64_t(tr.events.size());
    for (EventRecord &e : b->events) {
      if (e.parent >= 0)
        e.parent += offset;
      tr.end_ns = std::max(tr.end_ns, e.end_ns);
      tr.events.push_back(std::move(e));
    }
    for (MemoryRecord &m : b->memory) {
      if (m.parent >= 0)
        m.parent += offset;
      tr.memory.push_back(m);
    }
    for (ThreadBuffer::Pending &p : b->device) {
      DeviceRecord &r = p.record;
      if (r.parent >= 0)
        r.parent += offset;
      r.start_ns = s->timer->time_ns(p.start);
      // (a scope still open at the stop: its work so far, marked now)
      r.end_ns =
          s->timer->time_ns(p.end ? p.end : s->timer->mark(r.device, r.stream));
      r.end_ns = std::max(r.end_ns, r.start_ns);
      tr.device.push_back(std::move(r));
    }
    b->events.clear();
    b->memory.clear();
    b->device.clear();
  }
  if (s->timer)
    s->timer->reset();
  return tr;
}

} // namespace ember::profiler
