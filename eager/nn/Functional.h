#pragma once
/// ember::nn::functional: the stateless building blocks of neural networks
/// (torch::nn::functional, usable as `namespace F = ember::nn::functional;`).
///
/// Every function here is a composition of ember ops from the op table
/// (matmul, softmax, gather, where, ...), so autograd differentiates it
/// without formulas of its own. Convolution and pooling go through the
/// _im2col / _col2im primitives (eager/cpu/Im2col.cpp).
///
/// Options follow libtorch: `F::conv2d(x, w, F::Conv2dFuncOptions().stride(2)
/// .padding(1))`, `F::cross_entropy(logits, target,
/// F::CrossEntropyFuncOptions().label_smoothing(0.1))`; the forms users
/// write most also exist without options (`F::softmax(x, 1)`,
/// `F::linear(x, w, b)`).

#include "eager/Tensor.h"
#include "eager/generated/Functions.h"
#include "eager/nn/Options.h"

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ember::nn::functional {

using ember::nn::ConvPadding;
using ember::nn::PadMode;

// =============================================================================
// Activations
// =============================================================================

/// Options of F::relu (inplace: overwrite the input).
struct ReLUFuncOptions {
  ReLUFuncOptions(bool inplace = false) : inplace_(inplace) {}
  EMBER_ARG(bool, inplace);
};
/// max(x, 0).
Tensor relu(const Tensor &input, const ReLUFuncOptions &options = {});

/// Options of F::relu6.
struct ReLU6FuncOptions {
  ReLU6FuncOptions(bool inplace = false) : inplace_(inplace) {}
  EMBER_ARG(bool, inplace);
};
/// min(max(x, 0), 6).
Tensor relu6(const Tensor &input, const ReLU6FuncOptions &options = {});

/// Options of F::leaky_relu.
struct LeakyReLUFuncOptions {
  EMBER_ARG(double, negative_slope) = 1e-2;
  EMBER_ARG(bool, inplace) = false;
};
/// x for x >= 0, negative_slope * x otherwise.
Tensor leaky_relu(const Tensor &input,
                  const LeakyReLUFuncOptions &options = {});

/// Options of F::elu.
struct ELUFuncOptions {
  EMBER_ARG(double, alpha) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
/// x for x > 0, alpha * (exp(x) - 1) otherwise.
Tensor elu(const Tensor &input, const ELUFuncOptions &options = {});

/// Options of F::hardtanh.
struct HardtanhFuncOptions {
  EMBER_ARG(double, min_val) = -1.0;
  EMBER_ARG(double, max_val) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
/// clamp(x, min_val, max_val).
Tensor hardtanh(const Tensor &input, const HardtanhFuncOptions &options = {});

/// Options of F::gelu: approximate = "none" (erf) or "tanh".
struct GELUFuncOptions {
  EMBER_ARG(std::string, approximate) = "none";
};
/// x * Phi(x), exact or with the tanh approximation.
Tensor gelu(const Tensor &input, const GELUFuncOptions &options = {});

/// x * sigmoid(x) (also called swish).
Tensor silu(const Tensor &input);

/// Options of F::softplus.
struct SoftplusFuncOptions {
  EMBER_ARG(double, beta) = 1.0;
  EMBER_ARG(double, threshold) = 20.0;
};
/// log(1 + exp(beta * x)) / beta, linear above the threshold.
Tensor softplus(const Tensor &input, const SoftplusFuncOptions &options = {});

/// log(sigmoid(x)), computed without overflow.
Tensor logsigmoid(const Tensor &input);

/// Options of F::softmax / F::log_softmax: the dim to normalise and an
/// optional dtype to cast the input to first.
struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  EMBER_ARG(int64_t, dim);
  EMBER_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

/// exp(x) / sum(exp(x)) along options.dim().
Tensor softmax(const Tensor &input, const SoftmaxFuncOptions &options);
Tensor softmax(const Tensor &input, int64_t dim,
               std::optional<ScalarType> dtype = std::nullopt);
/// log(softmax(x)) along options.dim(), computed stably.
Tensor log_softmax(const Tensor &input, const LogSoftmaxFuncOptions &options);
Tensor log_softmax(const Tensor &input, int64_t dim,
                   std::optional<ScalarType> dtype = std::nullopt);

// =============================================================================
// Linear, dropout, embedding
// =============================================================================

/// input @ weight^T + bias; weight is (out_features, in_features).
Tensor linear(const Tensor &input, const Tensor &weight,
              const Tensor &bias = {});

/// Options of F::dropout.
struct DropoutFuncOptions {
  DropoutFuncOptions(double p = 0.5) : p_(p) {}
  EMBER_ARG(double, p);
  EMBER_ARG(bool, training) = true;
  EMBER_ARG(bool, inplace) = false;
};
/// Zeroes each element with probability p and scales the rest by 1/(1-p)
/// while training; the identity otherwise.
Tensor dropout(const Tensor &input, const DropoutFuncOptions &options = {});
Tensor dropout(const Tensor &input, double p, bool training = true);

/// Options of F::dropout2d (as libtorch, those of F::dropout).
using Dropout2dFuncOptions = DropoutFuncOptions;
/// Channel dropout of (N, C, H, W) or unbatched (C, H, W) input: while
/// training, each (n, c) feature map is zeroed with probability p, the others
/// are scaled by 1/(1-p) (ember::feature_dropout); the identity otherwise.
Tensor dropout2d(const Tensor &input, const Dropout2dFuncOptions &options = {});

/// Options of F::embedding. max_norm renormalises (in place, without
/// recording gradients) the rows that are looked up to at most max_norm in
/// the norm_type norm; padding_idx's row receives no gradient.
struct EmbeddingFuncOptions {
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  EMBER_ARG(std::optional<double>, max_norm) = std::nullopt;
  EMBER_ARG(double, norm_type) = 2.0;
  /// Not implemented (true raises).
  EMBER_ARG(bool, scale_grad_by_freq) = false;
  /// The gradient is dense either way (ember has no sparse tensors).
  EMBER_ARG(bool, sparse) = false;
};
/// weight[input]: rows of weight (num_embeddings, dim) for integer indices
/// of any shape; output shape input.sizes() + (dim,).
Tensor embedding(const Tensor &input, const Tensor &weight,
                 const EmbeddingFuncOptions &options = {});

/// One-hot encoding of int64 class indices (torch.nn.functional.one_hot).
Tensor one_hot(const Tensor &tensor, int64_t num_classes = -1);

// =============================================================================
// Normalization
// =============================================================================

/// Options of F::layer_norm: the trailing shape to normalise over, optional
/// elementwise affine weight and bias of that shape, eps.
struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(double, eps) = 1e-5;
};
/// (x - mean) / sqrt(var + eps) * weight + bias over the last
/// normalized_shape.size() dims (biased variance).
Tensor layer_norm(const Tensor &input, const LayerNormFuncOptions &options);

/// Options of F::batch_norm. The running statistics are updated with
/// momentum, which must then be set (a module with momentum=None passes
/// 1 / num_batches_tracked, as PyTorch's modules do).
struct BatchNormFuncOptions {
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  EMBER_ARG(double, eps) = 1e-5;
};
/// Normalises (N, C, *) input per channel C. Training: batch statistics
/// (biased variance), and running_mean / running_var (when defined) are
/// updated in place with momentum (unbiased variance), without recording
/// gradients. Evaluation: the running statistics.
Tensor batch_norm(const Tensor &input, const Tensor &running_mean,
                  const Tensor &running_var,
                  const BatchNormFuncOptions &options = {});

/// Options of F::group_norm.
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(double, eps) = 1e-5;
};
/// Normalises (N, C, *) input over groups of C / num_groups channels, then
/// applies the per-channel affine weight and bias.
Tensor group_norm(const Tensor &input, const GroupNormFuncOptions &options);

// =============================================================================
// Convolution and pooling
// =============================================================================

/// Options of F::conv1d / F::conv2d (libtorch's ConvFuncOptions<D>).
template <size_t D> struct ConvFuncOptions {
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  EMBER_ARG(ConvPadding<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(int64_t, groups) = 1;
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;

/// 2-d convolution (cross-correlation, as PyTorch) of input (N, C_in, H, W)
/// or unbatched (C_in, H, W) with weight (C_out, C_in / groups, kH, kW).
Tensor conv2d(const Tensor &input, const Tensor &weight,
              const Conv2dFuncOptions &options = {});
Tensor conv2d(const Tensor &input, const Tensor &weight, const Tensor &bias,
              ExpandingArray<2> stride = 1, ConvPadding<2> padding = 0,
              ExpandingArray<2> dilation = 1, int64_t groups = 1);
/// 1-d convolution of input (N, C_in, L) or (C_in, L) with weight
/// (C_out, C_in / groups, k).
Tensor conv1d(const Tensor &input, const Tensor &weight,
              const Conv1dFuncOptions &options = {});
Tensor conv1d(const Tensor &input, const Tensor &weight, const Tensor &bias,
              ExpandingArray<1> stride = 1, ConvPadding<1> padding = 0,
              ExpandingArray<1> dilation = 1, int64_t groups = 1);

/// Options of F::max_pool1d / F::max_pool2d; stride defaults to
/// kernel_size. ceil_mode = true is not implemented.
template <size_t D> struct MaxPoolFuncOptions {
  MaxPoolFuncOptions(ExpandingArray<D> kernel_size)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  EMBER_ARG(bool, ceil_mode) = false;
};
using MaxPool1dFuncOptions = MaxPoolFuncOptions<1>;
using MaxPool2dFuncOptions = MaxPoolFuncOptions<2>;

/// Maximum over kernel windows of (N, C, H, W) or (C, H, W) input; padding
/// counts as -inf.
Tensor max_pool2d(const Tensor &input, const MaxPool2dFuncOptions &options);
/// max_pool2d and the flat index (h * W + w) of each maximum in its input
/// plane.
std::tuple<Tensor, Tensor>
max_pool2d_with_indices(const Tensor &input,
                        const MaxPool2dFuncOptions &options);
/// Maximum over kernel windows of (N, C, L) or (C, L) input.
Tensor max_pool1d(const Tensor &input, const MaxPool1dFuncOptions &options);

/// Options of F::avg_pool1d / F::avg_pool2d; stride defaults to
/// kernel_size. ceil_mode = true is not implemented.
template <size_t D> struct AvgPoolFuncOptions {
  AvgPoolFuncOptions(ExpandingArray<D> kernel_size)
      : kernel_size_(kernel_size), stride_(kernel_size) {}
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride);
  EMBER_ARG(ExpandingArray<D>, padding) = 0;
  EMBER_ARG(bool, ceil_mode) = false;
  EMBER_ARG(bool, count_include_pad) = true;
  EMBER_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool1dFuncOptions = AvgPoolFuncOptions<1>;
using AvgPool2dFuncOptions = AvgPoolFuncOptions<2>;

/// Mean over kernel windows of (N, C, H, W) or (C, H, W) input (padding
/// counts as zeros when count_include_pad; divisor_override replaces the
/// window size).
Tensor avg_pool2d(const Tensor &input, const AvgPool2dFuncOptions &options);
/// Mean over kernel windows of (N, C, L) or (C, L) input.
Tensor avg_pool1d(const Tensor &input, const AvgPool1dFuncOptions &options);

/// Options of F::unfold / F::fold (im2col / col2im as modules use them).
struct UnfoldFuncOptions {
  UnfoldFuncOptions(ExpandingArray<2> kernel_size)
      : kernel_size_(kernel_size) {}
  EMBER_ARG(ExpandingArray<2>, kernel_size);
  EMBER_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_ARG(ExpandingArray<2>, stride) = 1;
};
/// Sliding blocks of (N, C, H, W) input as columns (N, C*kH*kW, L).
Tensor unfold(const Tensor &input, const UnfoldFuncOptions &options);

struct FoldFuncOptions {
  FoldFuncOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  EMBER_ARG(ExpandingArray<2>, output_size);
  EMBER_ARG(ExpandingArray<2>, kernel_size);
  EMBER_ARG(ExpandingArray<2>, dilation) = 1;
  EMBER_ARG(ExpandingArray<2>, padding) = 0;
  EMBER_ARG(ExpandingArray<2>, stride) = 1;
};
/// Sums columns (N, C*kH*kW, L) back into (N, C, H, W) (adjoint of unfold).
Tensor fold(const Tensor &input, const FoldFuncOptions &options);

// =============================================================================
// Padding
// =============================================================================

/// Options of F::pad: (before, after) amounts from the last dim backwards,
/// a mode and the fill value of mode kConstant.
struct PadFuncOptions {
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  EMBER_ARG(std::vector<int64_t>, pad);
  EMBER_ARG(PadMode, mode) = kConstant;
  EMBER_ARG(double, value) = 0;
};
/// Pads (or, with negative amounts in constant mode, crops) the trailing
/// dims. reflect / replicate / circular pad the last 1 or 2 dims (3-d and
/// 4-d inputs with and without batch, as PyTorch).
Tensor pad(const Tensor &input, const PadFuncOptions &options);

// =============================================================================
// Attention
// =============================================================================

/// softmax(q @ k^T * scale + mask) @ v over (..., L, E) queries, (..., S, E)
/// keys and (..., S, Ev) values. attn_mask broadcasts to (..., L, S): a bool
/// mask says which positions take part, a float mask is added to the scores.
/// is_causal applies a lower-triangular mask (no attn_mask with it); a query
/// whose keys are all masked gets zero weights (as PyTorch). scale
/// defaults to 1/sqrt(E). dropout_p drops attention weights (always applied,
/// as in PyTorch's functional form: pass 0 in evaluation).
Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const Tensor &attn_mask = {},
                                    double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);

// =============================================================================
// Losses
// =============================================================================

/// Options of F::mse_loss.
struct MSELossFuncOptions {
  EMBER_REDUCTION_CTORS(MSELossFuncOptions)
  EMBER_ARG(Reduction, reduction);
};
/// (input - target)^2, reduced. Shapes broadcast.
Tensor mse_loss(const Tensor &input, const Tensor &target,
                const MSELossFuncOptions &options = {});

/// Options of F::l1_loss.
struct L1LossFuncOptions {
  EMBER_REDUCTION_CTORS(L1LossFuncOptions)
  EMBER_ARG(Reduction, reduction);
};
/// |input - target|, reduced.
Tensor l1_loss(const Tensor &input, const Tensor &target,
               const L1LossFuncOptions &options = {});

/// Options of F::smooth_l1_loss.
struct SmoothL1LossFuncOptions {
  EMBER_REDUCTION_CTORS(SmoothL1LossFuncOptions)
  EMBER_ARG(Reduction, reduction);
  EMBER_ARG(double, beta) = 1.0;
};
/// 0.5 d^2 / beta for |d| < beta, |d| - 0.5 beta otherwise (d = input -
/// target); beta = 0 is the L1 loss.
Tensor smooth_l1_loss(const Tensor &input, const Tensor &target,
                      const SmoothL1LossFuncOptions &options = {});

/// Options of F::huber_loss.
struct HuberLossFuncOptions {
  EMBER_REDUCTION_CTORS(HuberLossFuncOptions)
  EMBER_ARG(Reduction, reduction);
  EMBER_ARG(double, delta) = 1.0;
};
/// 0.5 d^2 for |d| <= delta, delta (|d| - 0.5 delta) otherwise.
Tensor huber_loss(const Tensor &input, const Tensor &target,
                  const HuberLossFuncOptions &options = {});

/// Options of F::nll_loss.
struct NLLLossFuncOptions {
  EMBER_REDUCTION_CTORS(NLLLossFuncOptions)
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(Reduction, reduction);
};
/// -input[n, target[n], ...] * weight[target[n]], for log-probabilities
/// input (N, C), (N, C, d1, ...) or (C) and int64 class targets (N),
/// (N, d1, ...) or (). mean divides by the summed weights of the targets
/// that are not ignore_index.
Tensor nll_loss(const Tensor &input, const Tensor &target,
                const NLLLossFuncOptions &options = {});

/// Options of F::cross_entropy.
struct CrossEntropyFuncOptions {
  EMBER_REDUCTION_CTORS(CrossEntropyFuncOptions)
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(Reduction, reduction);
  EMBER_ARG(double, label_smoothing) = 0.0;
};
/// log_softmax over dim 1 (dim 0 for unbatched input) followed by the
/// negative log-likelihood. target holds class indices (int64, shape of
/// input without the class dim) or class probabilities (floating, shape of
/// input).
Tensor cross_entropy(const Tensor &input, const Tensor &target,
                     const CrossEntropyFuncOptions &options = {});

/// Options of F::binary_cross_entropy.
struct BinaryCrossEntropyFuncOptions {
  EMBER_REDUCTION_CTORS(BinaryCrossEntropyFuncOptions)
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction);
};
/// -(t log(x) + (1 - t) log(1 - x)) for probabilities x in [0, 1]; the logs
/// are clamped to >= -100 as PyTorch.
Tensor binary_cross_entropy(const Tensor &input, const Tensor &target,
                            const BinaryCrossEntropyFuncOptions &options = {});

/// Options of F::binary_cross_entropy_with_logits.
struct BinaryCrossEntropyWithLogitsFuncOptions {
  EMBER_REDUCTION_CTORS(BinaryCrossEntropyWithLogitsFuncOptions)
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction);
  EMBER_ARG(Tensor, pos_weight) = {};
};
/// binary_cross_entropy(sigmoid(x), t), computed stably from the logits x:
/// -(pos_weight t log sigmoid(x) + (1 - t) log sigmoid(-x)).
Tensor binary_cross_entropy_with_logits(
    const Tensor &input, const Tensor &target,
    const BinaryCrossEntropyWithLogitsFuncOptions &options = {});

} // namespace ember::nn::functional
