#pragma once
/// Pieces the benchmark programs share.

#include <ember/ember.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace ember::bench {

/// The copy floor every benchmark compares kernels with: `src`'s bytes
/// copied into `dst` (both contiguous, of one size) by memcpy in parallel
/// on ember's thread pool, the pool the kernels run on, in chunks of at
/// least 1 MiB.
inline void parallel_copy(const Tensor &dst, const Tensor &src) {
  char *d = static_cast<char *>(dst.data_ptr());
  const char *s = static_cast<const char *>(src.data_ptr());
  parallel_for(0, int64_t(src.nbytes()), int64_t(1) << 20,
               [&](int64_t lo, int64_t hi) {
                 std::memcpy(d + lo, s + lo, size_t(hi - lo));
               });
}

/// `--threads T` from the command line (else `fallback`), set as ember's
/// thread count; returns it.
inline int threads_from_args(int argc, char **argv, int fallback = 2) {
  int threads = fallback;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--threads") == 0)
      threads = std::atoi(argv[i + 1]);
  set_num_threads(threads);
  return threads;
}

/// The wall time of one call of `f`, in ms.
inline double time_ms(const std::function<void()> &f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// A GPU case's times: 5 warm-up runs, then 30 each timed with CUDA events
/// on the current stream; the median, the fastest and the slowest, in ms
/// (bench_cuda and bench_cuda_compile; bench/cuda_torch.py times
/// PyTorch's the same way).
struct CudaTiming {
  double median = 0, lo = 0, hi = 0;
};
inline CudaTiming cuda_time_ms(const std::function<void()> &run) {
  for (int i = 0; i < 5; ++i)
    run();
  cuda::synchronize();
  std::vector<float> ms;
  for (int i = 0; i < 30; ++i) {
    cuda::CUDAEvent a(true), b(true);
    a.record();
    run();
    b.record();
    b.synchronize();
    ms.push_back(a.elapsed_time(b));
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front(), ms.back()};
}

/// Prints `ms` as the JSON array of a result line: `"ms": [1.2345, ...]}`
/// and a newline, then flushes.
inline void print_ms(const std::vector<double> &ms) {
  std::printf("\"ms\": [");
  for (size_t i = 0; i < ms.size(); ++i)
    std::printf("%s%.4f", i ? ", " : "", ms[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

/// A pre-norm transformer encoder layer (batch first): x + attn(ln1(x)),
/// then + fc2(gelu(fc1(ln2(x)))), as PyTorch's TransformerEncoderLayer
/// with norm_first=True, activation gelu, dropout 0.
struct EncoderLayer {
  nn::LayerNorm ln1, ln2;
  nn::MultiheadAttention attn;
  nn::Linear fc1, fc2;
  EncoderLayer(int64_t d, int64_t heads, int64_t ff)
      : ln1(nn::LayerNormOptions({d})), ln2(nn::LayerNormOptions({d})),
        attn(nn::MultiheadAttentionOptions(d, heads).batch_first(true)),
        fc1(d, ff), fc2(ff, d) {}
  Tensor forward(const Tensor &x) {
    namespace F = nn::functional;
    Tensor h = ln1->forward(x);
    Tensor a = std::get<0>(attn->forward(h, h, h, {}, /*need_weights=*/false));
    Tensor y = x + a;
    return y + fc2->forward(F::gelu(fc1->forward(ln2->forward(y))));
  }
  void to(Device device) {
    ln1->to(device);
    ln2->to(device);
    attn->to(device);
    fc1->to(device);
    fc2->to(device);
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> p;
    for (auto ps : {ln1->parameters(), ln2->parameters(), attn->parameters(),
                    fc1->parameters(), fc2->parameters()})
      p.insert(p.end(), ps.begin(), ps.end());
    return p;
  }
};

} // namespace ember::bench
