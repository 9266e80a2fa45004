// ember's half of the side-by-side benchmark with PyTorch (issue 12): the
// workloads of bench/vs_torch.py, run eagerly and through compile(), timed
// call by call. vs_torch.py alternates rounds of this program with rounds of
// the same workloads in PyTorch (eager and torch.compile) and writes
// bench/results/vs_torch.{json,md}.
//
//   bench_vs_torch [--iters N] [--threads T] [--only NAME]
//
// prints one JSON object per line:
//   {"workload": "softmax", "impl": "ember_compiled", "ms": [...]}
// Every workload makes its inputs once (random, float32), calls the function
// twice to warm up (the compile, first-touch of outputs), then times `iters`
// calls. "floor" is a parallel memcpy of one 4096x4096 float32 tensor on
// ember's thread pool: the copy floor in this run.
#include "BenchUtil.h"

#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace ember;
namespace F = ember::nn::functional;

namespace {

constexpr int64_t kRows = 4096, kCols = 4096;

void report(const std::string &workload, const std::string &impl,
            const std::function<void()> &call, int iters) {
  call();
  call();
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::printf("{\"workload\": \"%s\", \"impl\": \"%s\", ", workload.c_str(),
              impl.c_str());
  bench::print_ms(ms);
}

Tensor gelu_chain(const Tensor &x, const Tensor &w, const Tensor &b) {
  return F::gelu(x * w + b);
}
Tensor chain8(const Tensor &x, const Tensor &y) {
  return ((((x * y + 1).relu() - 0.5) * x).abs() + y).sigmoid() * 2;
}
Tensor softmax_fn(const Tensor &x) { return x.softmax(-1); }
Tensor layer_norm_fn(const Tensor &x, const Tensor &w, const Tensor &b) {
  return F::layer_norm(x, F::LayerNormFuncOptions({kCols}).weight(w).bias(b));
}
Tensor sum_fn(const Tensor &x) { return x.sum(); }

/// Registers `name` run eagerly and compiled, on `args`.
template <class Fn, class... Args>
void both(const std::string &only, const std::string &name, Fn fn, int iters,
          const Args &...args) {
  if (!only.empty() && only != name)
    return;
  NoGradGuard g;
  report(
      name, "ember_eager", [&] { fn(args...); }, iters);
  auto f = compile(fn);
  report(
      name, "ember_compiled", [&] { f(args...); }, iters);
}

/// Forward and backward of `fn(x)` with a random upstream gradient,
/// eagerly and compiled (the joint graph: Note [The joint graph] in
/// frontend/Capture.cpp).
void train(const std::string &only, const std::string &name,
           const std::function<Tensor(const Tensor &)> &fn, int iters) {
  if (!only.empty() && only != name)
    return;
  Tensor x = randn({kRows, kCols}).requires_grad_();
  Tensor gy = randn({kRows, kCols});
  auto step = [&](const std::function<Tensor(const Tensor &)> &f) {
    return [&, f] {
      Tensor y = f(x);
      x.mutable_grad() = Tensor();
      y.backward(gy);
    };
  };
  report(name, "ember_eager", step(fn), iters);
  auto compiled = compile(fn);
  report(name, "ember_compiled",
         step([&](const Tensor &t) { return compiled(t); }), iters);
}

/// Training steps (zero_grad, loss(in, target).backward(), opt.step())
/// eagerly, then with the loss (forward and backward) and the optimizer
/// step compiled (captured at every call), then with both in replay mode.
template <class Loss>
void optimizer_steps(const std::string &name, Loss &loss, optim::Optimizer &opt,
                     const Tensor &in, const Tensor &target, int iters) {
  auto steps = [&](auto &&l, auto &&step) {
    return [&] {
      opt.zero_grad();
      l(in, target).backward();
      step();
    };
  };
  report(name, "ember_eager", steps(loss, [&] { opt.step(); }), iters);
  auto closs = compile(loss);
  auto cstep = compile([&] { opt.step(); });
  report(name, "ember_compiled", steps(closs, cstep), iters);
  // The loss and the step in replay mode (Note [Replaying training
  // graphs], Note [Replayed optimizer steps]): each captured once.
  auto rloss = compile(loss, CompileOptions().replay(true));
  auto rstep = compile([&] { opt.step(); }, CompileOptions().replay(true));
  report(name, "ember_replay", steps(rloss, rstep), iters);
}

/// An SGD step of the MLP 784-1024-1024-10 at batch 256 with cross
/// entropy: eagerly, and with the loss (forward and backward) and the
/// optimizer step compiled.
void mlp_train(const std::string &only, int iters) {
  if (!only.empty() && only != "mlp_train")
    return;
  manual_seed(1);
  nn::Sequential mlp{nn::Linear(784, 1024), nn::ReLU(), nn::Linear(1024, 1024),
                     nn::ReLU(), nn::Linear(1024, 10)};
  optim::SGD opt(mlp->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Tensor in = randn({256, 784}), target = randint(0, 10, {256});
  auto loss = [&](const Tensor &x, const Tensor &t) {
    return F::cross_entropy(mlp->forward(x), t);
  };
  optimizer_steps("mlp_train", loss, opt, in, target, iters);
}

/// The eight matrix products of mlp_train's step alone, on inputs of their
/// shapes (three forward, five backward: no input gradient of the first
/// layer): the BLAS floor under any implementation of the step. A compiled
/// step can fuse what lies between them, never go below them.
void mlp_train_gemms(const std::string &only, int iters) {
  if (!only.empty() && only != "mlp_train_gemms")
    return;
  NoGradGuard g;
  Tensor x = randn({256, 784}), w1 = randn({1024, 784}),
         w2 = randn({1024, 1024}), w3 = randn({10, 1024});
  Tensor h1 = randn({256, 1024}), h2 = randn({256, 1024}),
         g1 = randn({256, 1024}), g2 = randn({256, 1024}),
         g3 = randn({256, 10});
  report(
      "mlp_train_gemms", "ember_eager",
      [&] {
        x.mm(w1.t());
        h1.mm(w2.t());
        h2.mm(w3.t());
        g3.mm(w3);
        g3.t().mm(h2);
        g2.mm(w2);
        g2.t().mm(h1);
        g1.t().mm(x);
      },
      iters);
}

/// An AdamW step of 4 encoder layers (d_model 256, 4 heads, feed-forward
/// 1024) on batch 8 x sequence 128, with a mean-squared loss against a
/// random target: eagerly, and with the loss (forward and backward) and
/// the optimizer step compiled.
void transformer_train(const std::string &only, int iters) {
  if (!only.empty() && only != "transformer_train")
    return;
  manual_seed(2);
  std::vector<bench::EncoderLayer> layers;
  std::vector<Tensor> params;
  for (int i = 0; i < 4; ++i) {
    layers.emplace_back(256, 4, 1024);
    auto p = layers.back().parameters();
    params.insert(params.end(), p.begin(), p.end());
  }
  optim::AdamW opt(params, optim::AdamWOptions(1e-4));
  Tensor in = randn({8, 128, 256}), target = randn({8, 128, 256});
  auto loss = [&](const Tensor &x, const Tensor &t) {
    Tensor h = x;
    for (bench::EncoderLayer &l : layers)
      h = l.forward(h);
    return F::mse_loss(h, t);
  };
  optimizer_steps("transformer_train", loss, opt, in, target, iters);
}

} // namespace

int main(int argc, char **argv) {
  int iters = 15, threads = 2;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iters" && i + 1 < argc)
      iters = std::stoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_vs_torch [--iters N] [--threads T] "
                           "[--only NAME]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  manual_seed(0);

  Tensor x = randn({kRows, kCols}), y = randn({kRows, kCols});
  Tensor w = randn({kCols}), b = randn({kCols});

  if (only.empty() || only == "floor") {
    Tensor dst = empty({kRows, kCols});
    report(
        "floor", "ember_eager", [&] { bench::parallel_copy(dst, x); }, iters);
  }
  both(only, "gelu_chain", gelu_chain, iters, x, w, b);
  both(
      only, "gelu", [](const Tensor &t) { return F::gelu(t); }, iters, x);
  both(only, "chain8", chain8, iters, x, y);
  both(only, "softmax", softmax_fn, iters, x);
  both(only, "layer_norm", layer_norm_fn, iters, x, w, b);
  both(only, "sum", sum_fn, iters, x);
  {
    nn::Sequential mlp{nn::Linear(784, 1024), nn::ReLU(),
                       nn::Linear(1024, 1024), nn::ReLU(),
                       nn::Linear(1024, 10)};
    Tensor in = randn({256, 784});
    both(
        only, "mlp", [&](const Tensor &t) { return mlp->forward(t); }, iters,
        in);
    // The MLP's three matrix products alone (x W^T, no bias or relu): the
    // BLAS floor under any MLP implementation.
    if (only.empty() || only == "mlp_gemms") {
      NoGradGuard g;
      Tensor w1 = randn({1024, 784}), w2 = randn({1024, 1024}),
             w3 = randn({10, 1024});
      report(
          "mlp_gemms", "ember_eager",
          [&] { in.mm(w1.t()).mm(w2.t()).mm(w3.t()); }, iters);
    }
  }
  train(
      only, "layer_norm_fwd_bwd",
      [&](const Tensor &t) {
        return F::layer_norm(t, F::LayerNormFuncOptions({kCols}));
      },
      iters);
  {
    // With a weight and a bias that require grad (closed over: the
    // compiled function's lifted inputs), as an nn::LayerNorm's.
    Tensor w = randn({kCols}).requires_grad_(),
           b = randn({kCols}).requires_grad_();
    train(
        only, "layer_norm_affine_fwd_bwd",
        [&](const Tensor &t) {
          return F::layer_norm(
              t, F::LayerNormFuncOptions({kCols}).weight(w).bias(b));
        },
        iters);
  }
  train(
      only, "softmax_fwd_bwd", [](const Tensor &t) { return t.softmax(-1); },
      iters);
  train(
      only, "gelu_fwd_bwd", [](const Tensor &t) { return F::gelu(t); }, iters);
  mlp_train(only, iters);
  mlp_train_gemms(only, iters);
  transformer_train(only, iters);
  return 0;
}
