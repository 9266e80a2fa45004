// ember-capture: runs a named C++ program through ember::compile and prints
// one stage of what it captured, for FileCheck (test/lit/frontend/).
//
//   ember-capture <program> --emit=trace|ir|optimized|dot|explain
//                 [--calls=N]
//   ember-capture --list
//   ember-capture --pipeline     the passes of opt_level 2, one a line
//
// Each program is a small function compiled and called `calls` times (1 by
// default; some programs change their inputs between calls to show
// recompiles). trace/ir/dot print every compiled graph in order.
#include "eager/Meta.h"
#include <ember/ember.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <string>

using namespace ember;

namespace {

Tensor input(IntArrayRef shape, int64_t seed, ScalarType dtype = kFloat) {
  manual_seed(uint64_t(seed));
  return randn(shape).to(dtype);
}

// Custom op for the eager-fallback program: y = x * a + 1.
Tensor scale_add_one(const Tensor &x, double a) {
  NoGradGuard g;
  return x * a + 1;
}
void register_custom_op() {
  static bool done = [] {
    static Library lib("capture_demo");
    lib.def("scale_add_one(Tensor x, float a) -> Tensor", &scale_add_one);
    meta::register_fake("capture_demo::scale_add_one", [](const Stack &args) {
      const Tensor &x = args[0].toTensor();
      return std::vector<Tensor>{meta::fake(x.sizes(), x.dtype(), x.device())};
    });
    return true;
  }();
  (void)done;
}

using Program = std::function<ExplainOutput(int calls)>;

template <class F, class... A>
ExplainOutput run(F fn, int calls, CompileOptions opts, A... args) {
  auto f = compile(fn, opts.name("program"));
  for (int i = 0; i < calls; ++i)
    f(args...);
  return f.explain();
}

std::map<std::string, std::pair<std::string, Program>> programs() {
  std::map<std::string, std::pair<std::string, Program>> p;
  p["pointwise"] = {
      "relu(x * y + 1) with broadcasting", [](int calls) {
        return run(
            [](const Tensor &x, const Tensor &y) { return (x * y + 1).relu(); },
            calls, {}, input({4, 8}, 1), input({8}, 2));
      }};
  p["promotion"] = {"int64 + float32 + a wrapped double", [](int calls) {
                      return run([](const Tensor &i,
                                    const Tensor &f) { return (i + f) * 2.5; },
                                 calls, {}, input({3}, 1, kLong),
                                 input({3}, 2));
                    }};
  p["mlp"] = {
      "nn::Sequential(Linear, ReLU, Linear) under NoGradGuard", [](int calls) {
        manual_seed(0);
        nn::Sequential model(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4));
        NoGradGuard g;
        return run([&](const Tensor &x) { return model->forward(x); }, calls,
                   {}, input({2, 8}, 3));
      }};
  p["reduction"] = {"softmax over the last dim, then mean over dim 0",
                    [](int calls) {
                      return run(
                          [](const Tensor &x) {
                            return x.softmax(-1).mean({0}, /*keepdim=*/true);
                          },
                          calls, {}, input({4, 5}, 4));
                    }};
  p["views"] = {"transpose, slice and reshape of an input", [](int calls) {
                  return run(
                      [](const Tensor &x) {
                        using indexing::Slice;
                        return x.t().index({Slice(1, 3)}).reshape({-1}) * 2;
                      },
                      calls, {}, input({4, 3}, 5));
                }};
  p["inplace_input"] = {"x.add_(1) on an argument: a mutation", [](int calls) {
                          return run(
                              [](const Tensor &x) {
                                x.add_(1);
                                return x.sum();
                              },
                              calls, {}, input({3}, 6));
                        }};
  p["inplace_view"] = {"x.select(0, 1).mul_(2): written back through the view",
                       [](int calls) {
                         return run(
                             [](const Tensor &x) {
                               x.select(0, 1).mul_(2);
                               return x.exp();
                             },
                             calls, {}, input({2, 3}, 7));
                       }};
  p["item_break"] = {"data-dependent control flow on item(): a graph break",
                     [](int calls) {
                       return run(
                           [](const Tensor &x) {
                             if (x.sum().item<double>() > 0)
                               return x.cos();
                             return x.sin();
                           },
                           calls, {}, input({4}, 8));
                     }};
  p["nonzero_break"] = {"nonzero (output shape depends on data)",
                        [](int calls) {
                          return run(
                              [](const Tensor &x) {
                                return ember::nonzero(x > 0).sum() + x.sum();
                              },
                              calls, {}, input({6}, 9));
                        }};
  p["recompile"] = {"one shape per call: recompiles with their reasons",
                    [](int calls) {
                      auto f = compile([](const Tensor &x) { return x.exp(); },
                                       CompileOptions().name("program"));
                      for (int i = 0; i < calls; ++i)
                        f(input({2, 3 + i}, 10));
                      return f.explain();
                    }};
  p["custom_op"] = {
      "a custom op with a fake implementation", [](int calls) {
        register_custom_op();
        auto op = find_op<Tensor(const Tensor &, double)>(
            "capture_demo::scale_add_one");
        return run(
            [op](const Tensor &x) { return op.call(x.relu(), 3.0).neg(); },
            calls, {}, input({5}, 11));
      }};
  p["training"] = {
      "parameters that require grad: a joint forward/backward graph",
      [](int calls) {
        manual_seed(0);
        nn::Linear lin(4, 2);
        return run(
            [&](const Tensor &x) { return lin->forward(x).tanh().sum(); },
            calls, {}, input({3, 4}, 12));
      }};
  return p;
}

int usage() {
  std::cerr << "usage: ember-capture <program> "
               "--emit=trace|ir|optimized|dot|explain [--calls=N]\n"
               "       ember-capture --list\n"
               "       ember-capture --pipeline\n";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  auto progs = programs();
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (auto &[name, p] : progs)
      std::cout << name << ": " << p.first << "\n";
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--pipeline") == 0) {
    for (const std::string &pass : pipeline_passes(2))
      std::cout << pass << "\n";
    return 0;
  }
  if (argc < 3)
    return usage();
  std::string name = argv[1], emit;
  int calls = 1;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--emit=", 0) == 0)
      emit = a.substr(7);
    else if (a.rfind("--calls=", 0) == 0) {
      // A count of calls, 1 to 1000; anything else is a usage error.
      std::string v = a.substr(8);
      char *end = nullptr;
      long n = v.empty() ? 0 : std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1000) {
        std::cerr << "ember-capture: --calls expects a number of calls from 1 "
                     "to 1000, got '"
                  << v << "'\n";
        return 2;
      }
      calls = int(n);
    } else
      return usage();
  }
  auto it = progs.find(name);
  if (it == progs.end()) {
    std::cerr << "ember-capture: no program '" << name
              << "' (--list shows them)\n";
    return 2;
  }
  try {
    ExplainOutput e = it->second.second(calls);
    if (emit == "explain") {
      std::cout << e;
      return 0;
    }
    for (const GraphInfo &g : e.graphs) {
      if (emit == "trace")
        std::cout << g.trace;
      else if (emit == "ir")
        std::cout << g.ir;
      else if (emit == "optimized")
        std::cout << g.ir_optimized;
      else if (emit == "dot")
        std::cout << g.dot;
      else
        return usage();
    }
  } catch (const std::exception &ex) {
    std::cerr << "ember-capture: " << ex.what() << "\n";
    return 1;
  }
  return 0;
}
