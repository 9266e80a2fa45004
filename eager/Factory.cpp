#include "eager/Factory.h"
#include "eager/Capturing.h"
#include "eager/Dtype.h"
#include "eager/cuda/Random.h"
#include "eager/generated/Functions.h"
#include "eager/meta/Shapes.h"
#include "runtime/Cuda.h"
#include "runtime/CudaAllocator.h"
#include "runtime/Philox.h"

#include <cmath>
#include <numeric>

namespace ember {

namespace {
/// The device a factory allocates on: "cuda" is the current CUDA device.
/// Raises when CUDA is unavailable or the index is out of range.
Device checkDevice(const TensorOptions &o) {
  Device d = o.device();
  if (d.is_cuda())
    return Device(kCUDA, cuda::checked_device(d.index(), "tensor factory"));
  return d;
}
Allocator *allocatorFor(Device d) {
  return d.is_cuda() ? cuda::getCUDAAllocator(d.index()) : getCPUAllocator();
}
void checkSizes(IntArrayRef size) {
  for (int64_t s : size)
    EMBER_CHECK_VALUE(s >= 0, "Trying to create tensor with negative ",
                      "dimension ", s, ": ", size);
}
Tensor finish(Tensor t, const TensorOptions &o) {
  if (o.requires_grad())
    t.set_requires_grad(true);
  return t;
}
/// Factories that write their values on the host make a CUDA tensor on the
/// CPU, then copy it over in one transfer: nullopt for other devices.
template <class Make>
std::optional<Tensor> viaHost(const TensorOptions &o, Make make) {
  if (!o.device().is_cuda())
    return std::nullopt;
  Device d = checkDevice(o);
  Tensor host = make(o.device(Device(kCPU)).requires_grad(false));
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture); // as full()
  return finish(host.to(d), o);
}
} // namespace

Tensor empty(IntArrayRef size, const TensorOptions &options) {
  Device dev = checkDevice(options);
  checkSizes(size);
  ScalarType dt = options.dtype();
  int64_t n = multiply_sizes(size);
  size_t nbytes;
  EMBER_CHECK(!__builtin_mul_overflow(size_t(n), elementSize(dt), &nbytes),
              "tensor of sizes ", size, " is too large");
  Storage st = Storage::allocate(nbytes, allocatorFor(dev));
  return finish(Tensor(make_intrusive<TensorImpl>(std::move(st), dt, size)),
                options);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride,
                     const TensorOptions &options) {
  Device dev = checkDevice(options);
  EMBER_CHECK(size.size() == stride.size(), "empty_strided: ", size.size(),
              " sizes but ", stride.size(), " strides");
  for (size_t i = 0; i < size.size(); ++i)
    EMBER_CHECK_VALUE(size[i] >= 0 && stride[i] >= 0,
                      "empty_strided: negative size or stride");
  ScalarType dt = options.dtype();
  Storage st = Storage::allocate(storage_nbytes(size, stride, elementSize(dt)),
                                 allocatorFor(dev));
  return finish(
      Tensor(make_intrusive<TensorImpl>(std::move(st), dt, size, stride, 0)),
      options);
}

Tensor zeros(IntArrayRef size, const TensorOptions &options) {
  Tensor t = empty(size, options.requires_grad(false));
  {
    ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture); // as full()
    t.zero_();
  }
  if (is_capturing() && detail::capture_factory_fn)
    detail::capture_factory_fn(
        t, [s = size.vec(), options] { return zeros(s, options); });
  return finish(t, options);
}
Tensor ones(IntArrayRef size, const TensorOptions &options) {
  return full(size, 1, options.dtype(options.dtype()));
}
Tensor full(IntArrayRef size, const Scalar &value,
            const TensorOptions &options) {
  TensorOptions o = options.requires_grad(false);
  if (!options.has_dtype())
    o = o.dtype(value.isFloatingPoint() ? get_default_dtype() : value.type());
  Tensor t = empty(size, o);
  {
    // A factory's own writes are not ops of the caller (compile() captures
    // ops, not how a new tensor gets its first values).
    ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
    t.fill_(value);
  }
  if (is_capturing() && detail::capture_factory_fn)
    detail::capture_factory_fn(t, [s = size.vec(), value, options] {
      return full(s, value, options);
    });
  return finish(t, options);
}

static TensorOptions likeOptions(const Tensor &t, const TensorOptions &o) {
  TensorOptions r = o;
  if (!o.has_dtype())
    r = r.dtype(t.dtype());
  if (!o.has_device())
    r = r.device(t.device());
  return r;
}
Tensor empty_like(const Tensor &t, const TensorOptions &o) {
  return empty(t.sizes(), likeOptions(t, o));
}
Tensor zeros_like(const Tensor &t, const TensorOptions &o) {
  return zeros(t.sizes(), likeOptions(t, o));
}
Tensor ones_like(const Tensor &t, const TensorOptions &o) {
  return ones(t.sizes(), likeOptions(t, o));
}
Tensor full_like(const Tensor &t, const Scalar &v, const TensorOptions &o) {
  return full(t.sizes(), v, likeOptions(t, o));
}
Tensor rand_like(const Tensor &t, const TensorOptions &o) {
  return rand(t.sizes(), likeOptions(t, o));
}
Tensor randn_like(const Tensor &t, const TensorOptions &o) {
  return randn(t.sizes(), likeOptions(t, o));
}

// --- ranges -----------------------------------------------------------------

Tensor arange(const Scalar &end, const TensorOptions &o) {
  return arange(0, end, 1, o);
}
Tensor arange(const Scalar &start, const Scalar &end, const TensorOptions &o) {
  return arange(start, end, 1, o);
}
Tensor arange(const Scalar &start, const Scalar &end, const Scalar &step,
              const TensorOptions &options) {
  bool integral = !start.isFloatingPoint() && !end.isFloatingPoint() &&
                  !step.isFloatingPoint();
  TensorOptions o = options;
  if (!o.has_dtype())
    o = o.dtype(integral ? kLong : get_default_dtype());
  double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  EMBER_CHECK_VALUE(std::isfinite(s) && std::isfinite(e),
                    "arange: unsupported range: ", s, " -> ", e);
  EMBER_CHECK_VALUE(st != 0, "arange: step must be nonzero");
  EMBER_CHECK_VALUE((st > 0 && e >= s) || (st < 0 && e <= s),
                    "arange: upper bound and larger bound inconsistent with "
                    "step sign (start=",
                    start, ", end=", end, ", step=", step, ")");
  if (auto t = viaHost(o, [&](const TensorOptions &h) {
        return arange(start, end, step, h);
      }))
    return *t;
  // The count in 128 bits: end - start spans up to 2^64 for int64 bounds.
  __int128 count;
  if (integral) {
    __int128 span = __int128(end.toLong()) - start.toLong(), by = step.toLong();
    count = (span + by - (by > 0 ? 1 : -1)) / by;
  } else {
    double c = std::ceil((e - s) / st);
    count = c < 0x1p62 ? __int128(c) : __int128(1) << 62; // too many anyway
  }
  EMBER_CHECK_VALUE(count >= 0 && count < (__int128(1) << 48),
                    "arange: invalid number of elements ", double(count),
                    " (start=", start, ", end=", end, ", step=", step, ")");
  int64_t n = int64_t(count);
  Tensor t = empty({n}, o.requires_grad(false));
  dispatch_group(t.dtype(), DtypeGroup::NoBool, "arange", [&]<class T>() {
    T *p = t.data_ptr<T>();
    // An integer dtype computes in int64 from start and step converted to
    // it (truncated, as PyTorch's accumulate type does: arange(-3.5, 4,
    // 1.5, kInt) is -3, -2, -1, 0, 1); the count comes from the bounds as
    // given.
    bool exact = !isFloatingType(t.dtype());
    auto as_long = [](const Scalar &v) {
      return v.isFloatingPoint() ? v.checked_to<int64_t>() : v.toLong();
    };
    const int64_t start_l = exact ? as_long(start) : 0;
    const int64_t step_l = exact ? as_long(step) : 0;
    EMBER_CHECK_VALUE(!exact || step_l != 0, "arange: step must be nonzero (",
                      step, " truncates to 0 in an integer dtype)");
    // The i-th value; exact integers wrap-free in uint64 (start + i * step
    // lies in [start, end) though i * step alone may not fit int64).
    auto value = [&](int64_t i) -> Scalar {
      if (exact)
        return int64_t(uint64_t(start_l) + uint64_t(i) * uint64_t(step_l));
      return s + double(i) * st;
    };
    if (n > 0) { // the ends must fit the dtype (arange(300, dtype=kByte))
      (void)value(0).template checked_to<T>();
      (void)value(n - 1).template checked_to<T>();
    }
    for (int64_t i = 0; i < n; ++i)
      p[i] = value(i).template to<T>();
  });
  return finish(t, options);
}

Tensor linspace(const Scalar &start, const Scalar &end, int64_t steps,
                const TensorOptions &options) {
  EMBER_CHECK_VALUE(steps >= 0, "linspace: number of steps must be ",
                    "non-negative, got ", steps);
  if (auto t = viaHost(options, [&](const TensorOptions &h) {
        return linspace(start, end, steps, h);
      }))
    return *t;
  Tensor t = empty({steps}, options.requires_grad(false));
  double s = start.toDouble(), e = end.toDouble();
  double step = steps > 1 ? (e - s) / double(steps - 1) : 0;
  dispatch_group(t.dtype(), DtypeGroup::NoBool, "linspace", [&]<class T>() {
    T *p = t.data_ptr<T>();
    if (steps > 0) { // the ends must fit the dtype, as arange's
      (void)Scalar(s).template checked_to<T>();
      (void)Scalar(e).template checked_to<T>();
    }
    // Symmetric evaluation (as PyTorch): the second half counts back from
    // the end, so both endpoints are exact.
    // (one step is the start, as PyTorch's)
    int64_t half = steps == 1 ? 1 : steps / 2;
    for (int64_t i = 0; i < steps; ++i)
      p[i] = i < half ? T(s + step * double(i))
                      : T(e - step * double(steps - 1 - i));
  });
  return finish(t, options);
}

Tensor eye(int64_t n, const TensorOptions &o) { return eye(n, n, o); }
Tensor eye(int64_t n, int64_t m, const TensorOptions &options) {
  EMBER_CHECK_VALUE(n >= 0 && m >= 0, "eye: n and m must be non-negative, ",
                    "got ", n, " and ", m);
  Tensor t = zeros({n, m}, options.requires_grad(false));
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  if (n && m)
    t.diagonal().fill_(1);
  return finish(t, options);
}

// --- random ------------------------------------------------------------------

// Note [Random ops in a compiled function]
// rand, randn and randint take numel counters from the generator (Note
// [Counter-based random numbers] in runtime/Philox.h) and call a table op
// with the generator's state before the draw, a (seed, offset) int64
// tensor: _philox_uniform, _philox_normal, _philox_randint. Inside
// ember::compile the state tensor, made fresh at each call, is a graph
// input and the op is recorded, a pure op of it: the graph's numbers are
// eager's for the same seed, each call draws new ones, and ember-remat may
// recompute the op in the backward (under a memory budget, or in a
// checkpoint() region) from the 16 bytes of state instead of saving its
// result, with the forward's values (dropout's mask in particular).
namespace {
Generator &genOf(std::optional<Generator> &g) {
  return g && g->defined() ? *g : default_generator();
}
/// How a draw computes its elements on a CUDA device: the op's arithmetic
/// (Note [CUDA random numbers] in eager/cuda/Random.cpp).
struct DeviceDraw {
  cuda::Draw kind;
  int64_t low = 0;
  uint64_t range = 1;
};
/// Runs the draw op `op` of `name` on the state of a draw of numel(size)
/// numbers from `gen` (a (seed, offset) tensor), after the checks that must
/// come before the generator moves; a draw that fails (out of memory) gives
/// its counters back. A result that requires grad is a leaf made here, real
/// even inside ember::compile (as any factory's).
template <class Op>
Tensor drawn(const char *name, DtypeGroup group, IntArrayRef size,
             std::optional<Generator> &gen, const TensorOptions &o,
             DeviceDraw on_device, Op op) {
  // The same numbers on every device (Note [Counter-based random
  // numbers]): drawn on the device, or, inside ember::compile (where the
  // draw must stay the recorded op), on the host, then copied.
  if (o.device().is_cuda() && is_capturing())
    if (auto t = viaHost(o, [&](const TensorOptions &h) {
          return drawn(name, group, size, gen, h, on_device, op);
        }))
      return *t;
  if (!in_group(o.dtype(), group))
    throw_unsupported_dtype(name, o.dtype());
  checkSizes(size);
  uint64_t n = uint64_t(multiply_sizes(size));
  Generator &g = genOf(gen);
  if (o.device().is_cuda()) {
    Tensor t = empty(size, o.requires_grad(false));
    GeneratorState from = g.reserve(n);
    try {
      cuda::draw(on_device.kind, t, from.seed, from.offset, on_device.low,
                 on_device.range);
    } catch (...) {
      g.unreserve(from, n);
      throw;
    }
    return finish(t, o);
  }
  GeneratorState from = g.reserve(n);
  try {
    Tensor state = empty({2}, TensorOptions(kLong));
    state.data_ptr<int64_t>()[0] = int64_t(from.seed);
    state.data_ptr<int64_t>()[1] = int64_t(from.offset);
    std::optional<ExcludeDispatchKeyGuard> real;
    if (o.requires_grad())
      real.emplace(DispatchKey::Capture);
    return finish(op(state), o);
  } catch (...) {
    g.unreserve(from, n);
    throw;
  }
}
} // namespace

Tensor rand(IntArrayRef size, const TensorOptions &o) {
  return rand(size, std::nullopt, o);
}
Tensor rand(IntArrayRef size, std::optional<Generator> gen,
            const TensorOptions &o) {
  return drawn("rand", DtypeGroup::Float, size, gen, o, {cuda::Draw::Uniform},
               [&](Tensor st) { return _philox_uniform(st, size, o.dtype()); });
}
Tensor randn(IntArrayRef size, const TensorOptions &o) {
  return randn(size, std::nullopt, o);
}
Tensor randn(IntArrayRef size, std::optional<Generator> gen,
             const TensorOptions &o) {
  return drawn("randn", DtypeGroup::Float, size, gen, o, {cuda::Draw::Normal},
               [&](Tensor st) { return _philox_normal(st, size, o.dtype()); });
}
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions &o) {
  return randint(0, high, size, std::nullopt, o);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size,
               const TensorOptions &o) {
  return randint(low, high, size, std::nullopt, o);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size,
               std::optional<Generator> gen, const TensorOptions &options) {
  TensorOptions o = options.has_dtype() ? options : options.dtype(kLong);
  meta::check_randint_range(low, high, o.dtype());
  DeviceDraw on_device{cuda::Draw::Randint, low,
                       uint64_t(high) - uint64_t(low)};
  return drawn("randint", DtypeGroup::All, size, gen, o, on_device,
               [&](Tensor st) {
                 return _philox_randint(st, low, high, size, o.dtype());
               });
}
Tensor randperm(int64_t n, const TensorOptions &o) {
  return randperm(n, std::nullopt, o);
}
Tensor randperm(int64_t n, std::optional<Generator> gen,
                const TensorOptions &options) {
  EMBER_CHECK_VALUE(n >= 0, "randperm: n must be non-negative, got ", n);
  TensorOptions o = options.has_dtype() ? options : options.dtype(kLong);
  if (auto t = viaHost(
          o, [&](const TensorOptions &h) { return randperm(n, gen, h); }))
    return *t;
  // Every value 0..n-1 must be exact in the dtype (PyTorch's checks).
  ScalarType dt = o.dtype();
  EMBER_CHECK_VALUE(dt != kBool, "randperm is not implemented for Bool");
  int64_t limit = dt == kHalf       ? 2049
                  : dt == kBFloat16 ? 257
                  : dt == kFloat    ? (int64_t(1) << 24) + 1
                  : dt == kDouble   ? (int64_t(1) << 53) + 1
                  : dt == kByte     ? 256
                  : dt == kChar     ? 128
                  : dt == kShort    ? 32768
                  : dt == kInt      ? (int64_t(1) << 31)
                                    : INT64_MAX;
  EMBER_CHECK_VALUE(n <= limit, "randperm: n cannot be greater than ", limit,
                    " for ", toTypeName(dt), " type (n = ", n, ")");
  // The permutation is built in an int64 tensor from ember's allocator, so
  // an n too large to hold raises its out-of-memory error.
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  Tensor t = empty({n}, TensorOptions(kLong));
  int64_t *perm = t.data_ptr<int64_t>();
  std::iota(perm, perm + n, int64_t(0));
  GeneratorState st = genOf(gen).reserve(uint64_t(n));
  for (int64_t i = n - 1; i > 0; --i) { // Fisher-Yates, draw k at offset + k
    uint64_t k = uint64_t(n - 1 - i);
    uint64_t r = philox::word64(philox::bits(st.seed, st.offset + k), 0);
    std::swap(perm[i], perm[r % uint64_t(i + 1)]);
  }
  t = t.to(o.dtype());
  return finish(t, options);
}

// --- from memory
// ----------------------------------------------------------------

Tensor from_blob(void *data, IntArrayRef sizes, IntArrayRef strides,
                 const TensorOptions &options) {
  Device dev = checkDevice(options);
  EMBER_CHECK(sizes.size() == strides.size(), "from_blob: ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  for (size_t i = 0; i < sizes.size(); ++i)
    EMBER_CHECK_VALUE(sizes[i] >= 0 && strides[i] >= 0,
                      "from_blob: negative size or stride");
  ScalarType dt = options.dtype();
  Storage st = Storage::borrow(
      data, storage_nbytes(sizes, strides, elementSize(dt)), dev);
  return finish(
      Tensor(make_intrusive<TensorImpl>(std::move(st), dt, sizes, strides, 0)),
      options);
}
Tensor from_blob(void *data, IntArrayRef sizes, const TensorOptions &o) {
  return from_blob(data, sizes, contiguous_strides(sizes), o);
}
Tensor from_blob(void *data, IntArrayRef sizes,
                 const std::function<void(void *)> &deleter,
                 const TensorOptions &options) {
  Device dev = checkDevice(options);
  ScalarType dt = options.dtype();
  Storage st = Storage::borrow(
      data, size_t(multiply_sizes(sizes)) * elementSize(dt), dev, deleter);
  return finish(Tensor(make_intrusive<TensorImpl>(std::move(st), dt, sizes)),
                options);
}

Tensor scalar_tensor(const Scalar &s, const TensorOptions &options) {
  TensorOptions o = options;
  if (!o.has_dtype()) // the default dtype whatever the number, as PyTorch's
    o = o.dtype(get_default_dtype());
  Tensor t = empty({}, o.requires_grad(false));
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  t.fill_(s);
  return finish(t, options);
}

Tensor wrapped_scalar_tensor(const Scalar &s) {
  // The value keeps its full precision (float64 / int64) and the
  // wrapped-number flag makes it promote like a Python scalar.
  Tensor t = empty({}, TensorOptions(s.type()));
  dispatch_dtype(t.dtype(), "wrapped_scalar_tensor",
                 [&]<class T>() { *t.data_ptr<T>() = s.to<T>(); });
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// --- tensor()
// ---------------------------------------------------------------------

namespace detail {
TensorDataContainer::TensorDataContainer(
    std::initializer_list<TensorDataContainer> l) {
  is_list_ = true;
  elems_.assign(l.begin(), l.end());
  sizes_ = {int64_t(elems_.size())};
  if (elems_.empty()) {
    kind_ = kDouble; // tensor({}) is a float tensor of size [0]
    return;
  }
  const TensorDataContainer &first = elems_.front();
  for (int64_t s : first.sizes_)
    sizes_.push_back(s);
  kind_ = first.kind_;
  for (const auto &e : elems_) {
    EMBER_CHECK_VALUE(e.sizes_ == first.sizes_ && e.is_list_ == first.is_list_,
                      "tensor(): expected a rectangular nested list, but "
                      "found a sub-list of sizes ",
                      e.sizes_, " next to one of sizes ", first.sizes_);
    kind_ = promoteTypes(kind_, e.kind_);
  }
}
TensorDataContainer::TensorDataContainer(const std::vector<bool> &v) {
  is_list_ = true;
  sizes_ = {int64_t(v.size())};
  kind_ = kBool;
  for (bool b : v)
    elems_.push_back(TensorDataContainer(b));
}
void TensorDataContainer::fill(char *&dst, ScalarType dtype) const {
  if (!is_list_) {
    dispatch_dtype(dtype, "tensor", [&]<class T>() {
      *reinterpret_cast<T *>(dst) = scalar_.to<T>();
    });
    dst += elementSize(dtype);
    return;
  }
  for (const auto &e : elems_)
    e.fill(dst, dtype);
}
} // namespace detail

Tensor tensor(detail::TensorDataContainer data, const TensorOptions &options) {
  TensorOptions o = options;
  if (!o.has_dtype())
    o = o.dtype(data.kind() == kDouble ? get_default_dtype() : data.kind());
  if (auto t = viaHost(o, [&](const TensorOptions &h) {
        return tensor(data, h.requires_grad(false));
      }))
    return *t;
  Tensor t = empty(data.sizes(), o.requires_grad(false));
  char *p = static_cast<char *>(t.data_ptr());
  data.fill(p, t.dtype());
  return finish(t, options);
}

} // namespace ember
