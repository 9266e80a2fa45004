#pragma once
/// The profiler, as torch.profiler:
///
///   using namespace ember::profiler;
///   profile prof({ProfilerActivity::CPU}, /*record_shapes=*/true);
///   {
///     auto guard = prof.guard(); // or prof.start(); ... prof.stop();
///     record_function scope("model_inference");
///     model(x);
///   }
///   std::cout << prof.key_averages().table("self_cpu_time_total", 10);
///   prof.export_chrome_trace("trace.json"); // chrome://tracing, Perfetto
///
/// Every op called through the dispatcher is an event named "ember::<op>"
/// (PyTorch's "aten::<op>"); record_function scopes and the autograd engine's
/// backward nodes are events too. Events nest per thread: an event's self
/// time is its time minus its children's. With ProfilerActivity::CUDA, the
/// work each op submits to a GPU (kernels, copies, cuBLAS calls) is timed
/// on the device and shown as rows of its own and as the ops' CUDA columns
/// (Note [Device activity] in runtime/Profiler.h); without a GPU there is
/// no device work and the profile records the CPU only, as PyTorch's.

#include "runtime/Profiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::profiler {

/// What to record, as torch.profiler.ProfilerActivity.
enum class ProfilerActivity { CPU, CUDA };

/// One recorded event, as torch.autograd.profiler_util.FunctionEvent. Times
/// are in microseconds, memory in bytes.
struct FunctionEvent {
  int64_t id = 0;
  /// The row name: "ember::add", a record_function name, "[memory]".
  std::string name;
  RecordScope scope = RecordScope::FUNCTION;
  uint64_t thread = 0; // OS thread id
  double start_us = 0, end_us = 0;
  double cpu_time_total = 0;      // end - start
  double self_cpu_time_total = 0; // minus the children's cpu_time_total
  /// Shapes and dtypes of the arguments when record_shapes (an empty shape
  /// for a non-tensor argument).
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<std::string> input_types;
  /// Bytes allocated minus freed during the event (with its children) and
  /// directly in it (without them), when profile_memory.
  int64_t cpu_memory_usage = 0;
  int64_t self_cpu_memory_usage = 0;
  int64_t cpu_parent = -1; // id of the enclosing event on the same thread
  std::vector<int64_t> cpu_children;
  /// A "[memory]" row: an allocation or free outside every event.
  bool is_memory_event = false;
  /// Where the event ran: kCPU for ops and scopes; kCUDA for device work (a
  /// kernel, a copy, a cuBLAS call), whose times are the device's and whose
  /// `thread` is its stream (numbered in order of appearance).
  DeviceType device_type = kCPU;
  int device_index = -1;
  /// Device time (us): a device event's duration; for a CPU event, that of
  /// the device work it launched, with its children's (device_time_total)
  /// or without (self_device_time_total).
  double device_time_total = 0;
  double self_device_time_total = 0;
  /// A device event's launching CPU event (its id), or -1.
  int64_t launched_by = -1;
  const std::string &key() const { return name; }
  bool is_user_annotation() const { return scope == RecordScope::USER_SCOPE; }
};

/// Events of one key summed, as torch's FunctionEventAvg (one row of
/// key_averages()).
struct FunctionEventAvg {
  std::string key;
  RecordScope scope = RecordScope::FUNCTION;
  int64_t count = 0;
  double self_cpu_time_total = 0; // us
  double cpu_time_total = 0;      // us
  /// The shapes the row stands for when grouped by input shape, else empty.
  std::vector<std::vector<int64_t>> input_shapes;
  int64_t cpu_memory_usage = 0;      // bytes
  int64_t self_cpu_memory_usage = 0; // bytes
  DeviceType device_type = kCPU;
  double device_time_total = 0;      // us
  double self_device_time_total = 0; // us
  /// Whether the first event of the row had an enclosing event.
  bool has_cpu_parent = false;
  /// Average CPU time per call (us).
  double cpu_time() const { return count ? cpu_time_total / count : 0.0; }
  /// Average device time per call (us).
  double device_time() const { return count ? device_time_total / count : 0.0; }
  void add(const FunctionEvent &e);
};

/// The rows of key_averages(), as torch's EventList.
class EventList {
public:
  EventList() = default;
  EventList(std::vector<FunctionEventAvg> rows, bool profile_memory)
      : rows_(std::move(rows)), profile_memory_(profile_memory) {}

  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  const FunctionEventAvg &operator[](size_t i) const { return rows_.at(i); }
  auto begin() const { return rows_.begin(); }
  auto end() const { return rows_.end(); }
  /// The row named `key` (the first one when grouped by shape); throws
  /// when there is none.
  const FunctionEventAvg &find(const std::string &key) const;

  /// The sum of every row's self CPU time (us): the table's footer.
  double self_cpu_time_total() const;
  /// The sum of every row's self device time (us).
  double self_device_time_total() const;

  /// The table PyTorch prints for EventList.table(): rows sorted by
  /// `sort_by` in descending order ("" keeps first-seen order; keys:
  /// "cpu_time", "cpu_time_total", "self_cpu_time_total",
  /// "device_time", "device_time_total", "self_device_time_total" (or
  /// their older names "cuda_time", "cuda_time_total",
  /// "self_cuda_time_total"), "cpu_memory_usage", "self_cpu_memory_usage",
  /// "count"), at most `row_limit` rows (-1: all), names and shapes cut at
  /// the given widths (-1: no limit). "CUDA" columns appear when the
  /// profile recorded device time, "CPU Mem" columns when it recorded
  /// memory, "Input Shapes" when the rows are grouped by input shape.
  std::string table(const std::string &sort_by = "", int64_t row_limit = 100,
                    int64_t max_name_column_width = 55,
                    int64_t max_shapes_column_width = 80,
                    const std::string &header = "",
                    bool top_level_events_only = false) const;

private:
  std::vector<FunctionEventAvg> rows_;
  bool profile_memory_ = false;
};

namespace detail {
/// Replaces the timer of ProfilerActivity::CUDA (the CUDA driver's events)
/// for tests; null restores it. With a replacement, CUDA activity is
/// recorded even without a GPU.
void set_device_timer_for_testing(DeviceTimer *timer);
} // namespace detail

/// Options of a profile (torch.profiler.profile's arguments).
struct ProfileOptions {
  std::vector<ProfilerActivity> activities{ProfilerActivity::CPU};
  bool record_shapes = false;
  bool profile_memory = false;
};

/// A profiling session, as torch.profiler.profile. Start and stop it with
/// start()/stop() or with guard(); read the results once it stopped. Only
/// one profile records at a time.
class profile {
public:
  explicit profile(
      std::vector<ProfilerActivity> activities = {ProfilerActivity::CPU},
      bool record_shapes = false, bool profile_memory = false);
  explicit profile(const ProfileOptions &options);
  /// Stops the profiler if it still runs.
  ~profile();
  profile(const profile &) = delete;
  profile &operator=(const profile &) = delete;

  /// Starts recording (dropping the results of an earlier run).
  void start();
  /// Stops recording and collects the events.
  void stop();
  bool is_running() const { return running_; }

  /// Stops the profile when it goes out of scope.
  class Guard {
  public:
    explicit Guard(profile *p) : p_(p) {}
    Guard(Guard &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;
    Guard &operator=(Guard &&) = delete;
    ~Guard();

  private:
    profile *p_;
  };
  /// Starts the profile and returns a guard that stops it at scope end:
  /// `{ auto g = prof.guard(); ... }`.
  [[nodiscard]] Guard guard();

  /// Every event, ordered by start time.
  const std::vector<FunctionEvent> &events() const;
  /// Events grouped by name (and by input shapes when asked), as
  /// prof.key_averages(group_by_input_shape).
  EventList key_averages(bool group_by_input_shape = false) const;
  /// Writes the events as a Chrome trace-event JSON file that
  /// chrome://tracing and https://ui.perfetto.dev load.
  void export_chrome_trace(const std::string &path) const;
  /// The same JSON, as a string.
  std::string chrome_trace_json() const;

  const ProfileOptions &options() const { return options_; }

private:
  void checkFinished(const char *what) const;
  void buildEvents();

  ProfileOptions options_;
  bool running_ = false;
  bool finished_ = false; ///< a run has stopped: results to read
  Trace trace_;
  std::vector<FunctionEvent> events_;
};

} // namespace ember::profiler
