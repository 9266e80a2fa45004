// Memory statistics (eager/Memory.h): the torch.cuda-named functions on the
// CPU allocator, memory_stats keys, memory_summary, and the ember::cuda::
// variants' errors without a GPU.
#include "TestUtil.h"

#include "eager/Memory.h"

#include <sstream>

using namespace ember;
using namespace ember::test;

namespace {
// 1024 x 1024 float32: 4 MiB, which is its own size class (a power of two),
// so the allocator's counters move by exactly this much.
constexpr int64_t k4MiB = int64_t(4) << 20;
} // namespace

TEST(Memory, AllocatedTracksATensorAndItsPeak) {
  empty_cache();
  reset_peak_memory_stats();
  int64_t before = memory_allocated();
  EXPECT_EQ(max_memory_allocated(), before);
  {
    Tensor a = empty({1024, 1024});
    EXPECT_EQ(memory_allocated() - before, k4MiB);
    EXPECT_EQ(max_memory_allocated(), before + k4MiB);
    {
      Tensor b = empty({1024, 1024});
      EXPECT_EQ(memory_allocated() - before, 2 * k4MiB);
    }
    EXPECT_EQ(memory_allocated() - before, k4MiB);
    EXPECT_EQ(max_memory_allocated(), before + 2 * k4MiB); // the peak stays
  }
  EXPECT_EQ(memory_allocated(), before);
  EXPECT_EQ(max_memory_allocated(), before + 2 * k4MiB);
  reset_peak_memory_stats();
  EXPECT_EQ(max_memory_allocated(), memory_allocated());
  // The Device argument names the CPU explicitly.
  EXPECT_EQ(memory_allocated(Device(kCPU)), memory_allocated());
  EXPECT_EQ(memory_allocated(Device("cpu")), memory_allocated());
}

TEST(Memory, OddSizesRoundUpToTheBlockSize) {
  int64_t before = memory_allocated();
  for (int64_t n : {1, 17, 1000, 12345, 1000001}) {
    Tensor t = empty({n}, kDouble);
    int64_t delta = memory_allocated() - before;
    int64_t nbytes = n * 8;
    EXPECT_GE(delta, nbytes) << n;
    // Blocks are 64-byte aligned and waste at most 1/8 of their size.
    EXPECT_LE(delta, std::max<int64_t>(64, nbytes + nbytes / 8 + 64)) << n;
  }
  EXPECT_EQ(memory_allocated(), before);
}

TEST(Memory, ReservedHoldsTheCacheAndEmptyCacheReleasesIt) {
  empty_cache();
  reset_peak_memory_stats();
  EXPECT_EQ(memory_reserved(), memory_allocated()); // nothing cached
  int64_t reserved0 = memory_reserved();
  { Tensor a = empty({1024, 1024}); }
  // Freed, but cached for the next 4 MiB tensor.
  int64_t cached = memory_reserved();
  EXPECT_EQ(cached - reserved0, k4MiB);
  EXPECT_EQ(max_memory_reserved(), cached);
  {
    Tensor again = empty({1024, 1024}); // served from the cache
    EXPECT_EQ(memory_reserved(), cached);
  }
  empty_cache();
  EXPECT_LT(memory_reserved(), cached);
  EXPECT_EQ(memory_reserved(), reserved0);
  EXPECT_EQ(max_memory_reserved(), cached); // the peak stays until reset
  reset_peak_memory_stats();
  EXPECT_EQ(max_memory_reserved(), memory_reserved());
}

TEST(Memory, StatsUseTorchCudaKeysAndAgreeWithTheFunctions) {
  empty_cache();
  auto s0 = memory_stats();
  for (const char *k : {"allocated_bytes.all.current",
                        "allocated_bytes.all.peak",
                        "allocated_bytes.all.allocated",
                        "allocated_bytes.all.freed",
                        "active_bytes.all.current",
                        "reserved_bytes.all.current",
                        "reserved_bytes.all.peak",
                        "reserved_bytes.all.allocated",
                        "reserved_bytes.all.freed",
                        "allocation.all.current",
                        "allocation.all.peak",
                        "allocation.all.allocated",
                        "allocation.all.freed",
                        "active.all.current",
                        "segment.all.current",
                        "segment.all.peak",
                        "segment.all.allocated",
                        "segment.all.freed",
                        "num_alloc_retries",
                        "num_ooms",
                        "num_device_alloc",
                        "num_device_free"})
    EXPECT_TRUE(s0.count(k)) << k;
  EXPECT_EQ(s0.at("allocated_bytes.all.current"), memory_allocated());
  EXPECT_EQ(s0.at("reserved_bytes.all.current"), memory_reserved());
  {
    Tensor a = empty({1024, 1024});
    auto s1 = memory_stats();
    EXPECT_EQ(s1.at("allocation.all.allocated") -
                  s0.at("allocation.all.allocated"),
              1);
    EXPECT_EQ(s1.at("allocation.all.current") - s0.at("allocation.all.current"),
              1);
    EXPECT_EQ(s1.at("allocated_bytes.all.allocated") -
                  s0.at("allocated_bytes.all.allocated"),
              k4MiB);
    EXPECT_EQ(s1.at("segment.all.current") - s0.at("segment.all.current"),
              1); // the cache was empty: a fresh block from the system
    EXPECT_EQ(s1.at("reserved_bytes.all.allocated") -
                  s0.at("reserved_bytes.all.allocated"),
              k4MiB);
  }
  auto s2 = memory_stats();
  EXPECT_EQ(s2.at("allocation.all.freed") - s0.at("allocation.all.freed"), 1);
  EXPECT_EQ(s2.at("allocated_bytes.all.freed") -
                s0.at("allocated_bytes.all.freed"),
            k4MiB);
  // Invariants of the counters.
  EXPECT_EQ(s2.at("allocated_bytes.all.allocated") -
                s2.at("allocated_bytes.all.freed"),
            s2.at("allocated_bytes.all.current"));
  EXPECT_EQ(s2.at("allocation.all.allocated") - s2.at("allocation.all.freed"),
            s2.at("allocation.all.current"));
  EXPECT_EQ(s2.at("reserved_bytes.all.allocated") -
                s2.at("reserved_bytes.all.freed"),
            s2.at("reserved_bytes.all.current"));
  EXPECT_EQ(s2.at("segment.all.allocated") - s2.at("segment.all.freed"),
            s2.at("segment.all.current"));
  empty_cache();
  auto s3 = memory_stats();
  EXPECT_EQ(s3.at("segment.all.freed") - s2.at("segment.all.freed"),
            s2.at("segment.all.current") - s3.at("segment.all.current"));
}

TEST(Memory, OutOfMemoryRetriesOnceThenRaises) {
  auto s0 = memory_stats();
  // 2^48 float32 = 1 PiB: no machine has it, so the allocator releases its
  // cache, retries, and raises.
  EXPECT_EMBER_ERROR(empty({int64_t(1) << 48}), "CPU out of memory");
  auto s1 = memory_stats();
  EXPECT_EQ(s1.at("num_alloc_retries") - s0.at("num_alloc_retries"), 1);
  EXPECT_EQ(s1.at("num_ooms") - s0.at("num_ooms"), 1);
  EXPECT_EQ(s1.at("allocated_bytes.all.current"),
            s0.at("allocated_bytes.all.current"));
}

TEST(Memory, ARandomDrawThatRunsOutOfMemoryLeavesTheGenerator) {
  // The counters of a draw that fails are given back: the next draw is the
  // one the failed call would have been.
  Generator g(3);
  EXPECT_EMBER_ERROR(rand({int64_t(1) << 48}, g), "CPU out of memory");
  EXPECT_EMBER_ERROR(randint(0, 5, {int64_t(1) << 48}, g), "CPU out of memory");
  EXPECT_EQ(g.get_offset(), 0u);
  EXPECT_TRUE(close(rand({5}, g), rand({5}, Generator(3)), 0, 0));
}

TEST(Memory, SummaryIsATorchStyleTable) {
  Tensor keep = empty({1024, 1024});
  std::string s = memory_summary();
  std::istringstream in(s);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line))
    lines.push_back(line);
  ASSERT_GE(lines.size(), 10u);
  for (const std::string &l : lines) {
    EXPECT_EQ(l.size(), 77u) << "'" << l << "'";
    EXPECT_EQ(l.front(), '|');
    EXPECT_EQ(l.back(), '|');
  }
  EXPECT_EQ(lines.front(), "|" + std::string(75, '=') + "|");
  EXPECT_EQ(lines.back(), "|" + std::string(75, '=') + "|");
  for (const char *part :
       {"memory summary, device cpu", "CPU OOMs: ", "malloc retries: ",
        "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot "
        "Freed  ",
        "| Allocated memory      | ", "| Active memory         | ",
        "| CPU reserved memory   | ", "| Allocations           | ",
        "| Active allocs         | ", "| CPU reserved segments | "})
    EXPECT_NE(s.find(part), std::string::npos) << part << "\n" << s;
  // Sizes print as torch's: 6 digits and a unit, switching unit at 768 of
  // the smaller one (4 MiB of tensors is at least "4096 KiB").
  auto row = std::find_if(lines.begin(), lines.end(), [](const auto &l) {
    return l.rfind("| Allocated memory", 0) == 0;
  });
  ASSERT_NE(row, lines.end());
  EXPECT_TRUE(row->find(" KiB |") != std::string::npos ||
              row->find(" MiB |") != std::string::npos)
      << *row;
}

TEST(Memory, CudaFunctionsNeedAGpu) {
  if (cuda::is_available()) {
    // With a GPU, bad indices are rejected before the allocator is asked.
    EXPECT_EMBER_ERROR(cuda::memory_allocated(cuda::device_count()),
                       "invalid device index");
    EXPECT_EMBER_ERROR(cuda::memory_stats(-5), "invalid device index");
    GTEST_SKIP() << "a GPU is present: the no-GPU errors are not reachable";
  }
  const char *msg = "CUDA is not available";
  EXPECT_EMBER_ERROR(cuda::memory_allocated(), msg);
  EXPECT_EMBER_ERROR(cuda::memory_allocated(0), msg);
  EXPECT_EMBER_ERROR(cuda::max_memory_allocated(), msg);
  EXPECT_EMBER_ERROR(cuda::memory_reserved(), msg);
  EXPECT_EMBER_ERROR(cuda::max_memory_reserved(), msg);
  EXPECT_EMBER_ERROR(cuda::reset_peak_memory_stats(), msg);
  EXPECT_EMBER_ERROR(cuda::empty_cache(), msg);
  EXPECT_EMBER_ERROR(cuda::memory_stats(), msg);
  EXPECT_EMBER_ERROR(cuda::memory_summary(), msg);
  // The message says where the CPU statistics are.
  EXPECT_EMBER_ERROR(cuda::memory_allocated(),
                     "call ember::memory_allocated()");
  // A CUDA Device given to the generic functions says the same.
  EXPECT_EMBER_ERROR(memory_allocated(Device("cuda:0")), msg);
  EXPECT_EMBER_ERROR(memory_stats(Device(kCUDA, 1)), msg);
}

// The segment peak only falls at reset_peak_memory_stats: a block taken
// from the cache used to set it to the current count.
TEST(Memory, SegmentPeakKeepsItsMaximum) {
  empty_cache();
  int64_t base = memory_stats().at("segment.all.current");
  { Tensor a = empty({1000}), b = empty({3000}), c = empty({7000}); }
  empty_cache();
  Tensor d = empty({1000}); // a fresh segment
  Tensor e = empty({1000}); // and another
  auto s = memory_stats();
  EXPECT_EQ(s.at("segment.all.current"), base + 2);
  EXPECT_GE(s.at("segment.all.peak"), base + 3);
  reset_peak_memory_stats();
  s = memory_stats();
  EXPECT_EQ(s.at("segment.all.peak"), s.at("segment.all.current"));
}
