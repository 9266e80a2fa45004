// The eager CUDA kernels: Note [CUDA pointwise kernels] (Pointwise.h).
#include "eager/cuda/Pointwise.h"

#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/cpu/PointwiseKernel.h"
#include "runtime/CudaAllocator.h"
#include "runtime/CudaDriver.h"
#include "runtime/Nvrtc.h"
#include "runtime/Profiler.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

namespace ember::cuda {

namespace detail {

const char *ctype(ScalarType t) {
  switch (t) {
#define EMBER_CTYPE(ctype, Name, pyname)                                       \
  case k##Name:                                                                \
    return #ctype;
    EMBER_FORALL_SCALAR_TYPES(EMBER_CTYPE)
#undef EMBER_CTYPE
  default:
    EMBER_CHECK(false, "CUDA kernels: unsupported dtype ", t);
  }
}

ScalarType compute_of(ScalarType t) {
  return isReducedFloatingType(t) ? kFloat : t;
}

// (cached here by signature, so that a hit neither builds the source nor
// hashes it; a miss builds it and asks get_kernel: NVRTC and the caches)
void *cached_kernel(int device, const std::string &signature, const char *entry,
                    const std::function<std::string()> &make_source) {
  static std::mutex mu;
  static auto *by_signature =
      new std::map<std::pair<int, std::string>, void *>();
  std::lock_guard<std::mutex> g(mu);
  void *&fn = (*by_signature)[{device, signature}];
  if (!fn) {
    fn = get_kernel(device, make_source(), entry);
    name_kernel(fn, std::string(entry) + " [" + signature + "]");
  }
  return fn;
}

int64_t grid_for(int device, int64_t n, int64_t per_block) {
  return std::min<int64_t>((n + per_block - 1) / per_block,
                           int64_t(driver::multiprocessor_count(device)) * 32);
}

} // namespace detail

namespace {

using detail::cached_kernel;
using detail::compute_of;
using detail::ctype;

// eager/cuda/PointwiseMath.cuh, embedded by the build.
const char kPrelude[] =
#include "eager/generated/CudaPrelude.inc"
    ;

/// Most dims a CUDA kernel indexes (PyTorch's MAX_DIMS); TensorIterator
/// merges contiguous dims first, so only unusual strides come near it.
constexpr int kMaxDims = 25;

// Note [CUDA kernel geometry]
// The kernel receives the iteration shape (innermost last) and each
// operand's byte strides as one array of int64: ndim, sizes[kMaxDims],
// then strides[operand][kMaxDims]. Each thread splits its linear index
// into coordinates, innermost first, and sums the operands' offsets; one
// dim (what TensorIterator leaves of contiguous operands, or of a stride-0
// broadcast of one element) needs no division. Indices are 64-bit.
const char kGeometry[] = R"(
namespace ember {
template <int N> struct Geometry {
  long long ndim;
  long long sizes[25];
  long long strides[N][25];
};
} // namespace ember
)";
static_assert(kMaxDims == 25, "kGeometry's arrays");

std::string with_prelude() { return std::string(kPrelude) + kGeometry; }

const Functor kCopy{"copy_op", 1, 0, R"(
template <class T> struct copy_op {
  __device__ __forceinline__ T operator()(T x) const { return x; }
};
)"};
const Functor kFill{"fill_op", 0, 1, R"(
template <class T> struct fill_op {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};
)"};

/// An argument value of the kernel, by value (8 bytes hold any scalar).
struct Slot {
  alignas(8) char bytes[8] = {};
};

template <class T> Slot slot_of(T v) {
  static_assert(sizeof(T) <= sizeof(Slot));
  Slot s;
  std::memcpy(s.bytes, &v, sizeof v);
  return s;
}

void launch(const Functor &f, ScalarType compute, unsigned bool_args,
            const Tensor &out, ArrayRef<Tensor> inputs,
            ArrayRef<Slot> scalars) {
  const int64_t n = out.numel();
  if (n == 0)
    return;
  const int device = out.device().index();
  for (const Tensor &t : inputs)
    EMBER_CHECK(t.device() == out.device(),
                "Expected all tensors to be on the same device, but found at "
                "least two devices, ",
                out.device(), " and ", t.device(), "!");
  const int nops = int(inputs.size()) + 1;
  std::vector<ScalarType> dtypes{out.dtype()};
  for (const Tensor &t : inputs)
    dtypes.push_back(t.dtype());

  // The geometry (Note [CUDA kernel geometry]).
  std::vector<int64_t> geometry(size_t(1 + kMaxDims * (1 + nops)), 0);
  std::vector<Tensor> operands(inputs.begin(), inputs.end());
  TensorIterator it = TensorIterator::build(out, TensorList(operands));
  EMBER_CHECK(it.ndim() <= kMaxDims, "CUDA kernels index at most ", kMaxDims,
              " dims after merging contiguous ones; got ", it.ndim());
  geometry[0] = it.ndim();
  std::vector<int64_t> extent(size_t(nops), 0); // the largest byte offset
  for (int d = 0; d < it.ndim(); ++d) {
    geometry[size_t(1 + d)] = it.shape()[size_t(d)];
    for (int k = 0; k < nops; ++k) {
      int64_t st = it.strides(k)[size_t(d)];
      geometry[size_t(1 + kMaxDims * (1 + k) + d)] = st;
      extent[size_t(k)] += (it.shape()[size_t(d)] - 1) * (st < 0 ? -st : st);
    }
  }
  // The launch: 256 threads, each on 4 elements a tile (one element when
  // the offsets need divisions), at most 32 blocks per multiprocessor
  // looping over the tiles. 32-bit index arithmetic when every index and
  // offset (the loop's last step included) fits.
  KernelShape shape;
  shape.flat = it.ndim() <= 1;
  const int64_t kBlock = 256, kTile = kBlock * (shape.flat ? 4 : 1);
  const int64_t grid = detail::grid_for(device, n, kTile);
  shape.index32 = n + grid * kTile <= INT32_MAX;
  for (int64_t e : extent)
    shape.index32 = shape.index32 && e <= INT32_MAX;

  std::string signature = f.name;
  signature += ':';
  signature += toString(compute);
  for (ScalarType t : dtypes) {
    signature += ',';
    signature += toString(t);
  }
  signature += ':';
  signature += std::to_string(bool_args);
  signature += shape.index32 ? ":i32" : ":i64";
  signature += shape.flat ? ":flat" : ":strided";
  void *fn = cached_kernel(device, signature, "ember_pointwise", [&] {
    return pointwise_source(f, compute, dtypes, bool_args, shape);
  });

  std::vector<void *> ptrs{out.data_ptr()};
  for (const Tensor &t : inputs)
    ptrs.push_back(t.data_ptr());
  std::vector<void *> args{geometry.data(), const_cast<int64_t *>(&n)};
  for (void *&p : ptrs)
    args.push_back(&p);
  for (const Slot &s : scalars)
    args.push_back(const_cast<char *>(s.bytes));

  launch_kernel(device, fn, unsigned(grid), unsigned(kBlock), args.data());
}

std::vector<Slot> scalar_slots(ScalarType compute,
                               ArrayRef<const Scalar *> scalars) {
  std::vector<Slot> slots;
  for (const Scalar *s : scalars)
    dispatch_dtype(compute, "CUDA kernel",
                   [&]<class T>() { slots.push_back(slot_of(s->to<T>())); });
  return slots;
}

void same_device_copy(const Tensor &dst, const Tensor &src) {
  Tensor s = src.sizes() == dst.sizes() ? src : src.expand(dst.sizes());
  if (s.dtype() == dst.dtype() && s.is_contiguous() && dst.is_contiguous()) {
    if (dst.numel() == 0 || s.data_ptr() == dst.data_ptr())
      return;
    int device = dst.device().index();
    driver::set_context(device);
    auto stream =
        static_cast<driver::CUstream>(getCurrentCUDAStream(device).stream());
    profiler::record_device timed("Memcpy DtoD (Device -> Device)",
                                  dst.device(), uint64_t(stream));
    EMBER_CU(cuMemcpyDtoDAsync_v2,
             reinterpret_cast<driver::CUdeviceptr>(dst.data_ptr()),
             reinterpret_cast<driver::CUdeviceptr>(s.data_ptr()), dst.nbytes(),
             stream);
    return;
  }
  launch(kCopy, compute_of(dst.dtype()), 0, dst, {s}, {});
}

} // namespace

std::string prelude() { return with_prelude(); }

namespace {
// Note [Block reductions]
// The fold of one value a thread over a block (the compiled reduction
// kernels, codegen/CudaRender.cpp, and the eager row kernels,
// eager/cuda/Softmax.cpp): warp shuffles, then one warp over the warps'
// results, in a fixed order, so the result does not depend on timing;
// every thread gets it.
const char kBlockReduce[] = R"(namespace ember {
template <int K, class A> __device__ __forceinline__ A ember_combine(A a, A b) {
  if constexpr (K == 0)
    return a + b;
  else if constexpr (K == 1)
    return pw::maximum(a, b);
  else
    return pw::minimum(a, b);
}
// Every thread's accumulator folded over the block, in a fixed order (warp
// shuffles, then one warp over the warps' results); every thread gets it.
template <int K, class A>
__device__ __forceinline__ A ember_block_reduce(A v, const A identity) {
  __shared__ A partial[32];
  for (int o = 16; o > 0; o /= 2)
    v = ember_combine<K>(v, A(__shfl_down_sync(0xffffffffu, v, o)));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // the previous fold's result has been read
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / 32) ? partial[lane] : identity;
    for (int o = 16; o > 0; o /= 2)
      v = ember_combine<K>(v, A(__shfl_down_sync(0xffffffffu, v, o)));
    if (lane == 0)
      partial[0] = v;
  }
  __syncthreads();
  return partial[0];
}
} // namespace ember
)";
} // namespace

std::string block_reduce_source() { return kBlockReduce; }

std::string functor_source(const Functor &f) {
  return std::string("namespace ember::fn {\nusing namespace ember::pw;\n") +
         f.source + "} // namespace ember::fn\n";
}

std::string pointwise_kernel(const Functor &f, ScalarType compute,
                             ArrayRef<ScalarType> dtypes, unsigned bool_args,
                             const std::string &entry, KernelShape shape) {
  const std::string nops = std::to_string(dtypes.size());
  const std::string c = ctype(compute), o = ctype(dtypes[0]);
  std::string params = "char *const out", decls, loads, args, scalars;
  for (size_t k = 1; k < dtypes.size(); ++k) {
    std::string in = "in", v = "v", ks = std::to_string(k);
    in += std::to_string(k - 1);
    v += std::to_string(k - 1);
    params += ", const char *const " + in;
    std::string as = ((bool_args >> (k - 1)) & 1u) ? "bool" : c;
    decls += "    " + as + " " + v + "[kUnroll];\n";
    loads += "        " + v + "[j] = convert<" + as + ">(*(const " +
             ctype(dtypes[k]) + " *)(" + in + " + off[j][" + ks + "]));\n";
    args += (k > 1 ? ", " : "") + v + "[j]";
  }
  for (int j = 0; j < f.nscalars; ++j) {
    std::string name = "s";
    name += std::to_string(j);
    params += ", const " + c + " " + name;
    scalars += (j ? ", " : "") + name;
  }
  // Note [CUDA kernel geometry]
  std::string k = "namespace ember {\nextern \"C\" __global__ void ";
  k += entry;
  k += "(const Geometry<" + nops + "> g, const long long n_, " + params +
       ") {\n";
  k += "  const fn::";
  k += f.name;
  k += "<" + c + "> f{" + scalars + "};\n";
  k += shape.index32 ? "  typedef int index_t;\n"
                     : "  typedef long long index_t;\n";
  k += shape.flat ? "  constexpr int kUnroll = 4;\n"
                  : "  constexpr int kUnroll = 1;\n";
  k += "  const index_t n = (index_t)n_;\n"
       "  const int ndim = (int)g.ndim;\n"
       "  (void)ndim;\n"
       "  const index_t tile = (index_t)blockDim.x * kUnroll;\n"
       "  for (index_t base = (index_t)blockIdx.x * tile; base < n;\n"
       "       base += (index_t)gridDim.x * tile) {\n";
  k += "    index_t off[kUnroll][" + nops + "];\n";
  k += decls;
  k += "#pragma unroll\n"
       "    for (int j = 0; j < kUnroll; ++j) {\n"
       "      const index_t i = base + j * (index_t)blockDim.x + threadIdx.x;\n"
       "      if (i < n) {\n"
       "#pragma unroll\n"
       "        for (int k = 0; k < " +
       nops + "; ++k)\n";
  if (shape.flat) {
    k += "          off[j][k] = i * (index_t)g.strides[k][0];\n";
  } else {
    k += "          off[j][k] = 0;\n"
         "        index_t r = i;\n"
         "        for (int d = ndim - 1; d >= 0; --d) {\n"
         "          const index_t size = (index_t)g.sizes[d];\n"
         "          const index_t q = r / size, idx = r - q * size;\n"
         "          r = q;\n"
         "#pragma unroll\n"
         "          for (int k = 0; k < " +
         nops +
         "; ++k)\n"
         "            off[j][k] += idx * (index_t)g.strides[k][d];\n"
         "        }\n";
  }
  k += loads;
  k += "      }\n"
       "    }\n"
       "#pragma unroll\n"
       "    for (int j = 0; j < kUnroll; ++j) {\n"
       "      const index_t i = base + j * (index_t)blockDim.x + threadIdx.x;\n"
       "      if (i < n)\n";
  k += "        *(" + o + " *)(out + off[j][0]) = convert<" + o + ">(f(" +
       args + "));\n";
  k += "    }\n  }\n}\n} // namespace ember\n";
  return k;
}

std::string pointwise_source(const Functor &f, ScalarType compute,
                             ArrayRef<ScalarType> dtypes, unsigned bool_args,
                             KernelShape shape) {
  return with_prelude() + functor_source(f) +
         pointwise_kernel(f, compute, dtypes, bool_args, "ember_pointwise",
                          shape);
}

Tensor run_pointwise(const meta::PointwiseSpec &spec, DtypeGroup group,
                     const Functor &f, ArrayRef<const Tensor *> inputs,
                     ArrayRef<const Scalar *> scalars, const Tensor *self_out) {
  native::PointwisePlan plan =
      native::plan_pointwise(spec, inputs, scalars, self_out);
  if (!in_group(plan.compute, group))
    throw_unsupported_dtype(spec.name, plan.compute);
  // CPU 0-dim operands (allowed beside CUDA tensors, as in PyTorch) move to
  // the device, already in the loop's dtype, without synchronizing.
  for (Tensor &t : plan.inputs)
    if (t.device() != plan.out.device())
      t = scalar_to_device(t, plan.out.device());
  ScalarType compute = compute_of(plan.compute);
  launch(f, compute, spec.bool_args, plan.out, plan.inputs,
         scalar_slots(compute, scalars));
  native::finish_pointwise(plan);
  return plan.result;
}

void fill(const Tensor &self, const Scalar &value) {
  std::vector<Slot> slot;
  dispatch_dtype(self.dtype(), "fill_", [&]<class T>() {
    T v = value.checked_to<T>();
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      slot.push_back(slot_of(float(v)));
    else
      slot.push_back(slot_of(v));
  });
  launch(kFill, compute_of(self.dtype()), 0, self, {}, slot);
}

Tensor scalar_to_device(const Tensor &t, Device device) {
  EMBER_CHECK(t.is_cpu() && t.dim() == 0,
              "scalar_to_device: expected a CPU 0-dim tensor, got ", t.device(),
              " with ", t.dim(), " dims");
  Tensor d = empty({}, TensorOptions(t.dtype()).device(device));
  fill(d, t.item());
  return d;
}

namespace {
const char kReduce[] = R"(
namespace ember {
typedef EMBER_ACC A;
// (ember_block_reduce's K: 0 sum, 1 max, 2 min)
constexpr int K = EMBER_KIND == 2 ? 1 : EMBER_KIND == 3 ? 2 : 0;
// The fold of points [lo, hi) of p (lo < hi for amax and amin) by the
// block, every thread getting it: a strided loop per thread, then
// ember_block_reduce, in a fixed order.
template <class T>
__device__ __forceinline__ A fold(const T *p, long long lo, long long hi) {
  A acc = K == 0 ? A(0) : convert<A>(p[lo]);
  for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
    acc = ember_combine<K>(acc, convert<A>(p[i]));
  // (max and min: a value folded twice changes nothing)
  return ember_block_reduce<K>(acc, K == 0 ? A(0) : acc);
}
__device__ __forceinline__ void store(EMBER_T *out, A acc, long long count) {
#if EMBER_KIND == 1
  *out = convert<EMBER_T>(double(acc) / double(count));
#else
  *out = convert<EMBER_T>(acc);
#endif
}
// One block per row of n points of `in`, each stored as the fold of
// `count` points (a mean divides by it).
template <class I>
__device__ __forceinline__ void fold_rows(const I *in, EMBER_T *out,
                                          long long nout, long long n,
                                          long long count) {
  for (long long row = blockIdx.x; row < nout; row += gridDim.x) {
    A acc = fold(in + row * n, 0, n);
    if (threadIdx.x == 0)
      store(out + row, acc, count);
  }
}
extern "C" __global__ void ember_reduce(const EMBER_T *in, EMBER_T *out,
                                        const long long nout,
                                        const long long nred) {
  fold_rows(in, out, nout, nred, nred);
}
// Few outputs (Note [CUDA reductions]): `splits` blocks per row, block s
// folding the points [s * chunk, (s + 1) * chunk) of its row (each part
// nonempty) into part[row * splits + s]...
extern "C" __global__ void ember_reduce_split(const EMBER_T *in, A *part,
                                              const long long nout,
                                              const long long nred,
                                              const long long splits,
                                              const long long chunk) {
  for (long long b = blockIdx.x; b < nout * splits; b += gridDim.x) {
    const long long row = b / splits, lo = (b % splits) * chunk;
    const long long hi = lo + chunk < nred ? lo + chunk : nred;
    A acc = fold(in + row * nred, lo, hi);
    if (threadIdx.x == 0)
      part[b] = acc;
  }
}
// ...then one block per row folds its parts, in order; a mean divides by
// the row's whole count.
extern "C" __global__ void ember_reduce_combine(const A *part, EMBER_T *out,
                                                const long long nout,
                                                const long long splits,
                                                const long long nred) {
  fold_rows(part, out, nout, splits, nred);
}
} // namespace ember
)";
} // namespace

namespace {
/// A split reduction (Note [CUDA reductions]): about this many blocks in
/// all (four per multiprocessor of an H100 or H200), each folding at least
/// kMinReducePart points.
constexpr int64_t kSplitBlocks = 512, kMinReducePart = 16384;
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

ScalarType reduce_accumulator(ReduceKind kind, ScalarType t) {
  return kind == ReduceKind::Sum || kind == ReduceKind::Mean
             ? (isFloatingType(t) ? kDouble : kLong)
             : (t == kBool ? kInt : compute_of(t));
}

std::string reduce_source(ReduceKind kind, ScalarType t) {
  std::string src = with_prelude() + kBlockReduce;
  src += "#define EMBER_KIND " + std::to_string(int(kind)) + "\n";
  src += std::string("#define EMBER_T ") + ctype(t) + "\n";
  src += std::string("#define EMBER_ACC ") +
         ctype(reduce_accumulator(kind, t)) + "\n";
  return src + kReduce;
}

Tensor reduce(ReduceKind kind, const Tensor &x, const std::vector<bool> &mask,
              IntArrayRef out_sizes) {
  Tensor out = empty(out_sizes, x.options());
  const int64_t nout = out.numel();
  if (nout == 0)
    return out;
  // The kept dims first, the reduced ones last, contiguous: one row each.
  std::vector<int64_t> order;
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t d = 0; d < x.dim(); ++d)
      if (mask[size_t(d)] == (pass == 1))
        order.push_back(d);
  Tensor rows = x.permute(order).contiguous();
  const int64_t nred = x.numel() / nout;
  if (nred == 0) { // an empty sum is 0, an empty mean 0 / 0
    out.fill_(kind == ReduceKind::Mean ? NAN : 0.0);
    return out;
  }
  const ScalarType t = x.dtype();
  const int device = x.device().index();
  std::string signature = "reduce:" + std::to_string(int(kind)) + ":";
  signature += toString(t);
  auto kernel = [&](const char *entry) {
    return cached_kernel(device, signature + ":" + entry, entry,
                         [&] { return reduce_source(kind, t); });
  };
  const void *in_ptr = rows.data_ptr();
  void *out_ptr = out.data_ptr();
  int64_t n_out = nout, n_red = nred;
  // Few long rows: split (Note [CUDA reductions]), from the shape alone.
  int64_t splits = 1;
  if (nout < kSplitBlocks / 2 && nred >= 2 * kMinReducePart)
    splits = std::min(ceil_div(kSplitBlocks, nout), nred / kMinReducePart);
  if (splits < 2) {
    void *args[] = {&in_ptr, &out_ptr, &n_out, &n_red};
    launch_kernel(device, kernel("ember_reduce"),
                  unsigned(detail::grid_for(device, nout, 1)), 256, args);
    return out;
  }
  int64_t chunk = ceil_div(nred, splits);
  splits = ceil_div(nred, chunk); // (every part nonempty)
  Tensor part =
      empty({nout * splits}, x.options().dtype(reduce_accumulator(kind, t)));
  void *part_ptr = part.data_ptr();
  void *split_args[] = {&in_ptr, &part_ptr, &n_out, &n_red, &splits, &chunk};
  launch_kernel(device, kernel("ember_reduce_split"),
                unsigned(detail::grid_for(device, nout * splits, 1)), 256,
                split_args);
  const void *parts_in = part_ptr;
  void *combine_args[] = {&parts_in, &out_ptr, &n_out, &splits, &n_red};
  launch_kernel(device, kernel("ember_reduce_combine"),
                unsigned(detail::grid_for(device, nout, 1)), 256, combine_args);
  return out;
}

void copy(const Tensor &dst, const Tensor &src, bool non_blocking) {
  if (dst.numel() == 0)
    return;
  if (dst.is_cuda() && src.is_cuda()) {
    if (dst.device() == src.device())
      same_device_copy(dst, src);
    else
      copy(dst, src.to(Device(kCPU)), false); // through the host, for now
    return;
  }
  using driver::CUdeviceptr;
  using driver::CUstream;
  if (dst.is_cuda()) {
    // Host to device: convert and lay out on the host, one transfer, then
    // (for a strided destination) a kernel.
    Tensor s = src.to(dst.dtype()).expand(dst.sizes()).contiguous();
    Tensor d = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.options());
    int device = dst.device().index();
    driver::set_context(device);
    CUstream stream =
        static_cast<CUstream>(getCurrentCUDAStream(device).stream());
    {
      profiler::record_device timed(is_pinned_ptr(s.data_ptr())
                                        ? "Memcpy HtoD (Pinned -> Device)"
                                        : "Memcpy HtoD (Pageable -> Device)",
                                    dst.device(), uint64_t(stream));
      EMBER_CU(cuMemcpyHtoDAsync_v2,
               reinterpret_cast<CUdeviceptr>(d.data_ptr()), s.data_ptr(),
               d.nbytes(), stream);
    }
    bool async = non_blocking && s.is_same(src) && is_pinned_ptr(s.data_ptr());
    if (!async)
      EMBER_CU(cuStreamSynchronize, stream);
    if (!d.is_same(dst))
      same_device_copy(dst, d);
    return;
  }
  // Device to host: convert and lay out on the device, then one transfer.
  Tensor s = src;
  if (s.dtype() != dst.dtype() || s.sizes() != dst.sizes() ||
      !s.is_contiguous()) {
    s = empty(dst.sizes(), src.options().dtype(dst.dtype()));
    same_device_copy(s, src);
  }
  Tensor d = dst.is_contiguous() ? dst : empty(dst.sizes(), dst.options());
  int device = src.device().index();
  driver::set_context(device);
  CUstream stream =
      static_cast<CUstream>(getCurrentCUDAStream(device).stream());
  {
    profiler::record_device timed(is_pinned_ptr(d.data_ptr())
                                      ? "Memcpy DtoH (Device -> Pinned)"
                                      : "Memcpy DtoH (Device -> Pageable)",
                                  src.device(), uint64_t(stream));
    EMBER_CU(cuMemcpyDtoHAsync_v2, d.data_ptr(),
             reinterpret_cast<CUdeviceptr>(s.data_ptr()), d.nbytes(), stream);
  }
  bool async = non_blocking && d.is_same(dst) && is_pinned_ptr(d.data_ptr());
  if (!async)
    EMBER_CU(cuStreamSynchronize, stream);
  if (!d.is_same(dst))
    dst.copy_(d);
}

} // namespace ember::cuda
