// Note [CUDA softmax kernels]
// softmax, log_softmax and their backward kernels on CUDA are one NVRTC
// kernel each, a block per row (softmax_source below): the dim moved last
// and the rows made contiguous, each block's threads stride over their
// row, fold their share in registers, and combine across the block (Note
// [Block reductions] in eager/cuda/Pointwise.cpp: a fixed order, so the
// result does not depend on timing). The forward makes three passes over the
// row (its max, the sum of exp(x - max), the outputs), the backward two (the
// sum of g * y, or of g; the outputs), re-reading a row of up to tens of KB
// from L1/L2. native_layer_norm's forward is the same kind of kernel (the mean
// of x - x[0] plus x[0], the mean of squared deviations, the outputs; each
// row's mean and rstd stored by thread 0), with the CPU kernel's arithmetic
// (Note [Native layer_norm] in eager/cpu/Normalization.cpp). Before, these
// ops ran their decompositions, five to ten kernels and as many passes over
// memory (Note [CUDA kernels from decompositions]).
//
// The arithmetic is the CPU kernels' (Note [Softmax kernel] and Note
// [Softmax backward kernel] in eager/cpu/ReduceScan.cpp): in the compute
// type (float for float16 / bfloat16), a NaN skipped by the max and then
// making the row's sum, hence every output, NaN; a row of -inf gives NaN.
// Sums accumulate in the compute type, as the CPU's lanes do; the order of
// the additions differs, so the results agree within rounding, not bit for
// bit. 0-dim and empty tensors take the CPU kernel on host copies (Note
// [CUDA kernels from decompositions] in eager/Decompose.h).
#include "eager/cuda/Softmax.h"

#include "eager/Decompose.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/Nvrtc.h"

#include <algorithm>

namespace ember {

namespace cuda {

namespace {

// EMBER_T: the stored dtype; EMBER_C: the compute type; EMBER_LOG: log_softmax
// (1) or softmax (0); EMBER_BACKWARD: the backward kernel (1).

const char kSoftmax[] = R"(
namespace ember {
using namespace ember::pw;
#if EMBER_BACKWARD
extern "C" __global__ void ember_softmax(const EMBER_C *g, const EMBER_T *y,
                                         EMBER_T *out, const long long rows,
                                         const long long n) {
  typedef EMBER_C C;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const EMBER_C *gr = g + r * n;
    const EMBER_T *yr = y + r * n;
    EMBER_T *o = out + r * n;
    C s = C(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
#if EMBER_LOG
      s += gr[j];
#else
      s += gr[j] * convert<C>(yr[j]);
#endif
    s = ember_block_reduce<0>(s, C(0));
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const C gv = gr[j], yv = convert<C>(yr[j]);
#if EMBER_LOG
      o[j] = convert<EMBER_T>(gv - exp(yv) * s);
#else
      o[j] = convert<EMBER_T>(yv * (gv - s));
#endif
    }
  }
}
#else
extern "C" __global__ void ember_softmax(const EMBER_T *x, EMBER_T *y,
                                         const long long rows,
                                         const long long n) {
  typedef EMBER_C C;
  const C minus_inf = -C(EMBER_INF);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const EMBER_T *xr = x + r * n;
    EMBER_T *yr = y + r * n;
    C m = minus_inf;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const C v = convert<C>(xr[j]);
      m = v > m ? v : m;
    }
    m = ember_block_reduce<1>(m, minus_inf);
    C s = C(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      s += exp(convert<C>(xr[j]) - m);
    s = ember_block_reduce<0>(s, C(0));
#if EMBER_LOG
    const C ls = log(s);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      yr[j] = convert<EMBER_T>((convert<C>(xr[j]) - m) - ls);
#else
    const C inv = C(1) / s;
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      yr[j] = convert<EMBER_T>(exp(convert<C>(xr[j]) - m) * inv);
#endif
  }
}
#endif
} // namespace ember
)";

// EMBER_T: the input's dtype; EMBER_C: the compute type (of the weight,
// bias, mean and rstd); EMBER_W / EMBER_B: a weight / a bias.
const char kLayerNorm[] = R"(
namespace ember {
using namespace ember::pw;
extern "C" __global__ void ember_layer_norm(
    const EMBER_T *x, const EMBER_C *w, const EMBER_C *b, EMBER_T *y,
    EMBER_C *mean, EMBER_C *rstd, const long long rows, const long long n,
    const double eps) {
  typedef EMBER_C C;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const EMBER_T *xr = x + r * n;
    EMBER_T *yr = y + r * n;
    // The mean of x - x[0], plus x[0]; then the mean of squared deviations.
    const C x0 = convert<C>(xr[0]);
    C s = C(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x)
      s += convert<C>(xr[j]) - x0;
    const C m = x0 + ember_block_reduce<0>(s, C(0)) / C(n);
    C v = C(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const C d = convert<C>(xr[j]) - m;
      v += d * d;
    }
    v = ember_block_reduce<0>(v, C(0)) / C(n);
    const C rs = C(1) / sqrt(v + C(eps));
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      C o = (convert<C>(xr[j]) - m) * rs;
#if EMBER_W
      o = o * w[j];
#endif
#if EMBER_B
      o = o + b[j];
#endif
      yr[j] = convert<EMBER_T>(o);
    }
  }
}
} // namespace ember
)";

// native_layer_norm_backward: EMBER_T the input's dtype, EMBER_G the
// gradient's (the input's, or the compute type), EMBER_C the compute type,
// EMBER_W a weight. ember_layer_norm_dx: a block per row, two sums over the
// row (of g * w and of g * w * xhat), then the row of dx. ember_layer_norm_dwb:
// the weight's and the bias's gradients as column sums (of g * xhat and of
// g) over a chunk of rows: a block takes 32 columns, its 8 warps every 8th
// row of the chunk (a warp reads 32 neighbouring columns of a row: 128
// coalesced bytes), combined in shared memory in a fixed order; the chunks'
// partial sums are then summed by the eager reduction.
const char kLayerNormBackward[] = R"(
namespace ember {
using namespace ember::pw;
// g * w at column j of the row (g alone without a weight).
#if EMBER_W
#define EMBER_GW(j) (convert<C>(gr[j]) * w[j])
#else
#define EMBER_GW(j) convert<C>(gr[j])
#endif
extern "C" __global__ void ember_layer_norm_dx(
    const EMBER_G *g, const EMBER_T *x, const EMBER_C *w, const EMBER_C *mean,
    const EMBER_C *rstd, EMBER_T *dx, const long long rows,
    const long long n) {
  typedef EMBER_C C;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const EMBER_G *gr = g + r * n;
    const EMBER_T *xr = x + r * n;
    const C m = mean[r], rs = rstd[r];
    C a = C(0), b = C(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const C gw = EMBER_GW(j);
      a += gw;
      b += gw * ((convert<C>(xr[j]) - m) * rs);
    }
    a = ember_block_reduce<0>(a, C(0)) / C(n);
    b = ember_block_reduce<0>(b, C(0)) / C(n);
    EMBER_T *o = dx + r * n;
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      const C gw = EMBER_GW(j);
      const C xh = (convert<C>(xr[j]) - m) * rs;
      o[j] = convert<EMBER_T>(rs * (gw - a - xh * b));
    }
  }
}

extern "C" __global__ void ember_layer_norm_dwb(
    const EMBER_G *g, const EMBER_T *x, const EMBER_C *mean,
    const EMBER_C *rstd, EMBER_C *part_w, EMBER_C *part_b,
    const long long rows, const long long n, const long long chunk) {
  typedef EMBER_C C;
  __shared__ C sw[8][32], sb[8][32];
  const long long tiles = (n + 31) / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (long long blk = blockIdx.x; blk < tiles * ((rows + chunk - 1) / chunk);
       blk += gridDim.x) {
    const long long col = (blk % tiles) * 32 + lane, part = blk / tiles;
    const long long r0 = part * chunk;
    const long long r1 = r0 + chunk < rows ? r0 + chunk : rows;
    C aw = C(0), ab = C(0);
    if (col < n)
      for (long long r = r0 + warp; r < r1; r += 8) {
        const C gv = convert<C>(g[r * n + col]);
        aw += gv * ((convert<C>(x[r * n + col]) - mean[r]) * rstd[r]);
        ab += gv;
      }
    sw[warp][lane] = aw;
    sb[warp][lane] = ab;
    __syncthreads();
    if (warp == 0 && col < n) {
      C tw = C(0), tb = C(0);
      for (int k = 0; k < 8; ++k) {
        tw += sw[k][lane];
        tb += sb[k][lane];
      }
      part_w[part * n + col] = tw;
      part_b[part * n + col] = tb;
    }
    __syncthreads();
  }
}
} // namespace ember
)";

/// `t` with dim `d` moved last, contiguous: rows of t.size(d).
Tensor rows_of(const Tensor &t, int64_t d) {
  return (d == t.dim() - 1 ? t : t.transpose(d, -1)).contiguous();
}

/// A result computed as rows (rows_of's layout for dim `d`) back in the
/// input's layout, contiguous.
Tensor unrows(const Tensor &rows, int64_t d) {
  return d == rows.dim() - 1 ? rows : rows.transpose(d, -1).contiguous();
}

/// The block for rows of `n`: a thread per 4 points, a multiple of 32,
/// from 32 to 1024.
unsigned block_for(int64_t n) {
  return unsigned(std::clamp<int64_t>((n / 4 + 31) / 32 * 32, 32, 1024));
}

/// Launches a kernel that takes a block per row (looping when there are more
/// rows than blocks) over `rows` rows of `n`.
void launch_per_row(int device, void *fn, int64_t rows, int64_t n,
                    void **args) {
  launch_kernel(device, fn, unsigned(detail::grid_for(device, rows, 1)),
                block_for(n), args);
}

void launch_rows(const SoftmaxKernel &k, ScalarType t, int device, int64_t rows,
                 int64_t n, void **args) {
  void *fn = detail::cached_kernel(device, k.signature(t), "ember_softmax",
                                   [&] { return softmax_source(k, t); });
  launch_per_row(device, fn, rows, n, args);
}

/// "#define NAME VALUE\n".
std::string define(const char *name, const std::string &value) {
  return std::string("#define ") + name + " " + value + "\n";
}
/// "#define NAME 0\n" or "#define NAME 1\n".
std::string define_flag(const char *name, bool value) {
  return define(name, value ? "1" : "0");
}

/// The NVRTC source of a kernel of this file: the device prelude, EMBER_T
/// (the stored dtype `t`) and EMBER_C (its compute type), the kernel's own
/// `defines`, the block reduction, then `body`.
std::string row_source(ScalarType t, const std::string &defines,
                       const char *body) {
  return prelude() + define("EMBER_T", detail::ctype(t)) +
         define("EMBER_C", detail::ctype(detail::compute_of(t))) + defines +
         block_reduce_source() + body;
}

} // namespace

std::string SoftmaxKernel::signature(ScalarType t) const {
  return std::string("softmax:") + (log ? "log:" : "") +
         (backward ? "backward:" : "") + toString(t);
}

std::string softmax_source(const SoftmaxKernel &k, ScalarType t) {
  const bool is_double = detail::compute_of(t) == kDouble;
  return row_source(
      t,
      define("EMBER_INF", is_double
                              ? "__longlong_as_double(0x7ff0000000000000LL)"
                              : "__int_as_float(0x7f800000)") +
          define_flag("EMBER_LOG", k.log) +
          define_flag("EMBER_BACKWARD", k.backward),
      kSoftmax);
}

std::string layer_norm_source(ScalarType t, bool weight, bool bias) {
  return row_source(
      t, define_flag("EMBER_W", weight) + define_flag("EMBER_B", bias),
      kLayerNorm);
}

std::tuple<Tensor, Tensor, Tensor>
layer_norm_rows(const Tensor &x, const Tensor &weight, const Tensor &bias,
                int64_t rows, int64_t n, double eps) {
  const ScalarType t = x.dtype(), c = detail::compute_of(t);
  Tensor in = x.contiguous();
  Tensor y = empty(in.sizes(), in.options());
  TensorOptions co = TensorOptions(c).device(x.device());
  Tensor mean = empty({rows}, co), rstd = empty({rows}, co);
  const bool w = weight.defined(), b = bias.defined();
  Tensor wc = w ? weight.to(c).contiguous() : Tensor();
  Tensor bc = b ? bias.to(c).contiguous() : Tensor();
  const int device = x.device().index();
  void *fn = detail::cached_kernel(
      device,
      std::string("layer_norm:") + (w ? "w:" : "") + (b ? "b:" : "") +
          toString(t),
      "ember_layer_norm", [&] { return layer_norm_source(t, w, b); });
  const void *xp = in.data_ptr(), *wp = w ? wc.data_ptr() : nullptr,
             *bp = b ? bc.data_ptr() : nullptr;
  void *yp = y.data_ptr(), *mp = mean.data_ptr(), *rp = rstd.data_ptr();
  void *args[] = {&xp,
                  &wp,
                  &bp,
                  &yp,
                  &mp,
                  &rp,
                  const_cast<int64_t *>(&rows),
                  const_cast<int64_t *>(&n),
                  const_cast<double *>(&eps)};
  launch_per_row(device, fn, rows, n, args);
  return {y, mean, rstd};
}

std::string layer_norm_backward_source(ScalarType t, ScalarType g,
                                       bool weight) {
  return row_source(
      t, define("EMBER_G", detail::ctype(g)) + define_flag("EMBER_W", weight),
      kLayerNormBackward);
}

int64_t layer_norm_backward_chunk(int64_t rows, int64_t n) {
  // About 1024 blocks over the column tiles and chunks (8 per
  // multiprocessor of an H100), each chunk at least 64 rows (8 per warp).
  // From the shape alone, so that the sums' order, hence their rounding, is
  // the same on every GPU.
  const int64_t tiles = (n + 31) / 32;
  const int64_t want = 1024;
  const int64_t parts = std::clamp<int64_t>((want + tiles - 1) / tiles, 1,
                                            std::max<int64_t>(rows / 64, 1));
  return (rows + parts - 1) / parts;
}

std::tuple<Tensor, Tensor, Tensor>
layer_norm_backward_rows(const Tensor &grad, const Tensor &x,
                         const Tensor &mean, const Tensor &rstd,
                         const Tensor &weight, int64_t rows, int64_t n,
                         bool want_dx, bool want_dwb) {
  const ScalarType t = x.dtype(), c = detail::compute_of(t);
  Tensor xs = x.contiguous();
  Tensor g = (grad.dtype() == t ? grad : grad.to(c)).contiguous();
  const TensorOptions co = TensorOptions(c).device(x.device());
  Tensor m = mean.to(c).contiguous(), rs = rstd.to(c).contiguous();
  const bool w = weight.defined();
  Tensor wc = w && want_dx ? weight.to(c).contiguous() : Tensor();
  const int device = x.device().index();
  const std::string sig = std::string("layer_norm_backward:") +
                          (w ? "w:" : "") + toString(t) + ":" +
                          toString(g.dtype());
  auto source = [&] { return layer_norm_backward_source(t, g.dtype(), w); };
  const void *gp = g.data_ptr(), *xp = xs.data_ptr(), *mp = m.data_ptr(),
             *rp = rs.data_ptr(), *wp = wc.defined() ? wc.data_ptr() : nullptr;
  Tensor dx, dw, db;
  if (want_dx) {
    dx = empty(xs.sizes(), xs.options());
    void *dp = dx.data_ptr();
    void *args[] = {&gp,
                    &xp,
                    &wp,
                    &mp,
                    &rp,
                    &dp,
                    const_cast<int64_t *>(&rows),
                    const_cast<int64_t *>(&n)};
    void *fn = detail::cached_kernel(device, sig + ":dx", "ember_layer_norm_dx",
                                     source);
    launch_per_row(device, fn, rows, n, args);
  }
  if (want_dwb) {
    int64_t chunk = layer_norm_backward_chunk(rows, n);
    const int64_t parts = (rows + chunk - 1) / chunk;
    Tensor pw = empty({parts, n}, co), pb = empty({parts, n}, co);
    void *pwp = pw.data_ptr(), *pbp = pb.data_ptr();
    void *args[] = {&gp,
                    &xp,
                    &mp,
                    &rp,
                    &pwp,
                    &pbp,
                    const_cast<int64_t *>(&rows),
                    const_cast<int64_t *>(&n),
                    &chunk};
    void *fn = detail::cached_kernel(device, sig + ":dwb",
                                     "ember_layer_norm_dwb", source);
    const int64_t blocks = parts * ((n + 31) / 32);
    launch_kernel(device, fn,
                  unsigned(std::min<int64_t>(blocks, int64_t(1) << 30)), 256,
                  args);
    dw = parts == 1 ? pw.view({n}) : pw.sum({0});
    db = parts == 1 ? pb.view({n}) : pb.sum({0});
  }
  return {dx, dw, db};
}

Tensor softmax_rows(const Tensor &x, int64_t d, bool log) {
  Tensor in = rows_of(x, d);
  Tensor out = empty(in.sizes(), in.options());
  const int64_t n = in.size(-1), rows = in.numel() / n;
  const void *xp = in.data_ptr();
  void *yp = out.data_ptr();
  void *args[] = {&xp, &yp, const_cast<int64_t *>(&rows),
                  const_cast<int64_t *>(&n)};
  launch_rows({log, false}, in.dtype(), in.device().index(), rows, n, args);
  return unrows(out, d);
}

Tensor softmax_backward_rows(const Tensor &grad, const Tensor &output,
                             int64_t d, bool log) {
  Tensor g = rows_of(grad, d), y = rows_of(output, d);
  Tensor out = empty(y.sizes(), y.options());
  const int64_t n = y.size(-1), rows = y.numel() / n;
  const void *gp = g.data_ptr(), *yp = y.data_ptr();
  void *op = out.data_ptr();
  void *args[] = {&gp, &yp, &op, const_cast<int64_t *>(&rows),
                  const_cast<int64_t *>(&n)};
  launch_rows({log, true}, y.dtype(), y.device().index(), rows, n, args);
  return unrows(out, d);
}

} // namespace cuda

namespace native {

namespace {

namespace dd = ember::detail::decomposed;

template <bool Log>
Tensor softmax_cuda_op(const Tensor &self, int64_t dim,
                       std::optional<ScalarType> dtype, const char *op) {
  ScalarType out_t = meta::softmax_dtype(self.dtype(), dtype, op);
  if (self.dim() == 0 || self.numel() == 0)
    return dd::back(Log ? native::log_softmax(dd::host(self), dim, dtype)
                        : native::softmax(dd::host(self), dim, dtype),
                    self.device());
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  return cuda::softmax_rows(self.to(out_t), d, Log);
}

template <bool Log>
Tensor softmax_backward_cuda_op(const Tensor &grad_output, const Tensor &output,
                                int64_t dim, ScalarType input_dtype,
                                const char *op) {
  meta::check_softmax_backward(grad_output, output, input_dtype, op);
  if (output.dim() == 0 || output.numel() == 0)
    return dd::back(
        Log ? native::log_softmax_backward_data(
                  dd::host(grad_output), dd::host(output), dim, input_dtype)
            : native::softmax_backward_data(dd::host(grad_output),
                                            dd::host(output), dim, input_dtype),
        output.device());
  const int64_t d = maybe_wrap_dim(dim, output.dim());
  // (the gradient read in the compute type, as the CPU kernel reads it)
  return cuda::softmax_backward_rows(
             grad_output.to(cuda::detail::compute_of(output.dtype())), output,
             d, Log)
      .to(input_dtype);
}

} // namespace

std::tuple<Tensor, Tensor, Tensor>
native_layer_norm_cuda(const Tensor &input, IntArrayRef normalized_shape,
                       const std::optional<Tensor> &weight,
                       const std::optional<Tensor> &bias, double eps) {
  meta::LayerNormShape s =
      meta::layer_norm_shape(input, normalized_shape, weight, bias);
  if (s.M == 0 || s.N == 0) // (no rows, or rows of nothing: the CPU's)
    return dd::back(native::native_layer_norm(dd::host(input), normalized_shape,
                                              dd::host(weight), dd::host(bias),
                                              eps),
                    input.device());
  auto [y, mean, rstd] =
      cuda::layer_norm_rows(input, weight ? *weight : Tensor(),
                            bias ? *bias : Tensor(), s.M, s.N, eps);
  return {y, mean.view(IntArrayRef(s.stat_sizes)),
          rstd.view(IntArrayRef(s.stat_sizes))};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cuda(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask) {
  meta::LayerNormShape s = meta::layer_norm_backward_shape(
      grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask);
  if (s.M == 0 || s.N == 0) // (no rows, or rows of nothing)
    return native_layer_norm_backward_composite(grad_out, input,
                                                normalized_shape, mean, rstd,
                                                weight, bias, output_mask);
  const bool want_dx = output_mask[0] != 0, want_dw = output_mask[1] != 0,
             want_db = output_mask[2] != 0;
  const bool has_w = weight && weight->defined(),
             has_b = bias && bias->defined();
  auto [dx, dw, db] = cuda::layer_norm_backward_rows(
      grad_out, input, mean, rstd, has_w ? *weight : Tensor(), s.M, s.N,
      want_dx, want_dw || want_db);
  // (the CPU kernel's dtypes: the input's, the weight's and the bias's)
  return {
      want_dx ? dx.view(input.sizes()) : Tensor(),
      want_dw ? dw.view(normalized_shape)
                    .to(has_w ? weight->dtype() : input.dtype())
              : Tensor(),
      want_db
          ? db.view(normalized_shape).to(has_b ? bias->dtype() : input.dtype())
          : Tensor()};
}

Tensor softmax_cuda(const Tensor &self, int64_t dim,
                    std::optional<ScalarType> dtype) {
  return softmax_cuda_op<false>(self, dim, dtype, "softmax");
}

Tensor log_softmax_cuda(const Tensor &self, int64_t dim,
                        std::optional<ScalarType> dtype) {
  return softmax_cuda_op<true>(self, dim, dtype, "log_softmax");
}

Tensor softmax_backward_data_cuda(const Tensor &grad_output,
                                  const Tensor &output, int64_t dim,
                                  ScalarType input_dtype) {
  return softmax_backward_cuda_op<false>(grad_output, output, dim, input_dtype,
                                         "_softmax_backward_data");
}

Tensor log_softmax_backward_data_cuda(const Tensor &grad_output,
                                      const Tensor &output, int64_t dim,
                                      ScalarType input_dtype) {
  return softmax_backward_cuda_op<true>(grad_output, output, dim, input_dtype,
                                        "_log_softmax_backward_data");
}

} // namespace native

} // namespace ember
