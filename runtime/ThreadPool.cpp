#include "runtime/ThreadPool.h"
#include "runtime/Env.h"
#include "runtime/Error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

extern "C" void openblas_set_num_threads(int) __attribute__((weak));
extern "C" char *openblas_get_corename() __attribute__((weak));
extern "C" void gotoblas_dynamic_init() __attribute__((weak));
extern "C" void gotoblas_dynamic_quit() __attribute__((weak));

namespace ember {
namespace {

thread_local bool tl_in_parallel = false;
/// set_num_threads' upper bound: far above any core count, below the
/// thousands of threads whose creation takes seconds and then fails.
constexpr int kMaxThreads = 1024;

// Note [Thread pool]
// Between jobs a worker spins for kSpin (polling for the next job, with a
// pause per poll), then sleeps on a condition variable; the caller, done
// with its own chunks, likewise spins for kSpin on the job's end before it
// sleeps. Without the spin, a worker woken by the condition variable
// arrived after the caller had already claimed every chunk of a short job
// (tens of microseconds to wake on the VM): an op of 2^18 floats ran on
// one thread, at 2.5x PyTorch's time with its spinning OpenMP workers
// (x + y: 100 us against 36; with the spin 22 us). A sleeping worker
// costs nothing; a spinning one takes a core for at most kSpin after each
// job. BLAS has no threads of its own to share the cores with: it runs on
// the pool's (Note [Threading matrix products]). A job is a range split in
// `nchunks` equal chunks; workers and the caller claim chunks with an atomic
// counter. The first exception thrown by a chunk is rethrown in the caller.
// Any thread may call run() or resize(): runMu_ lets one job or one resize
// in at a time (a resize waits for the running job, as the next job does),
// and the size, which parallel_for reads before it asks for a job, is an
// atomic.
constexpr std::chrono::microseconds kSpin(50);

/// Spins until `done()` or kSpin has passed.
template <class Done> void spin(const Done &done) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until)
      return;
  }
}

class ThreadPool {
public:
  explicit ThreadPool(int n) { resize(n); }
  ~ThreadPool() { stop(); }

  int size() const { return nthreads_.load(std::memory_order_relaxed); }

  /// Restarts with n threads (the caller's among them). When the system
  /// cannot start that many, the pool goes back to its old size and raises.
  void resize(int n) {
    std::lock_guard<std::mutex> runGuard(runMu_);
    int old = nthreads_;
    stop();
    nthreads_ = n;
    stop_ = false;
    try {
      for (int i = 1; i < n; ++i)
        workers_.emplace_back([this] { workerLoop(); });
    } catch (const std::system_error &e) {
      stop();
      nthreads_ = old;
      stop_ = false;
      for (int i = 1; i < old; ++i)
        workers_.emplace_back([this] { workerLoop(); });
      throw Error(detail::str("set_num_threads: could not start ", n,
                              " threads (", e.what(), "); still using ", old));
    }
  }

  void run(int64_t begin, int64_t end, int64_t nchunks,
           const std::function<void(int64_t, int64_t)> &fn) {
    std::lock_guard<std::mutex> runGuard(runMu_); // one job at a time
    Job job{begin, end, nchunks, &fn};
    {
      std::unique_lock<std::mutex> lk(mu_);
      // A worker still inside the previous job's work() must leave it before
      // the counters are reset.
      doneCv_.wait(lk, [&] { return active_ == 0; });
      job_ = job;
      next_.store(0);
      pending_.store(nchunks);
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work(job);
    auto finished = [&] { return pending_.load() == 0 && active_.load() == 0; };
    spin(finished);
    std::unique_lock<std::mutex> lk(mu_);
    doneCv_.wait(lk, finished);
    if (error_)
      std::rethrow_exception(error_);
  }

private:
  struct Job {
    int64_t begin = 0, end = 0, nchunks = 0;
    const std::function<void(int64_t, int64_t)> *fn = nullptr;
  };

  void work(const Job &job) {
    tl_in_parallel = true;
    int64_t len = job.end - job.begin;
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= job.nchunks)
        break;
      int64_t b = job.begin + len * c / job.nchunks;
      int64_t e = job.begin + len * (c + 1) / job.nchunks;
      try {
        (*job.fn)(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> g(mu_);
        if (!error_)
          error_ = std::current_exception();
      }
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> g(mu_);
        doneCv_.notify_all();
      }
    }
    tl_in_parallel = false;
  }

  void workerLoop() {
    uint64_t seen = 0;
    auto called = [&] { return stop_.load() || generation_.load() != seen; };
    for (;;) {
      Job job;
      spin(called);
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, called);
        if (stop_)
          return;
        seen = generation_;
        job = job_;
        ++active_;
      }
      work(job);
      std::lock_guard<std::mutex> g(mu_);
      --active_;
      doneCv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &t : workers_)
      t.join();
    workers_.clear();
  }

  std::atomic<int> nthreads_{1};
  std::vector<std::thread> workers_;
  std::mutex mu_, runMu_;
  std::condition_variable cv_, doneCv_;
  Job job_;
  std::atomic<int64_t> next_{0}, pending_{0};
  std::exception_ptr error_;
  // Written under mu_; atomic for the spinning reads.
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0}; // workers inside work()
};

int defaultThreads() {
  if (auto n = env::get_int("EMBER_NUM_THREADS", 1, 1024))
    return int(*n);
  return std::max(1u, std::thread::hardware_concurrency());
}

/// OpenBLAS computes on the calling thread only: ember cuts matrix
/// products into blocks for its pool (Note [Threading matrix products]).
void singleThreadedBlas() {
  if (openblas_set_num_threads)
    openblas_set_num_threads(1);
}

// Note [OpenBLAS on an unnamed CPU]
// OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels by the
// CPU's family and model. A virtual machine that hides the model (seen
// here: "Intel(R) Xeon(R) Processor", with AVX-512) gets its generic
// Prescott kernels: sgemm at 54 GFLOP/s where its SkylakeX kernels run at
// 267 on the same 2-core VM (1024^3), and every matmul of ember 5x slower.
// Unless the user chose a core (OPENBLAS_CORETYPE), ember then picks one by
// the instruction sets the CPU reports -- SkylakeX with AVX-512 F, BW, DQ
// and VL, Haswell with AVX2 and FMA -- and has OpenBLAS select again with
// it (gotoblas_dynamic_init reads OPENBLAS_CORETYPE) when libember loads.
// With another BLAS (no such symbols) nothing happens.
void chooseBlasCore() {
  if (!openblas_get_corename || !gotoblas_dynamic_init ||
      !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE"))
    return;
  const char *core = openblas_get_corename();
  if (!core || std::string(core) != "Prescott")
    return;
  const char *want = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    want = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = "Haswell";
  if (!want)
    return;
  setenv("OPENBLAS_CORETYPE", want, 0);
  gotoblas_dynamic_quit();
  gotoblas_dynamic_init();
  unsetenv("OPENBLAS_CORETYPE"); // (not passed on to child processes)
}
// When libember loads: after OpenBLAS's own start-up (a library it needs),
// before any of ember's BLAS calls (dot and mv included, which need no pool).
const bool g_blas_ready = (chooseBlasCore(), singleThreadedBlas(), true);

// Note [Thread pool after fork]
// fork() copies only the calling thread. A child's pool still held the
// parent's workers: resizing it joined threads that do not exist there
// (it hung on a handle glibc had reused for one of OpenBLAS's threads, or
// aborted on another's), and a job would have waited for them forever. A
// pthread_atfork handler marks the pool stale in the child; the child's
// next use leaks it (its threads, mutexes and condition variables are the
// parent's, never touched again) and starts a pool of the same size, as
// PyTorch does with its intra-op pool.
std::atomic<ThreadPool *> g_pool{nullptr};
std::atomic<bool> g_pool_stale{false};

ThreadPool *fresh_pool() {
  // (a child's own: a mutex a parent thread held at the fork stays held)
  static std::mutex *mu = new std::mutex();
  std::lock_guard<std::mutex> g(*mu);
  if (g_pool_stale.load()) {
    g_pool.store(new ThreadPool(g_pool.load()->size()));
    g_pool_stale.store(false);
  }
  return g_pool.load();
}

ThreadPool &pool() {
  static const bool started = [] {
    int n = defaultThreads();
    g_pool.store(new ThreadPool(n)); // never destroyed: workers outlive statics
    pthread_atfork(nullptr, nullptr, [] { g_pool_stale.store(true); });
    return true;
  }();
  (void)started;
  if (__builtin_expect(g_pool_stale.load(std::memory_order_relaxed), 0))
    return *fresh_pool();
  return *g_pool.load(std::memory_order_acquire);
}

} // namespace

int get_num_threads() { return pool().size(); }

void set_num_threads(int n) {
  EMBER_CHECK_VALUE(n >= 1, "set_num_threads: expected a positive number of ",
                    "threads, got ", n);
  EMBER_CHECK_VALUE(n <= kMaxThreads, "set_num_threads: ", n,
                    " threads requested; at most ", kMaxThreads,
                    " are supported (one per core is the useful number: ",
                    std::thread::hardware_concurrency(), " here)");
  EMBER_CHECK(!tl_in_parallel,
              "set_num_threads cannot be called inside a parallel region");
  pool().resize(n);
}

namespace detail {
bool in_parallel_region() { return tl_in_parallel; }

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                       const std::function<void(int64_t, int64_t)> &fn) {
  int64_t n = end - begin;
  int64_t nchunks = std::min<int64_t>(pool().size(), (n + grain - 1) / grain);
  if (nchunks <= 1) {
    fn(begin, end);
    return;
  }
  pool().run(begin, end, nchunks, fn);
}
} // namespace detail

} // namespace ember
