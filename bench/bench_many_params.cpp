// An optimizer step over many small parameters: the compile time of its
// first call (capture, passes, kernels), of the second (a recompile: SGD's
// momentum buffers appear after the first step, so the graph gains an
// input per parameter) and the third (the cached program); then the mean
// time of a step over 20 more, eager, compiled, and compiled in replay mode
// (no capture per call). Run with the kernel disk cache off to time the
// compiles:
//   EMBER_CACHE_DIR= build/bench/bench_many_params [parameters] [combo 0|1]
#include <ember/ember.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

using namespace ember;

int main(int argc, char **argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4000;
  const bool combo = argc > 2 ? std::atoi(argv[2]) != 0 : true;
  std::vector<Tensor> params;
  for (int i = 0; i < n; ++i) {
    Tensor p = randn({16}).requires_grad_();
    p.mutable_grad() = randn({16});
    params.push_back(p);
  }
  optim::SGD opt(params, optim::SGDOptions(0.1).momentum(0.9));
  auto step = compile(
      [&] {
        opt.step();
        return Tensor();
      },
      CompileOptions().combo_kernels(combo));
  double ms[3];
  for (double &m : ms) {
    auto t0 = std::chrono::steady_clock::now();
    step();
    m = std::chrono::duration<double, std::milli>(
            std::chrono::steady_clock::now() - t0)
            .count();
  }
  auto replayed = compile(
      [&] {
        opt.step();
        return Tensor();
      },
      CompileOptions().combo_kernels(combo).replay(true));
  for (int i = 0; i < 3; ++i)
    replayed();
  auto mean_ms = [](auto &&fn) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i)
      fn();
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - t0)
               .count() /
           20;
  };
  const double eager = mean_ms([&] { opt.step(); });
  const double compiled = mean_ms([&] { step(); });
  const double replay = mean_ms([&] { replayed(); });
  std::cout << "{\"parameters\": " << n << ", \"combo\": " << combo
            << ", \"first_ms\": " << ms[0] << ", \"second_ms\": " << ms[1]
            << ", \"third_ms\": " << ms[2] << ", \"eager_step_ms\": " << eager
            << ", \"compiled_step_ms\": " << compiled
            << ", \"replay_step_ms\": " << replay << "}\n";
}
