#include "eager/Memory.h"

#include "runtime/Cuda.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ember {

namespace {

/// Checks that a CUDA device can be asked for statistics (-1: the current
/// device).
Device checkedCudaDevice(int index, const char *fn) {
  EMBER_CHECK(cuda::is_available(), "ember::cuda::", fn,
              ": CUDA is not available (no CUDA driver or no GPU was found; "
              "ember::cuda::is_available() is false). For the CPU "
              "allocator's statistics call ember::",
              fn, "().");
  return Device(kCUDA, cuda::checked_device(
                           index, (std::string("ember::cuda::") + fn).c_str()));
}

MemoryStats statsOf(Device d, const char *fn) {
  if (d.is_cuda())
    checkedCudaDevice(d.index(), fn);
  return memory_stats_of(d);
}

// torch.cuda.memory_summary's number formats: 6 digits and a binary prefix
// for sizes, 7 digits and a decimal prefix for counts (10 characters each).
std::string formatSize(int64_t sz) {
  static const char *prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int p = 0;
  double pref = double(sz);
  while (p + 1 < 6 && pref >= 768 * 1024) {
    ++p;
    sz /= 1024;
    pref /= 1024;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%6lld %s", (long long)sz, prefixes[p]);
  return buf;
}

std::string formatCount(int64_t n) {
  static const char *prefixes[] = {" ", "K", "M"};
  int p = 0;
  double pref = double(n);
  while (p + 1 < 3 && pref >= 750 * 1000) {
    ++p;
    n /= 1000;
    pref /= 1000;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%7lld %s ", (long long)n, prefixes[p]);
  return buf;
}

constexpr size_t kWidth = 75;

std::string center(const std::string &s, size_t width) {
  if (s.size() >= width)
    return s.substr(0, width);
  size_t left = (width - s.size()) / 2;
  return std::string(left, ' ') + s + std::string(width - s.size() - left, ' ');
}

std::string padRight(std::string s, size_t width) {
  s.resize(std::max(s.size(), width), ' ');
  return s;
}

std::string summaryOf(Device d, const MemoryStats &st) {
  std::map<std::string, int64_t> m = st.as_map();
  const char *kind = d.is_cuda() ? "GPU" : "CPU";
  std::vector<std::string> lines;
  lines.push_back(std::string(kWidth, '='));
  lines.push_back(center("ember " + std::string(d.is_cuda() ? "CUDA" : "CPU") +
                             " memory summary, device " + d.str(),
                         kWidth));
  lines.push_back(std::string(kWidth, '-'));
  lines.push_back(
      center(std::string(kind) + " OOMs: " + std::to_string(st.num_ooms), 36) +
      "|" +
      center(std::string(d.is_cuda() ? "cudaMalloc" : "malloc") +
                 " retries: " + std::to_string(st.num_alloc_retries),
             kWidth - 37));
  lines.push_back(std::string(kWidth, '='));
  lines.push_back(
      "        Metric         | Cur Usage  | Peak Usage | Tot Alloc "
      " | Tot Freed  ");
  struct Metric {
    const char *key;
    std::string name;
    bool bytes;
  };
  const Metric metrics[] = {
      {"allocated_bytes", "Allocated memory", true},
      {"active_bytes", "Active memory", true},
      {"reserved_bytes", std::string(kind) + " reserved memory", true},
      {"allocation", "Allocations", false},
      {"active", "Active allocs", false},
      {"segment", std::string(kind) + " reserved segments", false},
  };
  for (const Metric &mt : metrics) {
    lines.push_back(std::string(kWidth, '-'));
    // (Appended piece by piece: GCC 12 warns -Wrestrict on `"x" + str`
    // once inlined, a false positive, bug 105329.)
    std::string prefix = mt.key;
    prefix += ".all.";
    std::string row = " ";
    row += padRight(mt.name, 21);
    for (const char *col : {"current", "peak", "allocated", "freed"}) {
      int64_t v = m.at(prefix + col);
      row += " | ";
      row += mt.bytes ? formatSize(v) : formatCount(v);
    }
    row += ' ';
    lines.push_back(row);
  }
  lines.push_back(std::string(kWidth, '='));
  std::string out;
  for (const std::string &l : lines) {
    out += '|';
    out += padRight(l, kWidth);
    out += "|\n";
  }
  return out;
}

} // namespace

int64_t memory_allocated(Device device) {
  return statsOf(device, "memory_allocated").allocated_bytes;
}
int64_t max_memory_allocated(Device device) {
  return statsOf(device, "max_memory_allocated").allocated_bytes_peak;
}
int64_t memory_reserved(Device device) {
  return statsOf(device, "memory_reserved").reserved_bytes;
}
int64_t max_memory_reserved(Device device) {
  return statsOf(device, "max_memory_reserved").reserved_bytes_peak;
}
std::map<std::string, int64_t> memory_stats(Device device) {
  return statsOf(device, "memory_stats").as_map();
}
std::string memory_summary(Device device) {
  return summaryOf(device, statsOf(device, "memory_summary"));
}

namespace cuda {
int64_t memory_allocated(int device) {
  return ember::memory_allocated(checkedCudaDevice(device, "memory_allocated"));
}
int64_t max_memory_allocated(int device) {
  return ember::max_memory_allocated(
      checkedCudaDevice(device, "max_memory_allocated"));
}
int64_t memory_reserved(int device) {
  return ember::memory_reserved(checkedCudaDevice(device, "memory_reserved"));
}
int64_t max_memory_reserved(int device) {
  return ember::max_memory_reserved(
      checkedCudaDevice(device, "max_memory_reserved"));
}
void reset_peak_memory_stats(int device) {
  ember::reset_peak_memory_stats(
      checkedCudaDevice(device, "reset_peak_memory_stats"));
}
void empty_cache() {
  checkedCudaDevice(-1, "empty_cache");
  for (int i = 0; i < device_count(); ++i)
    ember::empty_cache(Device(kCUDA, i));
}
std::map<std::string, int64_t> memory_stats(int device) {
  return ember::memory_stats(checkedCudaDevice(device, "memory_stats"));
}
std::string memory_summary(int device) {
  return ember::memory_summary(checkedCudaDevice(device, "memory_summary"));
}
} // namespace cuda

} // namespace ember
