// compile() on the GPU (issue 15's benchmarks): fused CUDA kernels against
// ember's eager CUDA kernels and the device's copy bandwidth; run beside
// bench/cuda_compile_torch.py on the same GPU for PyTorch eager and
// torch.compile (Inductor, Triton) on the same cases.
//
// Each case runs 5 warm-ups (the first compiles) and 30 timed repetitions,
// each timed with CUDA events; the table gives the median, the range, the
// bandwidth of the bytes the case must move at least (each input read
// once, each output written once), and the compiled function's kernels with
// their cold NVRTC compile times (a fresh disk cache: EMBER_CACHE_DIR is
// set to a new folder unless the caller set it). A case that raises prints
// its error and the run goes on.
//
// Built into the GPU bundle (Note [The GPU bundle] in test/CMakeLists.txt):
//   gpu-bundle/run.sh bench
#include "BenchUtil.h"

#include <ember/ember.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

void row(const std::string &name, const std::string &how, double bytes,
         const std::function<void()> &run) {
  try {
    bench::CudaTiming t = bench::cuda_time_ms(run);
    std::printf("| %-30s | %-8s | %9.3f | %7.3f-%-7.3f | %8.1f |\n",
                name.c_str(), how.c_str(), t.median, t.lo, t.hi,
                bytes / (t.median * 1e-3) / 1e9);
  } catch (const std::exception &e) {
    std::printf("| %-30s | %-8s | error: %s |\n", name.c_str(), how.c_str(),
                std::string(e.what()).substr(0, 300).c_str());
  }
  std::fflush(stdout);
}

/// The kernels of a compiled function and their compile times.
void kernels_of(const std::string &name, const ExplainOutput &e) {
  std::printf("  %s:", name.c_str());
  int64_t fallbacks = 0;
  for (const GraphInfo &g : e.graphs) {
    fallbacks += g.fallbacks + g.backward_fallbacks;
    for (const KernelSummary &k : g.kernel_list)
      std::printf(" [%s%s, %s %.0f ms]", k.name.c_str(),
                  k.program.empty() ? "" : (" " + k.program).c_str(),
                  k.origin.c_str(), k.compile_seconds * 1e3);
    if (!g.cuda_graph.empty())
      std::printf(" (replays: %s)", g.cuda_graph.c_str());
  }
  std::printf("; %lld ops eager\n", (long long)fallbacks);
}

} // namespace

int main() {
  if (!cuda::is_available()) {
    std::printf(
        "bench_cuda_compile: no GPU on this machine, nothing to time\n");
    return 0;
  }
  if (!std::getenv("EMBER_CACHE_DIR")) {
    char dir[] = "/tmp/ember_bench_cache_XXXXXX";
    if (mkdtemp(dir))
      setenv("EMBER_CACHE_DIR", dir, 1);
  }
  cuda::DeviceProperties p = cuda::get_device_properties(0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n\n", p.name.c_str(), p.major,
              p.minor, p.multi_processor_count);
  std::printf("| %-30s | %-8s | %9s | %15s | %8s |\n", "case (float32)", "how",
              "median ms", "range ms", "GB/s");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(32, '-').c_str(),
              std::string(10, '-').c_str(), std::string(11, '-').c_str(),
              std::string(17, '-').c_str(), std::string(10, '-').c_str());
  TensorOptions o = TensorOptions().device(kCUDA);
  manual_seed(0);
  std::vector<std::pair<std::string, ExplainOutput>> explained;

  {
    // 2^28 points (1 GiB a tensor): the copy ceiling, then the pointwise
    // chains.
    const int64_t R = 16384, C = 16384;
    const double f = 4.0 * double(R * C);
    Tensor x = randn({R, C}, o), w = randn({C}, o), b = randn({C}, o);
    Tensor out = empty({R, C}, o);
    row("copy_ 2^28", "eager", 2 * f, [&] { out.copy_(x); });
    auto gelu = [](const Tensor &x, const Tensor &w, const Tensor &b) {
      return nn::functional::gelu(x * w + b);
    };
    auto cgelu = compile(gelu);
    row("gelu(x*w+b) 2^28", "eager", 2 * f, [&] { (void)gelu(x, w, b); });
    row("gelu(x*w+b) 2^28", "compiled", 2 * f, [&] { (void)cgelu(x, w, b); });
    explained.emplace_back("gelu(x*w+b)", cgelu.explain());
    auto chain = [](const Tensor &x) {
      Tensor y = x * 1.5 + 0.5;
      y = y.sin() * y;
      y = y.tanh() - 0.25;
      y = y.sigmoid() * x;
      return y.exp();
    };
    auto cchain = compile(chain);
    row("8-op chain 2^28", "eager", 2 * f, [&] { (void)chain(x); });
    row("8-op chain 2^28", "compiled", 2 * f, [&] { (void)cchain(x); });
    explained.emplace_back("8-op chain", cchain.explain());
  }
  {
    // 8192 x 8192 rows: softmax and layer_norm, forward, then forward and
    // backward (the gradient of the input, and of layer_norm's weight and
    // bias).
    const int64_t R = 8192, C = 8192;
    const double f = 4.0 * double(R * C);
    Tensor x = randn({R, C}, o), g = randn({R, C}, o);
    Tensor w = randn({C}, o), b = randn({C}, o);
    auto softmax = [](const Tensor &x) { return x.softmax(-1); };
    auto layer_norm = [](const Tensor &x, const Tensor &w, const Tensor &b) {
      return nn::functional::layer_norm(
          x,
          nn::functional::LayerNormFuncOptions({x.size(-1)}).weight(w).bias(b));
    };
    auto csoftmax = compile(softmax);
    auto clayer_norm = compile(layer_norm);
    {
      NoGradGuard no_grad;
      row("softmax 8192^2", "eager", 2 * f, [&] { (void)softmax(x); });
      row("softmax 8192^2", "compiled", 2 * f, [&] { (void)csoftmax(x); });
      row("layer_norm 8192^2", "eager", 2 * f,
          [&] { (void)layer_norm(x, w, b); });
      row("layer_norm 8192^2", "compiled", 2 * f,
          [&] { (void)clayer_norm(x, w, b); });
    }
    explained.emplace_back("softmax", csoftmax.explain());
    explained.emplace_back("layer_norm", clayer_norm.explain());
    Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_(),
           bg = b.detach().requires_grad_();
    auto train_softmax = compile(softmax);
    auto train_layer_norm = compile(layer_norm);
    auto clear = [&] {
      for (Tensor *t : {&xg, &wg, &bg})
        t->mutable_grad() = Tensor();
    };
    auto softmax_step = [&](auto &fn) {
      fn(xg).backward(g);
      clear();
    };
    auto layer_norm_step = [&](auto &fn) {
      fn(xg, wg, bg).backward(g);
      clear();
    };
    row("softmax fwd+bwd 8192^2", "eager", 5 * f,
        [&] { softmax_step(softmax); });
    row("softmax fwd+bwd 8192^2", "compiled", 5 * f,
        [&] { softmax_step(train_softmax); });
    row("layer_norm fwd+bwd 8192^2", "eager", 5 * f,
        [&] { layer_norm_step(layer_norm); });
    row("layer_norm fwd+bwd 8192^2", "compiled", 5 * f,
        [&] { layer_norm_step(train_layer_norm); });
    explained.emplace_back("softmax fwd+bwd", train_softmax.explain());
    explained.emplace_back("layer_norm fwd+bwd", train_layer_norm.explain());
  }
  {
    // CUDA graphs (Note [CUDA graphs in replay mode]): 64 pointwise ops over
    // 1024 floats, where launches cost, not bytes. Eager; replay mode at
    // opt level 0 (64 eager kernels a call) without and with a CUDA graph;
    // replay mode at level 2 (one fused kernel) with a graph.
    Tensor s = randn({1024}, o);
    auto chain64 = [](const Tensor &x) {
      Tensor y = x;
      for (int i = 0; i < 32; ++i)
        y = y * 0.999 + 0.001;
      return y;
    };
    auto replay = [](int64_t level, bool graphs) {
      return CompileOptions().replay(true).opt_level(level).cuda_graphs(graphs);
    };
    auto c0 = compile(chain64, replay(0, false));
    auto g0 = compile(chain64, replay(0, true));
    auto g2 = compile(chain64, replay(2, true));
    const double f = 4.0 * 1024;
    row("64-op chain 1024 floats", "eager", 2 * f, [&] { (void)chain64(s); });
    row("64-op chain 1024 floats", "O0", 2 * f, [&] { (void)c0(s); });
    row("64-op chain 1024 floats", "O0 graph", 2 * f, [&] { (void)g0(s); });
    row("64-op chain 1024 floats", "O2 graph", 2 * f, [&] { (void)g2(s); });
    explained.emplace_back("64-op chain, O0 graph", g0.explain());
    explained.emplace_back("64-op chain, O2 graph", g2.explain());
  }
  std::printf("\nkernels (name, program, origin, cold NVRTC compile):\n");
  for (const auto &[name, e] : explained)
    kernels_of(name, e);
  return 0;
}
