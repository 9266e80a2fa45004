// Note [CUDA sort]
// sort, argsort and topk on CUDA are one kernel (eager/cuda/SortKernel.cuh):
// a bitonic sorting network. The dim is moved last and the tensor copied
// into a contiguous (rows, p) buffer, p the power of two at or above the
// dim's length n (constant_pad_nd), with an int64 buffer holding arange(p)
// in each row. The network is log2(p) * (log2(p) + 1) / 2 steps (k, j), each
// one launch: thread t compares the pair (i, i ^ j) of its row and swaps
// keys and indices when they are out of order for its block's direction
// (i & k). A step touches each element once, so launches need no atomics or
// synchronization beyond the stream's order. The comparison is a strict
// total order on (key, index), Note [Sort order]'s: keys in their compute
// type (float for Half/BFloat16), NaN after every number (first when
// descending), -0.0 equal to 0.0, equal keys by the smaller index, and the
// padding after every real element. A total order on distinct items has
// one sorted arrangement, so the network, though not a stable algorithm,
// gives exactly the stable sort of the CPU kernel (eager/cpu/Sort.cpp),
// bit for bit, whatever the thread count. The result is narrowed to n
// (topk: to k; topk(sorted=false) then orders its k by index with a second
// sort of the indices, as the CPU kernel returns them) and the dim moved
// back, contiguous.
// Cost: O(p log^2 p) compare-exchanges a row and log2(p)^2 / 2 launches,
// each reading and writing the whole buffer from global memory: fine for
// short rows or many rows, slow for one long row (2^20 elements is 210
// passes over the data, where a radix sort of float keys makes 4), and a
// row just above a power of two pays for almost twice its length. topk sorts
// the whole row, even for a small k. Steps with j below a block's width
// could run in shared memory in one launch: the next step if this is slow.
// The planning is device-agnostic and the device code compiles as host C++,
// so test_cuda runs both on CPU tensors against the CPU kernels on every
// machine.
#include "eager/cuda/Sort.h"

#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/cuda/HostDevice.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/Nvrtc.h"

#include <algorithm>
#include <bit>

// The device code as host C++ (the prelude first: the kernel uses it).
namespace dev {
// clang-format off
#include "eager/cuda/SortKernel.cuh"
// clang-format on
} // namespace dev

namespace ember::cuda {

namespace {

// The device code as a string for NVRTC, embedded by the build.
const char kSortKernel[] =
#include "eager/generated/CudaSortKernel.inc"
    ;

const char kEntry[] = R"(
namespace ember {
extern "C" __global__ void ember_sort(EMBER_T *keys, int64_t *idx,
                                      const SortPlan plan) {
  const long long pairs = plan.rows * (plan.p >> 1);
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
       t < pairs; t += step)
    sort_point<EMBER_T, EMBER_ACC>(plan, t, keys, idx);
}
} // namespace ember
)";

/// Step (k, j) of a launch as the kernel's parameter.
dev::ember::SortPlan plan_of(const SortLaunch &l, int64_t k, int64_t j) {
  dev::ember::SortPlan p{};
  p.rows = l.rows;
  p.p = l.p;
  p.n = l.n;
  p.j = j;
  p.k = k;
  p.descending = l.descending ? 1 : 0;
  return p;
}

} // namespace

std::vector<std::pair<int64_t, int64_t>> SortLaunch::steps() const {
  std::vector<std::pair<int64_t, int64_t>> s;
  for (int64_t k = 2; k <= p; k <<= 1)
    for (int64_t j = k >> 1; j > 0; j >>= 1)
      s.push_back({k, j});
  return s;
}

SortLaunch plan_sort(const Tensor &x, bool descending) {
  EMBER_CHECK(x.dim() >= 1, "plan_sort: expected a tensor of at least 1 dim");
  SortLaunch l;
  l.n = x.size(-1);
  l.rows = l.n == 0 ? 0 : x.numel() / l.n;
  l.p = int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(l.n, 1))));
  l.descending = descending;
  // (one copy into a new contiguous buffer, even when p == n: the network
  // sorts in place)
  l.keys = constant_pad_nd(x, {0, l.p - l.n}, 0).view({l.rows, l.p});
  l.indices = arange(l.p, TensorOptions(kLong).device(x.device()))
                  .expand({l.rows, l.p})
                  .contiguous();
  return l;
}

std::string sort_source(ScalarType dtype) {
  return prelude() + kSortKernel + "#define EMBER_T " + detail::ctype(dtype) +
         "\n#define EMBER_ACC " + detail::ctype(detail::compute_of(dtype)) +
         "\n" + kEntry;
}

void run_sort(const SortLaunch &l) {
  const int64_t pairs = l.rows * (l.p / 2);
  if (pairs == 0)
    return;
  const int device = l.keys.device().index();
  const ScalarType t = l.keys.dtype();
  void *fn =
      detail::cached_kernel(device, "sort:" + std::string(toString(t)),
                            "ember_sort", [&] { return sort_source(t); });
  void *keys = l.keys.data_ptr(), *idx = l.indices.data_ptr();
  const int64_t grid = detail::grid_for(device, pairs, 256);
  for (auto [k, j] : l.steps()) {
    dev::ember::SortPlan plan = plan_of(l, k, j);
    void *args[] = {&keys, &idx, &plan};
    launch_kernel(device, fn, unsigned(grid), 256, args);
  }
}

void run_sort_on_host(const SortLaunch &l) {
  EMBER_CHECK(!l.keys.is_cuda(), "run_sort_on_host: CPU tensors only");
  const int64_t pairs = l.rows * (l.p / 2);
  if (pairs == 0)
    return;
  detail::dispatch_dev(l.keys.dtype(), "sort", [&]<class T, class A>() {
    T *keys = static_cast<T *>(l.keys.data_ptr());
    auto *idx = static_cast<dev::ember::int64_t *>(l.indices.data_ptr());
    for (auto [k, j] : l.steps()) {
      const dev::ember::SortPlan plan = plan_of(l, k, j);
      for (int64_t t = 0; t < pairs; ++t)
        dev::ember::sort_point<T, A>(plan, t, keys, idx);
    }
  });
}

std::tuple<Tensor, Tensor> sort_rows(const Tensor &rows, bool descending) {
  SortLaunch l = plan_sort(rows, descending);
  if (l.keys.is_cuda())
    run_sort(l);
  else
    run_sort_on_host(l);
  return {l.keys.narrow(1, 0, l.n), l.indices.narrow(1, 0, l.n)};
}

} // namespace ember::cuda

// --- the ops' CUDA kernels (ops.yaml `cuda:`) ------------------------------

namespace ember::native {

namespace {

/// The first k of each slice along dim d of self in the sort's order
/// (Note [CUDA sort]), in that order, or in index order unless `in_order`:
/// (values, indices), contiguous, self's shape with k along d.
std::tuple<Tensor, Tensor> order_along_dim(const Tensor &self, int64_t d,
                                           int64_t k, bool descending,
                                           bool in_order) {
  const int64_t last = self.dim() - 1;
  Tensor x = d == last ? self : self.transpose(d, last);
  DimVector out_sizes(x.sizes());
  out_sizes.back() = k;
  if (x.numel() == 0 || k == 0) {
    DimVector sizes(self.sizes());
    sizes[size_t(d)] = k;
    return {empty(sizes, self.options()),
            empty(sizes, TensorOptions(kLong).device(self.device()))};
  }
  auto [values, indices] = cuda::sort_rows(x, descending);
  values = values.narrow(1, 0, k);
  indices = indices.narrow(1, 0, k);
  if (!in_order && k > 1) {
    // (indices are distinct: sorting them orders the k by position)
    auto [positions, perm] = cuda::sort_rows(indices, false);
    values = values.gather(1, perm);
    indices = positions;
  }
  // (the narrowed rows view as x's shape: a dim split never copies)
  values = values.reshape(out_sizes);
  indices = indices.reshape(out_sizes);
  if (d != last) {
    values = values.transpose(d, last);
    indices = indices.transpose(d, last);
  }
  return {values.contiguous(), indices.contiguous()};
}

} // namespace

std::tuple<Tensor, Tensor> sort_cuda(const Tensor &self, int64_t dim,
                                     bool descending, bool stable) {
  (void)stable; // always stable, Note [Sort order]
  int64_t d = maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0)
    return {self.clone(),
            zeros({}, TensorOptions(kLong).device(self.device()))};
  return order_along_dim(self, d, self.size(d), descending, true);
}

std::tuple<Tensor, Tensor> topk_cuda(const Tensor &self, int64_t k, int64_t dim,
                                     bool largest, bool sorted) {
  int64_t d = meta::check_topk(self, k, dim);
  const TensorOptions index_options =
      TensorOptions(kLong).device(self.device());
  if (self.dim() == 0) { // k is 0 or 1
    if (k == 1)
      return {self.clone(), zeros({}, index_options)};
    return {empty({0}, self.options()), empty({0}, index_options)};
  }
  return order_along_dim(self, d, k, largest, sorted);
}

} // namespace ember::native
