// The native functions of ops.yaml's "nn ops" section: libtorch's top-level
// forms of the nn::functional ops (torch::mse_loss(x, y, reduction),
// torch::conv2d(x, w, b, stride, padding), torch::max_pool2d(x, 2), ...)
// with ATen's signatures. Each converts its arguments to the options of its
// nn::functional form and calls it: the math is there, once. The ops with an
// autocast policy are the other way round (Note [Functional forms through
// the op table] in FunctionalLoss.cpp): their F:: form calls the op, and
// the op's native function, next to the math, runs it.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/nn/Functional.h"
#include "eager/nn/OpArgs.h"

namespace ember::native {

namespace F = ember::nn::functional;

namespace {

/// An ATen `Tensor?` argument as nn::functional takes it (undefined: none).
Tensor orUndefined(const std::optional<Tensor> &t) { return t ? *t : Tensor(); }

using nn::op_args::expand;

/// A pooling stride: `[]` (ATen's default) is the kernel size.
template <size_t D>
ExpandingArray<D> poolStride(IntArrayRef stride, IntArrayRef kernel_size) {
  return expand<D>(stride.empty() ? kernel_size : stride);
}

/// What a dropout that is not in training (or drops nothing) returns.
bool drops(double p, bool train) { return train && p > 0; }

} // namespace

// --- activations -------------------------------------------------------------

Tensor relu6(const Tensor &self) { return F::relu6(self); }
const Tensor &relu6_(const Tensor &self) {
  F::relu6(self, F::ReLU6FuncOptions(true));
  return self;
}

Tensor leaky_relu(const Tensor &self, const Scalar &negative_slope) {
  return F::leaky_relu(self, F::LeakyReLUFuncOptions().negative_slope(
                                 negative_slope.toDouble()));
}
const Tensor &leaky_relu_(const Tensor &self, const Scalar &negative_slope) {
  F::leaky_relu(self, F::LeakyReLUFuncOptions()
                          .negative_slope(negative_slope.toDouble())
                          .inplace(true));
  return self;
}

// ATen's elu, which F::elu calls: x for x > 0 scaled by `scale`, otherwise
// scale * alpha * (exp(input_scale * x) - 1). With scale = input_scale = 1
// (F::elu) no multiplication by them is recorded.
Tensor elu(const Tensor &self, const Scalar &alpha, const Scalar &scale,
           const Scalar &input_scale) {
  double s = scale.toDouble(), is = input_scale.toDouble();
  if (self.defined()) {
    if (!isFloatingType(self.dtype())) // as PyTorch's (no promotion)
      throw_unsupported_dtype("elu", self.dtype());
    dispatch_dtype(self.dtype(), "elu", [&]<class T>() { // as leaky_relu's
      for (const Scalar *v : {&alpha, &scale, &input_scale})
        (void)v->checked_to<T>();
    });
  }
  Tensor negative =
      ember::expm1(is == 1 ? self : self * is) * (alpha.toDouble() * s);
  return ember::where(self > 0, s == 1 ? self : self * s, negative);
}
const Tensor &elu_(const Tensor &self, const Scalar &alpha, const Scalar &scale,
                   const Scalar &input_scale) {
  return self.copy_(ember::elu(self, alpha, scale, input_scale));
}

Tensor hardtanh(const Tensor &self, const Scalar &min_val,
                const Scalar &max_val) {
  return F::hardtanh(self, F::HardtanhFuncOptions()
                               .min_val(min_val.toDouble())
                               .max_val(max_val.toDouble()));
}
const Tensor &hardtanh_(const Tensor &self, const Scalar &min_val,
                        const Scalar &max_val) {
  F::hardtanh(self, F::HardtanhFuncOptions()
                        .min_val(min_val.toDouble())
                        .max_val(max_val.toDouble())
                        .inplace(true));
  return self;
}

// --- dropout and embedding ---------------------------------------------------

Tensor dropout(const Tensor &input, double p, bool train) {
  return F::dropout(input, p, train);
}
const Tensor &dropout_(const Tensor &self, double p, bool train) {
  F::dropout(self, F::DropoutFuncOptions(p).training(train).inplace(true));
  return self;
}

namespace {
/// The mask of feature_dropout: F::dropout of ones of shape (N, C, 1, ...,
/// 1), one draw per (N, C) feature map of an (N, C, *) input.
Tensor featureMask(const Tensor &input, double p) {
  EMBER_CHECK_VALUE(input.dim() >= 2,
                    "Feature dropout requires at least 2 dimensions in the "
                    "input, but got an input of shape ",
                    input.sizes());
  std::vector<int64_t> maskShape(size_t(input.dim()), 1);
  maskShape[0] = input.size(0);
  maskShape[1] = input.size(1);
  return F::dropout(ones(maskShape, input.options()), p, true);
}
} // namespace

// ATen's feature_dropout, which F::dropout2d calls: each feature map is
// zeroed or scaled by 1 / (1 - p) as a whole. Not dropping, F::dropout
// checks p and returns the input.
Tensor feature_dropout(const Tensor &input, double p, bool train) {
  if (!drops(p, train))
    return F::dropout(input, p, train);
  return input * featureMask(input, p);
}
const Tensor &feature_dropout_(const Tensor &self, double p, bool train) {
  if (!drops(p, train))
    F::dropout(self, p, train);
  else
    self.mul_(featureMask(self, p));
  return self;
}

// padding_idx < 0 is ATen's "none" (F.embedding passes -1 for None).
Tensor embedding(const Tensor &weight, const Tensor &indices,
                 int64_t padding_idx, bool scale_grad_by_freq, bool sparse) {
  return F::embedding(indices, weight,
                      F::EmbeddingFuncOptions()
                          .padding_idx(padding_idx >= 0
                                           ? std::optional<int64_t>(padding_idx)
                                           : std::nullopt)
                          .scale_grad_by_freq(scale_grad_by_freq)
                          .sparse(sparse));
}

// --- normalization -----------------------------------------------------------

Tensor layer_norm(const Tensor &input, IntArrayRef normalized_shape,
                  const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps,
                  bool /*cudnn_enable*/) {
  return F::layer_norm(input, F::LayerNormFuncOptions(normalized_shape.vec())
                                  .weight(orUndefined(weight))
                                  .bias(orUndefined(bias))
                                  .eps(eps));
}

Tensor batch_norm(const Tensor &input, const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias,
                  const std::optional<Tensor> &running_mean,
                  const std::optional<Tensor> &running_var, bool training,
                  double momentum, double eps, bool /*cudnn_enabled*/) {
  return F::batch_norm(input, orUndefined(running_mean),
                       orUndefined(running_var),
                       F::BatchNormFuncOptions()
                           .weight(orUndefined(weight))
                           .bias(orUndefined(bias))
                           .training(training)
                           .momentum(momentum)
                           .eps(eps));
}

// --- convolution and pooling -------------------------------------------------

Tensor max_pool1d(const Tensor &self, IntArrayRef kernel_size,
                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  return F::max_pool1d(self, F::MaxPool1dFuncOptions(expand<1>(kernel_size))
                                 .stride(poolStride<1>(stride, kernel_size))
                                 .padding(expand<1>(padding))
                                 .dilation(expand<1>(dilation))
                                 .ceil_mode(ceil_mode));
}

namespace {
F::MaxPool2dFuncOptions maxPool2dOptions(IntArrayRef kernel_size,
                                         IntArrayRef stride,
                                         IntArrayRef padding,
                                         IntArrayRef dilation, bool ceil_mode) {
  return F::MaxPool2dFuncOptions(expand<2>(kernel_size))
      .stride(poolStride<2>(stride, kernel_size))
      .padding(expand<2>(padding))
      .dilation(expand<2>(dilation))
      .ceil_mode(ceil_mode);
}
} // namespace

Tensor max_pool2d(const Tensor &self, IntArrayRef kernel_size,
                  IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  return F::max_pool2d(self, maxPool2dOptions(kernel_size, stride, padding,
                                              dilation, ceil_mode));
}
std::tuple<Tensor, Tensor>
max_pool2d_with_indices(const Tensor &self, IntArrayRef kernel_size,
                        IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, bool ceil_mode) {
  return F::max_pool2d_with_indices(
      self,
      maxPool2dOptions(kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool1d(const Tensor &self, IntArrayRef kernel_size,
                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  return F::avg_pool1d(self, F::AvgPool1dFuncOptions(expand<1>(kernel_size))
                                 .stride(poolStride<1>(stride, kernel_size))
                                 .padding(expand<1>(padding))
                                 .ceil_mode(ceil_mode)
                                 .count_include_pad(count_include_pad));
}
Tensor avg_pool2d(const Tensor &self, IntArrayRef kernel_size,
                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return F::avg_pool2d(self, F::AvgPool2dFuncOptions(expand<2>(kernel_size))
                                 .stride(poolStride<2>(stride, kernel_size))
                                 .padding(expand<2>(padding))
                                 .ceil_mode(ceil_mode)
                                 .count_include_pad(count_include_pad)
                                 .divisor_override(divisor_override));
}

Tensor im2col_unfold(const Tensor &self, IntArrayRef kernel_size,
                     IntArrayRef dilation, IntArrayRef padding,
                     IntArrayRef stride) {
  return F::unfold(self, F::UnfoldFuncOptions(expand<2>(kernel_size))
                             .dilation(expand<2>(dilation))
                             .padding(expand<2>(padding))
                             .stride(expand<2>(stride)));
}
Tensor col2im_fold(const Tensor &self, IntArrayRef output_size,
                   IntArrayRef kernel_size, IntArrayRef dilation,
                   IntArrayRef padding, IntArrayRef stride) {
  return F::fold(
      self, F::FoldFuncOptions(expand<2>(output_size), expand<2>(kernel_size))
                .dilation(expand<2>(dilation))
                .padding(expand<2>(padding))
                .stride(expand<2>(stride)));
}

// --- padding -----------------------------------------------------------------

// ATen's pad: F::pad with the mode by name; `value` is for mode "constant"
// only.
Tensor pad(const Tensor &self, IntArrayRef pad, std::string_view mode,
           std::optional<double> value) {
  nn::PadMode m(mode);
  EMBER_CHECK_VALUE(!value || m.kind() == nn::PadMode::Constant,
                    "Padding mode \"", mode,
                    "\" doesn't take in value argument");
  return F::pad(
      self, F::PadFuncOptions(pad.vec()).mode(m).value(value.value_or(0.0)));
}

// --- attention ---------------------------------------------------------------

// --- losses (the others are in FunctionalLoss.cpp)
// -----------------------------

Tensor nll_loss_nd(const Tensor &self, const Tensor &target,
                   const std::optional<Tensor> &weight, int64_t reduction,
                   int64_t ignore_index) {
  return ember::nll_loss(self, target, weight, reduction, ignore_index);
}
Tensor nll_loss2d(const Tensor &self, const Tensor &target,
                  const std::optional<Tensor> &weight, int64_t reduction,
                  int64_t ignore_index) {
  EMBER_CHECK_VALUE(self.dim() == 4,
                    "only batches of spatial inputs supported (4D tensors), "
                    "but got input of size: ",
                    self.sizes());
  return ember::nll_loss(self, target, weight, reduction, ignore_index);
}

} // namespace ember::native
