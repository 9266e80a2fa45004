// compile() benchmarks of issue 4 (capture, cache, fallback executor):
// - the cost of running a function through compile() against running it
//   eagerly, on small tensors where the per-op cost shows: capture on every
//   call (a cache hit), and replay mode (no capture), for chains of N ops;
// - the cost of compiling one graph of N ops at opt_level 0 (capture, the
//   ember MLIR module built and verified, imported back into a program),
//   cold each iteration (bench_fusion measures kernel compile times);
// - an MLP 784-1024-1024-10 at batch 256 (inference), eager vs compiled:
//   with real work per op, the front end's overhead should vanish.
//
// Run: bench/run.sh compile
#include <ember/ember.h>

#include <benchmark/benchmark.h>

using namespace ember;

namespace {

/// N pointwise ops on x (mul, add, relu, ... in turn).
Tensor chain(const Tensor &x, int64_t n) {
  Tensor y = x;
  for (int64_t i = 0; i < n; ++i) {
    switch (i % 4) {
    case 0:
      y = y * 1.5;
      break;
    case 1:
      y = y + x;
      break;
    case 2:
      y = y.relu();
      break;
    default:
      y = y - 0.25;
      break;
    }
  }
  return y;
}

/// (ops in the chain, optimisation level): level 0 runs each op's eager
/// kernel (the front end's own cost), level 2 one fused kernel.
void chain_args(benchmark::internal::Benchmark *b) {
  for (int64_t level : {0, 2})
    for (int64_t n : {1, 8, 64})
      b->Args({n, level});
}

// --- per-call overhead on small tensors (16 floats) ------------------------

void BM_Chain_Eager(benchmark::State &s) {
  NoGradGuard g;
  Tensor x = randn({16});
  for (auto _ : s)
    benchmark::DoNotOptimize(chain(x, s.range(0)));
  s.counters["ops"] = double(s.range(0));
}
BENCHMARK(BM_Chain_Eager)->Arg(1)->Arg(8)->Arg(64);

/// A chain through compile(): captured at every call (a cache hit), or
/// replayed without running the function.
void compiled_chain(benchmark::State &s, CompileOptions options) {
  NoGradGuard g;
  Tensor x = randn({16});
  int64_t n = s.range(0);
  options.opt_level(s.range(1));
  auto f = compile([n](const Tensor &t) { return chain(t, n); }, options);
  f(x); // capture + compile once
  for (auto _ : s)
    benchmark::DoNotOptimize(f(x));
  s.counters["ops"] = double(n);
}
void BM_Chain_Compiled(benchmark::State &s) { compiled_chain(s, {}); }
BENCHMARK(BM_Chain_Compiled)->Apply(chain_args);
void BM_Chain_Replay(benchmark::State &s) {
  compiled_chain(s, CompileOptions().replay(true));
}
BENCHMARK(BM_Chain_Replay)->Apply(chain_args);

// --- compile time of one graph, cold -----------------------------------------

/// One cold compile of an n-op chain per iteration, at `level`, with the
/// parts of each first call as counters: building, verifying and importing
/// the module and running the passes (compile_ms), the passes alone
/// (passes_ms, explain()'s pass_times) and running the function with
/// capture tensors (capture_ms).
void compile_chain(benchmark::State &s, int64_t level) {
  NoGradGuard g;
  Tensor x = randn({16});
  int64_t n = s.range(0);
  double compile_s = 0, capture_s = 0, passes_s = 0;
  for (auto _ : s) {
    auto f = compile([n](const Tensor &t) { return chain(t, n); },
                     CompileOptions().opt_level(level));
    benchmark::DoNotOptimize(f(x));
    s.PauseTiming(); // explain() prints the graph (Note [Graph texts when
                     // asked]): not part of compiling it
    ExplainOutput e = f.explain();
    compile_s += e.compile_seconds;
    capture_s += e.capture_seconds;
    for (const GraphInfo &gi : e.graphs)
      for (const PassTime &p : gi.pass_times)
        passes_s += p.seconds;
    e = ExplainOutput();
    s.ResumeTiming();
  }
  s.counters["compile_ms"] = compile_s * 1e3 / double(s.iterations());
  s.counters["capture_ms"] = capture_s * 1e3 / double(s.iterations());
  s.counters["passes_ms"] = passes_s * 1e3 / double(s.iterations());
  s.counters["ops"] = double(n);
}

void BM_CompileGraph(benchmark::State &s) { compile_chain(s, 0); }
BENCHMARK(BM_CompileGraph)
    ->Arg(1)
    ->Arg(8)
    ->Arg(64)
    ->Unit(benchmark::kMicrosecond);

// --- compiler scale: long chains at level 2 ----------------------------------

/// The pass pipeline (passes_ms) must stay near-linear in the chain's length.
void BM_CompileLongChain(benchmark::State &s) { compile_chain(s, 2); }
BENCHMARK(BM_CompileLongChain)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(50000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// --- MLP inference
// -------------------------------------------------------------

struct Mlp {
  nn::Sequential model{nn::Linear(784, 1024), nn::ReLU(),
                       nn::Linear(1024, 1024), nn::ReLU(),
                       nn::Linear(1024, 10)};
  Tensor x = randn({256, 784});
};

void BM_MLP_Eager(benchmark::State &s) {
  NoGradGuard g;
  Mlp m;
  for (auto _ : s)
    benchmark::DoNotOptimize(m.model->forward(m.x));
}
BENCHMARK(BM_MLP_Eager)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_MLP_Compiled(benchmark::State &s) {
  NoGradGuard g;
  Mlp m;
  auto f = compile([&](const Tensor &x) { return m.model->forward(x); });
  f(m.x);
  for (auto _ : s)
    benchmark::DoNotOptimize(f(m.x));
}
BENCHMARK(BM_MLP_Compiled)->UseRealTime()->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
