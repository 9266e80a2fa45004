#pragma once
/// Convolution and pooling layers (libtorch's torch/nn/modules/conv.h and
/// pooling.h): Conv1d, Conv2d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d.
///
///   ember::nn::Conv2d conv(
///       ember::nn::Conv2dOptions(3, 16, 3).stride(2).padding(1));
///   ember::nn::MaxPool2d pool(ember::nn::MaxPool2dOptions(2));

#include "eager/nn/Cloneable.h"
#include "eager/nn/Functional.h"
#include "eager/nn/Options.h"

#include <string_view>

namespace ember {

namespace enumtype {
/// Tag of the default convolution padding mode (zero padding).
struct kZeros {
  static constexpr std::string_view name() { return "zeros"; }
  bool operator==(const kZeros &) const = default;
};
} // namespace enumtype
inline constexpr enumtype::kZeros kZeros{};

namespace nn {

/// How a convolution pads its input: ember::kZeros (default), kReflect,
/// kReplicate or kCircular, or the same names as strings (libtorch's
/// conv_padding_mode_t).
class ConvPaddingMode {
public:
  enum Kind : uint8_t { Zeros, Reflect, Replicate, Circular };
  constexpr ConvPaddingMode(enumtype::kZeros) : kind_(Zeros) {}
  constexpr ConvPaddingMode(enumtype::kReflect) : kind_(Reflect) {}
  constexpr ConvPaddingMode(enumtype::kReplicate) : kind_(Replicate) {}
  constexpr ConvPaddingMode(enumtype::kCircular) : kind_(Circular) {}
  ConvPaddingMode(std::string_view s);
  ConvPaddingMode(const char *s) : ConvPaddingMode(std::string_view(s)) {}

  constexpr Kind kind() const { return kind_; }
  constexpr bool operator==(const ConvPaddingMode &) const = default;
  std::string_view name() const;
  /// The F::pad mode for the non-zeros modes.
  PadMode pad_mode() const;

private:
  Kind kind_;
};

/// Options of ConvNd (torch::nn::ConvOptions<D>).
template <size_t D> struct ConvOptions {
  ConvOptions(int64_t in_channels, int64_t out_channels,
              ExpandingArray<D> kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels),
        kernel_size_(kernel_size) {}
  /// Channels of the input.
  EMBER_ARG(int64_t, in_channels);
  /// Channels produced by the convolution.
  EMBER_ARG(int64_t, out_channels);
  EMBER_ARG(ExpandingArray<D>, kernel_size);
  EMBER_ARG(ExpandingArray<D>, stride) = 1;
  /// Explicit amounts, or ember::kValid / ember::kSame.
  EMBER_ARG(ConvPadding<D>, padding) = 0;
  EMBER_ARG(ExpandingArray<D>, dilation) = 1;
  /// Blocked connections: in_channels and out_channels must be divisible
  /// by groups.
  EMBER_ARG(int64_t, groups) = 1;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(ConvPaddingMode, padding_mode) = ember::kZeros;
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

/// The shared part of Conv1d and Conv2d (libtorch's ConvNdImpl): weight
/// (out_channels, in_channels / groups, *kernel_size) and bias
/// (out_channels), initialised as PyTorch (kaiming_uniform_(a = sqrt(5)),
/// bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))).
template <size_t D, class Derived>
class ConvNdImpl : public Cloneable<Derived> {
public:
  explicit ConvNdImpl(ConvOptions<D> options);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream &stream) const override;

  ConvOptions<D> options;
  Tensor weight;
  /// Undefined when options.bias() is false.
  Tensor bias;

protected:
  /// Input padded for a non-zeros padding_mode, then convolved.
  Tensor conv_forward(const Tensor &input) const;

private:
  /// F::pad amounts for padding_mode, last dim first, each dim twice.
  std::vector<int64_t> reversed_padding_repeated_twice_;
};

/// 1-d convolution over (N, C_in, L) or (C_in, L) input (torch::nn::Conv1d).
class Conv1dImpl : public ConvNdImpl<1, Conv1dImpl> {
public:
  Conv1dImpl(int64_t input_channels, int64_t output_channels,
             ExpandingArray<1> kernel_size)
      : Conv1dImpl(
            Conv1dOptions(input_channels, output_channels, kernel_size)) {}
  explicit Conv1dImpl(Conv1dOptions options);
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Conv1d);

/// 2-d convolution over (N, C_in, H, W) or (C_in, H, W) input
/// (torch::nn::Conv2d).
class Conv2dImpl : public ConvNdImpl<2, Conv2dImpl> {
public:
  Conv2dImpl(int64_t input_channels, int64_t output_channels,
             ExpandingArray<2> kernel_size)
      : Conv2dImpl(
            Conv2dOptions(input_channels, output_channels, kernel_size)) {}
  explicit Conv2dImpl(Conv2dOptions options);
  Tensor forward(const Tensor &input);
};
EMBER_MODULE(Conv2d);

extern template class ConvNdImpl<1, Conv1dImpl>;
extern template class ConvNdImpl<2, Conv2dImpl>;

// =============================================================================
// Pooling
// =============================================================================

/// Options of MaxPoolNd: kernel_size, stride (= kernel_size by default),
/// padding, dilation, ceil_mode (the same type as F::MaxPoolFuncOptions, as
/// in libtorch).
template <size_t D> using MaxPoolOptions = functional::MaxPoolFuncOptions<D>;
using MaxPool1dOptions = MaxPoolOptions<1>;
using MaxPool2dOptions = MaxPoolOptions<2>;

/// Options of AvgPoolNd: kernel_size, stride (= kernel_size by default),
/// padding, ceil_mode, count_include_pad, divisor_override.
template <size_t D> using AvgPoolOptions = functional::AvgPoolFuncOptions<D>;
using AvgPool1dOptions = AvgPoolOptions<1>;
using AvgPool2dOptions = AvgPoolOptions<2>;

/// Maximum over 1-d windows (torch::nn::MaxPool1d).
class MaxPool1dImpl : public Cloneable<MaxPool1dImpl> {
public:
  MaxPool1dImpl(ExpandingArray<1> kernel_size)
      : MaxPool1dImpl(MaxPool1dOptions(kernel_size)) {}
  explicit MaxPool1dImpl(const MaxPool1dOptions &options);
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  MaxPool1dOptions options;
};
EMBER_MODULE(MaxPool1d);

/// Maximum over 2-d windows (torch::nn::MaxPool2d).
class MaxPool2dImpl : public Cloneable<MaxPool2dImpl> {
public:
  MaxPool2dImpl(ExpandingArray<2> kernel_size)
      : MaxPool2dImpl(MaxPool2dOptions(kernel_size)) {}
  explicit MaxPool2dImpl(const MaxPool2dOptions &options);
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);
  /// The output and the flat index (h * W + w) of each maximum.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor &input);

  MaxPool2dOptions options;
};
EMBER_MODULE(MaxPool2d);

/// Mean over 1-d windows (torch::nn::AvgPool1d).
class AvgPool1dImpl : public Cloneable<AvgPool1dImpl> {
public:
  AvgPool1dImpl(ExpandingArray<1> kernel_size)
      : AvgPool1dImpl(AvgPool1dOptions(kernel_size)) {}
  explicit AvgPool1dImpl(const AvgPool1dOptions &options);
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  AvgPool1dOptions options;
};
EMBER_MODULE(AvgPool1d);

/// Mean over 2-d windows (torch::nn::AvgPool2d).
class AvgPool2dImpl : public Cloneable<AvgPool2dImpl> {
public:
  AvgPool2dImpl(ExpandingArray<2> kernel_size)
      : AvgPool2dImpl(AvgPool2dOptions(kernel_size)) {}
  explicit AvgPool2dImpl(const AvgPool2dOptions &options);
  void reset() override {}
  void pretty_print(std::ostream &stream) const override;
  Tensor forward(const Tensor &input);

  AvgPool2dOptions options;
};
EMBER_MODULE(AvgPool2d);

} // namespace nn
} // namespace ember
