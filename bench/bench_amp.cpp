// ember's half of the mixed-precision benchmark (bench/amp_torch.py): an
// MLP training step (784-1024-1024-10, batch 256, SGD) in float32 and under
// bfloat16 autocast on the CPU. amp_torch.py alternates rounds of this
// program with the same steps in PyTorch (torch.autocast("cpu")) and writes
// bench/results/amp.{json,md}.
//
//   bench_amp [--iters N] [--threads T]
//
// prints one JSON object per line:
//   {"workload": "mlp_train", "impl": "ember_bf16", "saved_bytes": B,
//    "peak_bytes": P, "ms": [...]}
// saved_bytes: the bytes of the distinct tensors the forward saved for
// backward (counted by saved-tensor hooks, as amp_torch.py counts them in
// PyTorch); peak_bytes: ember's max_memory_allocated over one step, less
// what was allocated before it (parameters, inputs, optimizer state): the
// activations, gradients, temporaries and (under autocast) the weights'
// bfloat16 casts.
#include "BenchUtil.h"

#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace ember;

namespace {

struct Mlp {
  nn::Sequential net{nn::Linear(784, 1024), nn::ReLU(), nn::Linear(1024, 1024),
                     nn::ReLU(), nn::Linear(1024, 10)};
  optim::SGD opt{net->parameters(), optim::SGDOptions(0.01).momentum(0.9)};
  Tensor x = randn({256, 784});
  Tensor y = randint(0, 10, {256});

  Tensor forward(bool amp) {
    amp::autocast ac(kCPU, kBFloat16, amp);
    return cross_entropy_loss(net->forward(x), y);
  }
  void step(bool amp) {
    opt.zero_grad();
    forward(amp).backward();
    opt.step();
  }
};

int64_t saved_bytes(Mlp &m, bool amp) {
  std::set<const void *> seen;
  int64_t bytes = 0;
  Tensor loss;
  {
    autograd::graph::saved_tensors_hooks hooks(
        [&](const Tensor &t) -> std::any {
          if (seen.insert(t.storage().data()).second)
            bytes += int64_t(t.storage().nbytes());
          return t;
        },
        [](const std::any &a) { return std::any_cast<Tensor>(a); });
    loss = m.forward(amp);
  }
  loss.backward();
  m.opt.zero_grad();
  return bytes;
}

int64_t peak_bytes(Mlp &m, bool amp) {
  m.step(amp); // optimizer state exists before the measured step
  m.opt.zero_grad();
  int64_t before = memory_allocated(kCPU); // parameters, inputs, state
  reset_peak_memory_stats(kCPU);
  m.forward(amp).backward();
  m.opt.step();
  return max_memory_allocated(kCPU) - before;
}

} // namespace

int main(int argc, char **argv) {
  int iters = 15, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters"))
      iters = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
  }
  set_num_threads(threads);
  manual_seed(0);
  for (bool amp : {false, true}) {
    Mlp m;
    int64_t saved = saved_bytes(m, amp);
    int64_t peak = peak_bytes(m, amp);
    m.step(amp);
    m.step(amp);
    std::vector<double> ms;
    for (int i = 0; i < iters; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      m.step(amp);
      auto t1 = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::printf("{\"workload\": \"mlp_train\", \"impl\": \"%s\", "
                "\"saved_bytes\": %lld, \"peak_bytes\": %lld, ",
                amp ? "ember_bf16" : "ember_fp32", (long long)saved,
                (long long)peak);
    bench::print_ms(ms);
  }
}
