// Note [CUDA random numbers]
// rand, randn and randint (and so dropout, rand_like, ...) on a CUDA device
// draw on the device: one thread per element computes Philox's bits at
// counter offset + i under the seed (runtime/Philox.h, compiled by NVRTC
// from the same header the CPU uses) and the CPU ops' arithmetic
// (RandomKernel.cuh, the twin of eager/cpu/Random.cpp's lambdas). The
// generator's (seed, offset) moves by numel as on the CPU (Note
// [Counter-based random numbers]), so a seed gives the same stream on
// every device: uniform and integer draws are bit-identical to the CPU's;
// normal draws call the device's double log, sqrt and cos, which may differ
// from the host's libm in the last bit of a double (invisible once rounded
// to float, almost always). Inside ember::compile a draw stays the recorded
// op on the generator state (Note [Random ops in a compiled function]),
// made on the host and copied: a draw made here would be a constant of the
// graph.
#include "eager/cuda/Random.h"

#include "eager/Dtype.h"
#include "eager/cuda/HostDevice.h"
#include "eager/cuda/Pointwise.h"
#include "runtime/Nvrtc.h"
#include "runtime/Philox.h"

#include <algorithm>
#include <cmath>

// The device code as host C++ (after the prelude: eager/cuda/HostDevice.h),
// with the host's Philox, the same header NVRTC compiles.
namespace dev {
// clang-format off
namespace ember { namespace philox = ::ember::philox; }
#include "eager/cuda/RandomKernel.cuh"
// clang-format on
} // namespace dev

namespace ember::cuda {

namespace {

const char kPhilox[] =
#include "eager/generated/CudaPhilox.inc"
    ;
const char kRandomKernel[] =
#include "eager/generated/CudaRandomKernel.inc"
    ;

const char kEntry[] = R"(
namespace ember {
extern "C" __global__ void ember_philox(EMBER_T *out, long long n,
                                        unsigned long long seed,
                                        unsigned long long offset,
                                        long long low,
                                        unsigned long long range) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step)
    out[i] = draw_point<EMBER_KIND, EMBER_T>(seed, offset, i, low, range);
}
} // namespace ember
)";

template <int Kind>
void draw_on_host(const Tensor &out, uint64_t seed, uint64_t offset,
                  int64_t low, uint64_t range) {
  detail::dispatch_dev(out.dtype(), "random kernels", [&]<class T, class>() {
    T *p = static_cast<T *>(out.data_ptr());
    for (int64_t i = 0, n = out.numel(); i < n; ++i)
      p[i] = dev::ember::draw_point<Kind, T>(seed, offset, i, low, range);
  });
}

} // namespace

std::string draw_source(Draw kind, ScalarType dtype) {
  return prelude() + kPhilox + kRandomKernel + "#define EMBER_KIND " +
         std::to_string(int(kind)) + "\n#define EMBER_T " +
         detail::ctype(dtype) + "\n" + kEntry;
}

void draw(Draw kind, const Tensor &out, uint64_t seed, uint64_t offset,
          int64_t low, uint64_t range) {
  EMBER_CHECK(out.is_contiguous(), "cuda::draw: a contiguous output");
  EMBER_CHECK(range > 0, "cuda::draw: an empty range");
  EMBER_CHECK(kind == Draw::Randint || isFloatingType(out.dtype()),
              "cuda::draw: uniform and normal draws are floating, not ",
              out.dtype());
  const int64_t n = out.numel();
  if (n == 0)
    return;
  if (!out.is_cuda()) {
    switch (kind) {
    case Draw::Uniform:
      return draw_on_host<EMBER_DRAW_UNIFORM>(out, seed, offset, low, range);
    case Draw::Normal:
      return draw_on_host<EMBER_DRAW_NORMAL>(out, seed, offset, low, range);
    case Draw::Randint:
      return draw_on_host<EMBER_DRAW_RANDINT>(out, seed, offset, low, range);
    }
  }
  const int device = out.device().index();
  void *fn = detail::cached_kernel(
      device,
      "philox:" + std::to_string(int(kind)) + ":" +
          std::string(toString(out.dtype())),
      "ember_philox", [&] { return draw_source(kind, out.dtype()); });
  void *data = out.data_ptr();
  long long count = n, lo = low;
  unsigned long long s = seed, off = offset, r = range;
  void *args[] = {&data, &count, &s, &off, &lo, &r};
  const int64_t grid = detail::grid_for(device, n, 256);
  launch_kernel(device, fn, unsigned(grid), 256, args);
}

} // namespace ember::cuda
