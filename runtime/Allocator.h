#pragma once
/// Allocators and the memory statistics named like torch.cuda's.

#include "runtime/Device.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace ember {

/// An owning pointer to device memory with a type-erased deleter (like c10's
/// DataPtr). `ctx` is what the deleter receives; for most allocators it is the
/// pointer itself.
class DataPtr {
public:
  using Deleter = void (*)(void *ctx);
  DataPtr() = default;
  DataPtr(void *data, void *ctx, Deleter deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr &) = delete;
  DataPtr &operator=(const DataPtr &) = delete;
  DataPtr(DataPtr &&o) noexcept { swap(o); }
  DataPtr &operator=(DataPtr &&o) noexcept {
    DataPtr(std::move(o)).swap(*this);
    return *this;
  }
  ~DataPtr() {
    if (deleter_)
      deleter_(ctx_);
  }
  void swap(DataPtr &o) noexcept {
    std::swap(data_, o.data_);
    std::swap(ctx_, o.ctx_);
    std::swap(deleter_, o.deleter_);
    std::swap(device_, o.device_);
  }
  void *get() const { return data_; }
  Device device() const { return device_; }

private:
  void *data_ = nullptr;
  void *ctx_ = nullptr;
  Deleter deleter_ = nullptr;
  Device device_{kCPU};
};

class Allocator {
public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes) = 0;
};

/// Counters kept by a caching allocator; the names follow
/// torch.cuda.memory_stats() ("allocated_bytes.all.current", ...).
struct MemoryStats {
  int64_t allocated_bytes = 0, allocated_bytes_peak = 0;
  /// Bytes handed out and returned since the start (cumulative).
  int64_t allocated_bytes_total = 0, freed_bytes_total = 0;
  int64_t reserved_bytes = 0, reserved_bytes_peak = 0;
  /// Bytes obtained from and released to the system (cumulative).
  int64_t reserved_bytes_total = 0, released_bytes_total = 0;
  int64_t active_blocks = 0, active_blocks_peak = 0;
  /// Blocks held from the system (in use or cached) and their peak.
  int64_t segments = 0, segments_peak = 0;
  int64_t num_allocs = 0, num_frees = 0;
  int64_t num_cache_hits = 0, num_device_allocs = 0, num_device_frees = 0;
  /// Allocations that failed once and were retried after releasing the
  /// cache, and those that failed again (out of memory).
  int64_t num_alloc_retries = 0, num_ooms = 0;
  std::map<std::string, int64_t> as_map() const;
};

/// The CPU allocator: 64-byte aligned blocks, cached by size class so that a
/// training loop does not pay page faults for every fresh buffer (Note
/// [CPU caching allocator]).
Allocator *getCPUAllocator();

/// Statistics and cache control for a device (CPU now; CUDA fills in later).
MemoryStats memory_stats_of(Device d);
void reset_peak_memory_stats(Device d = kCPU);
/// Returns every cached, unused block to the system.
void empty_cache(Device d = kCPU);

/// Measures the most bytes allocated at once (memory_allocated) over a
/// region of code, without resetting the peak that max_memory_allocated
/// reports (explain()'s measured peaks of a compiled training step).
/// Regions nest; allocations of other threads meanwhile count too. There is
/// one window for the process: a region that another thread opens while
/// this one is open restarts the window, so this one may read less than
/// its true peak (two compiled training steps on two threads at once).
class PeakMemoryScope {
public:
  explicit PeakMemoryScope(Device d = kCPU);
  ~PeakMemoryScope();
  PeakMemoryScope(const PeakMemoryScope &) = delete;
  PeakMemoryScope &operator=(const PeakMemoryScope &) = delete;
  /// The peak since the scope began.
  int64_t peak() const;

private:
  int64_t outer_; ///< the enclosing region's peak so far
};

} // namespace ember
