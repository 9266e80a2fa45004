#include "runtime/Allocator.h"

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember {

std::map<std::string, int64_t> MemoryStats::as_map() const {
  return {
      {"allocated_bytes.all.current", allocated_bytes},
      {"allocated_bytes.all.peak", allocated_bytes_peak},
      {"reserved_bytes.all.current", reserved_bytes},
      {"reserved_bytes.all.peak", reserved_bytes_peak},
      {"active.all.current", active_blocks},
      {"active.all.peak", active_blocks_peak},
      {"allocation.all.allocated", num_allocs},
      {"allocation.all.freed", num_frees},
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
  struct Block {
    size_t size;
  };
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void *>> free_;
  std::unordered_map<void *, size_t> live_; // ptr -> rounded size
  MemoryStats stats_;

  static void deleter(void *p) { instance().free(p); }

  void free(void *p) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = live_.find(p);
    EMBER_INTERNAL_ASSERT(it != live_.end());
    size_t sz = it->second;
    live_.erase(it);
    stats_.allocated_bytes -= int64_t(sz);
    stats_.active_blocks--;
    stats_.num_frees++;
    free_[sz].push_back(p);
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
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(sz);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
        stats_.num_cache_hits++;
      }
    }
    if (!p) {
      p = std::aligned_alloc(kAlign, sz);
      if (!p) {
        empty_cache(); // retry once with the cache released
        p = std::aligned_alloc(kAlign, sz);
      }
      EMBER_CHECK(p, "CPU out of memory: tried to allocate ", nbytes,
                  " bytes. Free tensors you no longer need, or call "
                  "ember::cpu::empty_cache().");
      std::lock_guard<std::mutex> g(mu_);
      stats_.reserved_bytes += int64_t(sz);
      stats_.num_device_allocs++;
      if (stats_.reserved_bytes > stats_.reserved_bytes_peak)
        stats_.reserved_bytes_peak = stats_.reserved_bytes;
    }
    std::lock_guard<std::mutex> g(mu_);
    live_.emplace(p, sz);
    stats_.allocated_bytes += int64_t(sz);
    stats_.active_blocks++;
    stats_.num_allocs++;
    if (stats_.allocated_bytes > stats_.allocated_bytes_peak)
      stats_.allocated_bytes_peak = stats_.allocated_bytes;
    if (stats_.active_blocks > stats_.active_blocks_peak)
      stats_.active_blocks_peak = stats_.active_blocks;
    return DataPtr(p, p, &deleter, Device(kCPU));
  }

  void empty_cache() {
    std::lock_guard<std::mutex> g(mu_);
    for (auto &[sz, list] : free_) {
      for (void *p : list) {
        std::free(p);
        stats_.reserved_bytes -= int64_t(sz);
        stats_.num_device_frees++;
      }
      list.clear();
    }
  }
  MemoryStats stats() {
    std::lock_guard<std::mutex> g(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> g(mu_);
    stats_.allocated_bytes_peak = stats_.allocated_bytes;
    stats_.reserved_bytes_peak = stats_.reserved_bytes;
    stats_.active_blocks_peak = stats_.active_blocks;
  }
};

void checkCPU(Device d, const char *fn) {
  EMBER_CHECK(d.is_cpu(), fn, ": device ", d,
              " has no allocator in this build; only cpu is available");
}

} // namespace

Allocator *getCPUAllocator() { return &CPUCachingAllocator::instance(); }

MemoryStats memory_stats_of(Device d) {
  checkCPU(d, "memory_stats");
  return CPUCachingAllocator::instance().stats();
}
void reset_peak_memory_stats(Device d) {
  checkCPU(d, "reset_peak_memory_stats");
  CPUCachingAllocator::instance().reset_peak();
}
void empty_cache(Device d) {
  checkCPU(d, "empty_cache");
  CPUCachingAllocator::instance().empty_cache();
}

} // namespace ember
