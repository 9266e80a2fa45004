// Ops along one dim that keep the input's shape: cumsum, cumprod, softmax,
// log_softmax and their backward kernels. They run over the [A, N, B] layout of
// ReduceUtils.h: rows (B == 1) or tiles of columns with the inner loop over b.
#include "eager/VecMath.h"
#include "eager/cpu/ReduceUtils.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

namespace ember::native {

using namespace reduce;

namespace {

// --- cumsum, cumprod --------------------------------------------------------

/// y[a, n, b] = x[a, 0, b] op ... op x[a, n, b], accumulated in acc_t<T>.
template <class T, bool Prod>
void scan_kernel(const T *x, T *y, int64_t A, int64_t N, int64_t B) {
  using Acc = acc_t<T>;
  auto op = [](Acc a, T v) {
    Acc w = Acc(compute_t<T>(v));
    return Prod ? acc_mul(a, w) : acc_add(a, w);
  };
  const Acc id = Prod ? Acc(1) : Acc(0);
  if (B == 1) {
    parallel_for(0, A, std::max<int64_t>(1, kGrainSize / N),
                 [&](int64_t a0, int64_t a1) {
                   for (int64_t a = a0; a < a1; ++a) {
                     const T *xr = x + a * N;
                     T *yr = y + a * N;
                     Acc acc = id;
                     for (int64_t n = 0; n < N; ++n) {
                       acc = op(acc, xr[n]);
                       yr[n] = cast_to<T>(acc);
                     }
                   }
                 });
    return;
  }
  int64_t tb = column_tile(A, B), nt = (B + tb - 1) / tb;
  parallel_for(0, A * nt, std::max<int64_t>(1, kGrainSize / (N * tb)),
               [&](int64_t u0, int64_t u1) {
                 Acc acc[kMaxTile];
                 for (int64_t u = u0; u < u1; ++u) {
                   int64_t a = u / nt, b0 = (u % nt) * tb;
                   int64_t nb = std::min(tb, B - b0);
                   std::fill(acc, acc + nb, id);
                   for (int64_t n = 0; n < N; ++n) {
                     int64_t base = (a * N + n) * B + b0;
                     for (int64_t b = 0; b < nb; ++b) {
                       acc[b] = op(acc[b], x[base + b]);
                       y[base + b] = cast_to<T>(acc[b]);
                     }
                   }
                 }
               });
}

template <bool Prod>
Tensor scan_op(const Tensor &self, int64_t dim, std::optional<ScalarType> dtype,
               const char *op) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  ScalarType out_t = meta::scan_dtype(self.dtype(), dtype);
  Tensor out = empty(self.sizes(), TensorOptions(out_t));
  if (self.numel() == 0)
    return out;
  Layout l = dim_layout(self.to(out_t), d);
  dispatch_dtype(out_t, op, [&]<class T>() {
    scan_kernel<T, Prod>(l.data<T>(), out.data_ptr<T>(), l.A, l.N, l.B);
  });
  return out;
}

// --- softmax, log_softmax ---------------------------------------------------

// Note [Softmax kernel]
// Softmax over a contiguous row runs three vectorizable passes over data that
// stays in cache for rows up to L2 size: the max (kLanes partial maxima), the
// exponentials of x - max (written to the output for softmax) with their sum
// (kLanes partial sums in the compute type, as PyTorch), and the
// normalisation: y *= 1 / sum, or y = x - max - log(sum) for log_softmax.
// Subtracting the max keeps exp from overflowing. A NaN anywhere in the row
// makes the sum NaN, hence every output NaN (as PyTorch); a row of -inf gives
// NaN (0/0) like PyTorch. For a dim other than the last, the same passes run
// over tiles of columns, vectorized across the inner dim.

template <class C> inline C exp_c(C v) {
  if constexpr (std::is_same_v<C, float>)
    return vm::exp(v);
  else
    return std::exp(v);
}

template <class C, bool Log> void softmax_row(const C *x, C *y, int64_t N) {
  C ml[kLanes];
  for (int j = 0; j < kLanes; ++j)
    ml[j] = -std::numeric_limits<C>::infinity();
  int64_t i = 0;
  for (; i + kLanes <= N; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      ml[j] = x[i + j] > ml[j] ? x[i + j] : ml[j];
  for (; i < N; ++i)
    ml[0] = x[i] > ml[0] ? x[i] : ml[0];
  C m = ml[0];
  for (int j = 1; j < kLanes; ++j)
    m = ml[j] > m ? ml[j] : m;

  C sl[kLanes] = {};
  i = 0;
  for (; i + kLanes <= N; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      C e = exp_c<C>(x[i + j] - m);
      if constexpr (!Log)
        y[i + j] = e;
      sl[j] += e;
    }
  for (; i < N; ++i) {
    C e = exp_c<C>(x[i] - m);
    if constexpr (!Log)
      y[i] = e;
    sl[0] += e;
  }
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j)
      sl[j] += sl[j + w];

  if constexpr (Log) {
    C ls = std::log(sl[0]);
    for (int64_t k = 0; k < N; ++k)
      y[k] = (x[k] - m) - ls;
  } else {
    C inv = C(1) / sl[0];
    for (int64_t k = 0; k < N; ++k)
      y[k] *= inv;
  }
}

/// Softmax of nb columns (x, y point at [a, 0, b0]; rows B apart).
template <class C, bool Log>
void softmax_cols(const C *x, C *y, int64_t N, int64_t B, int64_t nb) {
  C m[kMaxTile], s[kMaxTile];
  std::fill(m, m + nb, -std::numeric_limits<C>::infinity());
  std::fill(s, s + nb, C(0));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < nb; ++b)
      m[b] = x[n * B + b] > m[b] ? x[n * B + b] : m[b];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < nb; ++b) {
      C e = exp_c<C>(x[n * B + b] - m[b]);
      if constexpr (!Log)
        y[n * B + b] = e;
      s[b] += e;
    }
  if constexpr (Log) {
    for (int64_t b = 0; b < nb; ++b)
      s[b] = std::log(s[b]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < nb; ++b)
        y[n * B + b] = (x[n * B + b] - m[b]) - s[b];
  } else {
    for (int64_t b = 0; b < nb; ++b)
      s[b] = C(1) / s[b];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t b = 0; b < nb; ++b)
        y[n * B + b] *= s[b];
  }
}

/// The parallel walk of a softmax-like kernel over [A, N, B] (N the
/// softmax dim): whole rows when B == 1 (`row(offset)`), else tiles of
/// columns (`cols(offset, width)`), both from the start of their block.
template <class Row, class Cols>
void softmax_blocks(int64_t A, int64_t N, int64_t B, Row row, Cols cols) {
  if (B == 1) {
    parallel_for(0, A, std::max<int64_t>(1, kGrainSize / N),
                 [&](int64_t a0, int64_t a1) {
                   for (int64_t a = a0; a < a1; ++a)
                     row(a * N);
                 });
    return;
  }
  int64_t tb = column_tile(A, B), nt = (B + tb - 1) / tb;
  parallel_for(0, A * nt, std::max<int64_t>(1, kGrainSize / (N * tb)),
               [&](int64_t u0, int64_t u1) {
                 for (int64_t u = u0; u < u1; ++u) {
                   int64_t a = u / nt, b0 = (u % nt) * tb;
                   cols(a * N * B + b0, std::min(tb, B - b0));
                 }
               });
}

template <class C, bool Log>
void softmax_kernel(const C *x, C *y, int64_t A, int64_t N, int64_t B) {
  softmax_blocks(
      A, N, B, [&](int64_t off) { softmax_row<C, Log>(x + off, y + off, N); },
      [&](int64_t off, int64_t w) {
        softmax_cols<C, Log>(x + off, y + off, N, B, w);
      });
}

template <bool Log>
Tensor softmax_op(const Tensor &self, int64_t dim,
                  std::optional<ScalarType> dtype, const char *op) {
  ScalarType out_t = meta::softmax_dtype(self.dtype(), dtype, op);
  Tensor x = dtype ? self.to(*dtype) : self;
  int64_t d = maybe_wrap_dim(dim, x.dim());
  // float16 / bfloat16 compute in float (Note [Reduced precision compute]).
  ScalarType compute = isReducedFloatingType(out_t) ? kFloat : out_t;
  Tensor out = empty(x.sizes(), TensorOptions(compute));
  if (x.numel() != 0) {
    Layout l = dim_layout(x.to(compute), d);
    if (compute == kFloat)
      softmax_kernel<float, Log>(l.data<float>(), out.data_ptr<float>(), l.A,
                                 l.N, l.B);
    else
      softmax_kernel<double, Log>(l.data<double>(), out.data_ptr<double>(), l.A,
                                  l.N, l.B);
  }
  return out.to(out_t);
}

// --- softmax / log_softmax backward ----------------------------------------

// Note [Softmax backward kernel]
// _softmax_backward_data(g, y, dim) = y * (g - sum(g * y)) and
// _log_softmax_backward_data(g, y, dim) = g - exp(y) * sum(g), the sums
// along dim: per row one vectorized pass for the sum (kLanes partials) and
// one that writes the result, over the same [A, N, B] layout as the forward
// (columns tiled when dim is not the last; non-contiguous inputs are made
// contiguous first). They compute in the output's compute type (float for
// float16 / bfloat16) and return input_dtype, as PyTorch's.

template <class C, bool Log>
void softmax_backward_row(const C *g, const C *y, C *out, int64_t N) {
  C sl[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= N; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      sl[j] += Log ? g[i + j] : g[i + j] * y[i + j];
  for (; i < N; ++i)
    sl[0] += Log ? g[i] : g[i] * y[i];
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j)
      sl[j] += sl[j + w];
  const C s = sl[0];
  for (int64_t k = 0; k < N; ++k) {
    if constexpr (Log)
      out[k] = g[k] - exp_c<C>(y[k]) * s;
    else
      out[k] = y[k] * (g[k] - s);
  }
}

/// nb columns (pointers at [a, 0, b0]; rows B apart).
template <class C, bool Log>
void softmax_backward_cols(const C *g, const C *y, C *out, int64_t N, int64_t B,
                           int64_t nb) {
  C s[kMaxTile];
  std::fill(s, s + nb, C(0));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < nb; ++b)
      s[b] += Log ? g[n * B + b] : g[n * B + b] * y[n * B + b];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < nb; ++b) {
      int64_t k = n * B + b;
      if constexpr (Log)
        out[k] = g[k] - exp_c<C>(y[k]) * s[b];
      else
        out[k] = y[k] * (g[k] - s[b]);
    }
}

template <class C, bool Log>
void softmax_backward_kernel(const C *g, const C *y, C *out, int64_t A,
                             int64_t N, int64_t B) {
  softmax_blocks(
      A, N, B,
      [&](int64_t off) {
        softmax_backward_row<C, Log>(g + off, y + off, out + off, N);
      },
      [&](int64_t off, int64_t w) {
        softmax_backward_cols<C, Log>(g + off, y + off, out + off, N, B, w);
      });
}

template <bool Log>
Tensor softmax_backward_op(const Tensor &grad_output, const Tensor &output,
                           int64_t dim, ScalarType input_dtype,
                           const char *op) {
  meta::check_softmax_backward(grad_output, output, input_dtype, op);
  int64_t d = maybe_wrap_dim(dim, output.dim());
  ScalarType out_t = output.dtype();
  ScalarType compute = isReducedFloatingType(out_t) ? kFloat : out_t;
  Tensor out = empty(output.sizes(), TensorOptions(compute));
  if (output.numel() != 0) {
    Layout lg = dim_layout(grad_output.to(compute), d);
    Layout ly = dim_layout(output.to(compute), d);
    if (compute == kFloat)
      softmax_backward_kernel<float, Log>(lg.data<float>(), ly.data<float>(),
                                          out.data_ptr<float>(), ly.A, ly.N,
                                          ly.B);
    else
      softmax_backward_kernel<double, Log>(lg.data<double>(), ly.data<double>(),
                                           out.data_ptr<double>(), ly.A, ly.N,
                                           ly.B);
  }
  return out.to(input_dtype);
}

} // namespace

Tensor softmax_backward_data(const Tensor &grad_output, const Tensor &output,
                             int64_t dim, ScalarType input_dtype) {
  return softmax_backward_op<false>(grad_output, output, dim, input_dtype,
                                    "_softmax_backward_data");
}

Tensor log_softmax_backward_data(const Tensor &grad_output,
                                 const Tensor &output, int64_t dim,
                                 ScalarType input_dtype) {
  return softmax_backward_op<true>(grad_output, output, dim, input_dtype,
                                   "_log_softmax_backward_data");
}

Tensor cumsum(const Tensor &self, int64_t dim,
              std::optional<ScalarType> dtype) {
  return scan_op<false>(self, dim, dtype, "cumsum");
}

Tensor cumprod(const Tensor &self, int64_t dim,
               std::optional<ScalarType> dtype) {
  return scan_op<true>(self, dim, dtype, "cumprod");
}

Tensor softmax(const Tensor &self, int64_t dim,
               std::optional<ScalarType> dtype) {
  return softmax_op<false>(self, dim, dtype, "softmax");
}

Tensor log_softmax(const Tensor &self, int64_t dim,
                   std::optional<ScalarType> dtype) {
  return softmax_op<true>(self, dim, dtype, "log_softmax");
}

} // namespace ember::native
