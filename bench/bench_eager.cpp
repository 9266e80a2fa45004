// Eager-mode benchmarks of issue 2: per-op overhead on 1-element tensors,
// large elementwise ops against the copy bandwidth measured in the same run,
// and matmul against raw OpenBLAS sgemm in the same run.
//
// Run: build/bench/bench_eager --benchmark_repetitions=7
//        --benchmark_report_aggregates_only=true
#include "BenchUtil.h"

#include <ember/ember.h>

#include <benchmark/benchmark.h>
#include <cblas.h>

using namespace ember;

namespace {

// --- per-op overhead ---------------------------------------------------------

void BM_Overhead_Add(benchmark::State &s) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : s)
    benchmark::DoNotOptimize(add(a, b));
}
BENCHMARK(BM_Overhead_Add);

void BM_Overhead_Mul(benchmark::State &s) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : s)
    benchmark::DoNotOptimize(a * b);
}
BENCHMARK(BM_Overhead_Mul);

void BM_Overhead_AddScalar(benchmark::State &s) {
  Tensor a = ones({1});
  for (auto _ : s)
    benchmark::DoNotOptimize(a + 1);
}
BENCHMARK(BM_Overhead_AddScalar);

void BM_Overhead_View(benchmark::State &s) {
  Tensor a = ones({1});
  for (auto _ : s)
    benchmark::DoNotOptimize(a.view({1, 1}));
}
BENCHMARK(BM_Overhead_View);

// --- bandwidth
// -------------------------------------------------------------------

constexpr int64_t kN = 16 * 1024 * 1024; // 16M float32 = 64 MiB

void setBytes(benchmark::State &s, int64_t bytesPerIter) {
  s.SetBytesProcessed(s.iterations() * bytesPerIter);
}

/// The floor: a parallel memcpy of 64 MiB (read + write), on the same thread
/// pool the kernels use.
void BM_Copy_Memcpy(benchmark::State &s) {
  Tensor a = randn({kN}), b = empty({kN});
  for (auto _ : s) {
    bench::parallel_copy(b, a);
    benchmark::ClobberMemory();
  }
  setBytes(s, 2 * kN * 4);
}
BENCHMARK(BM_Copy_Memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Elementwise_Add(benchmark::State &s) {
  Tensor a = randn({kN}), b = randn({kN}), out = empty({kN});
  for (auto _ : s)
    benchmark::DoNotOptimize(add(a, b));
  setBytes(s, 3 * kN * 4);
}
BENCHMARK(BM_Elementwise_Add)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Elementwise_Mul(benchmark::State &s) {
  Tensor a = randn({kN}), b = randn({kN});
  for (auto _ : s)
    benchmark::DoNotOptimize(mul(a, b));
  setBytes(s, 3 * kN * 4);
}
BENCHMARK(BM_Elementwise_Mul)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Elementwise_Gelu(benchmark::State &s) {
  Tensor a = randn({kN});
  for (auto _ : s)
    benchmark::DoNotOptimize(gelu(a));
  setBytes(s, 2 * kN * 4);
}
BENCHMARK(BM_Elementwise_Gelu)->UseRealTime()->Unit(benchmark::kMillisecond);

// --- normalization and activations, 4096 x 4096 float32 ---------------------
// Forward, and forward + backward with a fixed output gradient (the time of
// autograd::grad, which writes no .grad()), as PyTorch's eager kernels are
// measured on the same shapes.

constexpr int64_t kRows = 4096, kCols = 4096;

void BM_Norm_LayerNorm(benchmark::State &s) {
  Tensor x = randn({kRows, kCols}), w = randn({kCols}), b = randn({kCols});
  auto o = nn::functional::LayerNormFuncOptions({kCols}).weight(w).bias(b);
  for (auto _ : s)
    benchmark::DoNotOptimize(nn::functional::layer_norm(x, o));
}
BENCHMARK(BM_Norm_LayerNorm)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Norm_LayerNormFwdBwd(benchmark::State &s) {
  Tensor x = randn({kRows, kCols}).requires_grad_();
  Tensor w = randn({kCols}).requires_grad_(),
         b = randn({kCols}).requires_grad_();
  Tensor g = randn({kRows, kCols});
  auto o = nn::functional::LayerNormFuncOptions({kCols}).weight(w).bias(b);
  for (auto _ : s) {
    Tensor y = nn::functional::layer_norm(x, o);
    benchmark::DoNotOptimize(autograd::grad({y}, {x, w, b}, {g}));
  }
}
BENCHMARK(BM_Norm_LayerNormFwdBwd)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_Norm_SoftmaxFwdBwd(benchmark::State &s) {
  Tensor x = randn({kRows, kCols}).requires_grad_();
  Tensor g = randn({kRows, kCols});
  for (auto _ : s) {
    Tensor y = softmax(x, -1);
    benchmark::DoNotOptimize(autograd::grad({y}, {x}, {g}));
  }
}
BENCHMARK(BM_Norm_SoftmaxFwdBwd)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Norm_Gelu(benchmark::State &s) {
  Tensor x = randn({kRows, kCols});
  for (auto _ : s)
    benchmark::DoNotOptimize(gelu(x));
}
BENCHMARK(BM_Norm_Gelu)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Norm_GeluFwdBwd(benchmark::State &s) {
  Tensor x = randn({kRows, kCols}).requires_grad_();
  Tensor g = randn({kRows, kCols});
  for (auto _ : s) {
    Tensor y = gelu(x);
    benchmark::DoNotOptimize(autograd::grad({y}, {x}, {g}));
  }
}
BENCHMARK(BM_Norm_GeluFwdBwd)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_Elementwise_AddInPlace(benchmark::State &s) {
  Tensor a = randn({kN}), b = randn({kN});
  for (auto _ : s)
    a.add_(b);
  setBytes(s, 3 * kN * 4);
}
BENCHMARK(BM_Elementwise_AddInPlace)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// --- matmul
// ----------------------------------------------------------------------

void BM_Mm_Ember(benchmark::State &s) {
  int64_t n = s.range(0);
  Tensor a = randn({n, n}), b = randn({n, n});
  for (auto _ : s)
    benchmark::DoNotOptimize(mm(a, b));
  s.counters["GFLOP/s"] =
      benchmark::Counter(double(s.iterations()) * 2.0 * double(n * n * n) / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Mm_Ember)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_Mm_RawSgemm(benchmark::State &s) {
  int64_t n = s.range(0);
  Tensor a = randn({n, n}), b = randn({n, n}), c = empty({n, n});
  for (auto _ : s) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(n), int(n),
                int(n), 1.0f, a.data_ptr<float>(), int(n), b.data_ptr<float>(),
                int(n), 0.0f, c.data_ptr<float>(), int(n));
    benchmark::ClobberMemory();
  }
  s.counters["GFLOP/s"] =
      benchmark::Counter(double(s.iterations()) * 2.0 * double(n * n * n) / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Mm_RawSgemm)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
