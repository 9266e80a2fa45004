// The device caching allocator's pool logic (Note [Device caching
// allocator] in runtime/CachingAllocator.h) against a fake device: it runs
// on every machine; the same allocator serves CUDA devices.
#include "TestUtil.h"

#include "runtime/CachingAllocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

using namespace ember;

namespace {

constexpr size_t MiB = size_t(1) << 20;

/// A device with `capacity` bytes that hands out addresses (never touched)
/// and keeps events pending until complete() or synchronize().
class FakeDevice : public DeviceMemory {
public:
  explicit FakeDevice(size_t capacity) : capacity_(capacity) {}
  void *raw_alloc(size_t bytes) override {
    if (used_ + bytes > capacity_)
      return nullptr;
    used_ += bytes;
    ++allocs;
    uintptr_t p = next_;
    next_ += bytes + 4096; // segments never touch
    live_[p] = bytes;
    return reinterpret_cast<void *>(p);
  }
  void raw_free(void *p) override {
    auto it = live_.find(reinterpret_cast<uintptr_t>(p));
    ASSERT_NE(it, live_.end()) << "raw_free of an unknown segment";
    used_ -= it->second;
    live_.erase(it);
    ++frees;
  }
  size_t total_memory() const override { return capacity_; }
  size_t free_memory() const override { return capacity_ - used_; }
  uint64_t record_event(StreamId stream) override {
    events_[++last_event_] = {stream, false};
    return last_event_;
  }
  bool event_done(uint64_t e) override { return events_.at(e).second; }
  void destroy_event(uint64_t e) override { events_.erase(e); }
  void synchronize() override {
    for (auto &[id, ev] : events_)
      ev.second = true;
  }
  /// The work queued so far on `stream` completes.
  void complete(StreamId stream) {
    for (auto &[id, ev] : events_)
      if (ev.first == stream)
        ev.second = true;
  }
  size_t live_segments() const { return live_.size(); }
  size_t pending_events() const { return events_.size(); }
  int allocs = 0, frees = 0;

private:
  size_t capacity_, used_ = 0;
  uintptr_t next_ = 1 << 20;
  std::map<uintptr_t, size_t> live_;
  uint64_t last_event_ = 0;
  std::map<uint64_t, std::pair<StreamId, bool>> events_;
};

struct Fixture {
  std::shared_ptr<FakeDevice> dev;
  CachingAllocator a;
  explicit Fixture(size_t capacity = size_t(1) << 40)
      : dev(std::make_shared<FakeDevice>(capacity)), a(dev, Device(kCUDA, 0)) {}
};

char *c(void *p) { return static_cast<char *>(p); }

} // namespace

TEST(CachingAllocator, RoundsAndSizesSegmentsAsPyTorch) {
  using CA = CachingAllocator;
  EXPECT_EQ(CA::round_size(1), 512u);
  EXPECT_EQ(CA::round_size(512), 512u);
  EXPECT_EQ(CA::round_size(513), 1024u);
  EXPECT_EQ(CA::segment_size(512), 2 * MiB);
  EXPECT_EQ(CA::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(CA::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(CA::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CA::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(CA::segment_size(11 * MiB), 12 * MiB);
  Fixture f;
  void *p = f.a.malloc(1);
  EXPECT_EQ(f.a.block_size(p), 512u);
  EXPECT_EQ(f.a.malloc(0), nullptr);
  MemoryStats s = f.a.stats();
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * MiB));
  EXPECT_EQ(s.allocated_bytes, 512);
  f.a.free(p);
}

TEST(CachingAllocator, SmallRequestsShareASegmentBySplitting) {
  Fixture f;
  void *p1 = f.a.malloc(512), *p2 = f.a.malloc(1000), *p3 = f.a.malloc(4096);
  EXPECT_EQ(f.dev->allocs, 1); // one 2 MiB segment
  EXPECT_EQ(c(p2), c(p1) + 512);
  EXPECT_EQ(c(p3), c(p2) + 1024);
  // Freeing the middle block and asking again reuses it (best fit).
  f.a.free(p2);
  void *p4 = f.a.malloc(700);
  EXPECT_EQ(p4, p2);
  MemoryStats s = f.a.stats();
  EXPECT_EQ(s.num_cache_hits, 3);
  EXPECT_EQ(s.active_blocks, 3);
  for (void *p : {p1, p3, p4})
    f.a.free(p);
  // All free: the pieces merged back into one block, released whole.
  f.a.empty_cache();
  EXPECT_EQ(f.dev->frees, 1);
  EXPECT_EQ(f.dev->live_segments(), 0u);
  EXPECT_EQ(f.a.stats().reserved_bytes, 0);
}

TEST(CachingAllocator, LargePoolSplitsOnlyWhenTheRestExceedsOneMiB) {
  Fixture f;
  void *big = f.a.malloc(19 * MiB + MiB / 2); // 20 MiB segment, 0.5 MiB left
  EXPECT_EQ(f.a.block_size(big), 20 * MiB);   // not split
  void *mid = f.a.malloc(3 * MiB);            // another segment, split
  EXPECT_EQ(f.a.block_size(mid), 3 * MiB);
  void *next = f.a.malloc(2 * MiB); // the rest of that segment
  EXPECT_EQ(c(next), c(mid) + 3 * MiB);
  EXPECT_EQ(f.dev->allocs, 2);
  // Small and large requests never share a pool.
  void *small = f.a.malloc(MiB);
  EXPECT_EQ(f.dev->allocs, 3);
  for (void *p : {big, mid, next, small})
    f.a.free(p);
  // A huge request is its own segment, rounded to 2 MiB.
  void *huge = f.a.malloc(31 * MiB);
  EXPECT_EQ(f.a.block_size(huge), 32 * MiB);
  f.a.free(huge);
}

TEST(CachingAllocator, BestFitAmongCachedBlocks) {
  Fixture f;
  // One 20 MiB segment cut into 2, 5, 3 MiB blocks and a 10 MiB rest.
  void *a2 = f.a.malloc(2 * MiB), *a5 = f.a.malloc(5 * MiB),
       *a3 = f.a.malloc(3 * MiB), *keep = f.a.malloc(2 * MiB);
  f.a.free(a2);
  f.a.free(a3); // free: 2 MiB, 3 MiB, and the 8 MiB rest (not adjacent)
  void *p = f.a.malloc(2 * MiB + 512); // the 3 MiB block fits best
  EXPECT_EQ(p, a3);
  for (void *q : {a5, keep, p})
    f.a.free(q);
  EXPECT_EQ(f.dev->allocs, 1);
}

TEST(CachingAllocator, StreamsDoNotShareCachedBlocks) {
  Fixture f;
  void *p = f.a.malloc(4096, /*stream=*/0);
  f.a.free(p);
  void *q = f.a.malloc(4096, /*stream=*/1);
  EXPECT_NE(q, p);
  EXPECT_EQ(f.dev->allocs, 2);
  void *r = f.a.malloc(4096, 0);
  EXPECT_EQ(r, p);
  f.a.free(q);
  f.a.free(r);
}

TEST(CachingAllocator, BlocksFreedDuringACaptureStayTheGraphs) {
  // Note [Memory of a CUDA graph]: an intermediate freed while stream 7 is
  // captured is kept for the graph: the capture's later requests reuse it,
  // eager work never gets it until the graph frees it. Blocks allocated
  // before the capture, and other streams, are unaffected.
  Fixture f;
  void *before = f.a.malloc(4096, 7);
  f.a.begin_private(7);
  void *inter = f.a.malloc(4096, 7);
  void *out = f.a.malloc(8192, 7);
  void *other = f.a.malloc(4096, 1);
  f.a.free(inter);  // kept: a replay writes it again
  f.a.free(before); // not the capture's: cached as usual
  f.a.free(other);  // another stream: cached as usual
  void *next = f.a.malloc(4096, 7);
  EXPECT_EQ(next, inter); // the capture's own intermediates share blocks
  void *big = f.a.malloc(64 * 1024, 7);
  EXPECT_NE(big, before);
  f.a.free(next);
  f.a.free(big);
  EXPECT_THROW(f.a.begin_private(3), Error);
  CachingAllocator::PrivateBlocks b = f.a.end_private();
  EXPECT_EQ(b.allocated, (std::vector<void *>{inter, out, inter, big}));
  std::sort(b.kept.begin(), b.kept.end());
  std::vector<void *> want{inter, big};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(b.kept, want);
  EXPECT_EQ(f.a.stats().allocated_bytes, int64_t(4096 + 8192 + 64 * 1024));
  EXPECT_EQ(f.a.malloc(4096, 1), other);
  EXPECT_EQ(f.a.malloc(4096, 7), before);
  // The graph, destroyed, frees what it kept: now it is reused.
  for (void *p : b.kept)
    f.a.free(p);
  void *again = f.a.malloc(4096, 7);
  EXPECT_EQ(again, inter);
  for (void *p : {again, out, other, before})
    f.a.free(p);
  EXPECT_EQ(f.a.stats().allocated_bytes, 0);
}

TEST(CachingAllocator, RecordStreamDelaysReuseUntilTheStreamIsDone) {
  Fixture f;
  void *p = f.a.malloc(4096, 0);
  f.a.record_stream(p, 1); // a kernel on stream 1 reads it
  f.a.free(p);
  EXPECT_EQ(f.dev->pending_events(), 1u);
  void *q = f.a.malloc(4096, 0);
  EXPECT_NE(q, p); // stream 1 may still be reading p
  f.dev->complete(1);
  void *r = f.a.malloc(4096, 0);
  EXPECT_EQ(r, p); // its event completed: reusable
  EXPECT_EQ(f.dev->pending_events(), 0u);
  f.a.free(q);
  f.a.free(r);
  // empty_cache waits for pending frees (synchronize) and releases all.
  void *s = f.a.malloc(4096, 0);
  f.a.record_stream(s, 2);
  f.a.free(s);
  f.a.empty_cache();
  EXPECT_EQ(f.dev->live_segments(), 0u);
  EXPECT_EQ(f.a.stats().reserved_bytes, 0);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheRetriesThenRaises) {
  Fixture f(30 * MiB);
  void *p = f.a.malloc(3 * MiB); // a 20 MiB segment
  f.a.free(p);                   // cached
  // 22 MiB does not fit the cached block, nor the device beside it: the
  // cache is released and the allocation retried.
  void *q = f.a.malloc(22 * MiB);
  ASSERT_NE(q, nullptr);
  MemoryStats s = f.a.stats();
  EXPECT_EQ(s.num_alloc_retries, 1);
  EXPECT_EQ(s.num_device_frees, 1);
  EXPECT_EQ(s.reserved_bytes, int64_t(22 * MiB));
  try {
    f.a.malloc(20 * MiB);
    ADD_FAILURE() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError &e) {
    std::string m = e.what();
    for (const char *want :
         {"CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
          "total capacity of 30.00 MiB of which 8.00 MiB is free. Of the "
          "allocated memory 22.00 MiB is allocated by ember, and 0.00 MiB is "
          "reserved by ember but unallocated.",
          "empty_cache()"})
      EXPECT_NE(m.find(want), std::string::npos) << m;
  }
  EXPECT_EQ(f.a.stats().num_ooms, 1);
  // The allocator goes on.
  f.a.free(q);
  void *r = f.a.malloc(25 * MiB);
  EXPECT_NE(r, nullptr);
  f.a.free(r);
}

TEST(CachingAllocator, MisuseRaises) {
  Fixture f;
  int x = 0;
  EXPECT_EMBER_ERROR(f.a.free(&x), "did not hand out");
  void *p = f.a.malloc(100);
  f.a.free(p);
  EXPECT_EMBER_ERROR(f.a.free(p), "freed twice");
  EXPECT_EMBER_ERROR(f.a.record_stream(p, 1), "did not hand out");
  EXPECT_EMBER_ERROR(f.a.malloc(~size_t(0)), "cannot allocate");
}

TEST(CachingAllocator, RandomTrafficKeepsBlocksDisjointAndCountersTrue) {
  Fixture f(512 * MiB);
  std::mt19937_64 rng(7);
  std::map<uintptr_t, std::pair<size_t, StreamId>> live; // ptr -> size
  std::vector<size_t> sizes = {1,       300,     512,      4000,
                               65536,   MiB - 7, MiB,      MiB + 1,
                               3 * MiB, 9 * MiB, 10 * MiB, 21 * MiB};
  for (int step = 0; step < 5000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      size_t n = sizes[rng() % sizes.size()];
      StreamId s = StreamId(rng() % 3);
      void *p = nullptr;
      try {
        p = f.a.malloc(n, s);
      } catch (const OutOfMemoryError &) {
        continue;
      }
      size_t got = f.a.block_size(p);
      ASSERT_GE(got, n);
      uintptr_t u = reinterpret_cast<uintptr_t>(p);
      // Disjoint from every live block.
      auto next = live.lower_bound(u);
      if (next != live.end()) {
        ASSERT_LE(u + got, next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.first, u);
      }
      live[u] = {got, s};
      if (rng() % 4 == 0)
        f.a.record_stream(p, StreamId(rng() % 3));
    } else {
      auto it = live.begin();
      std::advance(it, std::ptrdiff_t(rng() % live.size()));
      f.a.free(reinterpret_cast<void *>(it->first));
      live.erase(it);
      if (rng() % 10 == 0)
        f.dev->complete(StreamId(rng() % 3));
    }
    MemoryStats s = f.a.stats();
    int64_t bytes = 0;
    for (auto &[p, v] : live)
      bytes += int64_t(v.first);
    ASSERT_EQ(s.allocated_bytes, bytes);
    ASSERT_EQ(s.active_blocks, int64_t(live.size()));
    ASSERT_EQ(s.allocated_bytes_total - s.freed_bytes_total, s.allocated_bytes);
    ASSERT_LE(s.allocated_bytes, s.reserved_bytes);
    ASSERT_EQ(s.segments, int64_t(f.dev->live_segments()));
  }
  for (auto &[p, v] : live)
    f.a.free(reinterpret_cast<void *>(p));
  f.a.empty_cache();
  EXPECT_EQ(f.dev->live_segments(), 0u); // everything merged back
  EXPECT_EQ(f.a.stats().reserved_bytes, 0);
  EXPECT_GT(f.a.stats().num_cache_hits, 1000);
}
