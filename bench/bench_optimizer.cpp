// Optimizer steps over the parameters of a transformer encoder (4 layers,
// d_model 256, feed-forward 1024: 48 tensors, 3.2M floats, as bench_vs_torch's
// transformer_train), eagerly and compiled, the compiled step with and
// without combined kernels (CompileOptions::combo_kernels: every parameter's
// update in one launch, or one kernel per parameter). Google Benchmark;
// bench/run.sh optimizer writes bench/results/optimizer.{json,md}.
#include <ember/ember.h>

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

using namespace ember;

namespace {

std::vector<Tensor> transformer_parameters() {
  manual_seed(0);
  std::vector<Tensor> params;
  const std::vector<std::vector<int64_t>> layer = {
      {768, 256}, {768}, {256, 256},  {256},  {256},       {256},
      {256},      {256}, {1024, 256}, {1024}, {256, 1024}, {256}};
  for (int l = 0; l < 4; ++l)
    for (const auto &s : layer) {
      Tensor p = randn(s).requires_grad_();
      p.mutable_grad() = randn(s);
      params.push_back(p);
    }
  return params;
}

std::unique_ptr<optim::Optimizer> make(int kind, std::vector<Tensor> params) {
  if (kind == 0)
    return std::make_unique<optim::SGD>(params,
                                        optim::SGDOptions(0.01).momentum(0.9));
  return std::make_unique<optim::AdamW>(
      params, optim::AdamWOptions(1e-3).weight_decay(0.01));
}

/// range(0): 0 SGD with momentum, 1 AdamW.
void BM_Step_Eager(benchmark::State &s) {
  auto opt = make(int(s.range(0)), transformer_parameters());
  opt->step();
  for (auto _ : s)
    opt->step();
}
BENCHMARK(BM_Step_Eager)
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

/// range(1): combo_kernels.
void BM_Step_Compiled(benchmark::State &s) {
  auto opt = make(int(s.range(0)), transformer_parameters());
  auto step = compile([&] { opt->step(); },
                      CompileOptions().combo_kernels(s.range(1) != 0));
  for (int i = 0; i < 3; ++i)
    step();
  for (auto _ : s)
    step();
  s.counters["kernels"] = double(step.explain().graphs.back().kernels);
}
BENCHMARK(BM_Step_Compiled)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
