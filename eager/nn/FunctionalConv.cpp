// nn::functional convolution, pooling, unfold and fold: compositions of the
// _im2col / _col2im primitives with matmul and reductions (see Functional.h).
#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/nn/Functional.h"
#include "eager/nn/OpArgs.h"

#include <array>
#include <limits>
#include <sstream>

namespace ember::nn::functional {

namespace {

/// "(a x b)" / "(a)" for messages.
std::string dimsStr(const std::array<int64_t, 2> &v, size_t D) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 2 - D; i < 2; ++i)
    os << (i > 2 - D ? " x " : "") << v[i];
  os << ')';
  return os.str();
}

/// Sliding windows along one dim (may be < 1), as PyTorch's
/// pooling_output_shape: with `ceil`, a last partial window counts when it
/// starts inside the input or its left padding. In 128-bit arithmetic, so
/// that sizes near INT64_MAX give a count, not an overflow.
int64_t windows(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s,
                bool ceil = false) {
  __int128 span = __int128(d) * (k - 1) + 1;
  __int128 num = __int128(size) + 2 * __int128(p) - span + (ceil ? s - 1 : 0);
  __int128 n = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1; // floor
  if (n < 0)
    return 0;
  if (ceil && (n - 1) * s >= __int128(size) + p)
    --n;
  return int64_t(std::min<__int128>(n, std::numeric_limits<int64_t>::max()));
}

/// A D-d (D = 1 or 2) window geometry lifted to 2-d: 1-d problems become
/// 2-d ones with height 1, so one code path serves both.
struct Geometry2d {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0},
      dilation{1, 1};
};

template <size_t D>
Geometry2d lift(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                IntArrayRef dilation) {
  Geometry2d g;
  for (size_t i = 0; i < D; ++i) {
    size_t j = 2 - D + i;
    g.kernel[j] = kernel[i];
    g.stride[j] = stride[i];
    g.padding[j] = padding[i];
    g.dilation[j] = dilation[i];
  }
  return g;
}

// --- convolution
// ---------------------------------------------------------------

// Note [Convolution as im2col + matmul]
// conv2d(x, w) with groups G: the columns _im2col(x) of shape
// (N, C_in*kh*kw, L) hold each group's channels contiguously, so viewed as
// (N, G, C_in/G*kh*kw, L) they multiply (batched over G, broadcast over N)
// with w viewed as (G, C_out/G, C_in/G*kh*kw), giving (N, G, C_out/G, L) =
// (N, C_out, OH, OW). conv1d is conv2d with height 1. Every step is an
// ember op, so autograd differentiates convolution through _im2col's
// derivative (_col2im) and matmul's.
template <size_t D>
Tensor convNd(const char *name, const Tensor &input, const Tensor &weight,
              const Tensor &bias, const ExpandingArray<D> &stride,
              const ConvPadding<D> &padding, const ExpandingArray<D> &dilation,
              int64_t groups) {
  int64_t nd = input.dim();
  EMBER_CHECK_VALUE(nd == int64_t(D) + 1 || nd == int64_t(D) + 2, "Expected ",
                    D + 1, "D (unbatched) or ", D + 2, "D (batched) input to ",
                    name, ", but got input of size: ", input.sizes());
  EMBER_CHECK_VALUE(weight.dim() == int64_t(D) + 2, "Expected ", D + 2,
                    "-dimensional weight of shape (out_channels, in_channels "
                    "/ groups, kernel size...) for ",
                    name, ", but got ", weight.dim(),
                    "-dimensional weight of size ", weight.sizes(), " instead");
  EMBER_CHECK_TYPE(isFloatingType(input.dtype()), name,
                   ": expected a floating input, but got a tensor of dtype ",
                   toString(input.dtype()),
                   " (convert it with .to(ember::kFloat))");
  EMBER_CHECK_TYPE(input.dtype() == weight.dtype(), "Input type (",
                   toString(input.dtype()), ") and weight type (",
                   toString(weight.dtype()), ") should be the same");
  if (bias.defined())
    EMBER_CHECK_TYPE(input.dtype() == bias.dtype(), "Input type (",
                     toString(input.dtype()), ") and bias type (",
                     toString(bias.dtype()), ") should be the same");
  EMBER_CHECK_VALUE(groups > 0, "non-positive groups is not supported");
  for (size_t i = 0; i < D; ++i) {
    EMBER_CHECK_VALUE(stride[i] > 0, "non-positive stride is not supported");
    EMBER_CHECK_VALUE(dilation[i] > 0, "dilation should be greater than zero");
    EMBER_CHECK_VALUE(padding.amounts()[i] >= 0,
                      "negative padding is not supported");
  }
  bool batched = nd == int64_t(D) + 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  int64_t Cout = weight.size(0), Cin = x.size(1);
  EMBER_CHECK_VALUE(Cout % groups == 0, "Given groups=", groups,
                    ", expected weight to be divisible by ", groups,
                    " at dimension 0, but got weight of size ", weight.sizes(),
                    " instead");
  EMBER_CHECK_VALUE(Cin == weight.size(1) * groups, "Given groups=", groups,
                    ", weight of size ", weight.sizes(), ", expected input",
                    x.sizes(), " to have ", weight.size(1) * groups,
                    " channels, but got ", Cin, " channels instead");
  if (bias.defined())
    EMBER_CHECK_VALUE(
        bias.dim() == 1 && bias.numel() == Cout, "Given weight of size ",
        weight.sizes(), ", expected bias to be 1-dimensional with ", Cout,
        " elements, but got bias of size ", bias.sizes(), " instead");

  // padding="same": total = dilation * (k - 1) split evenly; an odd total
  // puts the extra element after (as PyTorch), padded here explicitly.
  std::array<int64_t, D> pad{};
  std::vector<int64_t> extra; // constant_pad_nd amounts, last dim first
  if (padding.is_same()) {
    for (size_t i = 0; i < D; ++i)
      EMBER_CHECK_VALUE(stride[i] == 1, "padding='same' is not supported for "
                                        "strided convolutions");
    for (size_t i = D; i-- > 0;) {
      int64_t total = dilation[i] * (weight.size(2 + int64_t(i)) - 1);
      pad[i] = total / 2;
      extra.push_back(0);
      extra.push_back(total - 2 * pad[i]);
    }
  } else {
    for (size_t i = 0; i < D; ++i)
      pad[i] = padding.amounts()[i];
  }
  bool anyExtra = false;
  for (int64_t e : extra)
    anyExtra = anyExtra || e != 0;
  if (anyExtra)
    x = ember::constant_pad_nd(x, extra, 0);

  std::array<int64_t, D> kernel{};
  for (size_t i = 0; i < D; ++i)
    kernel[i] = weight.size(2 + int64_t(i));
  Geometry2d g = lift<D>(kernel, stride, pad, dilation);
  Tensor x4 = D == 1 ? x.unsqueeze(2) : x;
  Tensor w4 = D == 1 ? weight.unsqueeze(2) : weight;
  int64_t H = x4.size(2), W = x4.size(3);
  std::array<int64_t, 2> padded{H + 2 * g.padding[0], W + 2 * g.padding[1]},
      span{g.dilation[0] * (g.kernel[0] - 1) + 1,
           g.dilation[1] * (g.kernel[1] - 1) + 1};
  EMBER_CHECK_VALUE(padded[0] >= span[0] && padded[1] >= span[1],
                    "Calculated padded input size per channel: ",
                    dimsStr(padded, D), ". Kernel size: ", dimsStr(span, D),
                    ". Kernel size can't be greater than actual input size");
  int64_t OH =
              windows(H, g.kernel[0], g.dilation[0], g.padding[0], g.stride[0]),
          OW =
              windows(W, g.kernel[1], g.dilation[1], g.padding[1], g.stride[1]);
  int64_t N = x4.size(0), K = g.kernel[0] * g.kernel[1];
  int64_t CgK = Cin / groups * K, L = OH * OW;
  Tensor cols = ember::_im2col(x4, g.kernel, g.dilation, g.padding, g.stride);
  Tensor out;
  if (groups == 1) {
    out = ember::matmul(w4.reshape({Cout, CgK}), cols);
  } else {
    out = ember::matmul(w4.reshape({groups, Cout / groups, CgK}),
                        cols.view({N, groups, CgK, L}));
  }
  out = out.reshape({N, Cout, OH, OW});
  if (bias.defined())
    out = out + bias.view({1, Cout, 1, 1});
  if (D == 1)
    out = out.squeeze(2);
  return batched ? out : out.squeeze(0);
}

// --- pooling
// -------------------------------------------------------------------

/// The checks of PyTorch's pool2d_shape_check, in D dims; returns the input
/// lifted to 4-d (N, C, H, W) and the output size.
template <size_t D>
Tensor checkPool(const char *name, const Tensor &input, const Geometry2d &g,
                 bool ceil, std::array<int64_t, 2> &outSize) {
  int64_t nd = input.dim();
  bool ok = nd == int64_t(D) + 1 || nd == int64_t(D) + 2;
  for (int64_t d = nd - int64_t(D) - 1; ok && d < nd; ++d)
    ok = input.size(d) != 0;
  EMBER_CHECK_VALUE(ok, name, ": Expected ", D + 1, "D or ", D + 2,
                    "D (batch mode) tensor with optional 0 dim batch size "
                    "for input, but got: ",
                    input.sizes());
  for (size_t i = 2 - D; i < 2; ++i) {
    EMBER_CHECK_VALUE(g.kernel[i] > 0,
                      "kernel size should be greater than zero, but got ",
                      dimsStr(g.kernel, D));
    EMBER_CHECK_VALUE(g.stride[i] > 0,
                      "stride should be greater than zero, but got ",
                      dimsStr(g.stride, D));
    EMBER_CHECK_VALUE(g.dilation[i] > 0,
                      "dilation should be greater than zero, but got ",
                      dimsStr(g.dilation, D));
    EMBER_CHECK_VALUE(
        g.padding[i] >= 0,
        "pad must be non-negative, but got pad=", dimsStr(g.padding, D));
    EMBER_CHECK_VALUE(g.padding[i] <= g.kernel[i] / 2,
                      "pad should be at most half of effective kernel size, "
                      "but got pad=",
                      dimsStr(g.padding, D),
                      ", kernel_size=", dimsStr(g.kernel, D),
                      " and dilation=", dimsStr(g.dilation, D));
  }
  bool batched = nd == int64_t(D) + 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  if (D == 1)
    x = x.unsqueeze(2);
  int64_t H = x.size(2), W = x.size(3);
  outSize = {
      windows(H, g.kernel[0], g.dilation[0], g.padding[0], g.stride[0], ceil),
      windows(W, g.kernel[1], g.dilation[1], g.padding[1], g.stride[1], ceil)};
  if (outSize[0] < 1 || outSize[1] < 1) {
    // PyTorch's format: "(CxHxW)" (or "(CxL)").
    auto planes = [&](int64_t h, int64_t w) {
      return D == 1 ? detail::str("(", x.size(1), "x", w, ")")
                    : detail::str("(", x.size(1), "x", h, "x", w, ")");
    };
    throw ValueError(detail::str("Given input size: ", planes(H, W),
                                 ". Calculated output size: ",
                                 planes(std::max<int64_t>(outSize[0], 0),
                                        std::max<int64_t>(outSize[1], 0)),
                                 ". Output size is too small"));
  }
  return x;
}

/// Removes the lifted dims of a pooled (N, C, OH, OW) result.
template <size_t D> Tensor unlift(Tensor out, const Tensor &input) {
  if (D == 1)
    out = out.squeeze(2);
  return input.dim() == int64_t(D) + 2 ? out : out.squeeze(0);
}

// Note [Pooling with ceil_mode]
// With ceil_mode a last window may hang over the input's right (bottom)
// edge, past its padding. The input is extended there by `fill` (the
// lowest value for max pooling, 0 for average pooling) so that _im2col,
// whose padding is symmetric, takes every window; the average's divisor
// counts only positions inside the input and its padding (PyTorch's
// avg_pool2d), as the windows of a plane of ones extended by zeros.

/// `x` (N, C, H, W) extended on the right and bottom so that `os` windows
/// of `g` fit; unchanged without ceil_mode's overhang.
Tensor extendForWindows(const Tensor &x, const Geometry2d &g,
                        const std::array<int64_t, 2> &os, const Scalar &fill) {
  std::array<int64_t, 2> extra{};
  for (size_t i = 0; i < 2; ++i) {
    int64_t span = g.dilation[i] * (g.kernel[i] - 1) + 1;
    int64_t need = (os[i] - 1) * g.stride[i] + span; // padded extent
    extra[i] =
        std::max<int64_t>(0, need - x.size(2 + int64_t(i)) - 2 * g.padding[i]);
  }
  if (extra[0] == 0 && extra[1] == 0)
    return x;
  return ember::constant_pad_nd(x, {0, extra[1], 0, extra[0]}, fill);
}

/// The lowest value of `t` (-inf for floating types): max pooling's fill.
Scalar lowestOf(ScalarType t) {
  switch (t) {
  case kByte:
  case kBool:
    return 0;
  case kChar:
    return std::numeric_limits<int8_t>::lowest();
  case kShort:
    return std::numeric_limits<int16_t>::lowest();
  case kInt:
    return std::numeric_limits<int32_t>::lowest();
  case kLong:
    return std::numeric_limits<int64_t>::lowest();
  default:
    return -std::numeric_limits<double>::infinity();
  }
}

// Note [Max pooling through im2col]
// The columns of _im2col with pad_value = -inf (the lowest value for integer
// dtypes), viewed as (N, C, kh*kw, L), hold every window; max over dim 2
// gives the pooled values, and max.dim's gradient goes to the maximum of each
// window, then through _col2im back to the input position. A window that
// overlaps the padding holds the lowest value there, which ties with a real
// lowest value (-inf; 0 of uint8): the index is then chosen among the real
// positions only (the first holding the maximum, as PyTorch's kernel), and
// the value gathered from it, so that its gradient reaches the input.
template <size_t D>
std::tuple<Tensor, Tensor> maxPoolNd(const char *name, const Tensor &input,
                                     const MaxPoolFuncOptions<D> &o,
                                     bool wantIndices) {
  Geometry2d g =
      lift<D>(o.kernel_size(), o.stride(), o.padding(), o.dilation());
  std::array<int64_t, 2> os{};
  Tensor x = checkPool<D>(name, input, g, o.ceil_mode(), os);
  int64_t N = x.size(0), C = x.size(1), K = g.kernel[0] * g.kernel[1];
  int64_t L = os[0] * os[1];
  Tensor extended = extendForWindows(x, g, os, lowestOf(x.dtype()));
  Tensor cols =
      ember::_im2col(extended, g.kernel, g.dilation, g.padding, g.stride,
                     -std::numeric_limits<double>::infinity())
          .view({N, C, K, L});
  Tensor values, arg;
  bool padded = g.padding[0] > 0 || g.padding[1] > 0 || !extended.is_same(x);
  if (!padded) {
    std::tie(values, arg) = ember::max(cols, 2);
  } else {
    {
      NoGradGuard no_grad;
      Tensor plane = ones({1, 1, x.size(2), x.size(3)},
                          TensorOptions(kByte).device(x.device()));
      Tensor real = ember::_im2col(extendForWindows(plane, g, os, 0), g.kernel,
                                   g.dilation, g.padding, g.stride, 0)
                        .view({1, 1, K, L}) > 0;
      Tensor top = std::get<0>(ember::max(cols, 2, /*keepdim=*/true));
      Tensor hit = cols == top;
      if (isFloatingType(cols.dtype()))
        hit = hit | (cols.isnan() & top.isnan());
      arg = (hit & real).to(kByte).argmax(2);
    }
    values = cols.gather(2, arg.unsqueeze(2)).squeeze(2);
  }
  Tensor out = unlift<D>(values.view({N, C, os[0], os[1]}), input);
  if (!wantIndices)
    return {out, Tensor()};
  // Flat index y * W + x of each maximum in its input plane.
  int64_t W = x.size(3);
  Tensor i = ember::div(arg, Scalar(g.kernel[1]), "floor");
  Tensor j = arg - i * g.kernel[1];
  Tensor l = arange(L, TensorOptions(kLong).device(x.device()));
  Tensor oh = ember::div(l, Scalar(os[1]), "floor");
  Tensor ow = l - oh * os[1];
  Tensor y = oh * g.stride[0] - g.padding[0] + i * g.dilation[0];
  Tensor xx = ow * g.stride[1] - g.padding[1] + j * g.dilation[1];
  Tensor idx = unlift<D>((y * W + xx).view({N, C, os[0], os[1]}), input);
  return {out, idx};
}

template <size_t D>
Tensor avgPoolNd(const char *name, const Tensor &input,
                 const AvgPoolFuncOptions<D> &o) {
  EMBER_CHECK_TYPE(isFloatingType(input.dtype()), name,
                   ": expected a floating input, but got a tensor of dtype ",
                   toString(input.dtype()),
                   " (convert it with .to(ember::kFloat))");
  if (o.divisor_override())
    EMBER_CHECK_VALUE(*o.divisor_override() != 0, "divisor must be not zero");
  ExpandingArray<D> one(1);
  Geometry2d g = lift<D>(o.kernel_size(), o.stride(), o.padding(), one);
  std::array<int64_t, 2> os{};
  Tensor x = checkPool<D>(name, input, g, o.ceil_mode(), os);
  int64_t N = x.size(0), C = x.size(1), K = g.kernel[0] * g.kernel[1];
  int64_t L = os[0] * os[1];
  Tensor windowsOf = ember::_im2col(extendForWindows(x, g, os, 0), g.kernel,
                                    g.dilation, g.padding, g.stride, 0)
                         .view({N, C, K, L});
  Tensor out;
  if (o.divisor_override()) {
    out = windowsOf.sum({2}) / double(*o.divisor_override());
  } else if (o.count_include_pad() && !o.ceil_mode()) {
    // Every window lies inside the padded input: the full window size.
    out = windowsOf.mean({2});
  } else {
    // Note [Pooling with ceil_mode]: each window's count of positions
    // inside the input (and its padding, with count_include_pad).
    bool pad = o.count_include_pad();
    Tensor plane = ones({1, 1, x.size(2) + (pad ? 2 * g.padding[0] : 0),
                         x.size(3) + (pad ? 2 * g.padding[1] : 0)},
                        x.options());
    Geometry2d pg = g;
    if (pad)
      pg.padding = {0, 0};
    Tensor count = ember::_im2col(extendForWindows(plane, pg, os, 0), pg.kernel,
                                  pg.dilation, pg.padding, pg.stride, 0)
                       .sum({1});
    out = windowsOf.sum({2}) / count;
  }
  return unlift<D>(out.view({N, C, os[0], os[1]}), input);
}

} // namespace

namespace {
/// F::conv1d / F::conv2d through their op (Note [Functional forms through
/// the op table] in FunctionalLoss.cpp): conv2d, or conv2d.padding for
/// "same" / "valid".
template <size_t D>
Tensor convOp(const Tensor &input, const Tensor &weight, const Tensor &bias,
              const ExpandingArray<D> &stride, const ConvPadding<D> &padding,
              const ExpandingArray<D> &dilation, int64_t groups) {
  std::optional<Tensor> b = op_args::optional_of(bias);
  IntArrayRef st = *stride, dil = *dilation;
  if (padding.kind() != ConvPadding<D>::Explicit) {
    std::string_view mode = padding.is_same() ? "same" : "valid";
    if constexpr (D == 1)
      return ember::conv1d(input, weight, b, st, mode, dil, groups);
    else
      return ember::conv2d(input, weight, b, st, mode, dil, groups);
  }
  IntArrayRef pad = *padding.amounts();
  if constexpr (D == 1)
    return ember::conv1d(input, weight, b, st, pad, dil, groups);
  else
    return ember::conv2d(input, weight, b, st, pad, dil, groups);
}
} // namespace

Tensor conv2d(const Tensor &input, const Tensor &weight,
              const Conv2dFuncOptions &options) {
  return convOp<2>(input, weight, options.bias(), options.stride(),
                   options.padding(), options.dilation(), options.groups());
}
Tensor conv2d(const Tensor &input, const Tensor &weight, const Tensor &bias,
              ExpandingArray<2> stride, ConvPadding<2> padding,
              ExpandingArray<2> dilation, int64_t groups) {
  return convOp<2>(input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv1d(const Tensor &input, const Tensor &weight,
              const Conv1dFuncOptions &options) {
  return convOp<1>(input, weight, options.bias(), options.stride(),
                   options.padding(), options.dilation(), options.groups());
}
Tensor conv1d(const Tensor &input, const Tensor &weight, const Tensor &bias,
              ExpandingArray<1> stride, ConvPadding<1> padding,
              ExpandingArray<1> dilation, int64_t groups) {
  return convOp<1>(input, weight, bias, stride, padding, dilation, groups);
}

Tensor max_pool2d(const Tensor &input, const MaxPool2dFuncOptions &options) {
  return std::get<0>(maxPoolNd<2>("max_pool2d", input, options, false));
}
std::tuple<Tensor, Tensor>
max_pool2d_with_indices(const Tensor &input,
                        const MaxPool2dFuncOptions &options) {
  return maxPoolNd<2>("max_pool2d", input, options, true);
}
Tensor max_pool1d(const Tensor &input, const MaxPool1dFuncOptions &options) {
  return std::get<0>(maxPoolNd<1>("max_pool1d", input, options, false));
}
Tensor avg_pool2d(const Tensor &input, const AvgPool2dFuncOptions &options) {
  return avgPoolNd<2>("avg_pool2d", input, options);
}
Tensor avg_pool1d(const Tensor &input, const AvgPool1dFuncOptions &options) {
  return avgPoolNd<1>("avg_pool1d", input, options);
}

Tensor unfold(const Tensor &input, const UnfoldFuncOptions &options) {
  return ember::_im2col(input, options.kernel_size(), options.dilation(),
                        options.padding(), options.stride());
}
Tensor fold(const Tensor &input, const FoldFuncOptions &options) {
  return ember::_col2im(input, options.output_size(), options.kernel_size(),
                        options.dilation(), options.padding(),
                        options.stride());
}

} // namespace ember::nn::functional

namespace ember::native {

namespace {
namespace F = ember::nn::functional;
using nn::op_args::expand;
template <size_t D>
Tensor convNative(const Tensor &input, const Tensor &weight,
                  const std::optional<Tensor> &bias, IntArrayRef stride,
                  const nn::ConvPadding<D> &padding, IntArrayRef dilation,
                  int64_t groups) {
  return F::convNd<D>(D == 1 ? "conv1d" : "conv2d", input, weight,
                      bias.value_or(Tensor()), expand<D>(stride), padding,
                      expand<D>(dilation), groups);
}
} // namespace

Tensor conv1d(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNative<1>(input, weight, bias, stride, expand<1>(padding),
                       dilation, groups);
}
Tensor conv1d_padding(const Tensor &input, const Tensor &weight,
                      const std::optional<Tensor> &bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return convNative<1>(input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNative<2>(input, weight, bias, stride, expand<2>(padding),
                       dilation, groups);
}
Tensor conv2d_padding(const Tensor &input, const Tensor &weight,
                      const std::optional<Tensor> &bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return convNative<2>(input, weight, bias, stride, padding, dilation, groups);
}

} // namespace ember::native
