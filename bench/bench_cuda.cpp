// Eager CUDA kernels against the device's copy bandwidth (and, run beside
// bench/cuda_torch.py on the same GPU, against PyTorch's eager kernels).
// Each case runs 5 warm-up and 30 timed repetitions, each timed with CUDA
// events; the table gives the median, the range and the bandwidth of the
// bytes the op must move (each input read once, the output written once).
// Built into the GPU bundle (Note [The GPU bundle] in test/CMakeLists.txt):
//   gpu-bundle/run.sh bench
#include "BenchUtil.h"

#include <ember/ember.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace ember;

namespace {

struct Case {
  std::string name;
  double bytes;
  std::function<void()> run;
};

void time_case(const Case &c) {
  bench::CudaTiming t = bench::cuda_time_ms(c.run);
  std::printf("| %-34s | %9.3f | %7.3f-%-7.3f | %8.1f |\n", c.name.c_str(),
              t.median, t.lo, t.hi, c.bytes / (t.median * 1e-3) / 1e9);
}

} // namespace

int main() {
  if (!cuda::is_available()) {
    std::printf("bench_cuda: no GPU on this machine, nothing to time\n");
    return 0;
  }
  cuda::DeviceProperties p = cuda::get_device_properties(0);
  std::printf("device: %s (sm_%d%d, %d SMs)\n\n", p.name.c_str(), p.major,
              p.minor, p.multi_processor_count);
  const int64_t R = 8192, C = 8192, n = R * C; // 2^26 float32: 256 MiB
  TensorOptions o = TensorOptions().device(kCUDA);
  manual_seed(0);
  Tensor x = randn({R, C}, o), y = randn({R, C}, o), b = randn({C}, o);
  Tensor out = empty({R, C}, o);
  Tensor host = randn({R, C}), pinned = host.pin_memory();
  const double f = 4.0 * double(n);
  std::vector<Case> cases = {
      {"copy_ (device to device)", 2 * f, [&] { out.copy_(x); }},
      {"x + y", 3 * f, [&] { (void)(x + y); }},
      {"x * 2", 2 * f, [&] { (void)(x * 2.0); }},
      {"exp(x)", 2 * f, [&] { (void)x.exp(); }},
      {"x + b (broadcast row)", 2 * f, [&] { (void)(x + b); }},
      {"x.t() + y (strided)", 3 * f, [&] { (void)(x.t() + y); }},
      {"x.to(float16)", 1.5 * f, [&] { (void)x.to(kHalf); }},
      {"out.add_(x)", 3 * f, [&] { out.add_(x); }},
      {"host to device (pageable)", f, [&] { out.copy_(host); }},
      {"host to device (pinned)", f, [&] { out.copy_(pinned); }},
      {"device to host (pinned)", f, [&] { pinned.copy_(x); }},
  };
  std::printf("| %-34s | %9s | %15s | %8s |\n", "op (8192x8192 float32)",
              "median ms", "range ms", "GB/s");
  std::printf("|%s|%s|%s|%s|\n", std::string(36, '-').c_str(),
              std::string(11, '-').c_str(), std::string(17, '-').c_str(),
              std::string(10, '-').c_str());
  for (const Case &c : cases)
    time_case(c);

  // Matrix products through cuBLAS (TF32 off unless allowed, as PyTorch's
  // default), and the cost of one small op: 100 additions of one-element
  // tensors per repetition, where the launch and the host's dispatch cost,
  // not the bytes.
  const int64_t M = 4096;
  Tensor a = randn({M, M}, o), bm = randn({M, M}, o);
  Tensor a16 = a.to(kBFloat16), b16 = bm.to(kBFloat16);
  Tensor one = randn({1}, o), two = randn({1}, o);
  const double flops = 2.0 * double(M) * double(M) * double(M);
  struct Rate {
    std::string name;
    double per; ///< flops of a repetition, or its op count (< 0)
    std::function<void()> run;
  };
  std::vector<Rate> rates = {
      {"mm 4096^3 float32", flops, [&] { (void)a.mm(bm); }},
      {"mm 4096^3 float32, TF32 allowed", flops,
       [&] {
         cuda::set_allow_tf32(true);
         (void)a.mm(bm);
         cuda::set_allow_tf32(false);
       }},
      {"mm 4096^3 bfloat16", flops, [&] { (void)a16.mm(b16); }},
      {"100 x (x + y), 1 float", -100,
       [&] {
         for (int i = 0; i < 100; ++i)
           (void)(one + two);
       }},
  };
  std::printf("\n| %-34s | %9s | %15s | %14s |\n", "case", "median ms",
              "range ms", "TFLOP/s, us/op");
  std::printf("|%s|%s|%s|%s|\n", std::string(36, '-').c_str(),
              std::string(11, '-').c_str(), std::string(17, '-').c_str(),
              std::string(16, '-').c_str());
  for (const Rate &r : rates) {
    bench::CudaTiming t = bench::cuda_time_ms(r.run);
    double rate =
        r.per > 0 ? r.per / (t.median * 1e-3) / 1e12 : t.median * 1e3 / -r.per;
    std::printf("| %-34s | %9.3f | %7.3f-%-7.3f | %14.2f |\n", r.name.c_str(),
                t.median, t.lo, t.hi, rate);
  }
  return 0;
}
