// native_layer_norm and its backward: one kernel each, parallel over rows.
#include "eager/cpu/ReduceUtils.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ember::native {

using namespace reduce;

// Note [Native layer_norm]
// layer_norm over the trailing N elements of each of M rows, as PyTorch's
// native_layer_norm / native_layer_norm_backward:
//  - forward, per row (in cache after the first read): the mean (summing
//    x - x[0], so that the sums are at the scale of the spread), then the
//    variance as the mean of squared deviations from it (two passes: no
//    cancellation when |mean| >> std, unlike E[x^2] - mean^2), rstd =
//    1/sqrt(var + eps), then y = (x - mean) * rstd * w + b. The sums keep
//    kLanes partial accumulators (vectorized, Note [Deterministic
//    reductions]). mean and rstd are returned and saved for backward.
//  - backward, per row: with gw = g * w and xhat = (x - mean) * rstd,
//    dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)): one pass for the
//    two row sums, then, over the row still in cache, dx and the additions
//    of g * xhat and g into this chunk's partial dweight and dbias. Rows are
//    split into a number of chunks fixed by the shape (not by the thread
//    count), and the partials are summed in chunk order, so the gradients are
//    deterministic.
// float16 / bfloat16 compute in float; mean and rstd are float then (Note
// [Reduced precision compute]).
//
// The compiler: ops.yaml gives native_layer_norm a decomposition
// (eager/ops/Decompositions.cpp: mean, sub, mul, mean, add, rsqrt, ...) that
// ember-decompose inlines, so compiled layer_norm still fuses into one
// generated kernel; its unused mean and rstd results are dead code there.
// Under create_graph the backward is the same formula in ember ops
// (autograd::details::layer_norm_backward), since this kernel has no
// derivative of its own.

namespace {

/// Sum of f(x[i]) over a row, in kLanes partial accumulators.
template <class C, class F>
inline C row_sum(const C *x, int64_t N, const F &f) {
  C acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= N; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      acc[j] += f(x[i + j]);
  for (; i < N; ++i)
    acc[0] += f(x[i]);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int j = 0; j < w; ++j)
      acc[j] += acc[j + w];
  return acc[0];
}

template <class C, bool W, bool B>
void layer_norm_kernel(const C *x, const C *w, const C *b, C *y, C *mean,
                       C *rstd, int64_t M, int64_t N, double eps) {
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(N, 1));
  parallel_for(0, M, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const C *xr = x + r * N;
      C *yr = y + r * N;
      // The mean of x - x[0], plus x[0]: the partial sums stay at the scale
      // of the deviations, not of the mean, so a large mean costs no bits.
      const C x0 = xr[0];
      C m = x0 + row_sum(xr, N, [x0](C v) { return v - x0; }) / C(N);
      if (!std::isfinite(m)) {
        // The deviations from x[0] overflowed (values near the type's
        // limit, of both signs: [2e38, -2e38] gave a NaN mean and NaN
        // outputs, found by a probe): the mean in double. The variance
        // then overflows, rstd is 0 and y is 0, as PyTorch's float kernel
        // and the compiled kernel give; an inf or NaN input keeps its
        // non-finite mean.
        double sum = 0;
        for (int64_t j = 0; j < N; ++j)
          sum += double(xr[j]);
        m = C(sum / double(N));
      }
      C var = row_sum(xr, N,
                      [m](C v) {
                        C d = v - m;
                        return d * d;
                      }) /
              C(N);
      C rs = C(1) / std::sqrt(var + C(eps));
      mean[r] = m;
      rstd[r] = rs;
      for (int64_t j = 0; j < N; ++j) {
        C v = (xr[j] - m) * rs;
        if constexpr (W)
          v = v * w[j];
        if constexpr (B)
          v = v + b[j];
        yr[j] = v;
      }
    }
  });
}

/// The backward of rows [r0, r1): dx (when DX) and, when DWB, g * xhat and
/// g added into pw / pb.
template <class C, bool W, bool DX, bool DWB>
void layer_norm_backward_rows(const C *g, const C *x, const C *mean,
                              const C *rstd, const C *w, C *dx, C *pw, C *pb,
                              int64_t r0, int64_t r1, int64_t N) {
  for (int64_t r = r0; r < r1; ++r) {
    const C *gr = g + r * N, *xr = x + r * N;
    const C m = mean[r], rs = rstd[r];
    C a = 0, q = 0, c = 0;
    if constexpr (DX) {
      // s1 = sum(gw), s2 = sum(gw * (x - mean)).
      C s1l[kLanes] = {}, s2l[kLanes] = {};
      int64_t i = 0;
      auto gw = [&](int64_t k) {
        if constexpr (W)
          return gr[k] * w[k];
        else
          return gr[k];
      };
      for (; i + kLanes <= N; i += kLanes)
        for (int j = 0; j < kLanes; ++j) {
          C v = gw(i + j);
          s1l[j] += v;
          s2l[j] += v * (xr[i + j] - m);
        }
      for (; i < N; ++i) {
        C v = gw(i);
        s1l[0] += v;
        s2l[0] += v * (xr[i] - m);
      }
      for (int h = kLanes / 2; h > 0; h /= 2)
        for (int j = 0; j < h; ++j) {
          s1l[j] += s1l[j + h];
          s2l[j] += s2l[j + h];
        }
      // dx = rstd * gw - rstd * s1 / N - (x - mean) * rstd^3 * s2 / N
      //    = a * gw + q * x + c.
      C inv_n = C(1) / C(N);
      a = rs;
      q = -rs * rs * rs * s2l[0] * inv_n;
      c = -q * m - rs * s1l[0] * inv_n;
    }
    // Two loops over the row (in cache): GCC leaves a single loop that
    // writes dx, pw and pb scalar.
    if constexpr (DX) {
      C *dxr = dx + r * N;
      for (int64_t j = 0; j < N; ++j) {
        C gwv = gr[j];
        if constexpr (W)
          gwv = gwv * w[j];
        dxr[j] = a * gwv + q * xr[j] + c;
      }
    }
    if constexpr (DWB) {
      for (int64_t j = 0; j < N; ++j)
        pw[j] += gr[j] * ((xr[j] - m) * rs);
      for (int64_t j = 0; j < N; ++j)
        pb[j] += gr[j];
    }
  }
}

template <class C, bool W>
void layer_norm_backward_kernel(const C *g, const C *x, const C *mean,
                                const C *rstd, const C *w, C *dx, C *dw, C *db,
                                int64_t M, int64_t N) {
  if (!dw && !db) {
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(N, 1));
    parallel_for(0, M, grain, [&](int64_t r0, int64_t r1) {
      layer_norm_backward_rows<C, W, true, false>(g, x, mean, rstd, w, dx,
                                                  nullptr, nullptr, r0, r1, N);
    });
    return;
  }
  // Partial sums of dweight / dbias per chunk of rows: at most 64 chunks
  // and 2^22 partial elements, at least kGrainSize elements a chunk; all
  // from the shape alone.
  int64_t nchunks =
      std::min<int64_t>({M, 64, std::max<int64_t>(1, (int64_t(1) << 22) / N),
                         std::max<int64_t>(1, M * N / kGrainSize)});
  nchunks = std::max<int64_t>(nchunks, 1);
  std::vector<C> pw(size_t(nchunks * N), C(0)), pb(size_t(nchunks * N), C(0));
  parallel_for(0, nchunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t r0 = c * M / nchunks, r1 = (c + 1) * M / nchunks;
      C *cw = pw.data() + c * N, *cb = pb.data() + c * N;
      if (dx)
        layer_norm_backward_rows<C, W, true, true>(g, x, mean, rstd, w, dx, cw,
                                                   cb, r0, r1, N);
      else
        layer_norm_backward_rows<C, W, false, true>(g, x, mean, rstd, w, dx, cw,
                                                    cb, r0, r1, N);
    }
  });
  // Sum the partials in chunk order, chunk by chunk (contiguous rows of the
  // partial buffers, not a strided walk down each column).
  for (int64_t c = 1; c < nchunks; ++c) {
    C *w0 = pw.data(), *b0 = pb.data();
    const C *wc = pw.data() + c * N, *bc = pb.data() + c * N;
    for (int64_t j = 0; j < N; ++j) {
      w0[j] += wc[j];
      b0[j] += bc[j];
    }
  }
  if (dw)
    std::copy(pw.begin(), pw.begin() + N, dw);
  if (db)
    std::copy(pb.begin(), pb.begin() + N, db);
}

/// t converted to dtype c and made contiguous (no copy when it already is).
Tensor as_compute(const Tensor &t, ScalarType c) {
  return t.to(c).contiguous();
}

bool given(const std::optional<Tensor> &t) { return t && t->defined(); }

} // namespace

std::tuple<Tensor, Tensor, Tensor>
native_layer_norm(const Tensor &input, IntArrayRef normalized_shape,
                  const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps) {
  meta::LayerNormShape s =
      meta::layer_norm_shape(input, normalized_shape, weight, bias);
  ScalarType c = s.compute;
  Tensor x = as_compute(input, c);
  Tensor w = given(weight) ? as_compute(*weight, c) : Tensor();
  Tensor b = given(bias) ? as_compute(*bias, c) : Tensor();
  Tensor y = empty(input.sizes(), TensorOptions(c));
  Tensor mean = empty(IntArrayRef(s.stat_sizes), TensorOptions(c));
  Tensor rstd = empty(IntArrayRef(s.stat_sizes), TensorOptions(c));
  if (s.M > 0 && s.N == 0) {
    // Rows of nothing: the output is empty; the mean of no values is NaN,
    // and so is 1/sqrt(NaN + eps) (as PyTorch).
    mean.fill_(std::numeric_limits<double>::quiet_NaN());
    rstd.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (s.M > 0) {
    auto run = [&]<class C>() {
      const C *xp = x.data_ptr<C>();
      const C *wp = w.defined() ? w.data_ptr<C>() : nullptr;
      const C *bp = b.defined() ? b.data_ptr<C>() : nullptr;
      C *yp = y.data_ptr<C>(), *mp = mean.data_ptr<C>(),
        *rp = rstd.data_ptr<C>();
      if (wp && bp)
        layer_norm_kernel<C, true, true>(xp, wp, bp, yp, mp, rp, s.M, s.N, eps);
      else if (wp)
        layer_norm_kernel<C, true, false>(xp, wp, bp, yp, mp, rp, s.M, s.N,
                                          eps);
      else if (bp)
        layer_norm_kernel<C, false, true>(xp, wp, bp, yp, mp, rp, s.M, s.N,
                                          eps);
      else
        layer_norm_kernel<C, false, false>(xp, wp, bp, yp, mp, rp, s.M, s.N,
                                           eps);
    };
    if (c == kDouble)
      run.template operator()<double>();
    else
      run.template operator()<float>();
  }
  return {y.to(input.dtype()), mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask) {
  meta::LayerNormShape s = meta::layer_norm_backward_shape(
      grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask);
  ScalarType c = s.compute;
  const bool want_dx = output_mask[0] != 0, want_dw = output_mask[1] != 0,
             want_db = output_mask[2] != 0;
  Tensor dx, dw, db;
  if (want_dx)
    dx = empty(input.sizes(), TensorOptions(c));
  if (want_dw)
    dw = empty(normalized_shape, TensorOptions(c));
  if (want_db)
    db = empty(normalized_shape, TensorOptions(c));
  if (s.M == 0 || s.N == 0) {
    // No rows: the parameter gradients are sums of nothing.
    if (want_dw)
      dw.zero_();
    if (want_db)
      db.zero_();
  } else if (want_dx || want_dw || want_db) {
    Tensor g = as_compute(grad_out, c), x = as_compute(input, c);
    Tensor m = as_compute(mean, c), r = as_compute(rstd, c);
    Tensor w = given(weight) ? as_compute(*weight, c) : Tensor();
    auto run = [&]<class C>() {
      const C *wp = w.defined() ? w.data_ptr<C>() : nullptr;
      C *dxp = want_dx ? dx.data_ptr<C>() : nullptr;
      C *dwp = want_dw ? dw.data_ptr<C>() : nullptr;
      C *dbp = want_db ? db.data_ptr<C>() : nullptr;
      if (wp)
        layer_norm_backward_kernel<C, true>(g.data_ptr<C>(), x.data_ptr<C>(),
                                            m.data_ptr<C>(), r.data_ptr<C>(),
                                            wp, dxp, dwp, dbp, s.M, s.N);
      else
        layer_norm_backward_kernel<C, false>(g.data_ptr<C>(), x.data_ptr<C>(),
                                             m.data_ptr<C>(), r.data_ptr<C>(),
                                             wp, dxp, dwp, dbp, s.M, s.N);
    };
    if (c == kDouble)
      run.template operator()<double>();
    else
      run.template operator()<float>();
  }
  if (want_dx)
    dx = dx.to(input.dtype());
  if (want_dw)
    dw = dw.to(given(weight) ? weight->dtype() : input.dtype());
  if (want_db)
    db = db.to(given(bias) ? bias->dtype() : input.dtype());
  return {dx, dw, db};
}

} // namespace ember::native
