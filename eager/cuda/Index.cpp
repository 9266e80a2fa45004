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

#include "eager/Decompose.h"
#include "eager/Factory.h"
#include "eager/Meta.h"
#include "eager/WrapDim.h"
#include "eager/cpu/Im2col.h"
#include "eager/cuda/HostDevice.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/Nvrtc.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// The device code as host C++ (after the prelude: eager/cuda/HostDevice.h).
namespace dev {
// clang-format off
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

IndexLaunch plan_offsets(int mode, const Tensor &direct,
                         std::vector<int64_t> direct_strides,
                         const Tensor &indexed, std::vector<int64_t> sizes,
                         std::vector<int64_t> indexed_strides, int64_t dim,
                         const Tensor &offsets) {
  IndexLaunch l;
  l.mode = mode;
  l.direct = direct;
  l.indexed = indexed;
  l.index = offsets;
  l.index_strides = along(sizes.size(), dim);
  l.sizes = std::move(sizes);
  l.direct_strides = std::move(direct_strides);
  l.indexed_strides = std::move(indexed_strides);
  l.indexed_stride = 1;
  return l;
}

std::vector<int64_t>
plan_contiguous_strides(const std::vector<int64_t> &sizes) {
  return contiguous_of(sizes);
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
    detail::dispatch_dev(t, "index kernels", [&]<class T, class A>() {
      A a = alpha_as<A>(l.alpha);
      std::memcpy(alpha, &a, sizeof a);
    });
  void *args[] = {&direct, &indexed, &index, &plan, alpha};
  const int64_t grid = detail::grid_for(device, n, 256);
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
  detail::dispatch_dev(t, "index kernels", [&]<class T, class A>() {
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

// --- advanced indexing, masks, flip, triangles, im2col -----------------------

// Note [CUDA advanced indexing]
// index and index_put_ on CUDA follow the CPU plan (Note [Advanced indexing
// plan] in eager/cpu/Index.cpp) with its offsets computed on the device:
// masks become their nonzero() coordinates, each index is range-checked
// (amin / amax, one round trip) and wrapped, and the offsets of the
// broadcast index positions B are sum(index_d * stride_d), an int64 tensor.
// The result's iteration space is [pre, B, post] (pre and post: the dims
// not indexed, walked at self's strides), so the index kernel does the rest
// with self as its indexed operand, B as the indexed dim, the offsets as its
// index and stride 1: index gathers, index_put_ assigns (duplicates: one
// write wins, as on PyTorch's GPU) or adds atomically (accumulate=True),
// into self at its own strides, without a copy. nonzero (and so masks and
// masked_select) is a scan of the nonzero flags (cumsum), a count (one
// round trip: the result's size), and a scatter of each nonzero element's
// flat position to its rank; flip selects reversed aranges, tril / triu
// mask with a comparison of aranges, and _im2col / _col2im pad the image
// and gather / add through one precomputed index of the padded image. Every
// one is device-agnostic: test_cuda runs them on CPU tensors (the index
// kernel on the host) against the CPU kernels on every machine.

namespace {

/// Runs a launch where its tensors are: on the device, or on the host for
/// CPU tensors (the device code as host C++: how the tests check them).
void run_here(const cuda::IndexLaunch &l) {
  if (l.indexed.is_cuda())
    run_index(l);
  else
    cuda::run_index_on_host(l);
}

bool is_mask(const Tensor &t) {
  return t.defined() && (t.dtype() == kBool || t.dtype() == kByte);
}

/// An advanced index planned on the device: the launch space [pre, B,
/// post] (B flattened to one dim, at `b_dim`), self's strides there (0 at
/// B), and the element offset of each B position (int64, contiguous).
struct Advanced {
  meta::IndexShape shape;
  std::vector<int64_t> sizes, strides;
  int64_t b_dim = 0;
  Tensor offsets;
};

Advanced plan_advanced(const Tensor &self, TensorList indices) {
  meta::check_indices(self, indices);
  std::vector<Tensor> idx;
  for (const Tensor &given : indices) {
    // (CPU indices move to the device, as PyTorch's do)
    Tensor t = given;
    if (t.defined() && t.device() != self.device()) {
      EMBER_CHECK(t.device().is_cpu(),
                  "indices should be either on cpu or on the same device as "
                  "the indexed tensor (",
                  self.device(), "), got one on ", t.device());
      t = t.to(self.device());
    }
    if (!is_mask(t)) {
      idx.push_back(t);
      continue;
    }
    Tensor nz = (t.dtype() == kBool ? t : t.to(kBool)).nonzero();
    for (int64_t j = 0; j < t.dim(); ++j)
      idx.push_back(nz.select(1, j));
  }
  idx.resize(size_t(self.dim()));
  Advanced a;
  a.shape = meta::index_shape(self, idx);
  const int64_t nb = multiply_sizes(a.shape.b_shape);
  a.offsets =
      zeros(a.shape.b_shape, TensorOptions(kLong).device(self.device()));
  for (int64_t d : a.shape.dims) {
    if (nb == 0)
      break;
    Tensor t = idx[size_t(d)].to(kLong);
    const int64_t size = self.size(d);
    Tensor flat = t.reshape({-1});
    const int64_t lo = flat.amin({0}).item<int64_t>();
    const int64_t hi = flat.amax({0}).item<int64_t>();
    if (lo < -size || hi >= size)
      throw IndexError(ember::detail::str("index ", lo < -size ? lo : hi,
                                          " is out of bounds for dimension ", d,
                                          " with size ", size));
    a.offsets = a.offsets + t.remainder(size) * self.stride(d);
  }
  a.offsets = a.offsets.reshape({-1}).contiguous();
  // (a 0-dim mask indexes no dim: B is then first)
  const int64_t first = a.shape.dims.empty() ? 0 : a.shape.dims[0];
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (idx[size_t(d)].defined())
      continue;
    if (a.shape.adjacent && d < first)
      ++a.b_dim;
    a.sizes.push_back(self.size(d));
    a.strides.push_back(self.stride(d));
  }
  a.sizes.insert(a.sizes.begin() + a.b_dim, nb);
  a.strides.insert(a.strides.begin() + a.b_dim, 0);
  return a;
}

/// The launch of an advanced index: `direct` (walked at `direct_strides`)
/// against self at the offsets.
cuda::IndexLaunch advanced_launch(int mode, const Advanced &a,
                                  const Tensor &self, const Tensor &direct,
                                  std::vector<int64_t> direct_strides) {
  return cuda::plan_offsets(mode, direct, std::move(direct_strides), self,
                            a.sizes, a.strides, a.b_dim, a.offsets);
}

bool any_defined(TensorList indices) {
  return std::any_of(indices.begin(), indices.end(),
                     [](const Tensor &t) { return t.defined(); });
}

/// An index of the padded image (C, Hp, Wp) per element of the columns
/// (C, kh, kw, OH, OW), flattened: im2col gathers through it, col2im adds.
Tensor window_index(int64_t C, int64_t Hp, int64_t Wp, const meta::Window &w,
                    int64_t OH, int64_t OW, Device device) {
  TensorOptions o = TensorOptions(kLong).device(device);
  Tensor c = arange(C, o).view({C, 1, 1, 1, 1}) * (Hp * Wp);
  Tensor i = arange(w.kh, o).view({1, w.kh, 1, 1, 1}) * w.dh;
  Tensor j = arange(w.kw, o).view({1, 1, w.kw, 1, 1}) * w.dw;
  Tensor oh = arange(OH, o).view({1, 1, 1, OH, 1}) * w.sh;
  Tensor ow = arange(OW, o).view({1, 1, 1, 1, OW}) * w.sw;
  return (c + (oh + i) * Wp + (ow + j)).reshape({-1});
}

} // namespace

Tensor index_cuda(const Tensor &self, TensorList indices) {
  if (!any_defined(indices)) {
    EMBER_CHECK_INDEX(int64_t(indices.size()) <= self.dim(),
                      "too many indices for tensor of dimension ", self.dim(),
                      " (got ", indices.size(), ")");
    return self.clone();
  }
  Advanced a = plan_advanced(self, indices);
  Tensor out = empty(a.sizes, self.options());
  if (out.numel() > 0)
    run_here(advanced_launch(EMBER_INDEX_GATHER, a, self, out,
                             cuda::plan_contiguous_strides(a.sizes)));
  return out.view(a.shape.result);
}

const Tensor &index_put_cuda_(const Tensor &self, TensorList indices,
                              const Tensor &given, bool accumulate) {
  EMBER_CHECK(given.defined(), "index_put_: the values tensor is undefined");
  // (a CPU 0-dim value is a scalar, allowed beside CUDA tensors as in
  // PyTorch)
  const Tensor values = given.is_cpu() && given.dim() == 0 && !self.is_cpu()
                            ? given.to(self.device())
                            : given;
  check_index_device("index_put_", self, values);
  if (!any_defined(indices))
    return native::index_put_(self, indices, values, accumulate);
  Advanced a = plan_advanced(self, indices);
  meta::check_index_put_values(self, values, a.shape.result);
  meta::check_no_internal_overlap(self);
  if (multiply_sizes(a.sizes) == 0)
    return self;
  Tensor v = (values.is_alias_of(self) ? values.clone() : values)
                 .expand(a.shape.result)
                 .reshape(a.sizes);
  std::vector<int64_t> vs(v.strides().begin(), v.strides().end());
  run_here(advanced_launch(accumulate ? EMBER_INDEX_ADD : EMBER_INDEX_ASSIGN, a,
                           self, v, std::move(vs)));
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

Tensor nonzero_cuda(const Tensor &self) {
  namespace dd = ember::detail::decomposed;
  if (self.dim() == 0)
    return dd::back(native::nonzero(dd::host(self)), self.device());
  const int64_t n = self.numel(), nd = self.dim();
  TensorOptions o = TensorOptions(kLong).device(self.device());
  if (n == 0)
    return empty({0, nd}, o);
  // (NaN is nonzero: NaN != 0)
  Tensor nz = self.reshape({-1}).ne(0);
  Tensor rank = nz.cumsum(0);
  const int64_t count = rank.select(0, n - 1).item<int64_t>();
  // Each nonzero element's flat position goes to its rank; the others to
  // one spare slot past the end.
  Tensor slot = (rank - 1).masked_fill(nz.logical_not(), count);
  Tensor flat = empty({count + 1}, o);
  flat.scatter_(0, slot, arange(n, o));
  Tensor pos = flat.narrow(0, 0, count);
  std::vector<Tensor> coords;
  int64_t stride = 1;
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  for (int64_t d = nd - 1; d >= 0; --d) {
    strides[size_t(d)] = stride;
    stride *= self.size(d);
  }
  for (int64_t d = 0; d < nd; ++d)
    coords.push_back(
        pos.div(strides[size_t(d)], "floor").remainder(self.size(d)));
  return ember::stack(coords, 1);
}

Tensor masked_select_cuda(const Tensor &self, const Tensor &mask) {
  DimVector shape = meta::masked_select_shape(self, mask);
  check_index_device("masked_select", self, mask);
  Tensor m = mask.expand(shape).reshape({-1});
  return self.expand(shape).reshape({-1}).index_select(0,
                                                       m.nonzero().view({-1}));
}

Tensor flip_cuda(const Tensor &self, IntArrayRef dims) {
  auto flipped = dim_list_to_bitset(dims, self.dim());
  Tensor out = self;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t n = self.size(d);
    if (flipped[size_t(d)] && n > 1)
      out = out.index_select(
          d, arange(n - 1, -1, -1, TensorOptions(kLong).device(self.device())));
  }
  return out.is_same(self) ? self.clone() : out;
}

namespace {
Tensor triangle_cuda(const Tensor &self, int64_t diagonal, bool lower,
                     const char *name) {
  meta::check_triangle(self, name);
  const int64_t R = self.size(-2), C = self.size(-1);
  TensorOptions o = TensorOptions(kLong).device(self.device());
  // column - row of each element, against the kept band
  Tensor diff = arange(C, o).view({1, C}) - arange(R, o).view({R, 1});
  Tensor zeroed = lower ? diff.gt(diagonal) : diff.lt(diagonal);
  return self.masked_fill(zeroed, 0);
}
} // namespace

Tensor tril_cuda(const Tensor &self, int64_t diagonal) {
  return triangle_cuda(self, diagonal, true, "tril");
}
Tensor triu_cuda(const Tensor &self, int64_t diagonal) {
  return triangle_cuda(self, diagonal, false, "triu");
}

Tensor im2col_cuda(const Tensor &self, IntArrayRef kernel_size,
                   IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride, const Scalar &pad_value) {
  DimVector out_size = meta::im2col_sizes(self, kernel_size, dilation, padding,
                                          stride, pad_value);
  meta::Window w = meta::check_window(kernel_size, dilation, padding, stride);
  if (multiply_sizes(out_size) == 0)
    return empty(out_size, self.options());
  Tensor x = self.dim() == 4 ? self : self.unsqueeze(0);
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t OH = meta::sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  const int64_t OW = meta::sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  Tensor padded = ember::constant_pad_nd(
      x, {w.pw, w.pw, w.ph, w.ph}, im2col_pad_value(pad_value, self.dtype()));
  const int64_t Hp = padded.size(2), Wp = padded.size(3);
  Tensor idx = window_index(C, Hp, Wp, w, OH, OW, self.device());
  return padded.reshape({N, C * Hp * Wp}).index_select(1, idx).view(out_size);
}

Tensor col2im_cuda(const Tensor &self, IntArrayRef output_size,
                   IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride) {
  DimVector out_size = meta::col2im_sizes(self, output_size, kernel_size,
                                          dilation, padding, stride);
  meta::Window w = meta::check_window(kernel_size, dilation, padding, stride);
  if (multiply_sizes(out_size) == 0)
    return zeros(out_size, self.options());
  Tensor cols = self.dim() == 3 ? self : self.unsqueeze(0);
  const int64_t N = cols.size(0), C = cols.size(1) / (w.kh * w.kw);
  const int64_t H = output_size[0], W = output_size[1];
  const int64_t Hp = H + 2 * w.ph, Wp = W + 2 * w.pw;
  const int64_t OH = meta::sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  const int64_t OW = meta::sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  // (16-bit floats add in float and round once, as the CPU kernel)
  const ScalarType acc = cuda::detail::compute_of(self.dtype());
  Tensor sums = zeros({N, C * Hp * Wp}, self.options().dtype(acc));
  sums.index_add_(1, window_index(C, Hp, Wp, w, OH, OW, self.device()),
                  cols.reshape({N, -1}).to(acc));
  return sums.view({N, C, Hp, Wp})
      .narrow(2, w.ph, H)
      .narrow(3, w.pw, W)
      .to(self.dtype())
      .contiguous()
      .view(out_size);
}

} // namespace ember::native
