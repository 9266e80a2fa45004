// _im2col and _col2im: the sliding-window primitives (PyTorch's F.unfold and
// F.fold) on which nn::functional builds convolution and pooling.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/generated/NativeFunctions.h"
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
struct Window {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

void checkPair(IntArrayRef v, const char *name) {
  EMBER_CHECK_VALUE(v.size() == 2, "It is expected ", name,
                    " equals to 2, but got size ", v.size());
}

Window checkWindow(IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride) {
  checkPair(kernel_size, "kernel_size");
  checkPair(dilation, "dilation");
  checkPair(padding, "padding");
  checkPair(stride, "stride");
  Window w{kernel_size[0], kernel_size[1], dilation[0], dilation[1],
           padding[0],     padding[1],     stride[0],   stride[1]};
  EMBER_CHECK_VALUE(w.kh > 0 && w.kw > 0,
                    "It is expected kernel_size to be greater than zero, but "
                    "got kernel_height: ",
                    w.kh, " kernel_width: ", w.kw);
  EMBER_CHECK_VALUE(w.dh > 0 && w.dw > 0,
                    "It is expected dilation to be greater than zero, but "
                    "got dilation_height: ",
                    w.dh, " dilation_width: ", w.dw);
  EMBER_CHECK_VALUE(w.ph >= 0 && w.pw >= 0,
                    "It is expected padding to be non-negative, but got "
                    "pad_height: ",
                    w.ph, " pad_width: ", w.pw);
  EMBER_CHECK_VALUE(w.sh > 0 && w.sw > 0,
                    "It is expected stride to be greater than zero, but got "
                    "stride_height: ",
                    w.sh, " stride_width: ", w.sw);
  return w;
}

/// Sliding blocks along one dim (may be < 1 for too small inputs).
int64_t blocks(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  int64_t span = d * (k - 1) + 1;
  int64_t padded = size + 2 * p;
  if (padded < span)
    return 0;
  return (padded - span) / s + 1;
}

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
      double d = v.toDouble();
      EMBER_CHECK_VALUE(!std::isnan(d),
                        "_im2col: pad_value must not be NaN for an integer "
                        "input");
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

std::string pairStr(IntArrayRef v) {
  return detail::str("(", v[0], ", ", v[1], ")");
}

} // namespace

Tensor im2col(const Tensor &self, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride,
              const Scalar &pad_value) {
  Window w = checkWindow(kernel_size, dilation, padding, stride);
  int64_t nd = self.dim();
  bool ok = nd == 3 || nd == 4;
  for (int64_t d = nd - 3; ok && d < nd; ++d)
    ok = self.size(d) != 0;
  EMBER_CHECK_VALUE(ok,
                    "Expected 3D or 4D (batch mode) tensor with possibly 0 "
                    "batch size and other non-zero dimensions for input, but "
                    "got: ",
                    self.sizes());
  bool batched = nd == 4;
  int64_t N = batched ? self.size(0) : 1;
  int64_t C = self.size(-3), H = self.size(-2), W = self.size(-1);
  int64_t OH = blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = blocks(W, w.kw, w.dw, w.pw, w.sw);
  EMBER_CHECK_VALUE(
      OH >= 1 && OW >= 1, "Given input with spatial size (", H, ", ", W,
      "), kernel_size=", pairStr(kernel_size), ", dilation=", pairStr(dilation),
      ", padding=", pairStr(padding),
      ", calculated shape of the array of sliding blocks as (", OH, ", ", OW,
      "), but its components must be at least one.");
  int64_t K = w.kh * w.kw, L = OH * OW;
  DimVector outSize;
  if (batched)
    outSize.push_back(N);
  outSize.push_back(C * K);
  outSize.push_back(L);
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
  EMBER_CHECK_VALUE(output_size.size() == 2,
                    "It is expected output_size equals to 2, but got size ",
                    output_size.size());
  Window w = checkWindow(kernel_size, dilation, padding, stride);
  int64_t H = output_size[0], W = output_size[1];
  EMBER_CHECK_VALUE(H > 0 && W > 0,
                    "It is expected output_size to be greater than zero, but "
                    "got output_height: ",
                    H, " output_width: ", W);
  int64_t nd = self.dim();
  bool ok = nd == 2 || nd == 3;
  for (int64_t d = nd - 2; ok && d < nd; ++d)
    ok = self.size(d) != 0;
  EMBER_CHECK_VALUE(ok,
                    "Expected 2D or 3D (batch mode) tensor with possibly 0 "
                    "batch size and non-zero dimensions for input, but got: ",
                    self.sizes());
  EMBER_CHECK_TYPE(self.dtype() != kBool,
                   "_col2im: sums overlapping blocks, which bool tensors "
                   "cannot hold; convert the input with .to(ember::kFloat)");
  bool batched = nd == 3;
  int64_t N = batched ? self.size(0) : 1;
  int64_t K = w.kh * w.kw;
  int64_t rows = self.size(-2), L = self.size(-1);
  EMBER_CHECK_VALUE(
      rows % K == 0, "Expected size of input's dimension ", batched ? 1 : 0,
      " to be divisible by the product of kernel_size, but got "
      "input.size(",
      batched ? 1 : 0, ")=", rows, " and kernel_size=", pairStr(kernel_size));
  int64_t OH = blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = blocks(W, w.kw, w.dw, w.pw, w.sw);
  EMBER_CHECK_VALUE(
      OH >= 1 && OW >= 1 && OH * OW == L,
      "Given output_size=", pairStr(output_size),
      ", kernel_size=", pairStr(kernel_size), ", dilation=", pairStr(dilation),
      ", padding=", pairStr(padding), ", stride=", pairStr(stride),
      ", expected size of input's dimension ", batched ? 2 : 1,
      " to match the calculated number of sliding blocks ", OH, " * ", OW,
      " = ", OH * OW, ", but got input.size(", batched ? 2 : 1, ")=", L, ".");
  int64_t C = rows / K;
  DimVector outSize;
  if (batched)
    outSize.push_back(N);
  outSize.push_back(C);
  outSize.push_back(H);
  outSize.push_back(W);
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
