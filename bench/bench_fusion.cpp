// Fused CPU kernels of issue 5, side by side in one run with eager and the
// floor (a parallel memcpy of the same bytes on the same thread pool):
// - gelu(x * w + b) over 16.8M float32 (w, b rows broadcast over x);
// - an 8-op pointwise chain; bias + SiLU + mul;
// - softmax and layer_norm over 4096 x 4096 float32 (reduction kernels);
// - the compile time of one kernel, cold (a new kernel each iteration) and
//   warm (the in-process cache); a graph's first call with its kernels in
//   the disk cache (a second process).
// The MLP 784-1024-1024-10 at batch 256 is bench_compile's BM_MLP_*.
//
// Run: bench/run.sh fusion
#include "BenchUtil.h"

#include <ember/ember.h>

#include "codegen/Kernel.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <tuple>

#include <cstdlib>

using namespace ember;

namespace {

constexpr int64_t kRows = 4096, kCols = 4096; // 16.8M float32 = 64 MiB

/// Bytes a pointwise kernel must move: its big inputs and its output.
void set_bytes(benchmark::State &s, int64_t tensors) {
  s.SetBytesProcessed(s.iterations() * tensors * kRows * kCols * 4);
}

void BM_Floor_Memcpy(benchmark::State &s) {
  Tensor a = randn({kRows, kCols}), b = empty({kRows, kCols});
  for (auto _ : s)
    bench::parallel_copy(b, a);
  set_bytes(s, 2);
}
BENCHMARK(BM_Floor_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);

Tensor gelu_chain(const Tensor &x, const Tensor &w, const Tensor &b) {
  return nn::functional::gelu(x * w + b);
}
Tensor chain8(const Tensor &x, const Tensor &y) {
  return ((((x * y + 1).relu() - 0.5) * x).abs() + y).sigmoid() * 2;
}
Tensor bias_silu_mul(const Tensor &x, const Tensor &b, const Tensor &y) {
  return nn::functional::silu(x + b) * y;
}

struct Inputs {
  Tensor x = randn({kRows, kCols}), y = randn({kRows, kCols});
  Tensor w = randn({kCols}), b = randn({kCols});
};

/// Times `call()`; `tensors` big tensors move per call (the floor's unit).
template <class F> void run(benchmark::State &s, F call, int64_t tensors) {
  NoGradGuard g;
  call(); // warm-up (and, compiled, the compile)
  for (auto _ : s)
    benchmark::DoNotOptimize(call());
  set_bytes(s, tensors);
}

Tensor softmax_fn(const Tensor &x) { return x.softmax(-1); }
Tensor layer_norm_fn(const Tensor &x, const Tensor &w, const Tensor &b) {
  return nn::functional::layer_norm(
      x, nn::functional::LayerNormFuncOptions({kCols}).weight(w).bias(b));
}

/// Registers BM_<name>_Eager and BM_<name>_Compiled: `fn` on the inputs
/// `pick` chooses, run eagerly and through compile(fn); `tensors` big
/// tensors move per call.
template <class Fn, class Pick>
void side_by_side(const std::string &name, Fn fn, Pick pick, int64_t tensors) {
  benchmark::RegisterBenchmark(
      ("BM_" + name + "_Eager").c_str(),
      [=](benchmark::State &s) {
        Inputs in;
        run(
            s, [&] { return std::apply(fn, pick(in)); }, tensors);
      })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("BM_" + name + "_Compiled").c_str(),
                               [=](benchmark::State &s) {
                                 Inputs in;
                                 auto f = compile(fn);
                                 run(
                                     s, [&] { return std::apply(f, pick(in)); },
                                     tensors);
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

const bool kSideBySide = [] {
  side_by_side(
      "Gelu", gelu_chain,
      [](const Inputs &in) { return std::make_tuple(in.x, in.w, in.b); }, 2);
  side_by_side(
      "Chain8", chain8,
      [](const Inputs &in) { return std::make_tuple(in.x, in.y); }, 3);
  side_by_side(
      "BiasSiluMul", bias_silu_mul,
      [](const Inputs &in) { return std::make_tuple(in.x, in.b, in.y); }, 3);
  side_by_side(
      "Softmax", softmax_fn,
      [](const Inputs &in) { return std::make_tuple(in.x); }, 2);
  side_by_side(
      "LayerNorm", layer_norm_fn,
      [](const Inputs &in) { return std::make_tuple(in.x, in.w, in.b); }, 2);
  return true;
}();

// --- compile time of one kernel
// ------------------------------------------------

void BM_KernelCompile_Cold(benchmark::State &s) {
  // A different constant each iteration: a new kernel, compiled from scratch
  // (the JIT itself is warm: the first kernel of a process also pays for
  // LLVM's initialisation, measured below).
  NoGradGuard g;
  Tensor x = randn({1024});
  static double next = 0.5; // across repetitions too: always a new kernel
  ::setenv("EMBER_CACHE_DIR", "", 1); // the disk cache off: really compile
  for (auto _ : s) {
    double c = next;
    next += 1.0;
    auto f = compile([c](const Tensor &t) { return (t * c).exp() + c; });
    benchmark::DoNotOptimize(f(x));
  }
  ::unsetenv("EMBER_CACHE_DIR");
}
BENCHMARK(BM_KernelCompile_Cold)->Unit(benchmark::kMillisecond);

void BM_KernelCompile_Warm(benchmark::State &s) {
  // The same graph in a new compiled function: captured and lowered again,
  // its kernel found in the in-process cache.
  NoGradGuard g;
  Tensor x = randn({1024});
  for (auto _ : s) {
    auto f = compile([](const Tensor &t) { return (t * 0.5).exp() + 0.5; });
    benchmark::DoNotOptimize(f(x));
  }
}
BENCHMARK(BM_KernelCompile_Warm)->Unit(benchmark::kMillisecond);

void BM_GraphFromDiskCache(benchmark::State &s) {
  // A new process's first call of a graph compiled before: capture, MLIR,
  // passes, and the softmax and pointwise kernels loaded from the disk cache
  // (the in-process cache emptied each iteration).
  NoGradGuard g;
  char dir[] = "/tmp/ember-bench-XXXXXX";
  EMBER_CHECK(::mkdtemp(dir), "mkdtemp");
  ::setenv("EMBER_CACHE_DIR", dir, 1);
  Tensor x = randn({64, 256});
  auto fn = [](const Tensor &t) { return ((t * 0.5).exp() + 1).softmax(-1); };
  compile(fn)(x); // fills the disk cache
  for (auto _ : s) {
    codegen::clear_kernel_cache();
    auto f = compile(fn);
    benchmark::DoNotOptimize(f(x));
  }
  ::unsetenv("EMBER_CACHE_DIR");
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_GraphFromDiskCache)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
