// _im2col and _col2im: the sliding-window primitives (PyTorch's F.unfold and
// F.fold) on which nn::functional builds convolution and pooling.
#include "eager/cpu/Im2col.h"

#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace ember::native {

namespace {

// Note [im2col layout]
// For input (N, C, H, W), kernel (kh, kw), dilation (dh, dw), padding
// (ph, pw) and stride (sh, sw), the number of sliding blocks is L = OH * OW
// with OH = (H + 2 ph - dh (kh - 1) - 1) / sh + 1 (likewise OW). Column
// row r = (c * kh + i) * kw + j, column l = oh * OW + ow hold
//   input[n, c, oh sh - ph + i dh, ow sw - pw + j dw]
// or pad_value where that position falls in the padding. This is exactly
// F.unfold's layout, so conv2d is a matmul of weight.view(C_out, -1) with the
// columns, and pooling is a reduction over the kh * kw rows of each channel.
// _col2im is the adjoint: it sums every column entry back into the input
// position it was read from (padding positions are dropped), which is
// F.fold. Each is therefore the other's derivative.
using meta::Window;

/// [lo, hi): the output positions o whose input position o*s - p + off lies
/// in [0, size).
std::pair<int64_t, int64_t> validRange(int64_t n, int64_t size, int64_t s,
                                       int64_t p, int64_t off) {
  // o*s + (off - p) >= 0  <=>  o >= ceil((p - off) / s)
  int64_t base = off - p;
  int64_t lo = base >= 0 ? 0 : (-base + s - 1) / s;
  // o*s + base <= size - 1  <=>  o <= floor((size - 1 - base) / s)
  int64_t top = size - 1 - base;
  int64_t hi = top < 0 ? 0 : top / s + 1;
  lo = std::min(lo, n);
  hi = std::clamp(hi, lo, n);
  return {lo, hi};
}

/// pad_value as T; integer dtypes saturate (so -inf is the lowest value,
/// which max pooling relies on).
template <class T> T padValueAs(const Scalar &v) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (v.isFloatingPoint()) {
      double d = v.toDouble(); // not NaN: meta::im2col_sizes checked
      if (d <= double(std::numeric_limits<T>::lowest()))
        return std::numeric_limits<T>::lowest();
      if (d >= double(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
      return T(d);
    }
    int64_t i = v.toLong();
    return T(std::clamp<int64_t>(i, int64_t(std::numeric_limits<T>::lowest()),
                                 int64_t(std::numeric_limits<T>::max())));
  } else {
    return v.to<T>();
  }
}

} // namespace

Scalar im2col_pad_value(const Scalar &pad_value, ScalarType t) {
  Scalar out;
  dispatch_dtype(t, "_im2col", [&]<class T>() {
    const T v = padValueAs<T>(pad_value);
    if constexpr (std::is_same_v<T, bool>)
      out = Scalar(v);
    else if constexpr (std::is_integral_v<T>)
      out = Scalar(int64_t(v));
    else
      out = Scalar(double(v));
  });
  return out;
}

Tensor im2col(const Tensor &self, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride,
              const Scalar &pad_value) {
  DimVector outSize = meta::im2col_sizes(self, kernel_size, dilation, padding,
                                         stride, pad_value);
  Window w = meta::check_window(kernel_size, dilation, padding, stride);
  bool batched = self.dim() == 4;
  int64_t N = batched ? self.size(0) : 1;
  int64_t C = self.size(-3), H = self.size(-2), W = self.size(-1);
  int64_t OH = meta::sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = meta::sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  int64_t K = w.kh * w.kw, L = OH * OW;
  Tensor out = empty(outSize, self.options());
  if (out.numel() == 0)
    return out;
  Tensor in = self.contiguous();
  dispatch_dtype(self.dtype(), "_im2col", [&]<class T>() {
    const T fill = padValueAs<T>(pad_value);
    const T *src = in.data_ptr<T>();
    T *dst = out.data_ptr<T>();
    int64_t planes = N * C;
    int64_t grain =
        std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, K * L));
    parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const T *plane = src + p * H * W;
        T *cols = dst + p * K * L;
        for (int64_t i = 0; i < w.kh; ++i) {
          auto [ohLo, ohHi] = validRange(OH, H, w.sh, w.ph, i * w.dh);
          for (int64_t j = 0; j < w.kw; ++j) {
            auto [owLo, owHi] = validRange(OW, W, w.sw, w.pw, j * w.dw);
            T *row = cols + (i * w.kw + j) * L;
            for (int64_t oh = 0; oh < OH; ++oh) {
              T *o = row + oh * OW;
              if (oh < ohLo || oh >= ohHi || owLo >= owHi) {
                std::fill(o, o + OW, fill);
                continue;
              }
              const T *irow = plane + (oh * w.sh - w.ph + i * w.dh) * W;
              int64_t x0 = j * w.dw - w.pw;
              std::fill(o, o + owLo, fill);
              if (w.sw == 1) {
                const T *s = irow + x0;
                for (int64_t ow = owLo; ow < owHi; ++ow)
                  o[ow] = s[ow];
              } else {
                for (int64_t ow = owLo; ow < owHi; ++ow)
                  o[ow] = irow[ow * w.sw + x0];
              }
              std::fill(o + owHi, o + OW, fill);
            }
          }
        }
      }
    });
  });
  return out;
}

Tensor col2im(const Tensor &self, IntArrayRef output_size,
              IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  DimVector outSize = meta::col2im_sizes(self, output_size, kernel_size,
                                         dilation, padding, stride);
  Window w = meta::check_window(kernel_size, dilation, padding, stride);
  int64_t H = output_size[0], W = output_size[1];
  bool batched = self.dim() == 3;
  int64_t N = batched ? self.size(0) : 1;
  int64_t K = w.kh * w.kw;
  int64_t L = self.size(-1);
  int64_t OH = meta::sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = meta::sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  int64_t C = self.size(-2) / K;
  Tensor out = empty(outSize, self.options());
  if (out.numel() == 0)
    return out;
  Tensor in = self.contiguous();
  dispatch_dtype(self.dtype(), "_col2im", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using Acc = compute_t<T>;
      const T *src = in.data_ptr<T>();
      T *dst = out.data_ptr<T>();
      int64_t grain =
          std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, K * L));
      parallel_for(0, N * C, grain, [&](int64_t b, int64_t e) {
        // One plane accumulates in the compute type (float for Half and
        // BFloat16), in a fixed order: results do not depend on threads.
        std::vector<Acc> acc(size_t(H * W));
        for (int64_t p = b; p < e; ++p) {
          std::fill(acc.begin(), acc.end(), Acc(0));
          const T *cols = src + p * K * L;
          for (int64_t i = 0; i < w.kh; ++i) {
            auto [ohLo, ohHi] = validRange(OH, H, w.sh, w.ph, i * w.dh);
            for (int64_t j = 0; j < w.kw; ++j) {
              auto [owLo, owHi] = validRange(OW, W, w.sw, w.pw, j * w.dw);
              const T *row = cols + (i * w.kw + j) * L;
              int64_t x0 = j * w.dw - w.pw;
              for (int64_t oh = ohLo; oh < ohHi; ++oh) {
                const T *c = row + oh * OW;
                Acc *arow = acc.data() + (oh * w.sh - w.ph + i * w.dh) * W;
                for (int64_t ow = owLo; ow < owHi; ++ow)
                  arow[ow * w.sw + x0] += Acc(c[ow]);
              }
            }
          }
          T *o = dst + p * H * W;
          for (int64_t k = 0; k < H * W; ++k)
            o[k] = T(acc[size_t(k)]);
        }
      });
    }
  });
  return out;
}

} // namespace ember::native
