#include "runtime/Allocator.h"
#include "runtime/CudaAllocator.h"

#include "runtime/Profiler.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember {

std::map<std::string, int64_t> MemoryStats::as_map() const {
  // Blocks are never split, so "active" equals "allocated" here, as in a
  // CUDA caching allocator with no split blocks.
  return {
      {"allocated_bytes.all.current", allocated_bytes},
      {"allocated_bytes.all.peak", allocated_bytes_peak},
      {"allocated_bytes.all.allocated", allocated_bytes_total},
      {"allocated_bytes.all.freed", freed_bytes_total},
      {"active_bytes.all.current", allocated_bytes},
      {"active_bytes.all.peak", allocated_bytes_peak},
      {"active_bytes.all.allocated", allocated_bytes_total},
      {"active_bytes.all.freed", freed_bytes_total},
      {"reserved_bytes.all.current", reserved_bytes},
      {"reserved_bytes.all.peak", reserved_bytes_peak},
      {"reserved_bytes.all.allocated", reserved_bytes_total},
      {"reserved_bytes.all.freed", released_bytes_total},
      {"allocation.all.current", active_blocks},
      {"allocation.all.peak", active_blocks_peak},
      {"allocation.all.allocated", num_allocs},
      {"allocation.all.freed", num_frees},
      {"active.all.current", active_blocks},
      {"active.all.peak", active_blocks_peak},
      {"active.all.allocated", num_allocs},
      {"active.all.freed", num_frees},
      {"segment.all.current", segments},
      {"segment.all.peak", segments_peak},
      {"segment.all.allocated", num_device_allocs},
      {"segment.all.freed", num_device_frees},
      {"num_alloc_retries", num_alloc_retries},
      {"num_ooms", num_ooms},
      {"num_cache_hits", num_cache_hits},
      {"num_device_alloc", num_device_allocs},
      {"num_device_free", num_device_frees},
  };
}

namespace {

// Note [CPU caching allocator]
// A fresh 64 MB malloc on these machines costs ~20 ms of page faults the first
// time it is touched, and glibc returns large blocks to the OS on free. So
// freed blocks are kept in per-size-class free lists and handed out again.
// Size classes: multiples of 64 bytes up to 4 KiB, then 8 classes per octave,
// so a block wastes at most 1/8 of its size. Every block is 64-byte aligned
// (one cache line, one AVX-512 vector). empty_cache() returns the cached
// blocks to the system.
constexpr size_t kAlign = 64;

size_t roundSize(size_t n) {
  if (n <= 4096)
    return (n + kAlign - 1) / kAlign * kAlign;
  int lg = 63 - __builtin_clzll(n);
  size_t quantum = size_t(1) << (lg - 3);
  return (n + quantum - 1) / quantum * quantum;
}

class CPUCachingAllocator final : public Allocator {
  // Each block starts with a header of kAlign bytes holding its size class,
  // so freeing needs no lookup table; the caller's pointer follows it.
  static constexpr size_t kHeader = kAlign;
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void *>> free_; // by size class
  MemoryStats stats_;
  int64_t window_peak_ = 0; ///< PeakMemoryScope's (begin_window)

  static size_t &sizeOf(void *user) {
    return *reinterpret_cast<size_t *>(static_cast<char *>(user) - kHeader);
  }
  static void deleter(void *user) { instance().free(user); }

  void free(void *user) {
    size_t sz = sizeOf(user);
    int64_t allocated, reserved;
    {
      std::lock_guard<std::mutex> g(mu_);
      stats_.allocated_bytes -= int64_t(sz);
      stats_.freed_bytes_total += int64_t(sz);
      stats_.active_blocks--;
      stats_.num_frees++;
      free_[sz].push_back(user);
      allocated = stats_.allocated_bytes;
      reserved = stats_.reserved_bytes;
    }
    if (EMBER_UNLIKELY(profiler::active()))
      profiler::record_memory(user, -int64_t(sz), allocated, reserved,
                              Device(kCPU));
  }

  void *fresh(size_t sz) {
    void *raw = std::aligned_alloc(kAlign, sz + kHeader);
    if (!raw)
      return nullptr;
    void *user = static_cast<char *>(raw) + kHeader;
    sizeOf(user) = sz;
    return user;
  }

public:
  static CPUCachingAllocator &instance() {
    static CPUCachingAllocator *a = new CPUCachingAllocator(); // never freed
    return *a;
  }

  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0)
      return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    size_t sz = roundSize(nbytes);
    void *p = nullptr;
    int64_t allocated = 0, reserved = 0;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(sz);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        stats_.num_cache_hits++;
        noteAlloc(sz);
        allocated = stats_.allocated_bytes;
        reserved = stats_.reserved_bytes;
      }
    }
    if (!p) {
      p = fresh(sz);
      if (!p) {
        {
          std::lock_guard<std::mutex> g(mu_);
          stats_.num_alloc_retries++;
        }
        empty_cache(); // retry once with the cache released
        p = fresh(sz);
        if (!p) {
          std::lock_guard<std::mutex> g(mu_);
          stats_.num_ooms++;
        }
      }
      EMBER_CHECK_TYPED(OutOfMemoryError, p,
                        "CPU out of memory: tried to allocate ", nbytes,
                        " bytes. Free tensors you no longer need, or call "
                        "ember::empty_cache(ember::kCPU).");
      std::lock_guard<std::mutex> g(mu_);
      stats_.reserved_bytes += int64_t(sz);
      stats_.reserved_bytes_total += int64_t(sz);
      stats_.num_device_allocs++;
      stats_.segments++;
      if (stats_.reserved_bytes > stats_.reserved_bytes_peak)
        stats_.reserved_bytes_peak = stats_.reserved_bytes;
      if (stats_.segments > stats_.segments_peak)
        stats_.segments_peak = stats_.segments;
      noteAlloc(sz);
      allocated = stats_.allocated_bytes;
      reserved = stats_.reserved_bytes;
    }
    if (EMBER_UNLIKELY(profiler::active()))
      profiler::record_memory(p, int64_t(sz), allocated, reserved,
                              Device(kCPU));
    return DataPtr(p, p, &deleter, Device(kCPU));
  }

  void noteAlloc(size_t sz) { // with mu_ held
    stats_.allocated_bytes += int64_t(sz);
    stats_.allocated_bytes_total += int64_t(sz);
    stats_.active_blocks++;
    stats_.num_allocs++;
    if (stats_.allocated_bytes > stats_.allocated_bytes_peak)
      stats_.allocated_bytes_peak = stats_.allocated_bytes;
    if (stats_.allocated_bytes > window_peak_)
      window_peak_ = stats_.allocated_bytes;
    if (stats_.active_blocks > stats_.active_blocks_peak)
      stats_.active_blocks_peak = stats_.active_blocks;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    for (auto &[sz, list] : free_) {
      for (void *user : list) {
        std::free(static_cast<char *>(user) - kHeader);
        stats_.reserved_bytes -= int64_t(sz);
        stats_.released_bytes_total += int64_t(sz);
        stats_.num_device_frees++;
        stats_.segments--;
      }
      list.clear();
    }
  }
  MemoryStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }
  /// PeakMemoryScope's window: the peak since the innermost scope began.
  int64_t begin_window() {
    std::lock_guard<std::mutex> g(mu_);
    int64_t outer = window_peak_;
    window_peak_ = stats_.allocated_bytes;
    return outer;
  }
  int64_t window_peak() {
    std::lock_guard<std::mutex> g(mu_);
    return window_peak_;
  }
  void end_window(int64_t outer) {
    std::lock_guard<std::mutex> g(mu_);
    window_peak_ = std::max(outer, window_peak_);
  }
  void reset_peak() {
    std::lock_guard<std::mutex> g(mu_);
    stats_.allocated_bytes_peak = stats_.allocated_bytes;
    stats_.reserved_bytes_peak = stats_.reserved_bytes;
    stats_.active_blocks_peak = stats_.active_blocks;
    stats_.segments_peak = stats_.segments;
  }
};

void checkCPU(Device d, const char *fn) {
  EMBER_CHECK(d.is_cpu(), fn, ": device ", d,
              " has no allocator in this build; only cpu is available");
}

} // namespace

Allocator *getCPUAllocator() { return &CPUCachingAllocator::instance(); }

MemoryStats memory_stats_of(Device d) {
  if (d.is_cuda())
    return cuda::caching_allocator(d.index()).stats();
  return CPUCachingAllocator::instance().stats();
}
void reset_peak_memory_stats(Device d) {
  if (d.is_cuda())
    return cuda::caching_allocator(d.index()).reset_peak_stats();
  CPUCachingAllocator::instance().reset_peak();
}
void empty_cache(Device d) {
  if (d.is_cuda())
    return cuda::caching_allocator(d.index()).empty_cache();
  CPUCachingAllocator::instance().empty_cache();
}

PeakMemoryScope::PeakMemoryScope(Device d) {
  checkCPU(d, "PeakMemoryScope");
  outer_ = CPUCachingAllocator::instance().begin_window();
}
PeakMemoryScope::~PeakMemoryScope() {
  CPUCachingAllocator::instance().end_window(outer_);
}
int64_t PeakMemoryScope::peak() const {
  return CPUCachingAllocator::instance().window_peak();
}

} // namespace ember
