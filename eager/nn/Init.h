#pragma once
/// ember::nn::init: in-place initialisation of parameters (libtorch's
/// torch/nn/init.h, PyTorch's torch.nn.init). Every function fills its
/// tensor under NoGradGuard with values from ember's default generator
/// (seed it with ember::manual_seed) and returns it.
///
///   ember::nn::init::kaiming_normal_(w, 0.0, ember::kFanOut, ember::kReLU);
///   ember::nn::init::xavier_uniform_(w, ember::nn::init::calculate_gain(
///                                           ember::kTanh));

#include "eager/Enum.h"
#include "eager/Tensor.h"

#include <cstdint>
#include <string_view>
#include <tuple>
#include <variant>

namespace ember {

namespace enumtype {
EMBER_ENUM_TAG(kFanIn, "fan_in")
EMBER_ENUM_TAG(kFanOut, "fan_out")
EMBER_ENUM_TAG(kLinear, "linear")
EMBER_ENUM_TAG(kConv1D, "conv1d")
EMBER_ENUM_TAG(kConv2D, "conv2d")
EMBER_ENUM_TAG(kConv3D, "conv3d")
EMBER_ENUM_TAG(kConvTranspose1D, "conv_transpose1d")
EMBER_ENUM_TAG(kConvTranspose2D, "conv_transpose2d")
EMBER_ENUM_TAG(kConvTranspose3D, "conv_transpose3d")
EMBER_ENUM_TAG(kSigmoid, "sigmoid")
EMBER_ENUM_TAG(kTanh, "tanh")
EMBER_ENUM_TAG(kReLU, "relu")
EMBER_ENUM_TAG(kLeakyReLU, "leaky_relu")
} // namespace enumtype

/// Fan modes of the Kaiming initialisations.
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
/// Nonlinearities of calculate_gain.
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kConvTranspose1D kConvTranspose1D{};
inline constexpr enumtype::kConvTranspose2D kConvTranspose2D{};
inline constexpr enumtype::kConvTranspose3D kConvTranspose3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};

namespace nn::init {

using NonlinearityType =
    std::variant<enumtype::kLinear, enumtype::kConv1D, enumtype::kConv2D,
                 enumtype::kConv3D, enumtype::kConvTranspose1D,
                 enumtype::kConvTranspose2D, enumtype::kConvTranspose3D,
                 enumtype::kSigmoid, enumtype::kTanh, enumtype::kReLU,
                 enumtype::kLeakyReLU>;
using FanModeType = std::variant<enumtype::kFanIn, enumtype::kFanOut>;

/// The recommended gain for a nonlinearity: 1 for linear, convolutions and
/// sigmoid, 5/3 for tanh, sqrt(2) for ReLU, sqrt(2 / (1 + param^2)) for
/// leaky ReLU with negative slope `param`.
double calculate_gain(NonlinearityType nonlinearity, double param = 0.01);

/// (fan_in, fan_out) of a weight of at least 2 dims: size(1) and size(0),
/// each times the product of the remaining (receptive field) sizes.
std::tuple<int64_t, int64_t>
_calculate_fan_in_and_fan_out(const Tensor &tensor);

/// Fills with `value`.
Tensor constant_(Tensor tensor, Scalar value);
/// Fills with 0 / 1.
Tensor zeros_(Tensor tensor);
Tensor ones_(Tensor tensor);
/// Fills with values from U(low, high).
Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
/// Fills with values from N(mean, std^2).
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
/// Fills a 2-d tensor with the identity matrix (ones on the diagonal).
Tensor eye_(Tensor matrix);

/// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio).
Tensor xavier_uniform_(Tensor tensor, double gain = 1.0);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, double gain = 1.0);

/// U(-b, b) with b = gain * sqrt(3 / fan) (He et al.), gain =
/// calculate_gain(nonlinearity, a) and fan the fan_in or fan_out by `mode`.
Tensor kaiming_uniform_(Tensor tensor, double a = 0,
                        FanModeType mode = ember::kFanIn,
                        NonlinearityType nonlinearity = ember::kLeakyReLU);
/// N(0, std^2) with std = gain / sqrt(fan).
Tensor kaiming_normal_(Tensor tensor, double a = 0,
                       FanModeType mode = ember::kFanIn,
                       NonlinearityType nonlinearity = ember::kLeakyReLU);

} // namespace nn::init
} // namespace ember
