#include "eager/profiler/Profiler.h"

#include "runtime/Cuda.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

namespace ember::profiler {

namespace {

// --- formats, as torch.autograd.profiler_util --------------------------------

std::string formatTime(double us) {
  char buf[64];
  if (us >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

std::string formatTimeShare(double us, double total_us) {
  if (total_us == 0)
    return "NaN";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%%", us * 100.0 / total_us);
  return buf;
}

std::string formatMemory(int64_t nbytes) {
  constexpr double KB = 1024, MB = 1024 * KB, GB = 1024 * MB;
  double a = std::abs(double(nbytes));
  char buf[64];
  if (a >= GB)
    std::snprintf(buf, sizeof buf, "%.2f Gb", double(nbytes) / GB);
  else if (a >= MB)
    std::snprintf(buf, sizeof buf, "%.2f Mb", double(nbytes) / MB);
  else if (a >= KB)
    std::snprintf(buf, sizeof buf, "%.2f Kb", double(nbytes) / KB);
  else
    return std::to_string(nbytes) + " b";
  return buf;
}

/// Python's str() of a list of lists of ints: "[[2, 3], []]".
std::string shapesString(const std::vector<std::vector<int64_t>> &shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i)
      s += ", ";
    s += "[";
    for (size_t j = 0; j < shapes[i].size(); ++j) {
      if (j)
        s += ", ";
      s += std::to_string(shapes[i][j]);
    }
    s += "]";
  }
  return s + "]";
}

// --- sort keys
// -----------------------------------------------------------------

using SortKey = double (*)(const FunctionEventAvg &);
struct NamedSortKey {
  const char *name;
  SortKey get;
};
const NamedSortKey kSortKeys[] = {
    {"cpu_time", [](const FunctionEventAvg &r) { return r.cpu_time(); }},
    {"cpu_time_total",
     [](const FunctionEventAvg &r) { return r.cpu_time_total; }},
    {"self_cpu_time_total",
     [](const FunctionEventAvg &r) { return r.self_cpu_time_total; }},
    {"device_time", [](const FunctionEventAvg &r) { return r.device_time(); }},
    {"device_time_total",
     [](const FunctionEventAvg &r) { return r.device_time_total; }},
    {"self_device_time_total",
     [](const FunctionEventAvg &r) { return r.self_device_time_total; }},
    {"cuda_time", [](const FunctionEventAvg &r) { return r.device_time(); }},
    {"cuda_time_total",
     [](const FunctionEventAvg &r) { return r.device_time_total; }},
    {"self_cuda_time_total",
     [](const FunctionEventAvg &r) { return r.self_device_time_total; }},
    {"cpu_memory_usage",
     [](const FunctionEventAvg &r) { return double(r.cpu_memory_usage); }},
    {"self_cpu_memory_usage",
     [](const FunctionEventAvg &r) { return double(r.self_cpu_memory_usage); }},
    {"count", [](const FunctionEventAvg &r) { return double(r.count); }},
};

SortKey sortKey(const std::string &name) {
  std::string valid;
  for (const NamedSortKey &k : kSortKeys) {
    if (name == k.name)
      return k.get;
    valid += std::string(valid.empty() ? "" : ", ") + k.name;
  }
  throw ValueError("table(sort_by='" + name +
                   "'): unknown sort key; valid keys are " + valid +
                   " (or an empty string to keep the order of first "
                   "appearance)");
}

// --- JSON
// ----------------------------------------------------------------------

/// Appends `s` as a JSON string literal. Bytes that are not valid UTF-8
/// become U+FFFD, so the file always parses.
void jsonString(std::string &out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
      }
      ++i;
      continue;
    }
    // A multi-byte UTF-8 sequence: check the lead byte, the continuation
    // bytes, overlong forms, surrogates and the U+10FFFF limit.
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    bool ok =
        len != 0 && c <= 0xF4 && c != 0xC0 && c != 0xC1 && i + len <= s.size();
    uint32_t cp = len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok)
      ok = !(len == 3 && cp < 0x800) && !(len == 4 && cp < 0x10000) &&
           !(cp >= 0xD800 && cp <= 0xDFFF) && cp <= 0x10FFFF;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

void jsonNumber(std::string &out, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  out += buf;
}

const char *categoryOf(const FunctionEvent &e) {
  if (e.device_type != kCPU)
    return e.name.rfind("Memcpy", 0) == 0 ? "gpu_memcpy" : "kernel";
  return e.scope == RecordScope::USER_SCOPE ? "user_annotation" : "cpu_op";
}

DeviceTimer *g_test_timer = nullptr;

} // namespace

// ---------------------------------------------------------------------------
// FunctionEventAvg / EventList
// ---------------------------------------------------------------------------

void FunctionEventAvg::add(const FunctionEvent &e) {
  if (count == 0) {
    key = e.name;
    scope = e.scope;
    input_shapes = e.input_shapes;
    has_cpu_parent = e.cpu_parent >= 0;
  }
  if (count == 0)
    device_type = e.device_type;
  count += 1;
  device_time_total += e.device_time_total;
  self_device_time_total += e.self_device_time_total;
  self_cpu_time_total += e.self_cpu_time_total;
  cpu_time_total += e.cpu_time_total;
  cpu_memory_usage += e.cpu_memory_usage;
  self_cpu_memory_usage += e.self_cpu_memory_usage;
}

const FunctionEventAvg &EventList::find(const std::string &key) const {
  for (const FunctionEventAvg &r : rows_)
    if (r.key == key)
      return r;
  std::string names;
  for (const FunctionEventAvg &r : rows_)
    names += (names.empty() ? "" : ", ") + r.key;
  throw ValueError("EventList::find: no row named '" + key + "'; rows: [" +
                   names + "]");
}

double EventList::self_cpu_time_total() const {
  double s = 0;
  for (const FunctionEventAvg &r : rows_)
    s += r.self_cpu_time_total;
  return s;
}

double EventList::self_device_time_total() const {
  double s = 0;
  for (const FunctionEventAvg &r : rows_)
    s += r.self_device_time_total;
  return s;
}

// Note [Profiler table layout]
// The table reproduces torch.autograd.profiler_util._build_table: columns
// right-aligned and separated by two spaces (also after the last one), the
// name column as wide as the longest name plus 4 (at most
// max_name_column_width, longer names cut with "..."), the others 12 wide,
// dashed separator lines, percentages of the summed self CPU time with two
// decimals, times with three decimals in us/ms/s, memory in b/Kb/Mb/Gb, and
// the footer "Self CPU time total: ...". A table made from a PyTorch run and
// one made from ember line up column for column.
std::string EventList::table(const std::string &sort_by, int64_t row_limit,
                             int64_t max_name_column_width,
                             int64_t max_shapes_column_width,
                             const std::string &header,
                             bool top_level_events_only) const {
  std::vector<FunctionEventAvg> rows = rows_;
  if (!sort_by.empty()) {
    SortKey get = sortKey(sort_by);
    std::stable_sort(rows.begin(), rows.end(),
                     [&](const FunctionEventAvg &a, const FunctionEventAvg &b) {
                       return get(a) > get(b);
                     });
  }
  if (rows.empty())
    return "";

  size_t nameWidth = 0, shapesWidth = 0;
  bool hasShapes = false;
  for (const FunctionEventAvg &r : rows) {
    nameWidth = std::max(nameWidth, r.key.size() + 4);
    shapesWidth =
        std::max(shapesWidth, shapesString(r.input_shapes).size() + 4);
    hasShapes = hasShapes || !r.input_shapes.empty();
  }
  if (max_name_column_width >= 0)
    nameWidth = std::min(nameWidth, size_t(max_name_column_width));
  if (max_shapes_column_width >= 0)
    shapesWidth = std::min(shapesWidth, size_t(max_shapes_column_width));

  bool hasDevice = false;
  for (const FunctionEventAvg &r : rows)
    hasDevice = hasDevice || r.device_time_total > 0;

  constexpr size_t kColumnWidth = 12, kSpacing = 2;
  std::vector<std::string> headers = {"Name",      "Self CPU %",
                                      "Self CPU",  "CPU total %",
                                      "CPU total", "CPU time avg"};
  if (hasDevice)
    for (const char *h :
         {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"})
      headers.push_back(h);
  if (profile_memory_) {
    headers.push_back("CPU Mem");
    headers.push_back("Self CPU Mem");
  }
  headers.push_back("# of Calls");
  std::vector<size_t> widths(headers.size(), kColumnWidth);
  widths[0] = nameWidth;
  if (hasShapes) {
    headers.push_back("Input Shapes");
    widths.push_back(shapesWidth);
  }

  auto formatRow = [&](const std::vector<std::string> &values) {
    std::string line;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].size() < widths[i])
        line.append(widths[i] - values[i].size(), ' ');
      line += values[i];
      line.append(kSpacing, ' ');
    }
    return line + "\n";
  };
  std::string sep;
  size_t lineLength = 0;
  for (size_t w : widths) {
    sep += std::string(w, '-') + std::string(kSpacing, ' ');
    lineLength += w + kSpacing;
  }
  sep += "\n";
  lineLength -= kSpacing;

  double sumSelf = 0, sumSelfDevice = 0;
  for (const FunctionEventAvg &r : rows) {
    sumSelf += r.self_cpu_time_total;
    sumSelfDevice += r.self_device_time_total;
  }

  std::string out;
  if (!header.empty())
    out += std::string(lineLength, '=') + "\n" + header + "\n";
  if (top_level_events_only)
    out += std::string(lineLength, '=') +
           "\nThis report only display top-level ops statistics\n";
  out += sep + formatRow(headers) + sep;

  int64_t shown = 0;
  for (const FunctionEventAvg &r : rows) {
    if (shown == row_limit)
      break;
    if (top_level_events_only && r.has_cpu_parent)
      continue;
    ++shown;
    std::string name = r.key;
    if (max_name_column_width >= 0 &&
        int64_t(name.size()) >= max_name_column_width - 3)
      name = name.substr(
                 0, size_t(std::max<int64_t>(0, max_name_column_width - 3))) +
             "...";
    std::vector<std::string> values = {
        name,
        formatTimeShare(r.self_cpu_time_total, sumSelf),
        formatTime(r.self_cpu_time_total),
        formatTimeShare(r.cpu_time_total, sumSelf),
        formatTime(r.cpu_time_total),
        formatTime(r.cpu_time()),
    };
    if (hasDevice) {
      values.push_back(formatTime(r.self_device_time_total));
      values.push_back(
          formatTimeShare(r.self_device_time_total, sumSelfDevice));
      values.push_back(formatTime(r.device_time_total));
      values.push_back(formatTime(r.device_time()));
    }
    if (profile_memory_) {
      values.push_back(formatMemory(r.cpu_memory_usage));
      values.push_back(formatMemory(r.self_cpu_memory_usage));
    }
    values.push_back(std::to_string(r.count));
    if (hasShapes)
      values.push_back(shapesString(r.input_shapes).substr(0, shapesWidth));
    out += formatRow(values);
  }
  out += sep;
  out += "Self CPU time total: " + formatTime(sumSelf) + "\n";
  if (hasDevice)
    out += "Self CUDA time total: " + formatTime(sumSelfDevice) + "\n";
  return out;
}

// ---------------------------------------------------------------------------
// profile
// ---------------------------------------------------------------------------

profile::profile(std::vector<ProfilerActivity> activities, bool record_shapes,
                 bool profile_memory)
    : profile(ProfileOptions{std::move(activities), record_shapes,
                             profile_memory}) {}

profile::profile(const ProfileOptions &options) : options_(options) {
  if (options_.activities.empty())
    options_.activities = {ProfilerActivity::CPU};
}

void detail::set_device_timer_for_testing(DeviceTimer *timer) {
  g_test_timer = timer;
}

profile::~profile() {
  if (running_) {
    try {
      stop();
    } catch (...) { // a destructor must not throw; the session is gone anyway
    }
  }
}

void profile::start() {
  EMBER_CHECK(!running_, "ember::profiler::profile::start: this profile is "
                         "already running");
  RecordOptions ro;
  ro.record_shapes = options_.record_shapes;
  ro.profile_memory = options_.profile_memory;
  // CUDA activity: the device work of the session, timed on the device
  // (Note [Device activity]); without a GPU there is none to record.
  DeviceTimer *timer = nullptr;
  if (std::find(options_.activities.begin(), options_.activities.end(),
                ProfilerActivity::CUDA) != options_.activities.end())
    timer = g_test_timer           ? g_test_timer
            : cuda::is_available() ? cuda::profiler_timer()
                                   : nullptr;
  ro.record_device = timer != nullptr;
  start_session(ro, timer);
  running_ = true;
  finished_ = false;
  trace_ = Trace();
  events_.clear();
}

void profile::stop() {
  EMBER_CHECK(running_, "ember::profiler::profile::stop: the profile is not "
                        "running; call start() (or guard()) first");
  running_ = false;
  trace_ = stop_session();
  buildEvents();
  finished_ = true;
}

profile::Guard profile::guard() {
  start();
  return Guard(this);
}

profile::Guard::~Guard() {
  if (p_ && p_->is_running()) {
    try {
      p_->stop();
    } catch (...) { // a destructor must not throw
    }
  }
}

void profile::checkFinished(const char *what) const {
  EMBER_CHECK(!running_, "ember::profiler::profile::", what,
              ": the profiler is still running; call stop() (or let its "
              "guard go out of scope) before reading the results");
  EMBER_CHECK(finished_, "ember::profiler::profile::", what,
              ": the profiler has not run; start() (or guard()) and stop() "
              "it around the code to profile first");
}

void profile::buildEvents() {
  const std::vector<EventRecord> &recs = trace_.events;
  size_t n = recs.size();
  events_.clear();
  events_.resize(n);
  std::vector<int64_t> childNs(n, 0);
  auto us = [&](int64_t ns) { return double(ns - trace_.start_ns) / 1e3; };
  for (size_t i = 0; i < n; ++i) {
    const EventRecord &r = recs[i];
    FunctionEvent &e = events_[i];
    e.id = int64_t(i);
    e.name = r.name;
    e.scope = r.scope;
    e.thread = r.thread;
    e.start_us = us(r.start_ns);
    e.end_us = us(r.end_ns);
    e.cpu_time_total = double(r.end_ns - r.start_ns) / 1e3;
    e.input_shapes = r.input_shapes;
    e.input_types.assign(r.input_types.begin(), r.input_types.end());
    e.cpu_memory_usage = e.self_cpu_memory_usage = r.self_memory;
    e.cpu_parent = r.parent;
    if (r.parent >= 0)
      events_[size_t(r.parent)].cpu_children.push_back(e.id);
  }
  // A parent begins before its children, so it has a smaller index: one pass
  // from the back sums every subtree.
  for (size_t i = n; i-- > 0;) {
    const EventRecord &r = recs[i];
    if (r.parent >= 0) {
      childNs[size_t(r.parent)] += r.end_ns - r.start_ns;
      events_[size_t(r.parent)].cpu_memory_usage += events_[i].cpu_memory_usage;
    }
  }
  for (size_t i = 0; i < n; ++i)
    events_[i].self_cpu_time_total =
        double(std::max<int64_t>(0, recs[i].end_ns - recs[i].start_ns -
                                        childNs[i])) /
        1e3;
  // Device work: rows of its own (device times), and device time of the
  // CPU events that launched it (self) and of their ancestors (total).
  std::map<std::pair<int, uint64_t>, uint64_t> streams;
  for (const DeviceRecord &d : trace_.device) {
    const double dur = double(d.end_ns - d.start_ns) / 1e3;
    for (int64_t p = d.parent; p >= 0; p = recs[size_t(p)].parent)
      events_[size_t(p)].device_time_total += dur;
    if (d.parent >= 0)
      events_[size_t(d.parent)].self_device_time_total += dur;
    FunctionEvent &e = events_.emplace_back();
    e.id = int64_t(events_.size() - 1);
    e.name = d.name;
    e.device_type = d.device.type();
    e.device_index = d.device.index();
    e.thread = streams.try_emplace({d.device.index(), d.stream}, streams.size())
                   .first->second;
    e.start_us = us(d.start_ns);
    e.end_us = us(d.end_ns);
    e.device_time_total = e.self_device_time_total = dur;
    e.launched_by = d.parent;
  }
  // Memory events outside every event are rows of their own, "[memory]", as
  // PyTorch's.
  for (const MemoryRecord &m : trace_.memory) {
    if (m.parent >= 0)
      continue;
    FunctionEvent &e = events_.emplace_back();
    e.id = int64_t(events_.size() - 1);
    e.name = "[memory]";
    e.is_memory_event = true;
    e.thread = m.thread;
    e.start_us = e.end_us = us(m.ts_ns);
    e.cpu_memory_usage = e.self_cpu_memory_usage = m.bytes;
  }
  // Without ProfilerActivity::CPU only the device work (and memory) is
  // shown, as torch.profiler (the CPU events still charged it above).
  if (std::find(options_.activities.begin(), options_.activities.end(),
                ProfilerActivity::CPU) == options_.activities.end())
    std::erase_if(events_, [](const FunctionEvent &e) {
      return e.device_type == kCPU && !e.is_memory_event;
    });
  std::stable_sort(events_.begin(), events_.end(),
                   [](const FunctionEvent &a, const FunctionEvent &b) {
                     if (a.start_us != b.start_us)
                       return a.start_us < b.start_us;
                     if (a.end_us != b.end_us)
                       return a.end_us > b.end_us;
                     return a.id < b.id;
                   });
}

const std::vector<FunctionEvent> &profile::events() const {
  checkFinished("events");
  return events_;
}

EventList profile::key_averages(bool group_by_input_shape) const {
  checkFinished("key_averages");
  std::vector<FunctionEventAvg> rows;
  std::unordered_map<std::string, size_t> index;
  for (const FunctionEvent &e : events_) {
    std::string key = e.name;
    key += '\0';
    key += char('0' + int(e.scope));
    key += char('0' + int(e.device_type));
    if (group_by_input_shape)
      key += '\0' + shapesString(e.input_shapes);
    auto [it, fresh] = index.try_emplace(std::move(key), rows.size());
    if (fresh)
      rows.emplace_back();
    rows[it->second].add(e);
  }
  if (!group_by_input_shape)
    for (FunctionEventAvg &r : rows)
      r.input_shapes.clear();
  return EventList(std::move(rows), options_.profile_memory);
}

std::string profile::chrome_trace_json() const {
  checkFinished("export_chrome_trace");
  const long long pid = ::getpid();
  std::string out = "{\n\"schemaVersion\": 1,\n\"displayTimeUnit\": \"ms\",\n"
                    "\"traceEvents\": [\n";
  bool first = true;
  auto open = [&] {
    out += first ? "  {" : ",\n  {";
    first = false;
  };
  auto idField = [&](const char *name, long long v) {
    out += ", \"";
    out += name;
    out += "\": " + std::to_string(v);
  };
  open();
  out += "\"name\": \"process_name\", \"ph\": \"M\"";
  idField("pid", pid);
  idField("tid", 0);
  out += ", \"args\": {\"name\": \"ember\"}}";
  std::set<uint64_t> threads;
  std::set<std::pair<int, uint64_t>> streams;
  for (const FunctionEvent &e : events_)
    if (e.device_type == kCPU)
      threads.insert(e.thread);
    else
      streams.insert({e.device_index, e.thread});
  for (auto [device, stream] : streams) {
    open();
    out += "\"name\": \"process_name\", \"ph\": \"M\"";
    idField("pid", device);
    idField("tid", 0);
    out += ", \"args\": {\"name\": \"CUDA device " + std::to_string(device) +
           "\"}}";
    open();
    out += "\"name\": \"thread_name\", \"ph\": \"M\"";
    idField("pid", device);
    idField("tid", (long long)stream);
    out += ", \"args\": {\"name\": \"stream " + std::to_string(stream) + "\"}}";
  }
  for (uint64_t t : threads) {
    open();
    out += "\"name\": \"thread_name\", \"ph\": \"M\"";
    idField("pid", pid);
    idField("tid", (long long)t);
    out += ", \"args\": {\"name\": \"thread " + std::to_string(t) + "\"}}";
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    const FunctionEvent &e = events_[i];
    if (e.is_memory_event)
      continue; // exported with every memory event below
    open();
    const bool on_device = e.device_type != kCPU;
    out += "\"ph\": \"X\", \"cat\": \"";
    out += categoryOf(e);
    out += "\", \"name\": ";
    jsonString(out, e.name);
    idField("pid", on_device ? e.device_index : pid);
    idField("tid", (long long)e.thread);
    out += ", \"ts\": ";
    jsonNumber(out, e.start_us);
    out += ", \"dur\": ";
    jsonNumber(out, on_device ? e.device_time_total : e.cpu_time_total);
    if (on_device) {
      out += ", \"args\": {\"device\": " + std::to_string(e.device_index) +
             ", \"stream\": " + std::to_string(e.thread) +
             ", \"correlation\": " + std::to_string(e.launched_by + 1) +
             ", \"Ev Idx\": " + std::to_string(i) + "}}";
      continue;
    }
    out += ", \"args\": {\"External id\": " + std::to_string(e.id + 1) +
           ", \"Ev Idx\": " + std::to_string(i);
    if (options_.record_shapes && e.scope == RecordScope::FUNCTION) {
      out += ", \"Input Dims\": " + shapesString(e.input_shapes);
      out += ", \"Input type\": [";
      for (size_t k = 0; k < e.input_types.size(); ++k) {
        if (k)
          out += ", ";
        jsonString(out, e.input_types[k]);
      }
      out += "]";
    }
    out += "}}";
  }
  for (const MemoryRecord &m : trace_.memory) {
    open();
    out += "\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
           "\"name\": \"[memory]\"";
    idField("pid", pid);
    idField("tid", (long long)m.thread);
    out += ", \"ts\": ";
    jsonNumber(out, double(m.ts_ns - trace_.start_ns) / 1e3);
    out += ", \"args\": {";
    out += "\"Total Reserved\": " + std::to_string(m.total_reserved);
    out += ", \"Total Allocated\": " + std::to_string(m.total_allocated);
    out += ", \"Bytes\": " + std::to_string(m.bytes);
    out += ", \"Addr\": " + std::to_string(m.addr);
    out += ", \"Device Type\": " + std::to_string(int(m.device.type()));
    out += ", \"Device Id\": " + std::to_string(m.device.index());
    out += "}}";
  }
  out += "\n]\n}\n";
  return out;
}

void profile::export_chrome_trace(const std::string &path) const {
  std::string json = chrome_trace_json();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  EMBER_CHECK(f.good(), "export_chrome_trace: could not open '", path,
              "' for writing: ", std::strerror(errno));
  f << json;
  f.close();
  EMBER_CHECK(!f.fail(), "export_chrome_trace: could not write '", path,
              "': ", std::strerror(errno));
}

} // namespace ember::profiler
