// A tour of ember's internals, following the seeds' walk-through of PyTorch:
// the tensor data structure, storage and views, type promotion, the
// dispatcher (an op-logging mode and a custom op), the autograd graph, a
// custom autograd function, the profiler, memory statistics and activation
// checkpointing. The README's demo.
#include <ember/ember.h>

#include <chrono>

#include <iostream>

using namespace ember;
using ember::indexing::Slice;

namespace {

void section(const char *title) { std::cout << "\n== " << title << " ==\n"; }

/// Mean milliseconds of `reps` calls of `f`, after one warm-up call.
template <class F> double time_ms(F &&f, int reps) {
  f();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i)
    f();
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
             .count() /
         reps;
}

/// Logs every op that reaches the dispatcher, with its input shapes
/// (PyTorch's TorchDispatchMode example).
struct OperationLogger : TorchDispatchMode {
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    std::cout << "  " << op.name() << "(";
    const char *sep = "";
    for (const IValue &v : stack) {
      std::cout << sep;
      if (v.isTensor())
        std::cout << v.toTensor().sizes();
      else
        std::cout << v;
      sep = ", ";
    }
    std::cout << ")\n";
    op.callBoxed(stack);
  }
};

Tensor scale_kernel(const Tensor &x, double a) { return x * a; }

/// ReLU as a custom autograd function (torch.autograd.Function).
struct MyReLU : autograd::Function<MyReLU> {
  static Tensor forward(autograd::AutogradContext *ctx, const Tensor &x) {
    ctx->save_for_backward({x});
    return x.clamp_min(0);
  }
  static autograd::variable_list backward(autograd::AutogradContext *ctx,
                                          autograd::variable_list grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * (x > 0)};
  }
};

/// Prints the chain of first edges from t's grad_fn down to a leaf.
void print_chain(const Tensor &t) {
  std::shared_ptr<autograd::Node> n = t.grad_fn();
  std::cout << "  ";
  while (n) {
    std::cout << n->name();
    n = n->next_edges().empty() ? nullptr : n->next_edges()[0].function;
    if (n)
      std::cout << " -> ";
  }
  std::cout << "\n";
}

/// Peak memory of one forward+backward of an 8-layer MLP, with or without
/// checkpointing each layer.
int64_t peak_bytes(nn::Sequential &mlp, const Tensor &x, bool use_checkpoint) {
  empty_cache();
  reset_peak_memory_stats();
  int64_t before = memory_allocated();
  Tensor h = x;
  for (const auto &layer : mlp->children()) {
    auto fn = [layer](const Tensor &in) {
      return layer->as<nn::Sequential>()->forward(in);
    };
    h = use_checkpoint ? checkpoint(fn, h) : fn(h);
  }
  h.sum().backward();
  for (auto &p : mlp->parameters())
    p.mutable_grad() = Tensor();
  return max_memory_allocated() - before;
}

} // namespace

int main() {
  std::cout << std::boolalpha;
  section("1. The tensor data structure (TensorImpl)");
  Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
  std::cout << x << "\n";
  std::cout << "shape " << x.sizes() << ", strides " << x.strides()
            << ", storage offset " << x.storage_offset() << ", numel "
            << x.numel() << ", contiguous " << x.is_contiguous() << ", dtype "
            << x.dtype() << ", device " << x.device() << "\n";
  int64_t i = 1, j = 2;
  int64_t off = x.storage_offset() + i * x.stride(0) + j * x.stride(1);
  std::cout << "x[1, 2] = " << x.index({i, j}).item<int64_t>() << " = storage["
            << off << "] = " << x.data_ptr<int64_t>()[off] << "\n";

  section("2. Storage and views");
  Tensor y = x.index({1, Slice()});
  std::cout << "y = x[1, :] = " << y << ", storage offset "
            << y.storage_offset() << ", same storage: " << y.is_alias_of(x)
            << "\n";
  y.index_put_({0}, 100);
  std::cout << "after y[0] = 100, x =\n" << x << "\n";
  Tensor xt = x.t();
  std::cout << "x.t(): shape " << xt.sizes() << ", strides " << xt.strides()
            << ", contiguous " << xt.is_contiguous() << ", same storage "
            << xt.is_alias_of(x) << "\n";
  Tensor xc = xt.contiguous();
  std::cout << "x.t().contiguous(): strides " << xc.strides()
            << ", same storage " << xc.is_alias_of(x) << "\n";
  try {
    xt.view({6});
  } catch (const Error &e) {
    std::cout << "x.t().view({6}) raises: " << e.what() << "\n";
  }

  section("3. dtypes and type promotion");
  Tensor ints = arange(3);
  std::cout << "int64 + 2.5 -> " << (ints + 2.5) << "\n";
  std::cout << "int32 + 2 -> " << (ints.to(kInt) + 2) << "\n";
  std::cout << "float16 + float32 -> " << (ints.to(kHalf) + ones({3})) << "\n";
  std::cout << "int64 / 2 -> " << ints / 2 << "\n";

  section("4. The dispatcher: a mode that logs every op");
  manual_seed(0);
  Tensor w1 = randn({20, 10}), b1 = randn({20});
  Tensor w2 = randn({5, 20}), b2 = randn({5});
  Tensor input = randn({4, 10});
  OperationLogger logger;
  Tensor out;
  {
    TorchDispatchModeGuard guard(logger);
    out = linear(relu(linear(input, w1, b1)), w2, b2);
  }
  std::cout << "output " << out.sizes() << ":\n" << out << "\n";

  section("5. A custom op (torch.library)");
  Library lib("demo");
  lib.def("scale(Tensor x, float a) -> Tensor", &scale_kernel);
  auto scale = find_op<Tensor(const Tensor &, double)>("demo::scale");
  {
    TorchDispatchModeGuard guard(logger);
    std::cout << scale.call(arange(4, kFloat), 0.5) << "\n";
  }

  section("6. Autograd: the graph of loss = ((x*y)+1)^2");
  Tensor xs = tensor({2.0}).requires_grad_();
  Tensor ys = tensor({3.0}).requires_grad_();
  Tensor loss = ((xs * ys) + 1).pow(2);
  std::cout << "loss = " << loss << "\n";
  print_chain(loss);
  loss.backward();
  std::cout << "x.grad = " << xs.grad()
            << " (2(xy+1)y = 42), y.grad = " << ys.grad()
            << " (2(xy+1)x = 28)\n";
  std::cout << "DOT export (render with `dot -Tsvg`):\n"
            << autograd::to_dot({((xs * ys) + 1).pow(2)},
                                {{"x", xs}, {"y", ys}});

  section("7. A custom autograd function: MyReLU");
  Tensor z = tensor({-2.0, -0.5, 0.5, 2.0}).requires_grad_();
  Tensor r = MyReLU::apply(z);
  std::cout << "MyReLU(z) = " << r << "\n";
  r.sum().backward();
  std::cout << "z.grad = " << z.grad() << "\n";

  section("8. The profiler: one training step of a small MLP");
  manual_seed(0);
  nn::Sequential model(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  optim::SGD sgd(model->parameters(), 0.1);
  Tensor data = randn({32, 64});
  Tensor target = randint(0, 10, {32});
  auto train_step = [&] {
    sgd.zero_grad();
    Tensor l = nn::functional::cross_entropy(model->forward(data), target);
    l.backward();
    sgd.step();
  };
  train_step(); // warm-up: the first step starts the thread pool
  profiler::profile prof({profiler::ProfilerActivity::CPU},
                         /*record_shapes=*/true);
  {
    auto guard = prof.guard();
    profiler::record_function step("training_step");
    train_step();
  }
  std::cout << prof.key_averages().table("self_cpu_time_total", 12);

  section("9. Memory statistics and activation checkpointing");
  nn::Sequential mlp;
  for (int k = 0; k < 8; ++k)
    mlp->push_back(
        nn::Sequential(nn::Linear(128, 512), nn::GELU(), nn::Linear(512, 128)));
  Tensor batch = randn({1024, 128});
  int64_t plain = peak_bytes(mlp, batch, false);
  int64_t ckpt = peak_bytes(mlp, batch, true);
  std::cout << "peak memory of forward+backward, 8 blocks Linear(128, 512) "
               "-> GELU -> Linear(512, 128), batch 1024:\n  without "
               "checkpointing "
            << plain / 1024 << " KiB\n  with checkpoint() per layer "
            << ckpt / 1024 << " KiB (" << (100 - 100 * ckpt / plain)
            << "% less)\n";
  std::cout << "memory_allocated() now: " << memory_allocated()
            << " bytes, memory_reserved(): " << memory_reserved() << " bytes\n";

  section("10. ember::compile: capture a model into the ember dialect");
  {
    manual_seed(0);
    nn::Sequential model(nn::Linear(4, 8), nn::ReLU(), nn::Linear(8, 2));
    NoGradGuard no_grad; // inference (compiled training is a later issue)
    auto classify =
        compile([&](const Tensor &x) { return model->forward(x).softmax(-1); },
                CompileOptions().name("classify"));
    Tensor x = randn({3, 4});
    Tensor y = classify(x);  // captures, compiles, runs
    classify(randn({3, 4})); // same shapes: a cache hit
    std::cout << "compiled == eager: " << std::boolalpha
              << y.equal(model->forward(x).softmax(-1)) << "\n";
    ExplainOutput e = classify.explain();
    std::cout << "graphs " << e.graph_count << ", breaks "
              << e.graph_break_count << ", cache hits " << e.cache_hits
              << ", misses " << e.cache_misses << "\n";
    std::cout << "the captured graph in the ember dialect (model parameters "
                 "are lifted to arguments, read at every call):\n"
              << e.graphs.at(0).ir;

    // Data-dependent control flow: item() ends the graph (a graph break).
    auto branchy = compile([](const Tensor &v) {
      return v.sum().item<double>() > 0 ? v.relu() : v.neg();
    });
    branchy(randn({5}));
    GraphBreak b = branchy.explain().break_reasons.at(0);
    std::cout << "graph break: " << b.reason << " at " << b.where << "\n";
  }

  section("11. Fused kernels: pointwise chains become one JIT-compiled loop");
  {
    NoGradGuard no_grad;
    auto block = [](const Tensor &x, const Tensor &w, const Tensor &b) {
      return nn::functional::gelu(x * w + b) * 0.5 + x;
    };
    auto fused = compile(block, CompileOptions().name("block"));
    Tensor x = randn({2048, 2048}), w = randn({2048}), b = randn({2048});
    Tensor y = fused(x, w, b); // captures, fuses, compiles the kernel
    std::cout << "compiled close to eager: " << std::boolalpha
              << y.allclose(block(x, w, b), 1e-5, 1e-5) << "\n";
    ExplainOutput e = fused.explain();
    const GraphInfo &g = e.graphs.at(0);
    std::cout << "after the passes (ember-fuse-elementwise), " << g.ops
              << " ops ran as " << g.kernels << " kernel(s) and " << g.fallbacks
              << " eager step(s):\n"
              << g.ir_optimized;
    double eager = time_ms([&] { return block(x, w, b); }, 5);
    double compiled = time_ms([&] { return fused(x, w, b); }, 5);
    std::cout << "4M float32: eager " << eager << " ms, compiled " << compiled
              << " ms (" << eager / compiled << "x)\n";
  }

  section("12. A model compiled: IR before and after the passes, kernels, "
          "fallbacks, time");
  {
    NoGradGuard no_grad;
    // A classifier head: Linear -> LayerNorm -> GELU -> Linear -> softmax.
    nn::Linear fc1(256, 512), fc2(512, 10);
    nn::LayerNorm norm(nn::LayerNormOptions({512}));
    auto head = [&](const Tensor &x) {
      return fc2->forward(nn::functional::gelu(norm->forward(fc1->forward(x))))
          .softmax(1);
    };
    auto compiled = compile(head, CompileOptions().name("head"));
    Tensor x = randn({512, 256});
    Tensor y = compiled(x);
    std::cout << "compiled close to eager: " << std::boolalpha
              << y.allclose(head(x), 1e-5, 1e-6) << "\n";
    ExplainOutput e = compiled.explain(); // a snapshot: keep it alive
    const GraphInfo &g = e.graphs.at(0);
    std::string pass_list;
    for (const PassTime &p : g.pass_times)
      pass_list += (pass_list.empty() ? "" : ", ") + p.name;
    std::cout << "captured (" << g.ops << " ops):\n"
              << g.ir << "after the passes (" << pass_list << "): " << g.kernels
              << " kernel(s), " << g.fallbacks << " eager step(s)\n"
              << g.ir_optimized;
    for (const std::string &r : g.fallback_reasons)
      std::cout << "  eager: " << r << "\n";
    double eager = time_ms([&] { return head(x); }, 20);
    double fast = time_ms([&] { return compiled(x); }, 20);
    std::cout << "batch 512: eager " << eager << " ms, compiled " << fast
              << " ms (" << eager / fast << "x)\n";
  }
  return 0;
}
