#include "runtime/CachingAllocator.h"

#include "runtime/Error.h"

#include <cstdio>
#include <utility>

namespace ember {

struct CachingAllocator::Block {
  Block(size_t size, StreamId stream, void *ptr, Pool *pool)
      : size(size), stream(stream), ptr(ptr), pool(pool) {}
  size_t size;
  StreamId stream;
  void *ptr;
  Pool *pool;
  Block *prev = nullptr, *next = nullptr; ///< neighbours in the segment
  bool allocated = false;
  bool pending = false; ///< freed, waiting for other streams' events
  std::set<StreamId> stream_uses;
};

namespace {
/// Cached blocks ordered by stream, then size, then address: the first at
/// or after (stream, size) is the best fit.
struct BlockOrder {
  template <class B> bool operator()(const B *a, const B *b) const {
    if (a->stream != b->stream)
      return a->stream < b->stream;
    if (a->size != b->size)
      return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) <
           reinterpret_cast<uintptr_t>(b->ptr);
  }
};

std::string format_bytes(size_t n) {
  char buf[64];
  double v = double(n);
  if (v >= double(1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / double(1ull << 30));
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / double(1ull << 20));
  return buf;
}
} // namespace

struct CachingAllocator::Pool {
  bool small;
  std::set<Block *, BlockOrder> free;
};

size_t CachingAllocator::round_size(size_t bytes) {
  if (bytes < kMinBlockSize)
    return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

size_t CachingAllocator::segment_size(size_t rounded) {
  if (rounded <= kSmallSize)
    return kSmallBuffer;
  if (rounded < kMinLargeAlloc)
    return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

CachingAllocator::CachingAllocator(std::shared_ptr<DeviceMemory> device,
                                   Device which)
    : device_(std::move(device)), which_(which), small_(new Pool{true, {}}),
      large_(new Pool{false, {}}) {}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> g(mu_);
  for (auto &[b, events] : pending_)
    for (uint64_t e : events)
      device_->destroy_event(e);
  // Blocks still handed out keep their segments (their owners outlive the
  // allocator only at process exit); the cached ones go back.
  for (auto &[b, events] : pending_) {
    b->pending = false;
    free_block(b);
  }
  pending_.clear();
  release_cached(/*wait=*/false);
}

CachingAllocator::Block *CachingAllocator::find_free(Pool &pool, size_t size,
                                                     StreamId stream) {
  Block key(size, stream, nullptr, &pool);
  auto it = pool.free.lower_bound(&key);
  if (it == pool.free.end() || (*it)->stream != stream)
    return nullptr;
  Block *b = *it;
  pool.free.erase(it);
  return b;
}

CachingAllocator::Block *CachingAllocator::split(Block *b, size_t size,
                                                 Pool &pool) {
  auto *rest = new Block(b->size - size, b->stream,
                         static_cast<char *>(b->ptr) + size, &pool);
  rest->prev = b;
  rest->next = b->next;
  if (b->next)
    b->next->prev = rest;
  b->next = rest;
  b->size = size;
  pool.free.insert(rest);
  return rest;
}

void *CachingAllocator::malloc(size_t bytes, StreamId stream) {
  std::lock_guard<std::mutex> g(mu_);
  process_events();
  if (bytes == 0)
    return nullptr;
  EMBER_CHECK_VALUE(bytes <= (size_t(1) << 62), which_.str(),
                    ": cannot allocate ", bytes, " bytes");
  size_t size = round_size(bytes);
  if (private_ && stream == private_stream_) {
    // Note [Memory of a CUDA graph]: a block the capture freed first.
    auto it = private_free_.lower_bound(size);
    if (it != private_free_.end() && it->first <= 2 * size) {
      void *p = it->second->ptr;
      private_free_.erase(it);
      private_blocks_.allocated.push_back(p);
      return p;
    }
  }
  Pool &pool = size <= kSmallSize ? *small_ : *large_;
  Block *b = find_free(pool, size, stream);
  if (b) {
    stats_.num_cache_hits++;
  } else {
    size_t seg = segment_size(size);
    void *p = device_->raw_alloc(seg);
    if (!p) {
      // Note [Device caching allocator]: the cache first, then give up.
      stats_.num_alloc_retries++;
      release_cached(/*wait=*/true);
      p = device_->raw_alloc(seg);
    }
    if (!p) {
      stats_.num_ooms++;
      out_of_memory(size);
    }
    b = new Block(seg, stream, p, &pool);
    stats_.reserved_bytes += int64_t(seg);
    stats_.reserved_bytes_total += int64_t(seg);
    stats_.reserved_bytes_peak =
        std::max(stats_.reserved_bytes_peak, stats_.reserved_bytes);
    stats_.segments++;
    stats_.segments_peak = std::max(stats_.segments_peak, stats_.segments);
    stats_.num_device_allocs++;
  }
  size_t rest = b->size - size;
  if (pool.small ? rest >= kMinBlockSize : rest > kSmallSize)
    split(b, size, pool);
  b->allocated = true;
  active_[b->ptr] = b;
  stats_.allocated_bytes += int64_t(b->size);
  stats_.allocated_bytes_total += int64_t(b->size);
  stats_.allocated_bytes_peak =
      std::max(stats_.allocated_bytes_peak, stats_.allocated_bytes);
  stats_.active_blocks++;
  stats_.active_blocks_peak =
      std::max(stats_.active_blocks_peak, stats_.active_blocks);
  stats_.num_allocs++;
  if (private_ && stream == private_stream_) {
    private_blocks_.allocated.push_back(b->ptr);
    private_owned_.insert(b->ptr);
  }
  return b->ptr;
}

void CachingAllocator::begin_private(StreamId stream) {
  std::lock_guard<std::mutex> g(mu_);
  EMBER_CHECK(!private_, which_.str(),
              " caching allocator: a graph capture is already under way");
  private_ = true;
  private_stream_ = stream;
  private_blocks_ = {};
  private_owned_.clear();
  private_free_.clear();
}

bool CachingAllocator::in_private() const {
  std::lock_guard<std::mutex> g(mu_);
  return private_;
}

CachingAllocator::PrivateBlocks CachingAllocator::end_private() {
  std::lock_guard<std::mutex> g(mu_);
  private_ = false;
  for (const auto &[size, b] : private_free_)
    private_blocks_.kept.push_back(b->ptr);
  private_free_.clear();
  private_owned_.clear();
  return std::exchange(private_blocks_, {});
}

void CachingAllocator::free(void *p) {
  if (!p)
    return;
  std::lock_guard<std::mutex> g(mu_);
  auto it = active_.find(p);
  EMBER_CHECK(it != active_.end(), which_.str(),
              " caching allocator: free of a pointer it did not hand out (or "
              "freed twice)");
  Block *b = it->second;
  // Note [Memory of a CUDA graph]
  if (private_ && private_owned_.count(p)) {
    private_free_.emplace(b->size, b);
    return;
  }
  active_.erase(it);
  b->allocated = false;
  stats_.allocated_bytes -= int64_t(b->size);
  stats_.freed_bytes_total += int64_t(b->size);
  stats_.active_blocks--;
  stats_.num_frees++;
  if (b->stream_uses.empty()) {
    free_block(b);
    return;
  }
  std::vector<uint64_t> events;
  for (StreamId s : b->stream_uses)
    events.push_back(device_->record_event(s));
  b->stream_uses.clear();
  b->pending = true;
  pending_.emplace_back(b, std::move(events));
}

void CachingAllocator::free_block(Block *b) {
  Pool &pool = *b->pool;
  auto mergeable = [](Block *n) { return n && !n->allocated && !n->pending; };
  // `lo` takes in `hi`, the block after it in the segment.
  auto absorb = [](Block *lo, Block *hi) {
    lo->size += hi->size;
    lo->next = hi->next;
    if (hi->next)
      hi->next->prev = lo;
    delete hi;
  };
  if (mergeable(b->prev)) {
    Block *prev = b->prev;
    pool.free.erase(prev);
    absorb(prev, b);
    b = prev;
  }
  if (mergeable(b->next)) {
    pool.free.erase(b->next);
    absorb(b, b->next);
  }
  pool.free.insert(b);
}

void CachingAllocator::process_events() {
  for (size_t i = 0; i < pending_.size();) {
    auto &[b, events] = pending_[i];
    bool done = true;
    for (uint64_t e : events)
      done = done && device_->event_done(e);
    if (!done) {
      ++i;
      continue;
    }
    for (uint64_t e : events)
      device_->destroy_event(e);
    Block *block = b;
    pending_.erase(pending_.begin() + std::ptrdiff_t(i));
    block->pending = false;
    free_block(block);
  }
}

void CachingAllocator::release_cached(bool wait) {
  if (wait) {
    device_->synchronize();
    process_events();
  }
  for (Pool *pool : {small_.get(), large_.get()})
    for (auto it = pool->free.begin(); it != pool->free.end();) {
      Block *b = *it;
      if (b->prev || b->next) { // part of a segment still in use
        ++it;
        continue;
      }
      it = pool->free.erase(it);
      device_->raw_free(b->ptr);
      stats_.reserved_bytes -= int64_t(b->size);
      stats_.released_bytes_total += int64_t(b->size);
      stats_.segments--;
      stats_.num_device_frees++;
      delete b;
    }
}

// Note [Out-of-memory message]
// PyTorch 2.x's text, with its numbers: what was asked, the device's
// capacity and what of it is free (for every process), what the allocator
// has handed out, and what it holds cached but unallocated, which
// empty_cache() returns to the device. (The allocator has already released
// its cache and retried by now, so a large cached figure means
// fragmentation of blocks still in use.)
void CachingAllocator::out_of_memory(size_t requested) {
  std::string dev = which_.is_cuda() ? "CUDA" : which_.str();
  std::string gpu =
      which_.is_cuda()
          ? "GPU " + std::to_string(std::max(0, int(which_.index())))
          : which_.str();
  const int64_t cached = stats_.reserved_bytes - stats_.allocated_bytes;
  throw OutOfMemoryError(detail::str(
      dev, " out of memory. Tried to allocate ", format_bytes(requested), ". ",
      gpu, " has a total capacity of ", format_bytes(device_->total_memory()),
      " of which ", format_bytes(device_->free_memory()),
      " is free. Of the allocated memory ",
      format_bytes(size_t(stats_.allocated_bytes)),
      " is allocated by ember, and ",
      format_bytes(size_t(std::max<int64_t>(0, cached))),
      " is reserved by ember but unallocated. Free tensors you no longer "
      "need, or ask for less (a smaller batch); if reserved but unallocated "
      "memory is large, ember::cuda::empty_cache() returns it to the "
      "device."));
}

void CachingAllocator::record_stream(void *p, StreamId stream) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = active_.find(p);
  EMBER_CHECK(it != active_.end(), which_.str(),
              " caching allocator: record_stream of a pointer it did not "
              "hand out");
  if (stream != it->second->stream)
    it->second->stream_uses.insert(stream);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> g(mu_);
  release_cached(/*wait=*/true);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> g(mu_);
  stats_.allocated_bytes_peak = stats_.allocated_bytes;
  stats_.reserved_bytes_peak = stats_.reserved_bytes;
  stats_.active_blocks_peak = stats_.active_blocks;
  stats_.segments_peak = stats_.segments;
}

size_t CachingAllocator::block_size(void *p) const {
  std::lock_guard<std::mutex> g(mu_);
  auto it = active_.find(p);
  EMBER_CHECK(it != active_.end(), which_.str(),
              " caching allocator: not a block it handed out");
  return it->second->size;
}

} // namespace ember
