// The CUDA renderer's compile cost without a GPU (issue 15: "NVRTC: cold
// <= 60 ms per kernel"): for typical fused kernels, the time to render the
// kernel description as CUDA C and NVRTC's time to compile the program to
// PTX and to a cubin for sm_90 (what get_kernel asks for on an H100), each
// in a fresh NVRTC program (cold: NVRTC has no cache of its own). The disk
// cache's load needs a device (cuModuleLoadData) and is measured by the GPU
// suite.
//
//   bench_nvrtc [--reps N] [--dump DIR]
//
// (--dump writes each kernel's program and its PTX to DIR/<kernel>.cu and
// DIR/<kernel>.ptx, to read what NVRTC is given and makes.)
//
// prints one JSON object per kernel and target:
//   {"kernel": "softmax", "target": "cubin", "render_ms": [...], "nvrtc_ms":
//   [...]}
#include "codegen/CudaRender.h"
#include "runtime/Nvrtc.h"

#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

using namespace ember;
using codegen::KernelSpec;

namespace {

const OperatorHandle &op(const char *name) {
  return Dispatcher::singleton().findSchemaOrThrow(name);
}

/// gelu(x * w + b) over 2^28 float32 (w and b rows of 4096).
KernelSpec gelu_chain() {
  KernelSpec k;
  k.shape = {65536, 4096};
  int x = k.input(kFloat, {4096, 1}), w = k.input(kFloat, {0, 1}),
      b = k.input(kFloat, {0, 1});
  int m = k.step(op("ember::mul.Tensor"), {x, w}, {}, kFloat, kFloat);
  int s = k.step(op("ember::add.Tensor"), {m, b}, {Scalar(1)}, kFloat, kFloat);
  k.outputs = {k.step(op("ember::_gelu_erf"), {s}, {}, kFloat, kFloat)};
  return k;
}

/// ((((x * y + 1).relu() - 0.5) * x).abs() + y).sigmoid() * 2, contiguous.
KernelSpec chain8() {
  KernelSpec k;
  k.shape = {1 << 28};
  int x = k.input(kFloat, {1}), y = k.input(kFloat, {1});
  int one = k.constant(kDouble, Scalar(1.0)), half = k.constant(kDouble, 0.5),
      two = k.constant(kDouble, Scalar(2.0));
  int v = k.step(op("ember::mul.Tensor"), {x, y}, {}, kFloat, kFloat);
  v = k.step(op("ember::add.Tensor"), {v, one}, {Scalar(1)}, kFloat, kFloat);
  v = k.step(op("ember::relu"), {v}, {}, kFloat, kFloat);
  v = k.step(op("ember::sub.Tensor"), {v, half}, {Scalar(1)}, kFloat, kFloat);
  v = k.step(op("ember::mul.Tensor"), {v, x}, {}, kFloat, kFloat);
  v = k.step(op("ember::abs"), {v}, {}, kFloat, kFloat);
  v = k.step(op("ember::add.Tensor"), {v, y}, {Scalar(1)}, kFloat, kFloat);
  v = k.step(op("ember::sigmoid"), {v}, {}, kFloat, kFloat);
  k.outputs = {k.step(op("ember::mul.Tensor"), {v, two}, {}, kFloat, kFloat)};
  return k;
}

/// softmax over rows of 8192 (as ember-decompose writes it).
KernelSpec softmax() {
  KernelSpec k;
  k.shape = {8192, 8192};
  k.reduced = {false, true};
  int x = k.input(kFloat, {8192, 1});
  int m = k.reduce(ReductionInfo::Amax, x, kFloat, kFloat, kFloat);
  int d = k.step(op("ember::sub.Tensor"), {x, m}, {Scalar(1)}, kFloat, kFloat);
  int e = k.step(op("ember::exp"), {d}, {}, kFloat, kFloat);
  int s = k.reduce(ReductionInfo::Sum, e, kFloat, kDouble, kFloat);
  int r = k.step(op("ember::reciprocal"), {s}, {}, kFloat, kFloat);
  k.outputs = {k.step(op("ember::mul.Tensor"), {e, r}, {}, kFloat, kFloat)};
  return k;
}

/// layer_norm's statistics and normalized rows of 8192 in float16.
KernelSpec layer_norm_half() {
  KernelSpec k;
  k.shape = {8192, 8192};
  k.reduced = {false, true};
  int x = k.input(kHalf, {8192, 1}), w = k.input(kHalf, {0, 1});
  int mean = k.reduce(ReductionInfo::Mean, x, kFloat, kDouble, kFloat);
  int c =
      k.step(op("ember::sub.Tensor"), {x, mean}, {Scalar(1)}, kFloat, kFloat);
  int sq = k.step(op("ember::mul.Tensor"), {c, c}, {}, kFloat, kFloat);
  int var = k.reduce(ReductionInfo::Mean, sq, kFloat, kDouble, kFloat);
  int eps = k.constant(kDouble, Scalar(1e-5));
  int ve =
      k.step(op("ember::add.Tensor"), {var, eps}, {Scalar(1)}, kFloat, kFloat);
  int rs = k.step(op("ember::rsqrt"), {ve}, {}, kFloat, kFloat);
  int n = k.step(op("ember::mul.Tensor"), {c, rs}, {}, kFloat, kFloat);
  int y = k.step(op("ember::mul.Tensor"), {n, w}, {}, kFloat, kHalf);
  k.outputs = {y, mean, rs};
  return k;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - t0)
      .count();
}

void print_list(const char *key, const std::vector<double> &v) {
  std::printf("\"%s\": [", key);
  for (size_t i = 0; i < v.size(); ++i)
    std::printf("%s%.3f", i ? ", " : "", v[i]);
  std::printf("]");
}

} // namespace

int main(int argc, char **argv) {
  int reps = 5;
  std::string dump;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    } else if (a == "--dump" && i + 1 < argc) {
      dump = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_nvrtc [--reps N] [--dump DIR]\n");
      return 2;
    }
  }
  if (!cuda::nvrtc::is_available()) {
    std::fprintf(stderr, "bench_nvrtc: NVRTC is not available here\n");
    return 1;
  }
  std::printf("{\"nvrtc_version\": %d}\n", cuda::nvrtc::version());
  std::vector<std::pair<const char *, KernelSpec>> kernels = {
      {"gelu_chain", gelu_chain()},
      {"chain8", chain8()},
      {"softmax", softmax()},
      {"layer_norm_half", layer_norm_half()}};
  for (auto &[name, spec] : kernels)
    for (bool cubin : {false, true}) {
      std::vector<double> render, compile;
      size_t bytes = 0;
      for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        codegen::CudaKernel k = codegen::render_cuda(spec);
        std::string source = k.source();
        render.push_back(ms_since(t0));
        auto t1 = std::chrono::steady_clock::now();
        cuda::nvrtc::Compiled c =
            cuda::nvrtc::compile(source, k.entry + ".cu", 90, cubin);
        compile.push_back(ms_since(t1));
        bytes = c.binary.size();
        if (!dump.empty() && !cubin && r == 0) {
          std::ofstream(dump + "/" + name + ".cu") << source;
          std::ofstream(dump + "/" + name + ".ptx") << c.binary;
        }
      }
      std::printf("{\"kernel\": \"%s\", \"target\": \"%s\", \"bytes\": %zu, ",
                  name, cubin ? "cubin" : "ptx", bytes);
      print_list("render_ms", render);
      std::printf(", ");
      print_list("nvrtc_ms", compile);
      std::printf("}\n");
    }
  return 0;
}
