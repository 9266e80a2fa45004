// Eager ops over 2^18 floats (1024 x 256: an AdamW step's and a transformer
// layer's sizes), the size where the thread pool's hand-off decides the
// time (Note [Thread pool] in runtime/ThreadPool.cpp): each op's median
// over 200 calls in us, 2 threads. bench/pool_torch.py times PyTorch's the
// same way; results in bench/results/pool.md.
//
//   bench_pool [--threads T]
#include "BenchUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ember;

namespace {
double median_us(const std::function<void()> &f) {
  std::vector<double> us;
  for (int i = 0; i < 200; ++i)
    us.push_back(1000 * bench::time_ms(f));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}
} // namespace

int main(int argc, char **argv) {
  const int threads = bench::threads_from_args(argc, argv);
  Tensor x = rand({1024, 256}), y = rand({1024, 256}), o = rand({1024, 256});
  std::vector<std::pair<const char *, std::function<void()>>> ops = {
      {"x + y", [&] { x + y; }},
      {"x * y", [&] { x *y; }},
      {"x / y", [&] { x / y; }},
      {"x.sqrt()", [&] { x.sqrt(); }},
      {"x.exp()", [&] { x.exp(); }},
      {"gelu(x)", [&] { nn::functional::gelu(x); }},
      {"o.mul_(0.99)", [&] { o.mul_(0.99); }},
      {"o.lerp_(x, 0.1)", [&] { o.lerp_(x, 0.1); }},
      {"o.addcdiv_(x, y, -1e-3)", [&] { o.addcdiv_(x, y, -1e-3); }},
  };
  std::printf("threads %d\n\n| op | ember us |\n|---|---|\n", threads);
  for (auto &[name, f] : ops)
    std::printf("| %s | %.1f |\n", name, median_us(f));
  return 0;
}
