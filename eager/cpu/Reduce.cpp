// Reductions: sum, mean, prod, max/min (values and indices), amax/amin,
// argmax/argmin, all/any, and the composites over every element. They run on
// the engine of ReduceUtils.h (Note [Reduction layout]).
#include "eager/cpu/HalfBlocks.h"
#include "eager/cpu/ReduceUtils.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

namespace ember::native {

using namespace reduce;

namespace {

IntArrayRef dims_or_all(OptionalIntArrayRef dim) {
  return dim.has_value() ? *dim : IntArrayRef();
}

// --- reducers (the interface is described in ReduceUtils.h) -----------------

/// Sum, or mean when Mean (the sum divided by the count, in acc_t).
template <class T, bool Mean> struct SumReducer {
  using acc = acc_t<T>;
  T *out;
  int64_t count;
  acc init() const { return acc(0); }
  acc step(acc a, T x, int64_t, int64_t) const {
    return acc_add(a, acc(compute_t<T>(x)));
  }
  acc combine(acc a, acc b) const { return acc_add(a, b); }
  /// Note [Float16 sums in blocks]
  /// A float16 row converted one element at a time did not vectorize (a
  /// float16 sum of 1M elements 10x PyTorch's on the Zen 5 VM). Runs are
  /// converted to float 256 at a time (HalfBlocks.h) and folded in
  /// fold_row's lanes and order: lane j takes elements n0 + 32k + j, the
  /// tail lane 0, then the same tree, so the sum is the same to the bit.
  acc row(const T *x, int64_t n0, int64_t n1, int64_t o) const
      requires((std::is_same_v<T, Half> && kHalfBlocks)) {
    if (n1 - n0 < 2 * kLanes) {
      acc a = init();
      for (int64_t i = n0; i < n1; ++i)
        a = step(a, x[i], i, o);
      return a;
    }
    constexpr int64_t kBlock = 8 * kLanes;
    alignas(32) float buf[kBlock];
    acc l[kLanes] = {};
    int64_t i = n0;
    while (n1 - i >= kLanes) {
      const int64_t len = std::min(kBlock, (n1 - i) / kLanes * kLanes);
      widen_half(x + i, buf, len);
      for (int64_t k = 0; k < len; k += kLanes)
        for (int j = 0; j < kLanes; ++j)
          l[j] += acc(buf[k + j]);
      i += len;
    }
    for (; i < n1; ++i)
      l[0] += acc(float(x[i]));
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j)
        l[j] = combine(l[j], l[j + w]);
    return l[0];
  }
  void finish(int64_t o, acc a) const {
    if constexpr (Mean)
      out[o] = cast_to<T>(double(a) / double(count));
    else
      out[o] = cast_to<T>(a);
  }
};

template <class T> struct ProdReducer {
  using acc = acc_t<T>;
  T *out;
  acc init() const { return acc(1); }
  acc step(acc a, T x, int64_t, int64_t) const {
    return acc_mul(a, acc(compute_t<T>(x)));
  }
  acc combine(acc a, acc b) const { return acc_mul(a, b); }
  void finish(int64_t o, acc a) const { out[o] = cast_to<T>(a); }
};

/// The identity of max (IsMax) or min in the compute type C.
template <class C, bool IsMax> C minmax_identity() {
  if constexpr (std::is_floating_point_v<C>)
    return IsMax ? -std::numeric_limits<C>::infinity()
                 : std::numeric_limits<C>::infinity();
  else
    return IsMax ? std::numeric_limits<C>::lowest()
                 : std::numeric_limits<C>::max();
}

/// amax / amin: NaN wins (as PyTorch), and -0 < +0 (IEEE 754-2019's
/// maximum, as compiled reductions and pw::maximum): the sign of a zero
/// result does not depend on the order the lanes meet.
template <class T, bool IsMax> struct MinMaxReducer {
  using C = compute_t<T>;
  using acc = C;
  T *out;
  acc init() const { return minmax_identity<C, IsMax>(); }
  static C pick(C a, C v) {
    if constexpr (std::is_floating_point_v<C>) {
      if constexpr (IsMax)
        return (v > a || is_nan(v) || (v == a && std::signbit(a))) ? v : a;
      else
        return (v < a || is_nan(v) || (v == a && std::signbit(v))) ? v : a;
    } else if constexpr (IsMax) {
      return v > a ? v : a;
    } else {
      return v < a ? v : a;
    }
  }
  acc step(acc a, T x, int64_t, int64_t) const { return pick(a, C(x)); }
  acc combine(acc a, acc b) const { return pick(a, b); }
  void finish(int64_t o, acc a) const { out[o] = cast_to<T>(a); }
};

/// A value and the index it was found at (-1: none yet).
template <class C> struct ValIdx {
  C v;
  int64_t i;
};

/// max.dim / min.dim / argmax / argmin: the first index of the extreme value;
/// a NaN is the extreme, and the first NaN wins.
template <class T, bool IsMax> struct ArgReducer {
  using C = compute_t<T>;
  using acc = ValIdx<C>;
  T *values; ///< null for argmax / argmin
  int64_t *indices;
  acc init() const { return {minmax_identity<C, IsMax>(), -1}; }
  /// Whether b (found after a) replaces a.
  static bool better(C b, C a) {
    return !is_nan(a) && (is_nan(b) || (IsMax ? b > a : b < a));
  }
  acc step(acc a, T x, int64_t n, int64_t) const {
    C v = C(x);
    return (a.i < 0 || better(v, a.v)) ? acc{v, n} : a;
  }
  acc combine(acc a, acc b) const {
    if (a.i < 0)
      return b;
    if (b.i < 0)
      return a;
    // Lanes interleave, so either may hold the earlier index.
    const acc &first = a.i < b.i ? a : b, &second = a.i < b.i ? b : a;
    return better(second.v, first.v) ? second : first;
  }
  void finish(int64_t o, acc a) const {
    if (values)
      values[o] = cast_to<T>(a.v);
    indices[o] = a.i;
  }
  // Note [Vectorized arg reductions]
  // A (value, index) accumulator does not vectorize. Rows run two passes
  // instead: the extreme value (a vectorized amax/amin fold; NaN wins), then
  // the first index holding it (or the first NaN). Columns keep values and
  // indices in two arrays, whose selects GCC vectorizes.
  acc row(const T *x, int64_t n0, int64_t n1, int64_t o) const {
    if (n0 == n1)
      return init();
    C m = fold_row(MinMaxReducer<T, IsMax>{nullptr}, x, n0, n1, o);
    bool nan = is_nan(m);
    for (int64_t i = n0; i < n1; ++i) {
      C v = C(x[i]);
      if (nan ? is_nan(v) : v == m)
        return {v, i};
    }
    return init(); // unreachable: m is one of the elements
  }
  void cols(const T *x, int64_t B, int64_t n0, int64_t n1, int64_t nb, int64_t,
            acc *a) const {
    C v[kMaxTile];
    int64_t idx[kMaxTile];
    for (int64_t b = 0; b < nb; ++b) {
      v[b] = a[b].v;
      idx[b] = a[b].i;
    }
    for (int64_t n = n0; n < n1; ++n) {
      const T *row = x + n * B;
      for (int64_t b = 0; b < nb; ++b) {
        C xv = C(row[b]), cur = v[b];
        bool take = idx[b] < 0 || better(xv, cur);
        v[b] = take ? xv : cur;
        idx[b] = take ? n : idx[b];
      }
    }
    for (int64_t b = 0; b < nb; ++b)
      a[b] = {v[b], idx[b]};
  }
};

/// all (IsAll) / any; O is bool, or uint8 for uint8 inputs (as PyTorch).
template <class T, bool IsAll, class O> struct AllAnyReducer {
  using acc = bool;
  O *out;
  acc init() const { return IsAll; }
  acc step(acc a, T x, int64_t, int64_t) const {
    bool nz = compute_t<T>(x) != compute_t<T>(0);
    return IsAll ? (a && nz) : (a || nz);
  }
  acc combine(acc a, acc b) const { return IsAll ? (a && b) : (a || b); }
  void finish(int64_t o, acc a) const { out[o] = O(a); }
};

// --- drivers ----------------------------------------------------------------

template <class T> struct MakeSum {
  static SumReducer<T, false> make(T *out, int64_t n) { return {out, n}; }
};
template <class T> struct MakeMean {
  static SumReducer<T, true> make(T *out, int64_t n) { return {out, n}; }
};
template <class T> struct MakeProd {
  static ProdReducer<T> make(T *out, int64_t) { return {out}; }
};

/// The reduced dims of `rd` as a list (the CUDA kernels' form).
std::vector<bool> mask_of(const ReduceDims &rd, int64_t dim) {
  std::vector<bool> m(static_cast<size_t>(dim));
  for (int64_t d = 0; d < dim; ++d)
    m[size_t(d)] = rd.mask[size_t(d)];
  return m;
}

/// sum / mean / prod of `self` converted to `out_t` over `dims`.
template <template <class> class Make, DtypeGroup G = DtypeGroup::All>
Tensor fold_op(const Tensor &self, IntArrayRef dims, bool keepdim,
               ScalarType out_t, const char *op) {
  ReduceDims rd = reduce_dims(self, dims, keepdim);
  Tensor x = self.to(out_t);
  if (x.is_cuda()) { // Note [CUDA reductions]
    if (!in_group(out_t, G))
      throw_unsupported_dtype(op, out_t);
    constexpr bool is_sum = std::is_same_v<Make<float>, MakeSum<float>>;
    constexpr bool is_mean = std::is_same_v<Make<float>, MakeMean<float>>;
    if constexpr (is_sum || is_mean)
      return cuda::reduce(is_sum ? cuda::ReduceKind::Sum
                                 : cuda::ReduceKind::Mean,
                          x, mask_of(rd, x.dim()), rd.out_sizes);
    else
      throw NotImplementedError(std::string(op) +
                                " has no CUDA kernel yet; compute it on the "
                                "CPU (.cpu())");
  }
  Tensor out = empty(rd.out_sizes, TensorOptions(out_t));
  Layout l = reduce_layout(x, rd.mask);
  dispatch_in<G>(out_t, op, [&]<class T>() {
    run_reduce<T>(Make<T>::make(out.data_ptr<T>(), rd.nreduce), l);
  });
  return out;
}

template <bool IsMax>
Tensor minmax_op(const Tensor &self, IntArrayRef dims, bool keepdim,
                 const char *op) {
  check_nonempty_reduction(self, dims, op);
  ReduceDims rd = reduce_dims(self, dims, keepdim);
  if (self.is_cuda()) // Note [CUDA reductions]
    return cuda::reduce(IsMax ? cuda::ReduceKind::Amax : cuda::ReduceKind::Amin,
                        self, mask_of(rd, self.dim()), rd.out_sizes);
  Tensor out = empty(rd.out_sizes, TensorOptions(self.dtype()));
  Layout l = reduce_layout(self, rd.mask);
  dispatch_dtype(self.dtype(), op, [&]<class T>() {
    run_reduce<T>(MinMaxReducer<T, IsMax>{out.data_ptr<T>()}, l);
  });
  return out;
}

/// max.dim / min.dim (with_values) and argmax / argmin (dim == nullopt:
/// over the flattened input).
template <bool IsMax>
std::tuple<Tensor, Tensor> arg_op(const Tensor &self,
                                  std::optional<int64_t> dim, bool keepdim,
                                  bool with_values, const char *op) {
  IntArrayRef dims = dim ? IntArrayRef(*dim) : IntArrayRef();
  check_nonempty_reduction(self, dims, op);
  ReduceDims rd = reduce_dims(self, dims, keepdim);
  Tensor values;
  if (with_values)
    values = empty(rd.out_sizes, TensorOptions(self.dtype()));
  Tensor indices = empty(rd.out_sizes, TensorOptions(kLong));
  // Over every dim, n must be the row-major flat index: reduce a contiguous
  // input as one row.
  Layout l = reduce_layout(dim ? self : self.contiguous(), rd.mask);
  auto body = [&]<class T>() {
    ArgReducer<T, IsMax> r{with_values ? values.data_ptr<T>() : nullptr,
                           indices.data_ptr<int64_t>()};
    run_reduce<T>(r, l);
  };
  if (with_values)
    dispatch_dtype(self.dtype(), op, body);
  else
    dispatch_in<DtypeGroup::NoBool>(self.dtype(), op, body);
  return {values, indices};
}

template <bool IsAll>
Tensor all_any_op(const Tensor &self, int64_t dim, bool keepdim,
                  const char *op) {
  ReduceDims rd = reduce_dim(self, dim, keepdim);
  ScalarType out_t = meta::all_any_dtype(self.dtype());
  Tensor out = empty(rd.out_sizes, TensorOptions(out_t));
  Layout l = reduce_layout(self, rd.mask);
  dispatch_dtype(self.dtype(), op, [&]<class T>() {
    using O = std::conditional_t<std::is_same_v<T, uint8_t>, uint8_t, bool>;
    run_reduce<T>(AllAnyReducer<T, IsAll, O>{out.data_ptr<O>()}, l);
  });
  return out;
}

} // namespace

// --- sum, mean, prod --------------------------------------------------------

Tensor sum(const Tensor &self, OptionalIntArrayRef dim, bool keepdim,
           std::optional<ScalarType> dtype) {
  return fold_op<MakeSum>(self, dims_or_all(dim), keepdim,
                          meta::sum_dtype(self.dtype(), dtype), "sum");
}

Tensor sum_all(const Tensor &self, std::optional<ScalarType> dtype) {
  return ember::sum(self, std::nullopt, false, dtype);
}

Tensor mean(const Tensor &self, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  return fold_op<MakeMean, DtypeGroup::Float>(
      self, dims_or_all(dim), keepdim, meta::mean_dtype(self.dtype(), dtype),
      "mean");
}

Tensor mean_all(const Tensor &self, std::optional<ScalarType> dtype) {
  return ember::mean(self, std::nullopt, false, dtype);
}

Tensor prod(const Tensor &self, int64_t dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  return fold_op<MakeProd>(self, IntArrayRef(dim), keepdim,
                           meta::sum_dtype(self.dtype(), dtype), "prod");
}

Tensor prod_all(const Tensor &self, std::optional<ScalarType> dtype) {
  return ember::prod(self.reshape({-1}), 0, false, dtype);
}

// --- max, min ---------------------------------------------------------------

Tensor amax(const Tensor &self, IntArrayRef dim, bool keepdim) {
  return minmax_op<true>(self, dim, keepdim, "amax");
}

Tensor amin(const Tensor &self, IntArrayRef dim, bool keepdim) {
  return minmax_op<false>(self, dim, keepdim, "amin");
}

Tensor max_all(const Tensor &self) {
  check_nonempty_reduction(self, {}, "max");
  return ember::amax(self);
}

Tensor min_all(const Tensor &self) {
  check_nonempty_reduction(self, {}, "min");
  return ember::amin(self);
}

std::tuple<Tensor, Tensor> max_dim(const Tensor &self, int64_t dim,
                                   bool keepdim) {
  return arg_op<true>(self, dim, keepdim, true, "max");
}

std::tuple<Tensor, Tensor> min_dim(const Tensor &self, int64_t dim,
                                   bool keepdim) {
  return arg_op<false>(self, dim, keepdim, true, "min");
}

Tensor argmax(const Tensor &self, std::optional<int64_t> dim, bool keepdim) {
  return std::get<1>(arg_op<true>(self, dim, keepdim, false, "argmax"));
}

Tensor argmin(const Tensor &self, std::optional<int64_t> dim, bool keepdim) {
  return std::get<1>(arg_op<false>(self, dim, keepdim, false, "argmin"));
}

// --- all, any ---------------------------------------------------------------

Tensor all_dim(const Tensor &self, int64_t dim, bool keepdim) {
  return all_any_op<true>(self, dim, keepdim, "all");
}

Tensor any_dim(const Tensor &self, int64_t dim, bool keepdim) {
  return all_any_op<false>(self, dim, keepdim, "any");
}

Tensor all_all(const Tensor &self) {
  return ember::all(self.reshape({-1}), 0, false);
}

Tensor any_all(const Tensor &self) {
  return ember::any(self.reshape({-1}), 0, false);
}

} // namespace ember::native
