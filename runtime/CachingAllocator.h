#pragma once
/// Note [Device caching allocator]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// PyTorch's CUDA caching allocator, device-agnostic: the pool logic here,
/// the device behind a DeviceMemory (the CUDA driver, or a fake device in
/// the tests, which run on every machine).
///
/// - Requests are rounded up to 512 bytes. Requests of at most 1 MiB come
///   from the *small pool*, whose segments (device allocations) are 2 MiB;
///   larger ones from the *large pool*, whose segments are 20 MiB for
///   requests below 10 MiB and the request rounded up to 2 MiB otherwise.
/// - A request takes the smallest cached block of its pool and stream that
///   fits (best fit). A block larger than the request is split when the
///   rest is worth keeping (at least 512 bytes in the small pool, more than
///   1 MiB in the large one); the rest stays cached.
/// - A freed block merges with the free blocks beside it in its segment.
/// - A block used on other streams (record_stream) is not reused until an
///   event recorded on each of those streams at its free has completed: the
///   kernels still reading it there are done.
/// - When the device has no memory for a new segment, the allocator
///   releases its cached segments (those wholly free) and tries once more;
///   then raises OutOfMemoryError in PyTorch's form (tried to allocate; the
///   device's total capacity; already allocated; reserved).
/// - Statistics are MemoryStats (torch.cuda.memory_stats's names); a
///   segment is "reserved", a handed-out block "allocated" and "active".

#include "runtime/Allocator.h"
#include "runtime/Device.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

/// A stream of a device: 0 is the default stream.
using StreamId = int64_t;

/// What the allocator asks of a device.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// `bytes` of device memory, or null when the device has not that much.
  virtual void *raw_alloc(size_t bytes) = 0;
  virtual void raw_free(void *p) = 0;
  /// The device's memory and what of it is free now (for every user of
  /// the device), for the out-of-memory message.
  virtual size_t total_memory() const = 0;
  virtual size_t free_memory() const = 0;
  /// An event recorded on `stream` now (an opaque handle), whether it has
  /// completed, and its release.
  virtual uint64_t record_event(StreamId stream) = 0;
  virtual bool event_done(uint64_t event) = 0;
  virtual void destroy_event(uint64_t event) = 0;
  /// Waits for all work on the device (every event recorded completes):
  /// before the cache is released.
  virtual void synchronize() = 0;
};

class CachingAllocator {
public:
  CachingAllocator(std::shared_ptr<DeviceMemory> device, Device which);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  /// A block of at least `bytes` for `stream` (null for 0 bytes). Raises
  /// OutOfMemoryError.
  void *malloc(size_t bytes, StreamId stream = 0);
  /// Returns a block from malloc() to the cache.
  void free(void *p);
  /// The block holding `p` is also used on `stream`: its reuse waits for
  /// that stream's work at its free (torch's Tensor.record_stream).
  void record_stream(void *p, StreamId stream);
  /// Releases every cached segment that is wholly free (waiting for pending
  /// cross-stream frees first).
  void empty_cache();

  MemoryStats stats() const;
  void reset_peak_stats();
  /// The size of the block `p` was given (its rounded size).
  size_t block_size(void *p) const;

  /// Note [Memory of a CUDA graph]
  /// While a stream is captured into a CUDA graph, its kernels do not run:
  /// they become the graph's, and run at each replay, at the addresses they
  /// were captured with. A block the capture frees (an intermediate) must
  /// then stay the graph's, or eager code given it later would share it
  /// with every replay. Between begin_private(s) and end_private(), a block
  /// allocated for stream `s` and freed again is kept (still allocated, in
  /// the statistics too) in a private free list, from which the capture's
  /// later requests for `s` are served first (best fit, at most twice the
  /// request: the capture's work is ordered on one stream, so intermediates
  /// share blocks as eagerly); end_private() lists the blocks handed out
  /// and those still kept. The graph frees the kept ones with free() when
  /// it is destroyed (PyTorch's private pool of a graph, without sharing
  /// between graphs). Blocks not allocated in the window are freed as usual.
  struct PrivateBlocks {
    std::vector<void *> allocated; ///< handed out for the stream
    std::vector<void *> kept;      ///< freed on the stream, still held
  };
  void begin_private(StreamId stream);
  PrivateBlocks end_private();
  /// Whether a capture is under way (between begin_private and end_private).
  bool in_private() const;

  // The policy's constants, as PyTorch's.
  static constexpr size_t kMinBlockSize = 512;
  static constexpr size_t kSmallSize = 1 << 20;      // 1 MiB
  static constexpr size_t kSmallBuffer = 2 << 20;    // 2 MiB
  static constexpr size_t kLargeBuffer = 20 << 20;   // 20 MiB
  static constexpr size_t kMinLargeAlloc = 10 << 20; // 10 MiB
  static constexpr size_t kRoundLarge = 2 << 20;     // 2 MiB
  static size_t round_size(size_t bytes);
  /// The size of the segment a request of `rounded` bytes allocates.
  static size_t segment_size(size_t rounded);

private:
  struct Block;
  struct Pool;
  Block *find_free(Pool &pool, size_t size, StreamId stream);
  Block *split(Block *b, size_t size, Pool &pool);
  void free_block(Block *b); // with mu_ held
  void process_events();
  void release_cached(bool wait);
  [[noreturn]] void out_of_memory(size_t requested);

  std::shared_ptr<DeviceMemory> device_;
  Device which_;
  mutable std::mutex mu_;
  std::unique_ptr<Pool> small_, large_;
  std::unordered_map<void *, Block *> active_;
  /// Blocks freed while used on other streams, with their pending events.
  std::vector<std::pair<Block *, std::vector<uint64_t>>> pending_;
  MemoryStats stats_;
  bool private_ = false; ///< between begin_private and end_private
  StreamId private_stream_ = 0;
  PrivateBlocks private_blocks_;   ///< (its `kept` is filled at the end)
  std::set<void *> private_owned_; ///< allocated in the window
  std::multimap<size_t, Block *> private_free_; ///< kept, by size
};

} // namespace ember
