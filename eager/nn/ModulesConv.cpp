#include "eager/nn/ModulesConv.h"

#include "eager/Factory.h"
#include "eager/nn/Init.h"

#include <cmath>

namespace ember::nn {

namespace F = functional;

// --- ConvPaddingMode
// -----------------------------------------------------------

ConvPaddingMode::ConvPaddingMode(std::string_view s) {
  if (s == "zeros")
    kind_ = Zeros;
  else if (s == "reflect")
    kind_ = Reflect;
  else if (s == "replicate")
    kind_ = Replicate;
  else if (s == "circular")
    kind_ = Circular;
  else
    throw ValueError(ember::detail::str(
        "padding_mode must be one of 'zeros', 'reflect', 'replicate' or "
        "'circular', but got padding_mode='",
        s, "'"));
}

std::string_view ConvPaddingMode::name() const {
  switch (kind_) {
  case Zeros:
    return "zeros";
  case Reflect:
    return "reflect";
  case Replicate:
    return "replicate";
  default:
    return "circular";
  }
}

PadMode ConvPaddingMode::pad_mode() const {
  EMBER_INTERNAL_ASSERT(kind_ != Zeros);
  return PadMode(name());
}

// --- ConvNdImpl
// ----------------------------------------------------------------

template <size_t D, class Derived>
ConvNdImpl<D, Derived>::ConvNdImpl(ConvOptions<D> options_)
    : options(std::move(options_)) {
  reset();
}

template <size_t D, class Derived> void ConvNdImpl<D, Derived>::reset() {
  const auto &o = options;
  EMBER_CHECK_VALUE(o.in_channels() >= 0 && o.out_channels() >= 0, "Conv", D,
                    "d: in_channels and out_channels must be "
                    "non-negative, got ",
                    o.in_channels(), " and ", o.out_channels());
  EMBER_CHECK_VALUE(o.groups() > 0, "groups must be a positive integer");
  EMBER_CHECK_VALUE(o.in_channels() % o.groups() == 0,
                    "in_channels must be divisible by groups");
  EMBER_CHECK_VALUE(o.out_channels() % o.groups() == 0,
                    "out_channels must be divisible by groups");
  for (size_t d = 0; d < D; ++d) {
    EMBER_CHECK_VALUE(
        o.kernel_size()[d] > 0 && o.stride()[d] > 0 && o.dilation()[d] > 0,
        "Conv", D,
        "d: kernel_size, stride and dilation must "
        "be positive, got kernel_size=",
        o.kernel_size(), ", stride=", o.stride(), ", dilation=", o.dilation());
    EMBER_CHECK_VALUE(!o.padding().is_same() || o.stride()[d] == 1,
                      "padding='same' is not supported for strided "
                      "convolutions");
    EMBER_CHECK_VALUE(o.padding().amounts()[d] >= 0, "Conv", D,
                      "d: negative padding is not supported, got ",
                      o.padding().amounts());
  }

  reversed_padding_repeated_twice_.assign(2 * D, 0);
  for (size_t d = 0; d < D; ++d) {
    int64_t before, after;
    if (o.padding().is_same()) {
      int64_t total = o.dilation()[d] * (o.kernel_size()[d] - 1);
      before = total / 2;
      after = total - before;
    } else {
      before = after = o.padding().amounts()[d];
    }
    reversed_padding_repeated_twice_[2 * (D - 1 - d)] = before;
    reversed_padding_repeated_twice_[2 * (D - 1 - d) + 1] = after;
  }

  std::vector<int64_t> shape = {o.out_channels(), o.in_channels() / o.groups()};
  for (size_t d = 0; d < D; ++d)
    shape.push_back(o.kernel_size()[d]);
  weight = this->register_parameter("weight", ember::empty(shape));
  if (o.bias())
    bias = this->register_parameter("bias", ember::empty({o.out_channels()}));
  else
    bias = this->register_parameter("bias", Tensor(), /*requires_grad=*/false);
  reset_parameters();
}

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = std::get<0>(init::_calculate_fan_in_and_fan_out(weight));
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <size_t D, class Derived>
void ConvNdImpl<D, Derived>::pretty_print(std::ostream &stream) const {
  const auto &o = options;
  stream << "ember::nn::Conv" << D << "d(" << o.in_channels() << ", "
         << o.out_channels() << ", kernel_size=" << o.kernel_size()
         << ", stride=" << o.stride();
  if (o.padding().is_valid())
    stream << ", padding='valid'";
  else if (o.padding().is_same())
    stream << ", padding='same'";
  else if (o.padding().amounts() != ExpandingArray<D>(0))
    stream << ", padding=" << o.padding().amounts();
  if (o.dilation() != ExpandingArray<D>(1))
    stream << ", dilation=" << o.dilation();
  if (o.groups() != 1)
    stream << ", groups=" << o.groups();
  if (!o.bias())
    stream << ", bias=false";
  if (o.padding_mode() != ConvPaddingMode(ember::kZeros))
    stream << ", padding_mode=" << o.padding_mode().name();
  stream << ")";
}

template <size_t D, class Derived>
Tensor ConvNdImpl<D, Derived>::conv_forward(const Tensor &input) const {
  const auto &o = options;
  F::ConvFuncOptions<D> fo;
  fo.bias(bias).stride(o.stride()).dilation(o.dilation()).groups(o.groups());
  Tensor x = input;
  if (o.padding_mode() == ConvPaddingMode(ember::kZeros)) {
    fo.padding(o.padding());
  } else {
    x = F::pad(input, F::PadFuncOptions(reversed_padding_repeated_twice_)
                          .mode(o.padding_mode().pad_mode()));
    fo.padding(0);
  }
  if constexpr (D == 1)
    return F::conv1d(x, weight, fo);
  else
    return F::conv2d(x, weight, fo);
}

template class ConvNdImpl<1, Conv1dImpl>;
template class ConvNdImpl<2, Conv2dImpl>;

Conv1dImpl::Conv1dImpl(Conv1dOptions options_)
    : ConvNdImpl(std::move(options_)) {}

Tensor Conv1dImpl::forward(const Tensor &input) { return conv_forward(input); }

Conv2dImpl::Conv2dImpl(Conv2dOptions options_)
    : ConvNdImpl(std::move(options_)) {}

Tensor Conv2dImpl::forward(const Tensor &input) { return conv_forward(input); }

// --- pooling
// -------------------------------------------------------------------

namespace {
template <class Options>
void print_max_pool(std::ostream &stream, int dims, const Options &o) {
  stream << std::boolalpha << "ember::nn::MaxPool" << dims
         << "d(kernel_size=" << o.kernel_size() << ", stride=" << o.stride()
         << ", padding=" << o.padding() << ", dilation=" << o.dilation()
         << ", ceil_mode=" << o.ceil_mode() << ")";
}
template <class Options>
void print_avg_pool(std::ostream &stream, int dims, const Options &o) {
  stream << "ember::nn::AvgPool" << dims << "d(kernel_size=" << o.kernel_size()
         << ", stride=" << o.stride() << ", padding=" << o.padding() << ")";
}
} // namespace

MaxPool1dImpl::MaxPool1dImpl(const MaxPool1dOptions &options_)
    : options(options_) {}
void MaxPool1dImpl::pretty_print(std::ostream &stream) const {
  print_max_pool(stream, 1, options);
}
Tensor MaxPool1dImpl::forward(const Tensor &input) {
  return F::max_pool1d(input, options);
}

MaxPool2dImpl::MaxPool2dImpl(const MaxPool2dOptions &options_)
    : options(options_) {}
void MaxPool2dImpl::pretty_print(std::ostream &stream) const {
  print_max_pool(stream, 2, options);
}
Tensor MaxPool2dImpl::forward(const Tensor &input) {
  return F::max_pool2d(input, options);
}
std::tuple<Tensor, Tensor>
MaxPool2dImpl::forward_with_indices(const Tensor &input) {
  return F::max_pool2d_with_indices(input, options);
}

AvgPool1dImpl::AvgPool1dImpl(const AvgPool1dOptions &options_)
    : options(options_) {}
void AvgPool1dImpl::pretty_print(std::ostream &stream) const {
  print_avg_pool(stream, 1, options);
}
Tensor AvgPool1dImpl::forward(const Tensor &input) {
  return F::avg_pool1d(input, options);
}

AvgPool2dImpl::AvgPool2dImpl(const AvgPool2dOptions &options_)
    : options(options_) {}
void AvgPool2dImpl::pretty_print(std::ostream &stream) const {
  print_avg_pool(stream, 2, options);
}
Tensor AvgPool2dImpl::forward(const Tensor &input) {
  return F::avg_pool2d(input, options);
}

} // namespace ember::nn
