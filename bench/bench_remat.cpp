// Compiled training under a memory budget (ember-remat, Note [Partitioning
// the joint graph] in passes/Remat.cpp): a 64-layer residual MLP,
// h = h + relu(linear(h)) * 0.1, width 256, batch 1024, float32. For each
// budget it prints, as one JSON object a line, the bytes the forward saves for
// backward, the memory held between forward and backward and the peak of a
// training step (forward and backward, the parameters' gradients included),
// both above what was allocated before it (with the gradients freed), and
// the step times:
//   {"budget": "save-all", "saved_bytes": ..., "held_bytes": ...,
//    "peak_bytes": ..., "ms": [...]}
// Budgets: save-all (a budget nothing exceeds), the default minimum cut,
// then 3/4, 1/2, 1/3, 1/4 and 0 of what save-all keeps; eager last, for
// reference. Each of R rounds runs N steps of every budget in turn (the
// machine is noisy: the budgets share its slow and fast moments).
//
//   bench_remat [--iters N] [--rounds R] [--threads T]
#include "BenchUtil.h"

#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

// (activations dominate: 64 x 1.25 MiB saved by save-all, against 16 MiB
// of weights and 16 MiB of their gradients)
constexpr int kLayers = 64, kWidth = 256, kBatch = 1024;

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

/// One budget's compiled loss (or the eager one) and what was measured.
struct Run {
  std::string name;
  int64_t saved = -1;
  std::function<Tensor()> forward;
  std::vector<double> ms;
  int64_t peak = 0, held = 0;
};

/// Runs `iters` training steps of `r`, adding their times and memory.
void steps(Run &r, Model &m, int iters) {
  for (int i = 0; i < iters; ++i) {
    m.zero_grad(); // (gradients freed before, not during, the step)
    int64_t before = memory_allocated();
    reset_peak_memory_stats();
    auto t0 = std::chrono::steady_clock::now();
    Tensor loss = r.forward();
    r.held = std::max(r.held, memory_allocated() - before);
    loss.backward();
    auto t1 = std::chrono::steady_clock::now();
    r.peak = std::max(r.peak, max_memory_allocated() - before);
    r.ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
}

} // namespace

int main(int argc, char **argv) {
  int iters = 3, rounds = 5, threads = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc)
      iters = std::stoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::stoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_remat [--iters N] [--rounds R] "
                           "[--threads T]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  Model m;
  Tensor x = randn({kBatch, kWidth});
  std::vector<Run> runs;
  auto add = [&](const std::string &name, int64_t budget) {
    auto f = compile([&](const Tensor &t) { return m.loss(t); },
                     CompileOptions().memory_budget(budget));
    for (int i = 0; i < 2; ++i) // warm up (compiles)
      f(x).backward();
    Run r;
    r.name = name;
    r.saved = f.explain().graphs.at(0).saved_bytes;
    r.forward = [f, &x]() mutable { return f(x); };
    runs.push_back(std::move(r));
    return runs.back().saved;
  };
  int64_t all = add("save-all", INT64_MAX / 2);
  add("min-cut", -1);
  add("3/4", all * 3 / 4);
  add("1/2", all / 2);
  add("1/3", all / 3);
  add("1/4", all / 4);
  add("0", 0);
  Run eager;
  eager.name = "eager";
  eager.forward = [&] { return m.loss(x); };
  runs.push_back(std::move(eager));
  // The machine is noisy: rounds alternate over the budgets, so that each
  // budget's steps spread over the whole run.
  for (int round = 0; round < rounds; ++round)
    for (Run &r : runs)
      steps(r, m, iters);
  for (const Run &r : runs) {
    std::printf("{\"budget\": \"%s\", \"saved_bytes\": %lld, "
                "\"held_bytes\": %lld, \"peak_bytes\": %lld, ",
                r.name.c_str(), static_cast<long long>(r.saved),
                static_cast<long long>(r.held), static_cast<long long>(r.peak));
    bench::print_ms(r.ms);
  }
  return 0;
}
