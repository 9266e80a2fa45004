// Reductions with a numeric recipe: var (and the std composite), norm (and
// norm over every element), logsumexp.
#include "eager/VecMath.h"
#include "eager/cpu/ReduceUtils.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

namespace ember::native {

using namespace reduce;

namespace {

/// exp in the compute type (the vectorizable float version for float).
template <class C> inline C exp_c(C v) {
  if constexpr (std::is_same_v<C, float>)
    return vm::exp(v);
  else
    return std::exp(v);
}

// --- var --------------------------------------------------------------------

// Note [Variance in one sweep]
// var folds (count, mean, M2) triples. A row, or a chunk of one, is folded
// in two passes while it is in cache: its mean (a vectorized double sum),
// then the sum of squared deviations from that mean (also vectorized). That
// is exact to double rounding for float inputs and free of the cancellation
// of a one-pass sum of squares when the mean is large next to the spread.
// Column tiles run the same two passes over their rows. Partial triples
// (lanes of other folds, chunks of a long row split along N) merge with
// Chan's formula, which is stable. PyTorch uses Welford's update on CPU; the
// results agree to rounding.

struct Moments {
  double n, mean, m2;
};

/// Chan et al.: the moments of the union of two disjoint samples.
inline Moments merge(const Moments &a, const Moments &b) {
  if (a.n == 0)
    return b;
  if (b.n == 0)
    return a;
  double n = a.n + b.n, d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

/// sum(x) in double (a helper fold; never finished).
template <class T> struct DoubleSum {
  using acc = double;
  acc init() const { return 0.0; }
  acc step(acc a, T x, int64_t, int64_t) const {
    return a + double(compute_t<T>(x));
  }
  acc combine(acc a, acc b) const { return a + b; }
};

/// sum((x - mean)^2) in double (a helper fold; never finished).
template <class T> struct SquaredDeviation {
  using acc = double;
  double mean;
  acc init() const { return 0.0; }
  acc step(acc a, T x, int64_t, int64_t) const {
    double d = double(compute_t<T>(x)) - mean;
    return a + d * d;
  }
  acc combine(acc a, acc b) const { return a + b; }
};

/// out[o] = M2 / divisor.
template <class T> struct VarReducer {
  using acc = Moments;
  T *out;
  double divisor;
  acc init() const { return {0, 0, 0}; }
  acc step(acc a, T x, int64_t, int64_t) const {
    return merge(a, {1, double(compute_t<T>(x)), 0});
  }
  acc combine(acc a, acc b) const { return merge(a, b); }
  void finish(int64_t o, acc a) const { out[o] = cast_to<T>(a.m2 / divisor); }
  acc row(const T *x, int64_t n0, int64_t n1, int64_t o) const {
    if (n0 == n1)
      return init();
    double cnt = double(n1 - n0);
    double mean = fold_row(DoubleSum<T>{}, x, n0, n1, o) / cnt;
    return {cnt, mean, fold_row(SquaredDeviation<T>{mean}, x, n0, n1, o)};
  }
  void cols(const T *x, int64_t B, int64_t n0, int64_t n1, int64_t nb, int64_t,
            acc *a) const {
    if (n0 == n1)
      return;
    double mean[kMaxTile], m2[kMaxTile];
    std::fill(mean, mean + nb, 0.0);
    std::fill(m2, m2 + nb, 0.0);
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t b = 0; b < nb; ++b)
        mean[b] += double(compute_t<T>(x[n * B + b]));
    double cnt = double(n1 - n0);
    for (int64_t b = 0; b < nb; ++b)
      mean[b] /= cnt;
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t b = 0; b < nb; ++b) {
        double d = double(compute_t<T>(x[n * B + b])) - mean[b];
        m2[b] += d * d;
      }
    for (int64_t b = 0; b < nb; ++b)
      a[b] = merge(a[b], {cnt, mean[b], m2[b]});
  }
};

// --- norm -------------------------------------------------------------------

enum class NormKind { Zero, One, Two, Inf, NegInf, General };

/// The vector p-norm: sum(|x|^p)^(1/p), with the special p of NormKind.
template <class T, NormKind K> struct NormReducer {
  using C = compute_t<T>;
  static constexpr bool kMinMax = K == NormKind::Inf || K == NormKind::NegInf;
  using acc = std::conditional_t<kMinMax, C, double>;
  T *out;
  double p;
  acc init() const {
    return K == NormKind::NegInf ? std::numeric_limits<acc>::infinity()
                                 : acc(0);
  }
  static acc pick(acc a, acc v) {
    if constexpr (K == NormKind::Inf)
      return (v > a || is_nan(v)) ? v : a;
    else
      return (v < a || is_nan(v)) ? v : a;
  }
  acc step(acc a, T x, int64_t, int64_t) const {
    C v = C(x);
    if constexpr (K == NormKind::Zero)
      return a + (v != C(0) ? 1.0 : 0.0);
    else if constexpr (K == NormKind::One)
      return a + double(std::abs(v));
    else if constexpr (K == NormKind::Two)
      return a + double(v) * double(v);
    else if constexpr (K == NormKind::General)
      return a + std::pow(double(std::abs(v)), p);
    else
      return pick(a, std::abs(v));
  }
  acc combine(acc a, acc b) const {
    if constexpr (kMinMax)
      return pick(a, b);
    else
      return a + b;
  }
  void finish(int64_t o, acc a) const {
    if constexpr (K == NormKind::Two)
      out[o] = cast_to<T>(std::sqrt(a));
    else if constexpr (K == NormKind::General)
      out[o] = cast_to<T>(std::pow(a, 1.0 / p));
    else
      out[o] = cast_to<T>(a);
  }
};

// --- logsumexp --------------------------------------------------------------

// Note [Stable logsumexp]
// logsumexp folds (shift, sum) pairs meaning sum * exp(shift). A row (or a
// chunk of one) is folded in two cached passes: its max m (NaN wins), then
// sum(exp(x - m)) in double, so no exp overflows. An infinite m becomes a
// shift of 0 (as PyTorch), so +inf gives +inf and a row of -inf gives
// log(0) = -inf instead of NaN. Pairs merge by rescaling to the larger
// shift.

/// max with NaN winning (a helper fold; never finished).
template <class T> struct NanMax {
  using C = compute_t<T>;
  using acc = C;
  acc init() const { return -std::numeric_limits<C>::infinity(); }
  static C pick(C a, C v) { return (v > a || is_nan(v)) ? v : a; }
  acc step(acc a, T x, int64_t, int64_t) const { return pick(a, C(x)); }
  acc combine(acc a, acc b) const { return pick(a, b); }
};

/// sum(exp(x - shift)) in double (a helper fold; never finished).
template <class T> struct SumExp {
  using C = compute_t<T>;
  using acc = double;
  C shift;
  acc init() const { return 0.0; }
  acc step(acc a, T x, int64_t, int64_t) const {
    return a + double(exp_c<C>(C(x) - shift));
  }
  acc combine(acc a, acc b) const { return a + b; }
};

template <class T> struct LogSumExpReducer {
  using C = compute_t<T>;
  struct acc {
    double shift, sum;
  };
  T *out;
  static double shift_of(C m) { return std::isinf(m) ? 0.0 : double(m); }
  acc init() const { return {0.0, 0.0}; }
  static acc merge(acc a, acc b) {
    if (a.sum == 0)
      return b;
    if (b.sum == 0)
      return a;
    double m = (b.shift > a.shift || std::isnan(b.shift)) ? b.shift : a.shift;
    return {m, a.sum * std::exp(a.shift - m) + b.sum * std::exp(b.shift - m)};
  }
  acc step(acc a, T x, int64_t, int64_t) const {
    C v = C(x);
    return merge(a, {shift_of(v), std::exp(double(v) - shift_of(v))});
  }
  acc combine(acc a, acc b) const { return merge(a, b); }
  void finish(int64_t o, acc a) const {
    out[o] = cast_to<T>(std::log(a.sum) + a.shift);
  }
  acc row(const T *x, int64_t n0, int64_t n1, int64_t o) const {
    if (n0 == n1)
      return init();
    C m = C(shift_of(fold_row(NanMax<T>{}, x, n0, n1, o)));
    return {double(m), fold_row(SumExp<T>{m}, x, n0, n1, o)};
  }
  void cols(const T *x, int64_t B, int64_t n0, int64_t n1, int64_t nb, int64_t,
            acc *a) const {
    if (n0 == n1)
      return;
    C m[kMaxTile];
    double s[kMaxTile];
    std::fill(m, m + nb, -std::numeric_limits<C>::infinity());
    std::fill(s, s + nb, 0.0);
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t b = 0; b < nb; ++b)
        m[b] = NanMax<T>::pick(m[b], C(x[n * B + b]));
    for (int64_t b = 0; b < nb; ++b)
      m[b] = C(shift_of(m[b]));
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t b = 0; b < nb; ++b)
        s[b] += double(exp_c<C>(C(x[n * B + b]) - m[b]));
    for (int64_t b = 0; b < nb; ++b)
      a[b] = merge(a[b], {double(m[b]), s[b]});
  }
};

} // namespace

Tensor var(const Tensor &self, OptionalIntArrayRef dim,
           const std::optional<Scalar> &correction, bool keepdim) {
  meta::check_var(self.dtype());
  double corr = correction ? correction->toDouble() : 1.0;
  ReduceDims rd =
      reduce_dims(self, dim.has_value() ? *dim : IntArrayRef(), keepdim);
  Tensor out = empty(rd.out_sizes, TensorOptions(self.dtype()));
  Layout l = reduce_layout(self, rd.mask);
  // PyTorch: the divisor is N - correction, clamped at 0 (giving inf or nan).
  double divisor = std::max(0.0, double(rd.nreduce) - corr);
  dispatch_floating(self.dtype(), "var", [&]<class T>() {
    run_reduce<T>(VarReducer<T>{out.data_ptr<T>(), divisor}, l);
  });
  return out;
}

Tensor std(const Tensor &self, OptionalIntArrayRef dim,
           const std::optional<Scalar> &correction, bool keepdim) {
  return ember::_std_sqrt(ember::var(self, dim, correction, keepdim));
}

std::tuple<Tensor, Tensor> var_mean(const Tensor &self, OptionalIntArrayRef dim,
                                    const std::optional<Scalar> &correction,
                                    bool keepdim) {
  return {ember::var(self, dim, correction, keepdim),
          ember::mean(self, dim, keepdim)};
}

std::tuple<Tensor, Tensor> std_mean(const Tensor &self, OptionalIntArrayRef dim,
                                    const std::optional<Scalar> &correction,
                                    bool keepdim) {
  return {ember::std(self, dim, correction, keepdim),
          ember::mean(self, dim, keepdim)};
}

Tensor norm(const Tensor &self, const std::optional<Scalar> &p, IntArrayRef dim,
            bool keepdim) {
  meta::check_norm(self, p, dim);
  double pv = p ? p->toDouble() : 2.0;
  ReduceDims rd = reduce_dims(self, dim, keepdim);
  Tensor out = empty(rd.out_sizes, TensorOptions(self.dtype()));
  Layout l = reduce_layout(self, rd.mask);
  NormKind kind = pv == 0                    ? NormKind::Zero
                  : pv == 1                  ? NormKind::One
                  : pv == 2                  ? NormKind::Two
                  : std::isinf(pv) && pv > 0 ? NormKind::Inf
                  : std::isinf(pv)           ? NormKind::NegInf
                                             : NormKind::General;
  dispatch_floating(self.dtype(), "norm", [&]<class T>() {
    T *o = out.data_ptr<T>();
    switch (kind) {
    case NormKind::Zero:
      return run_reduce<T>(NormReducer<T, NormKind::Zero>{o, pv}, l);
    case NormKind::One:
      return run_reduce<T>(NormReducer<T, NormKind::One>{o, pv}, l);
    case NormKind::Two:
      return run_reduce<T>(NormReducer<T, NormKind::Two>{o, pv}, l);
    case NormKind::Inf:
      return run_reduce<T>(NormReducer<T, NormKind::Inf>{o, pv}, l);
    case NormKind::NegInf:
      return run_reduce<T>(NormReducer<T, NormKind::NegInf>{o, pv}, l);
    case NormKind::General:
      return run_reduce<T>(NormReducer<T, NormKind::General>{o, pv}, l);
    }
  });
  return out;
}

Tensor norm_all(const Tensor &self, const Scalar &p) {
  return ember::norm(self, std::optional<Scalar>(p), IntArrayRef(), false);
}

Tensor logsumexp(const Tensor &self, IntArrayRef dim, bool keepdim) {
  // Integers and bool compute in the default float dtype (as PyTorch).
  Tensor x = self.to(meta::logsumexp_dtype(self.dtype()));
  ReduceDims rd = reduce_dims(x, dim, keepdim);
  Tensor out = empty(rd.out_sizes, TensorOptions(x.dtype()));
  Layout l = reduce_layout(x, rd.mask);
  dispatch_floating(x.dtype(), "logsumexp", [&]<class T>() {
    run_reduce<T>(LogSumExpReducer<T>{out.data_ptr<T>()}, l);
  });
  return out;
}

} // namespace ember::native
