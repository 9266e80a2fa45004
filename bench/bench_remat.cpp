// Compiled training under a memory budget (ember-remat, Note [Partitioning
// the joint graph] in passes/Remat.cpp): a 64-layer residual MLP,
// h = h + relu(linear(h)), width 512, batch 256, float32. For each budget it
// prints, as one JSON object a line, the bytes the forward saves for
// backward, the memory held between forward and backward and the peak of a
// training step (forward and backward, the parameters' gradients included),
// both above what was allocated before it (with the gradients freed), and
// the step times:
//   {"budget": "save-all", "saved_bytes": ..., "held_bytes": ...,
//    "peak_bytes": ..., "ms": [...]}
// Budgets: save-all (a budget nothing exceeds), the default minimum cut,
// then 1/2, 1/3 and 0 of what save-all keeps; eager last, for reference.
//
//   bench_remat [--iters N] [--threads T]
#include "BenchUtil.h"

#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace ember;

namespace {

constexpr int kLayers = 64, kWidth = 512, kBatch = 256;

struct Model {
  std::vector<nn::Linear> layers;
  Model() {
    manual_seed(0);
    for (int i = 0; i < kLayers; ++i)
      layers.emplace_back(kWidth, kWidth);
  }
  Tensor loss(const Tensor &x) {
    Tensor h = x;
    for (auto &l : layers)
      h = h + l->forward(h).relu() * 0.1;
    return h.pow(2).mean();
  }
  void zero_grad() {
    for (auto &l : layers)
      l->zero_grad();
  }
};

/// `step.first()` runs the forward, `step.second(loss)` the backward.
template <class Step>
void report(const std::string &budget, int64_t saved, Model &m, Step step,
            int iters) {
  for (int i = 0; i < 2; ++i) // warm up (compiles)
    step.second(step.first());
  std::vector<double> ms;
  int64_t peak = 0, held = 0;
  for (int i = 0; i < iters; ++i) {
    m.zero_grad(); // (gradients freed before, not during, the step)
    int64_t before = memory_allocated();
    reset_peak_memory_stats();
    auto t0 = std::chrono::steady_clock::now();
    Tensor loss = step.first();
    held = std::max(held, memory_allocated() - before);
    step.second(loss);
    auto t1 = std::chrono::steady_clock::now();
    peak = std::max(peak, max_memory_allocated() - before);
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::printf("{\"budget\": \"%s\", \"saved_bytes\": %lld, "
              "\"held_bytes\": %lld, \"peak_bytes\": %lld, ",
              budget.c_str(), static_cast<long long>(saved),
              static_cast<long long>(held), static_cast<long long>(peak));
  bench::print_ms(ms);
}

} // namespace

int main(int argc, char **argv) {
  int iters = 7, threads = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc)
      iters = std::stoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_remat [--iters N] [--threads T]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  Model m;
  Tensor x = randn({kBatch, kWidth});
  auto run = [&](const std::string &name, int64_t budget) {
    auto f = compile([&](const Tensor &t) { return m.loss(t); },
                     CompileOptions().memory_budget(budget));
    auto step = std::make_pair([&] { return f(x); },
                               [](const Tensor &l) { l.backward(); });
    step.second(step.first());
    int64_t saved = f.explain().graphs.at(0).saved_bytes;
    report(name, saved, m, step, iters);
    return saved;
  };
  int64_t all = run("save-all", INT64_MAX / 2);
  run("min-cut", -1);
  run("1/2", all / 2);
  run("1/3", all / 3);
  run("0", 0);
  report("eager", -1, m,
         std::make_pair([&] { return m.loss(x); },
                        [](const Tensor &l) { l.backward(); }),
         iters);
  return 0;
}
