// Row kernels, eager against compiled, in one run: softmax, its backward,
// layer_norm and a row sum of squares over rows of 32 to 4096 floats (2^22
// or 2^24 points), and y = x * 3 + 1 (a pointwise kernel) with the copy
// floor. Each case alternates the two sides (ABBA) over 30 calls and
// prints the median [min, max] in ms. The compiled row kernels differ from
// eager's in two ways (codegen/Kernel.cpp, codegen/CpuJit.cpp): their float
// sums run in float over chunks of a row (Note [Blocked float sums]), and
// outputs of 16 MiB or more are written with streaming stores (Note
// [Streaming stores]); results in bench/results/rows.md.
//
//   bench_rows [--threads T]
#include "BenchUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ember;
namespace F = ember::nn::functional;

namespace {

struct Times {
  std::vector<double> ms;
  double median() const { return ms[ms.size() / 2]; }
};

/// Eager `a` against compiled `b`, alternating which goes first.
void compare(const std::string &name, const std::function<void()> &a,
             const std::function<void()> &b) {
  Times ta, tb;
  a();
  b();
  for (int i = 0; i < 30; ++i) {
    if (i % 2) {
      ta.ms.push_back(bench::time_ms(a));
      tb.ms.push_back(bench::time_ms(b));
    } else {
      tb.ms.push_back(bench::time_ms(b));
      ta.ms.push_back(bench::time_ms(a));
    }
  }
  std::sort(ta.ms.begin(), ta.ms.end());
  std::sort(tb.ms.begin(), tb.ms.end());
  std::printf("| %s | %.3f [%.3f, %.3f] | %.3f [%.3f, %.3f] | %.2f |\n",
              name.c_str(), ta.median(), ta.ms.front(), ta.ms.back(),
              tb.median(), tb.ms.front(), tb.ms.back(),
              ta.median() / tb.median());
}

} // namespace

int main(int argc, char **argv) {
  const int threads = bench::threads_from_args(argc, argv);
  std::printf("threads %d\n\n| case | eager ms | compiled ms | speed-up |\n"
              "|---|---|---|---|\n",
              threads);
  for (int64_t n :
       {int64_t(32), int64_t(64), int64_t(128), int64_t(256), int64_t(4096)}) {
    const int64_t rows = (n == 4096 ? int64_t(1) << 24 : int64_t(1) << 22) / n;
    Tensor x = randn({rows, n}), g = randn({rows, n});
    Tensor y = x.softmax(-1);
    auto softmax = compile([](const Tensor &a) { return a.softmax(-1); });
    auto softmax_bwd = compile([](const Tensor &gg, const Tensor &yy) {
      return yy * (gg - (gg * yy).sum(-1, true));
    });
    auto norm = [n](const Tensor &a) {
      return F::layer_norm(a, F::LayerNormFuncOptions({n}));
    };
    auto layer_norm = compile(norm);
    auto sumsq = compile([](const Tensor &a) { return (a * a).sum(-1); });
    const std::string shape =
        " [" + std::to_string(rows) + ", " + std::to_string(n) + "]";
    compare(
        "softmax" + shape, [&] { x.softmax(-1); }, [&] { softmax(x); });
    compare(
        "softmax backward" + shape,
        [&] { _softmax_backward_data(g, y, -1, kFloat); },
        [&] { softmax_bwd(g, y); });
    compare(
        "layer_norm" + shape, [&] { norm(x); }, [&] { layer_norm(x); });
    compare(
        "sum of squares" + shape, [&] { (x * x).sum(-1); }, [&] { sumsq(x); });
  }
  Tensor x = randn({4096, 4096}), dst = empty({4096, 4096});
  auto affine = compile([](const Tensor &a) { return a * 3 + 1; });
  compare(
      "x * 3 + 1 [4096, 4096]", [&] { x * 3 + 1; }, [&] { affine(x); });
  compare(
      "copy floor (parallel memcpy) against compiled x * 3 + 1",
      [&] { bench::parallel_copy(dst, x); }, [&] { affine(x); });
  return 0;
}
