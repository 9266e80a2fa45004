#pragma once
/// Normalization layers (libtorch's torch/nn/modules/batchnorm.h and
/// normalization.h): BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm.

#include "eager/nn/Cloneable.h"
#include "eager/nn/Functional.h"
#include "eager/nn/Options.h"

#include <optional>
#include <vector>

namespace ember::nn {

/// Options of BatchNormNd.
struct BatchNormOptions {
  /// C of the (N, C, *) input.
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  EMBER_ARG(int64_t, num_features);
  /// Added to the variance for numerical stability.
  EMBER_ARG(double, eps) = 1e-5;
  /// Weight of the new batch statistic in the running estimates; nullopt
  /// means a cumulative moving average (PyTorch's momentum=None).
  EMBER_ARG(std::optional<double>, momentum) = 0.1;
  /// Learn a per-channel weight and bias.
  EMBER_ARG(bool, affine) = true;
  /// Keep running_mean / running_var (used in evaluation mode); without
  /// them batch statistics are used in both modes.
  EMBER_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

/// The shared part of BatchNorm1d/2d/3d (libtorch's BatchNormImplBase).
/// Parameters weight (ones) and bias (zeros) when affine; buffers
/// running_mean (zeros), running_var (ones) and num_batches_tracked (int64
/// 0) when track_running_stats. Training normalises with the batch's
/// statistics and updates the running ones (unbiased variance); evaluation
/// uses the running ones.
template <size_t D, class Derived>
class BatchNormImplBase : public Cloneable<Derived> {
public:
  explicit BatchNormImplBase(const BatchNormOptions &options);
  void reset() override;
  /// Zeros running_mean and num_batches_tracked, fills running_var with 1.
  void reset_running_stats();
  /// reset_running_stats(), then weight = 1 and bias = 0.
  void reset_parameters();
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  BatchNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;

protected:
  /// Raises unless input has a dim count this layer accepts.
  virtual void check_input_dim(const Tensor &input) const = 0;
};

/// Batch normalization over (N, C) or (N, C, L) input
/// (torch::nn::BatchNorm1d).
class BatchNorm1dImpl : public BatchNormImplBase<1, BatchNorm1dImpl> {
public:
  using BatchNormImplBase::BatchNormImplBase;

protected:
  void check_input_dim(const Tensor &input) const override;
};
EMBER_MODULE(BatchNorm1d);

/// Batch normalization over (N, C, H, W) input (torch::nn::BatchNorm2d).
class BatchNorm2dImpl : public BatchNormImplBase<2, BatchNorm2dImpl> {
public:
  using BatchNormImplBase::BatchNormImplBase;

protected:
  void check_input_dim(const Tensor &input) const override;
};
EMBER_MODULE(BatchNorm2d);

/// Batch normalization over (N, C, D, H, W) input (torch::nn::BatchNorm3d).
class BatchNorm3dImpl : public BatchNormImplBase<3, BatchNorm3dImpl> {
public:
  using BatchNormImplBase::BatchNormImplBase;

protected:
  void check_input_dim(const Tensor &input) const override;
};
EMBER_MODULE(BatchNorm3d);

extern template class BatchNormImplBase<1, BatchNorm1dImpl>;
extern template class BatchNormImplBase<2, BatchNorm2dImpl>;
extern template class BatchNormImplBase<3, BatchNorm3dImpl>;

/// Options of LayerNorm.
struct LayerNormOptions {
  /// The trailing shape to normalise over.
  LayerNormOptions(std::vector<int64_t> normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_ARG(double, eps) = 1e-5;
  /// Learn a weight (ones) and bias (zeros) of normalized_shape.
  EMBER_ARG(bool, elementwise_affine) = true;
};

/// Layer normalization over the trailing normalized_shape dims
/// (torch::nn::LayerNorm).
class LayerNormImpl : public Cloneable<LayerNormImpl> {
public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(LayerNormOptions options);

  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  LayerNormOptions options;
  /// Undefined without elementwise_affine.
  Tensor weight, bias;
};
EMBER_MODULE(LayerNorm);

} // namespace ember::nn
