// Note [CUDA index kernels]
// gather, index_select, scatter_, scatter_add_ and index_add_ on CUDA are
// one kernel (eager/cuda/IndexKernel.cuh): each thread takes points of an
// iteration space (the index's shape for gather and scatter, the result's
// or the source's for index_select and index_add_), finds the direct
// operand's element at its strides and the indexed operand's at its strides
// along the other dims plus index * stride along the indexed dim, and
// copies one way (gather: the direct operand is the result), the other
// (scatter_), or adds with an atomic operation (scatter_add_, index_add_;
// the order of additions into one element is not fixed, so float sums may
// differ in the last bits from call to call, as PyTorch's do). Indices are
// checked on the device before the launch (amin and amax, one round trip):
// an index out of range raises PyTorch's IndexError text, where PyTorch's
// kernels stop the process with a device-side assert. The planning here is
// device-agnostic and the device code compiles as host C++, so test_cuda
// runs both on CPU tensors against the CPU kernels on every machine.
#include "eager/cuda/Index.h"

#include "eager/Factory.h"
#include "eager/Meta.h"
#include "eager/WrapDim.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/CudaDriver.h"
#include "runtime/Nvrtc.h"

#include <cmath>
#include <cstring>

// The device code as host C++ (the prelude first: the kernels use it).
namespace dev {
// clang-format off
#include "eager/cuda/PointwiseMath.cuh"
#include "eager/cuda/IndexKernel.cuh"
// clang-format on
} // namespace dev

namespace ember::cuda {

namespace {

// The device code as a string for NVRTC, embedded by the build.
const char kIndexKernel[] =
#include "eager/generated/CudaIndexKernel.inc"
    ;

const char kEntry[] = R"(
namespace ember {
extern "C" __global__ void ember_index(EMBER_T *direct, EMBER_T *indexed,
                                       const long long *index,
                                       const IndexPlan plan, EMBER_ACC alpha) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
       i < plan.n; i += step)
    index_point<EMBER_MODE, EMBER_T, EMBER_ACC>(plan, i, direct, indexed,
                                                index, alpha);
}
} // namespace ember
)";

constexpr int kMaxDims = EMBER_INDEX_MAX_DIMS;

/// Sizes and strides with a 0-dim tensor seen as 1-d of one element (as
/// PyTorch's ensure_nonempty_dim in scatter / gather).
std::vector<int64_t> sizes_of(const Tensor &t) {
  return t.dim() == 0
             ? std::vector<int64_t>{1}
             : std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}
std::vector<int64_t> strides_of(const Tensor &t) {
  return t.dim() == 0
             ? std::vector<int64_t>{1}
             : std::vector<int64_t>(t.strides().begin(), t.strides().end());
}
std::vector<int64_t> contiguous_of(const std::vector<int64_t> &sizes) {
  DimVector s = contiguous_strides(IntArrayRef(sizes));
  return std::vector<int64_t>(s.begin(), s.end());
}

/// `strides` with the indexed dim's stride taken out (into `indexed`).
std::vector<int64_t> without(std::vector<int64_t> strides, int64_t d,
                             int64_t *indexed) {
  *indexed = strides[size_t(d)];
  strides[size_t(d)] = 0;
  return strides;
}

/// Only `d` walks the (1-d) index.
std::vector<int64_t> along(size_t ndim, int64_t d) {
  std::vector<int64_t> s(ndim, 0);
  s[size_t(d)] = 1;
  return s;
}

dev::ember::IndexPlan plan_of(const IndexLaunch &l) {
  EMBER_CHECK(l.sizes.size() <= size_t(kMaxDims),
              "CUDA index kernels walk at "
              "most ",
              kMaxDims, " dims, got a tensor of ", l.sizes.size());
  dev::ember::IndexPlan p{};
  p.n = l.numel();
  p.ndim = int64_t(l.sizes.size());
  for (size_t k = 0; k < l.sizes.size(); ++k) {
    p.sizes[k] = l.sizes[k];
    p.direct[k] = l.direct_strides[k];
    p.indexed[k] = l.indexed_strides[k];
    p.index[k] = l.index_strides[k];
  }
  p.indexed_stride = l.indexed_stride;
  return p;
}

/// The element type of mode 0 and 1 (a copy of bits) and of mode 2.
ScalarType element_of(int mode, ScalarType t) {
  if (mode != EMBER_INDEX_ADD) {
    switch (elementSize(t)) {
    case 1:
      return kByte;
    case 2:
      return kShort;
    case 4:
      return kInt;
    case 8:
      return kLong;
    default:
      break;
    }
  }
  return t;
}

/// fn.template operator()<T, A>() with the dev types of `t` (T) and of its
/// compute type (A).
template <class F> void dispatch_dev(ScalarType t, F &&fn) {
  switch (t) {
  case kFloat:
    return fn.template operator()<float, float>();
  case kDouble:
    return fn.template operator()<double, double>();
  case kLong:
    return fn.template operator()<long, long>();
  case kInt:
    return fn.template operator()<int, int>();
  case kShort:
    return fn.template operator()<short, short>();
  case kChar:
    return fn.template operator()<signed char, signed char>();
  case kByte:
    return fn.template operator()<unsigned char, unsigned char>();
  case kBool:
    return fn.template operator()<bool, bool>();
  case kHalf:
    return fn.template operator()<dev::ember::Half, float>();
  case kBFloat16:
    return fn.template operator()<dev::ember::BFloat16, float>();
  default:
    EMBER_CHECK(false, "index kernels: no element type for ", t);
  }
}

/// alpha in the compute type A.
template <class A> A alpha_as(const Scalar &alpha) { return alpha.to<A>(); }

/// Indices in [0, size), checked where they are (on the device: amin and
/// amax, one round trip), with the CPU kernels' message.
void check_range(const char *op, const Tensor &idx, int64_t dim, int64_t size) {
  if (idx.numel() == 0)
    return;
  Tensor flat = idx.reshape({-1});
  int64_t lo = flat.amin({0}).item<int64_t>();
  int64_t hi = flat.amax({0}).item<int64_t>();
  int64_t bad = lo < 0 ? lo : hi >= size ? hi : 0;
  if (lo < 0 || hi >= size)
    throw IndexError(ember::detail::str(op, "index ", bad,
                                        " is out of bounds for dimension ", dim,
                                        " with size ", size));
}

} // namespace

void check_range_of(const IndexLaunch &l, const char *op, int64_t dim) {
  std::vector<int64_t> sizes = sizes_of(l.indexed);
  check_range(op, l.index, dim, sizes[size_t(dim)]);
}

int64_t IndexLaunch::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

namespace {
/// A launch of `mode` over `sizes`: `direct` at `direct_strides`, `indexed`
/// (written or read at the index along dim d), and `index` (int64,
/// contiguous) walked by `index_strides`: the index's own shape (gather,
/// scatter), or along d only (a 1-d index: index_select, index_add_).
IndexLaunch make_launch(int mode, const Tensor &direct, const Tensor &indexed,
                        int64_t d, const Tensor &index,
                        std::vector<int64_t> sizes,
                        std::vector<int64_t> direct_strides,
                        bool index_along_d) {
  IndexLaunch l;
  l.mode = mode;
  l.direct = direct;
  l.indexed = indexed;
  l.index = index;
  l.index_strides =
      index_along_d ? along(sizes.size(), d) : contiguous_of(sizes);
  l.sizes = std::move(sizes);
  l.direct_strides = std::move(direct_strides);
  l.indexed_strides = without(strides_of(indexed), d, &l.indexed_stride);
  return l;
}
} // namespace

IndexLaunch plan_gather(const Tensor &out, const Tensor &self, int64_t d,
                        const Tensor &index) {
  Tensor idx = index.contiguous();
  std::vector<int64_t> sizes = sizes_of(idx);
  // (out is new, shaped as the index)
  return make_launch(EMBER_INDEX_GATHER, out, self, d, idx, sizes,
                     contiguous_of(sizes), false);
}

IndexLaunch plan_index_select(const Tensor &out, const Tensor &self, int64_t d,
                              const Tensor &index) {
  Tensor idx = index.to(kLong).contiguous();
  std::vector<int64_t> sizes = sizes_of(self);
  sizes[size_t(d)] = idx.numel();
  return make_launch(EMBER_INDEX_GATHER, out, self, d, idx, sizes,
                     contiguous_of(sizes), true);
}

IndexLaunch plan_scatter(const Tensor &work, int64_t d, const Tensor &index,
                         const Tensor &src, bool add) {
  Tensor idx = index.contiguous();
  return make_launch(add ? EMBER_INDEX_ADD : EMBER_INDEX_ASSIGN, src, work, d,
                     idx, sizes_of(idx), strides_of(src), false);
}

IndexLaunch plan_index_add(const Tensor &work, int64_t d, const Tensor &index,
                           const Tensor &source, const Scalar &alpha) {
  IndexLaunch l = make_launch(EMBER_INDEX_ADD, source, work, d,
                              index.to(kLong).contiguous(), sizes_of(source),
                              strides_of(source), true);
  l.alpha = alpha;
  return l;
}

std::string index_source(int mode, ScalarType dtype) {
  ScalarType t = element_of(mode, dtype);
  ScalarType acc = mode == EMBER_INDEX_ADD ? detail::compute_of(t) : t;
  return prelude() + kIndexKernel + "#define EMBER_MODE " +
         std::to_string(mode) + "\n#define EMBER_T " + detail::ctype(t) +
         "\n#define EMBER_ACC " + detail::ctype(acc) + "\n" + kEntry;
}

void run_index(const IndexLaunch &l) {
  const int64_t n = l.numel();
  if (n == 0)
    return;
  const int device = l.indexed.device().index();
  const ScalarType t = element_of(l.mode, l.indexed.dtype());
  void *fn = detail::cached_kernel(
      device,
      "index:" + std::to_string(l.mode) + ":" + std::string(toString(t)),
      "ember_index", [&] { return index_source(l.mode, l.indexed.dtype()); });
  dev::ember::IndexPlan plan = plan_of(l);
  void *direct = l.direct.data_ptr(), *indexed = l.indexed.data_ptr();
  const void *index = l.index.data_ptr();
  // alpha in the compute type, in an 8-byte slot (the driver copies the
  // parameter's own size from it)
  alignas(8) unsigned char alpha[8] = {};
  if (l.mode == EMBER_INDEX_ADD)
    dispatch_dev(t, [&]<class T, class A>() {
      A a = alpha_as<A>(l.alpha);
      std::memcpy(alpha, &a, sizeof a);
    });
  void *args[] = {&direct, &indexed, &index, &plan, alpha};
  const int64_t grid = std::min<int64_t>(
      (n + 255) / 256, int64_t(driver::multiprocessor_count(device)) * 32);
  launch_kernel(device, fn, unsigned(grid), 256, args);
}

void run_index_on_host(const IndexLaunch &l) {
  EMBER_CHECK(!l.indexed.is_cuda(), "run_index_on_host: CPU tensors only");
  const int64_t n = l.numel();
  if (n == 0)
    return;
  const dev::ember::IndexPlan plan = plan_of(l);
  const ScalarType t = element_of(l.mode, l.indexed.dtype());
  const long long *index = static_cast<const long long *>(l.index.data_ptr());
  dispatch_dev(t, [&]<class T, class A>() {
    T *direct = static_cast<T *>(l.direct.data_ptr());
    T *indexed = static_cast<T *>(l.indexed.data_ptr());
    A alpha = l.mode == EMBER_INDEX_ADD ? alpha_as<A>(l.alpha) : A{};
    for (int64_t i = 0; i < n; ++i) {
      if (l.mode == EMBER_INDEX_GATHER)
        dev::ember::index_point<EMBER_INDEX_GATHER>(plan, i, direct, indexed,
                                                    index, alpha);
      else if (l.mode == EMBER_INDEX_ASSIGN)
        dev::ember::index_point<EMBER_INDEX_ASSIGN>(plan, i, direct, indexed,
                                                    index, alpha);
      else
        dev::ember::index_point<EMBER_INDEX_ADD>(plan, i, direct, indexed,
                                                 index, alpha);
    }
  });
}

} // namespace ember::cuda

// --- the ops' CUDA kernels (ops.yaml `cuda:`) ------------------------------

namespace ember::native {

namespace {
using cuda::run_index;

void check_index_device(const char *op, const Tensor &self,
                        const Tensor &index) {
  EMBER_CHECK_VALUE(index.device() == self.device(),
                    "Expected all tensors to be on the same device, but "
                    "found at least two devices, ",
                    self.device(), " and ", index.device(), "! (", op, ")");
}

/// Writes `self` through a contiguous copy when it is not contiguous (the
/// CPU kernels' rule), and bumps its version.
template <class Write> void write_into(const Tensor &self, Write write) {
  Tensor work = self.is_contiguous() ? self : self.contiguous();
  write(work);
  if (!work.is_same(self))
    self.copy_(work);
  else
    self.unsafeGetTensorImpl()->bump_version();
}
} // namespace

Tensor gather_cuda(const Tensor &self, int64_t dim, const Tensor &index) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_scatter_gather("gather", self, d, index, nullptr);
  check_index_device("gather", self, index);
  Tensor out = empty(index.sizes(), self.options());
  if (index.numel() == 0)
    return out;
  cuda::IndexLaunch l = cuda::plan_gather(out, self, d, index);
  cuda::check_range_of(l, "", d);
  run_index(l);
  return out;
}

Tensor index_select_cuda(const Tensor &self, int64_t dim, const Tensor &index) {
  DimVector out_sizes = meta::index_select_sizes(self, dim, index);
  int64_t d = maybe_wrap_dim(dim, self.dim());
  check_index_device("index_select", self, index);
  Tensor out = empty(out_sizes, self.options());
  cuda::IndexLaunch l = cuda::plan_index_select(out, self, d, index);
  cuda::check_range_of(l, "index_select(): ", d);
  run_index(l);
  return out;
}

namespace {
const Tensor &scatter_cuda_impl(const char *op, const Tensor &self, int64_t dim,
                                const Tensor &index, const Tensor &src,
                                bool add) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_scatter(op, self, d, index, src);
  check_index_device(op, self, index);
  check_index_device(op, self, src);
  if (index.numel() == 0)
    return self;
  // (private copies of an index or source that share memory with self: the
  // writes must not change what is read)
  Tensor idx = index.is_alias_of(self) ? index.clone() : index;
  Tensor s = src.is_alias_of(self) ? src.clone() : src;
  write_into(self, [&](const Tensor &work) {
    cuda::IndexLaunch l = cuda::plan_scatter(work, d, idx, s, add);
    cuda::check_range_of(l, "", d);
    run_index(l);
  });
  return self;
}
} // namespace

const Tensor &scatter_cuda_(const Tensor &self, int64_t dim,
                            const Tensor &index, const Tensor &src) {
  return scatter_cuda_impl("scatter", self, dim, index, src, false);
}

const Tensor &scatter_add_cuda_(const Tensor &self, int64_t dim,
                                const Tensor &index, const Tensor &src) {
  return scatter_cuda_impl("scatter_add", self, dim, index, src, true);
}

const Tensor &index_add_cuda_(const Tensor &self, int64_t dim,
                              const Tensor &index, const Tensor &source,
                              const Scalar &alpha) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_index_add(self, dim, index, source, alpha);
  check_index_device("index_add_", self, index);
  check_index_device("index_add_", self, source);
  Tensor idx = index.is_alias_of(self) ? index.clone() : index;
  Tensor src = source.is_alias_of(self) ? source.clone() : source;
  if (source.numel() == 0) {
    cuda::IndexLaunch l = cuda::plan_index_add(self, d, idx, src, alpha);
    cuda::check_range_of(l, "index_add_(): ", d);
    return self;
  }
  write_into(self, [&](const Tensor &work) {
    cuda::IndexLaunch l = cuda::plan_index_add(work, d, idx, src, alpha);
    cuda::check_range_of(l, "index_add_(): ", d);
    run_index(l);
  });
  return self;
}

} // namespace ember::native
