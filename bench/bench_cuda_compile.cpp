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
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

using namespace ember;

namespace {

void row(const std::string &name, const std::string &how, double bytes,
         const std::function<void()> &run) {
  try {
    bench::CudaTiming t = bench::cuda_time_ms(run);
    std::string gbs = bytes > 0 ? detail::str(std::fixed, std::setprecision(1),
                                              bytes / (t.median * 1e-3) / 1e9)
                                : "";
    std::printf("| %-30s | %-8s | %9.3f | %7.3f-%-7.3f | %8s |\n", name.c_str(),
                how.c_str(), t.median, t.lo, t.hi, gbs.c_str());
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
    if (g.kernel_list.size() > 8) {
      // A training step's many kernels: how many, and the cold compiles.
      std::vector<double> cold;
      for (const KernelSummary &k : g.kernel_list)
        if (k.origin.rfind("compiled", 0) == 0)
          cold.push_back(k.compile_seconds * 1e3);
      std::sort(cold.begin(), cold.end());
      std::printf(" [%zu kernels, %zu compiled cold", g.kernel_list.size(),
                  cold.size());
      if (!cold.empty())
        std::printf(": median %.0f ms, max %.0f ms", cold[cold.size() / 2],
                    cold.back());
      std::printf("]");
    } else {
      for (const KernelSummary &k : g.kernel_list)
        std::printf(" [%s%s, %s %.0f ms]", k.name.c_str(),
                    k.program.empty() ? "" : (" " + k.program).c_str(),
                    k.origin.c_str(), k.compile_seconds * 1e3);
    }
    if (!g.cuda_graph.empty())
      std::printf(" (replays: %s)", g.cuda_graph.c_str());
  }
  std::printf("; %lld ops eager\n", (long long)fallbacks);
}

} // namespace

int main(int argc, char **argv) {
  // --training: only the training steps; --profile: those, each followed
  // by the profiler's tables (CPU and CUDA) of 3 eager and 3 compiled steps
  // and the compiled loss's explain(), to see where a step's time goes.
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool profile = mode == "--profile";
  const bool profile_only = profile || mode == "--training";
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

  if (!profile_only) {
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
  if (!profile_only) {
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
  if (!profile_only) {
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
  {
    // Training steps (zero_grad, loss(in, target).backward(), opt.step()),
    // eagerly and with the loss (forward and backward: one joint graph
    // partitioned by ember-remat) and the optimizer step compiled; the
    // models of bench_vs_torch's CPU steps, and a wider transformer. No
    // bandwidth column: matmuls dominate.
    namespace F = nn::functional;
    auto steps = [&](const std::string &name, auto &loss, optim::Optimizer &opt,
                     const Tensor &in, const Tensor &target) {
      auto run = [&](auto &&l, auto &&step) {
        return [&] {
          opt.zero_grad();
          l(in, target).backward();
          step();
        };
      };
      row(name, "eager", 0, run(loss, [&] { opt.step(); }));
      auto closs = compile(loss);
      auto cstep = compile([&] { opt.step(); });
      row(name, "compiled", 0, run(closs, cstep));
      // The loss and the step in replay mode (Note [Replaying training
      // graphs], Note [Replayed optimizer steps]): each captured once (the
      // step twice: its first call makes the state, which the eager row
      // already did here).
      auto rloss = compile(loss, CompileOptions().replay(true));
      auto rstep = compile([&] { opt.step(); }, CompileOptions().replay(true));
      row(name, "replay", 0, run(rloss, rstep));
      explained.emplace_back(name + " loss", closs.explain());
      explained.emplace_back(name + " step", cstep.explain());
      explained.emplace_back(name + " loss, replay", rloss.explain());
      explained.emplace_back(name + " step, replay", rstep.explain());
      if (profile) {
        using profiler::ProfilerActivity;
        for (bool compiled : {false, true}) {
          profiler::profile prof(
              {ProfilerActivity::CPU, ProfilerActivity::CUDA});
          {
            auto guard = prof.guard();
            for (int i = 0; i < 3; ++i)
              compiled ? run(closs, cstep)() : run(loss, [&] { opt.step(); })();
            cuda::synchronize();
          }
          std::printf("\n%s, %s, 3 steps:\n", name.c_str(),
                      compiled ? "compiled" : "eager");
          std::printf(
              "%s\n%s\n",
              prof.key_averages().table("self_cpu_time_total", 25).c_str(),
              prof.key_averages().table("self_device_time_total", 25).c_str());
        }
        std::cout << closs.explain() << std::endl;
      }
    };
    {
      manual_seed(1);
      nn::Sequential mlp{nn::Linear(784, 1024), nn::ReLU(),
                         nn::Linear(1024, 1024), nn::ReLU(),
                         nn::Linear(1024, 10)};
      mlp->to(kCUDA);
      optim::SGD opt(mlp->parameters(), optim::SGDOptions(0.01).momentum(0.9));
      Tensor in = randn({256, 784}, o),
             target = randint(0, 10, {256}, o.dtype(kLong));
      auto loss = [&](const Tensor &x, const Tensor &t) {
        return F::cross_entropy(mlp->forward(x), t);
      };
      steps("MLP SGD step b256", loss, opt, in, target);
    }
    // AdamW steps of pre-norm encoder layers (bench::EncoderLayer), mean
    // squared loss against a random target: 4 layers of d_model 256 (4
    // heads, feed-forward 1024) on batch 8 x sequence 128, as on the CPU;
    // 2 layers of d_model 1024 (16 heads, feed-forward 4096) on batch 8 x
    // sequence 512.
    auto transformer = [&](const std::string &name, int64_t layers_n, int64_t d,
                           int64_t heads, int64_t seq) {
      manual_seed(2);
      std::vector<bench::EncoderLayer> layers;
      std::vector<Tensor> params;
      for (int64_t i = 0; i < layers_n; ++i) {
        layers.emplace_back(d, heads, 4 * d);
        layers.back().to(kCUDA);
        auto p = layers.back().parameters();
        params.insert(params.end(), p.begin(), p.end());
      }
      optim::AdamW opt(params, optim::AdamWOptions(1e-4));
      Tensor in = randn({8, seq, d}, o), target = randn({8, seq, d}, o);
      auto loss = [&](const Tensor &x, const Tensor &t) {
        Tensor h = x;
        for (bench::EncoderLayer &l : layers)
          h = l.forward(h);
        return F::mse_loss(h, t);
      };
      steps(name, loss, opt, in, target);
    };
    transformer("encoder 4x256 AdamW step", 4, 256, 4, 128);
    transformer("encoder 2x1024 AdamW step", 2, 1024, 16, 512);
  }
  std::printf("\nkernels (name, program, origin, cold NVRTC compile):\n");
  for (const auto &[name, e] : explained)
    kernels_of(name, e);
  return 0;
}
