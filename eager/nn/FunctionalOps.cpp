// The native functions of ops.yaml's "nn ops" section: libtorch's top-level
// forms of the nn::functional ops (torch::mse_loss(x, y, reduction),
// torch::conv2d(x, w, b, stride, padding), torch::max_pool2d(x, 2), ...)
// with ATen's signatures. Each converts its arguments to the options of its
// nn::functional form and calls it: the math is there, once.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/nn/Functional.h"

namespace ember::native {

namespace F = ember::nn::functional;

namespace {

/// An ATen `Tensor?` argument as nn::functional takes it (undefined: none).
Tensor orUndefined(const std::optional<Tensor> &t) { return t ? *t : Tensor(); }

/// An ATen `int[D]` argument: one value (for every dimension) or D values.
template <size_t D> ExpandingArray<D> expand(IntArrayRef a) {
  return a.size() == 1 ? ExpandingArray<D>(a[0]) : ExpandingArray<D>(a);
}

/// A pooling stride: `[]` (ATen's default) is the kernel size.
template <size_t D>
ExpandingArray<D> poolStride(IntArrayRef stride, IntArrayRef kernel_size) {
  return expand<D>(stride.empty() ? kernel_size : stride);
}

/// reflection_padNd / replication_padNd: 2 * D amounts, then F::pad.
Tensor padNd(const char *name, size_t D, const Tensor &self,
             IntArrayRef padding, nn::PadMode mode) {
  EMBER_CHECK_VALUE(padding.size() == 2 * D, name, ": expected a padding of ",
                    2 * D, " values (before and after each of the last ", D,
                    " dims), but got ", padding.size());
  return F::pad(self, F::PadFuncOptions(padding.vec()).mode(mode));
}

/// What a dropout that is not in training (or drops nothing) returns.
bool drops(double p, bool train) { return train && p > 0; }

/// scaled_dot_product_attention with enable_gqa: key and value heads
/// (dim -3) repeated so that each serves query.size(-3) / heads queries.
Tensor repeatHeads(const Tensor &t, int64_t queryHeads, const char *what) {
  EMBER_CHECK_VALUE(t.dim() >= 3 && queryHeads % t.size(-3) == 0,
                    "scaled_dot_product_attention: with enable_gqa, the ", what,
                    " heads (dim -3) must divide the query heads, but got "
                    "query heads ",
                    queryHeads, " and ", what, " of shape ", t.sizes());
  int64_t groups = queryHeads / t.size(-3);
  if (groups == 1)
    return t;
  std::vector<int64_t> expanded(t.sizes().begin(), t.sizes().end());
  expanded.insert(expanded.end() - 2, groups);
  std::vector<int64_t> merged(t.sizes().begin(), t.sizes().end());
  merged[merged.size() - 3] = queryHeads;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

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

Tensor log_sigmoid(const Tensor &self) { return F::logsigmoid(self); }

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

Tensor group_norm(const Tensor &input, int64_t num_groups,
                  const std::optional<Tensor> &weight,
                  const std::optional<Tensor> &bias, double eps,
                  bool /*cudnn_enabled*/) {
  return F::group_norm(input, F::GroupNormFuncOptions(num_groups)
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

namespace {
/// conv1d / conv2d: the options of F::conv1d / F::conv2d from ATen's
/// arguments (padding: amounts or "same" / "valid").
template <size_t D>
Tensor convNd(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias, IntArrayRef stride,
              nn::ConvPadding<D> padding, IntArrayRef dilation,
              int64_t groups) {
  auto options = F::ConvFuncOptions<D>()
                     .bias(orUndefined(bias))
                     .stride(expand<D>(stride))
                     .padding(padding)
                     .dilation(expand<D>(dilation))
                     .groups(groups);
  if constexpr (D == 1)
    return F::conv1d(input, weight, options);
  else
    return F::conv2d(input, weight, options);
}
} // namespace

Tensor conv1d(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNd<1>(input, weight, bias, stride, expand<1>(padding), dilation,
                   groups);
}
Tensor conv1d_padding(const Tensor &input, const Tensor &weight,
                      const std::optional<Tensor> &bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return convNd<1>(input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor &input, const Tensor &weight,
              const std::optional<Tensor> &bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convNd<2>(input, weight, bias, stride, expand<2>(padding), dilation,
                   groups);
}
Tensor conv2d_padding(const Tensor &input, const Tensor &weight,
                      const std::optional<Tensor> &bias, IntArrayRef stride,
                      std::string_view padding, IntArrayRef dilation,
                      int64_t groups) {
  return convNd<2>(input, weight, bias, stride, padding, dilation, groups);
}

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

Tensor reflection_pad1d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad1d", 1, self, padding, kReflect);
}
Tensor reflection_pad2d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad2d", 2, self, padding, kReflect);
}
Tensor reflection_pad3d(const Tensor &self, IntArrayRef padding) {
  return padNd("reflection_pad3d", 3, self, padding, kReflect);
}
Tensor replication_pad1d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad1d", 1, self, padding, kReplicate);
}
Tensor replication_pad2d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad2d", 2, self, padding, kReplicate);
}
Tensor replication_pad3d(const Tensor &self, IntArrayRef padding) {
  return padNd("replication_pad3d", 3, self, padding, kReplicate);
}

// --- attention ---------------------------------------------------------------

Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const std::optional<Tensor> &attn_mask,
                                    double dropout_p, bool is_causal,
                                    std::optional<double> scale,
                                    bool enable_gqa) {
  Tensor k = key, v = value;
  if (enable_gqa) {
    EMBER_CHECK_VALUE(query.dim() >= 3,
                      "scaled_dot_product_attention: enable_gqa needs "
                      "(..., heads, L, E) queries, but got a query of shape ",
                      query.sizes());
    k = repeatHeads(key, query.size(-3), "key");
    v = repeatHeads(value, query.size(-3), "value");
  }
  return F::scaled_dot_product_attention(query, k, v, orUndefined(attn_mask),
                                         dropout_p, is_causal, scale);
}

// --- losses (kl_div is in FunctionalLoss.cpp) --------------------------------

Tensor mse_loss(const Tensor &self, const Tensor &target, int64_t reduction) {
  return F::mse_loss(self, target, Reduction::from_int(reduction));
}

Tensor l1_loss(const Tensor &self, const Tensor &target, int64_t reduction) {
  return F::l1_loss(self, target, Reduction::from_int(reduction));
}

Tensor smooth_l1_loss(const Tensor &self, const Tensor &target,
                      int64_t reduction, double beta) {
  return F::smooth_l1_loss(
      self, target,
      F::SmoothL1LossFuncOptions(Reduction::from_int(reduction)).beta(beta));
}

Tensor huber_loss(const Tensor &self, const Tensor &target, int64_t reduction,
                  double delta) {
  return F::huber_loss(
      self, target,
      F::HuberLossFuncOptions(Reduction::from_int(reduction)).delta(delta));
}

Tensor nll_loss(const Tensor &self, const Tensor &target,
                const std::optional<Tensor> &weight, int64_t reduction,
                int64_t ignore_index) {
  return F::nll_loss(self, target,
                     F::NLLLossFuncOptions(Reduction::from_int(reduction))
                         .weight(orUndefined(weight))
                         .ignore_index(ignore_index));
}
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

Tensor cross_entropy_loss(const Tensor &self, const Tensor &target,
                          const std::optional<Tensor> &weight,
                          int64_t reduction, int64_t ignore_index,
                          double label_smoothing) {
  return F::cross_entropy(
      self, target,
      F::CrossEntropyFuncOptions(Reduction::from_int(reduction))
          .weight(orUndefined(weight))
          .ignore_index(ignore_index)
          .label_smoothing(label_smoothing));
}

Tensor binary_cross_entropy(const Tensor &self, const Tensor &target,
                            const std::optional<Tensor> &weight,
                            int64_t reduction) {
  return F::binary_cross_entropy(
      self, target,
      F::BinaryCrossEntropyFuncOptions(Reduction::from_int(reduction))
          .weight(orUndefined(weight)));
}

Tensor binary_cross_entropy_with_logits(const Tensor &self,
                                        const Tensor &target,
                                        const std::optional<Tensor> &weight,
                                        const std::optional<Tensor> &pos_weight,
                                        int64_t reduction) {
  return F::binary_cross_entropy_with_logits(
      self, target,
      F::BinaryCrossEntropyWithLogitsFuncOptions(Reduction::from_int(reduction))
          .weight(orUndefined(weight))
          .pos_weight(orUndefined(pos_weight)));
}

} // namespace ember::native
