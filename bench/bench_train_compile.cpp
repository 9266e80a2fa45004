// Compile time of a training step (issue 13): the MLP 784-1024-1024-10 of
// bench_vs_torch at batch 256, its loss (forward and backward, a joint
// graph partitioned by ember-remat) and its SGD step compiled. One process
// compiles once: bench/train_compile.sh runs it with an empty
// EMBER_CACHE_DIR (cold: every kernel compiled by LLVM) and again with the
// same directory (every kernel from the disk cache, as a new process that
// trained before), and writes bench/results/train_compile.md.
//
//   bench_train_compile
//
// prints one JSON object: the wall time of the first step (capture,
// passes, kernels, and the step itself), of a later step (the step alone),
// their difference (the compile), and explain()'s own accounting.
#include <ember/ember.h>

#include <chrono>
#include <cstdio>

using namespace ember;
namespace F = ember::nn::functional;

int main() {
  manual_seed(1);
  nn::Sequential mlp{nn::Linear(784, 1024), nn::ReLU(), nn::Linear(1024, 1024),
                     nn::ReLU(), nn::Linear(1024, 10)};
  optim::SGD opt(mlp->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Tensor in = randn({256, 784}), target = randint(0, 10, {256});
  auto closs = compile([&](const Tensor &x, const Tensor &t) {
    return F::cross_entropy(mlp->forward(x), t);
  });
  auto cstep = compile([&] { opt.step(); });
  auto step = [&] {
    opt.zero_grad();
    closs(in, target).backward();
    cstep();
  };
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  // The first step makes the momentum buffers: the step's second graph
  // (the steady state) compiles at the second call. Both count.
  auto t0 = Clock::now();
  step();
  auto t1 = Clock::now();
  step();
  auto t2 = Clock::now();
  double later = 1e30;
  for (int i = 0; i < 5; ++i) {
    auto a = Clock::now();
    step();
    later = std::min(later, ms(a, Clock::now()));
  }
  double first_two = ms(t0, t2);
  double compile_s = 0, kernels_s = 0;
  int64_t kernels = 0;
  for (const ExplainOutput &x : {closs.explain(), cstep.explain()}) {
    compile_s += x.capture_seconds + x.compile_seconds;
    for (const GraphInfo &g : x.graphs) {
      kernels += g.kernels + g.backward_kernels;
      for (const KernelSummary &k : g.kernel_list)
        kernels_s += k.compile_seconds;
    }
  }
  std::printf("{\"first_two_steps_ms\": %.2f, \"step_ms\": %.2f, "
              "\"compile_ms\": %.2f, \"explain_compile_ms\": %.2f, "
              "\"explain_kernel_ms\": %.2f, \"kernels\": %lld, "
              "\"first_step_ms\": %.2f}\n",
              first_two, later, first_two - 2 * later, compile_s * 1e3,
              kernels_s * 1e3, static_cast<long long>(kernels), ms(t0, t1));
  return 0;
}
