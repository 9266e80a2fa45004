// runtime/: dtypes and promotion, half conversions, the caching allocator's
// statistics, the thread pool, the environment registry, devices.
#include "TestUtil.h"
#include "runtime/Env.h"
#include "runtime/Philox.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace ember;
using namespace ember::test;

TEST(Runtime, PromotionTableSpotChecksAgainstPyTorch) {
  // torch.promote_types(a, b) for pairs PyTorch users meet.
  EXPECT_EQ(promoteTypes(kByte, kChar), kShort);
  EXPECT_EQ(promoteTypes(kBool, kByte), kByte);
  EXPECT_EQ(promoteTypes(kBool, kFloat), kFloat);
  EXPECT_EQ(promoteTypes(kInt, kLong), kLong);
  EXPECT_EQ(promoteTypes(kLong, kHalf), kHalf);
  EXPECT_EQ(promoteTypes(kHalf, kBFloat16), kFloat);
  EXPECT_EQ(promoteTypes(kBFloat16, kDouble), kDouble);
  EXPECT_EQ(promoteTypes(kFloat, kDouble), kDouble);
  EXPECT_EQ(promoteTypes(kChar, kLong), kLong);
  EXPECT_EQ(promoteTypes(kShort, kBFloat16), kBFloat16);
  // The table is symmetric, idempotent on the diagonal.
  for (int a = 0; a < kNumScalarTypes; ++a) {
    EXPECT_EQ(promoteTypes(ScalarType(a), ScalarType(a)), ScalarType(a));
    for (int b = 0; b < kNumScalarTypes; ++b)
      EXPECT_EQ(promoteTypes(ScalarType(a), ScalarType(b)),
                promoteTypes(ScalarType(b), ScalarType(a)));
  }
}

TEST(Runtime, ResultTypeRanksDimTensorsZeroDimAndScalars) {
  Tensor i8 = ones({2}, kChar), f16 = ones({2}, kHalf);
  Tensor zf64 = tensor(1.0, kDouble), zi64 = tensor(1);
  EXPECT_EQ(result_type(i8, zi64), kChar);   // 0-dim int: same category
  EXPECT_EQ(result_type(i8, zf64), kDouble); // 0-dim float: higher category
  EXPECT_EQ(result_type(f16, zf64), kHalf);
  EXPECT_EQ(result_type(i8, Scalar(1.5)), kFloat); // default dtype
  EXPECT_EQ(result_type(zi64, Scalar(1.5)), kFloat);
  EXPECT_EQ(result_type(zi64, zf64), kDouble);
  EXPECT_EQ(result_type(ones({2}, kBool), Scalar(true)), kBool);
  EXPECT_EQ(result_type(ones({2}, kBool), Scalar(3)), kLong);
  set_default_dtype(kDouble);
  EXPECT_EQ(result_type(i8, Scalar(1.5)), kDouble);
  EXPECT_EQ(tensor({1.5}).dtype(), kDouble);
  set_default_dtype(kFloat);
  EXPECT_EMBER_ERROR(set_default_dtype(kLong), "only floating dtypes");
}

TEST(Runtime, HalfAndBFloat16RoundToNearestEven) {
  EXPECT_EQ(float(Half(1.0f)), 1.0f);
  EXPECT_EQ(float(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(Half(65520.0f)))); // rounds up to inf
  EXPECT_EQ(float(Half(65519.0f)), 65504.0f);
  EXPECT_EQ(float(Half(5.960464477539063e-8f)), 5.960464477539063e-8f);
  EXPECT_EQ(float(Half(1.0f + 1.0f / 2048)), 1.0f); // tie -> even
  EXPECT_EQ(float(Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_TRUE(std::isnan(float(Half(std::nanf("")))));
  EXPECT_EQ(float(Half(-0.0f)), -0.0f);
  EXPECT_TRUE(std::signbit(float(Half(-0.0f))));
  EXPECT_EQ(float(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(BFloat16(1.00390625f)), 1.0f); // tie -> even
  EXPECT_EQ(float(BFloat16(1.01171875f)), 1.015625f);
  EXPECT_TRUE(std::isnan(float(BFloat16(std::nanf("")))));
  // Every half value round-trips.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h(uint16_t(b), Half::from_bits_t{});
    float f = h;
    if (!std::isnan(f)) {
      EXPECT_EQ(Half(f).x, uint16_t(b)) << b;
    }
  }
}

TEST(Runtime, CachingAllocatorStatistics) {
  Device cpu(kCPU);
  empty_cache(cpu);
  reset_peak_memory_stats(cpu);
  MemoryStats before = memory_stats_of(cpu);
  {
    Tensor a = empty({1024, 1024}); // 4 MiB
    MemoryStats during = memory_stats_of(cpu);
    EXPECT_EQ(during.allocated_bytes - before.allocated_bytes, 4 << 20);
    EXPECT_GE(during.allocated_bytes_peak, during.allocated_bytes);
  }
  MemoryStats after = memory_stats_of(cpu);
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_GE(after.reserved_bytes, before.reserved_bytes + (4 << 20)); // cached
  int64_t hits = after.num_cache_hits;
  { Tensor b = empty({1024, 1024}); } // reuses the cached block
  EXPECT_EQ(memory_stats_of(cpu).num_cache_hits, hits + 1);
  empty_cache(cpu);
  EXPECT_EQ(memory_stats_of(cpu).reserved_bytes,
            memory_stats_of(cpu).allocated_bytes);
  auto m = memory_stats_of(cpu).as_map();
  EXPECT_TRUE(m.count("allocated_bytes.all.current"));
  EXPECT_TRUE(m.count("reserved_bytes.all.peak"));
  // 64-byte alignment.
  for (int64_t n : {1, 7, 100, 5000, 123457})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(empty({n}).data_ptr()) % 64, 0u);
  if (!cuda::is_available())
    EXPECT_EMBER_ERROR(memory_stats_of(Device(kCUDA, 0)),
                       "CUDA is not available");
}

TEST(Runtime, ThreadPoolCoversTheRangeOnceAndPropagatesErrors) {
  int saved = get_num_threads();
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    EXPECT_EQ(get_num_threads(), threads);
    std::vector<std::atomic<int>> hit(100000);
    parallel_for(0, 100000, 1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        hit[size_t(i)]++;
    });
    for (auto &h : hit)
      ASSERT_EQ(h.load(), 1);
  }
  EXPECT_THROW(parallel_for(0, 100000, 10,
                            [](int64_t b, int64_t) {
                              if (b > 0)
                                throw ValueError("chunk failed");
                            }),
               ValueError);
  // Nested parallel_for runs serially instead of deadlocking.
  std::atomic<int64_t> sum{0};
  parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(0, 1000, 10,
                   [&](int64_t lo, int64_t hi) { sum += hi - lo; });
  });
  EXPECT_EQ(sum.load(), 4000);
  set_num_threads(saved);
  EXPECT_EMBER_ERROR(set_num_threads(0), "positive number of threads");
}

TEST(Runtime, ThreadPoolServesSeveralCallersWhileItIsResized) {
  // Two threads run parallel_for on the one pool while two others resize
  // it and read its size: jobs and resizes take turns (two resizes at once
  // joined the same workers), and the size is an atomic (TSan checks).
  int saved = get_num_threads();
  std::atomic<int64_t> covered{0};
  auto caller = [&] {
    for (int r = 0; r < 100; ++r)
      parallel_for(0, 10000, 100,
                   [&](int64_t b, int64_t e) { covered += e - b; });
  };
  std::thread c1(caller), c2(caller);
  auto resizer = [] {
    for (int r = 0; r < 30; ++r) {
      set_num_threads(1 + r % 3);
      EXPECT_GE(get_num_threads(), 1);
    }
  };
  std::thread r1(resizer), r2(resizer);
  c1.join();
  c2.join();
  r1.join();
  r2.join();
  EXPECT_EQ(covered.load(), 2 * 100 * 10000);
  set_num_threads(saved);
}

// Note [Thread pool]: between jobs, workers spin for the next one, or sleep
// after the spin. Jobs right after each other, after a matrix product (its
// blocks run on the pool: Note [Threading matrix products]), and after a
// long pause all run on every thread: each job's two chunks wait for each
// other, so one thread alone would time out (the caller never takes both).
TEST(Runtime, ThreadPoolWorkersTakePartAfterSpinningProductsOrSleeping) {
  int saved = get_num_threads();
  set_num_threads(2);
  auto both_threads = [] {
    std::atomic<int> arrived{0};
    std::atomic<bool> met{true};
    parallel_for(0, 2, 1, [&](int64_t, int64_t) {
      arrived++;
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (arrived.load() < 2)
        if (std::chrono::steady_clock::now() > until) {
          met = false;
          return;
        }
    });
    return met.load();
  };
  for (int i = 0; i < 50; ++i)
    ASSERT_TRUE(both_threads()) << "back to back, job " << i;
  Tensor m = randn({256, 256});
  for (int i = 0; i < 20; ++i) {
    Tensor p = m.mm(m);
    ASSERT_TRUE(both_threads()) << "after a product, job " << i;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(both_threads()) << "after sleeping";
  set_num_threads(saved);
}

// Note [Thread pool after fork]: a forked child starts a pool of its own.
// Found by a probe: a child that had started a thread (here OpenBLAS's, by
// a product) and then resized the pool hung joining the parent's workers.
// The child checks its results and exits with 0; a hang ends it by alarm.
TEST(Runtime, ThreadPoolWorksInAForkedChild) {
  int saved = get_num_threads();
  set_num_threads(2);
  Tensor x = randn({1 << 18}), y = randn({1 << 18});
  Tensor want = x + y;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);
    Tensor m = randn({256, 256});
    bool ok = allclose(m.mm(m), m.to(kDouble).mm(m.to(kDouble)).to(kFloat),
                       1e-4, 1e-3);
    set_num_threads(3);
    ok = ok && equal(x + y, want) && get_num_threads() == 3;
    set_num_threads(2);
    std::atomic<int64_t> covered{0};
    parallel_for(0, 100000, 100,
                 [&](int64_t b, int64_t e) { covered += e - b; });
    ok = ok && covered.load() == 100000 && equal(x + y, want);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status;
  EXPECT_TRUE(equal(x + y, want)); // the parent's pool still works
  set_num_threads(saved);
}

TEST(Runtime, GeneratorSeedReadWhileAnotherThreadSeeds) {
  // A generator is shared by the threads that hold it: its seed is read and
  // written under its lock.
  Generator g(1);
  std::thread seeder([&] {
    for (uint64_t s = 0; s < 1000; ++s)
      g.set_current_seed(s);
  });
  uint64_t last = 0;
  for (int i = 0; i < 1000; ++i) {
    last = std::max(last, g.current_seed());
    Tensor r = rand({4}, g);
    EXPECT_EQ(r.numel(), 4);
  }
  seeder.join();
  EXPECT_EQ(g.current_seed(), 999u);
  EXPECT_LE(last, 999u);
}

TEST(Runtime, PhiloxMatchesTheKnownAnswers) {
  // Random123's tests/kat_vectors, the three philox4x32 10 lines: counter,
  // key, result.
  using philox::Counter;
  EXPECT_EQ(philox::philox4x32_10({0, 0, 0, 0}, 0, 0),
            (Counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      philox::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                            0xffffffff, 0xffffffff),
      (Counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(
      philox::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                            0xa4093822, 0x299f31d0),
      (Counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
  // A uniform with `digits` bits is below 1 for the largest bits.
  EXPECT_EQ(philox::uniform(~uint64_t(0), 24), 1.0 - 0x1.0p-24);
  EXPECT_EQ(philox::uniform(0, 53), 0.0);
  // It is the top `digits` bits times 2^-digits, exactly (every random
  // tensor's values depend on it).
  for (int digits : {8, 11, 24, 53})
    for (uint64_t i = 0; i < 1000; ++i) {
      uint64_t bits = philox::word64(philox::bits(7, i), int(i % 2));
      EXPECT_EQ(philox::uniform(bits, digits),
                std::ldexp(double(bits >> (64 - digits)), -digits));
    }
}

TEST(Runtime, GeneratorStateIsASeedAndAnOffset) {
  Generator g(5);
  EXPECT_EQ(g.get_state(), (GeneratorState{5, 0}));
  EXPECT_EQ(g.reserve(10), (GeneratorState{5, 0}));
  EXPECT_EQ(g.get_offset(), 10u);
  g.set_offset(3);
  EXPECT_EQ(g.reserve(1), (GeneratorState{5, 3}));
  g.set_current_seed(9); // rewinds the offset
  EXPECT_EQ(g.get_state(), (GeneratorState{9, 0}));
  // Copies share the state.
  Generator h = g;
  h.reserve(7);
  EXPECT_EQ(g.get_offset(), 7u);
}

TEST(Runtime, EnvironmentRegistryRejectsUnknownNames) {
  const auto &vars = env::registry();
  EXPECT_FALSE(vars.empty());
  EXPECT_EQ(std::string(vars[0].name), "EMBER_NUM_THREADS");
  // Unknown EMBER_* variables are reported on first use; the registry has
  // already been read in this process, so check the parse of a value.
  setenv("EMBER_NUM_THREADS", "abc", 1);
  EXPECT_EMBER_ERROR(env::get_int("EMBER_NUM_THREADS", 1, 64),
                     "is not an integer");
  unsetenv("EMBER_NUM_THREADS");
}

TEST(Runtime, Devices) {
  EXPECT_EQ(Device("cpu"), Device(kCPU));
  EXPECT_EQ(Device("cuda:1").index(), 1);
  EXPECT_EQ(Device("cuda:1").str(), "cuda:1");
  EXPECT_EMBER_ERROR(Device("tpu"), "Expected one of cpu, cuda");
  EXPECT_EMBER_ERROR(Device("cuda:x"), "Invalid device string");
}

TEST(Runtime, CudaAvailabilityIsProbedAtRunTime) {
  // The driver is loaded with dlopen: this works on machines without one
  // (where it reports no device) and with one.
  int n = cuda::device_count();
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda::is_available(), n > 0);
  if (!cuda::is_available())
    std::printf("[ INFO     ] no CUDA driver or device on this machine\n");
  if (!cuda::is_available())
    EXPECT_EMBER_ERROR(zeros({2}, Device(kCUDA, 0)), "CUDA is not available");
}

extern "C" char *openblas_get_corename() __attribute__((weak));

// Note [OpenBLAS on an unnamed CPU] (runtime/ThreadPool.cpp): on a CPU with
// AVX-512 or AVX2, OpenBLAS never runs its generic Prescott kernels (5x
// slower matmuls) because a virtual machine hid the CPU's model; a core
// the user chose stays.
TEST(Runtime, BlasUsesTheCpusVectorKernels) {
  if (!openblas_get_corename || std::getenv("OPENBLAS_CORETYPE"))
    GTEST_SKIP() << "not OpenBLAS, or OPENBLAS_CORETYPE chose its core";
  if (!__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "a CPU without AVX2: Prescott may be the right core";
  EXPECT_STRNE(openblas_get_corename(), "Prescott");
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr); // not left set
}
