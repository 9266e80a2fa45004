#include "eager/nn/Init.h"

#include "eager/Factory.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"

#include <cmath>

namespace ember::nn::init {

namespace {

void check_defined(const Tensor &t, const char *fn) {
  EMBER_CHECK(t.defined(), "nn::init::", fn,
              ": the tensor is undefined; initialise a defined tensor");
}

/// Fills `t` with `values` (float64, same shape), without recording history.
void fill_from(Tensor &t, const Tensor &values) {
  NoGradGuard no_grad;
  t.copy_(values);
}

double correct_fan(const Tensor &t, FanModeType mode) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  return double(std::holds_alternative<enumtype::kFanIn>(mode) ? fan_in
                                                               : fan_out);
}

} // namespace

double calculate_gain(NonlinearityType nonlinearity, double param) {
  if (std::holds_alternative<enumtype::kTanh>(nonlinearity))
    return 5.0 / 3.0;
  if (std::holds_alternative<enumtype::kReLU>(nonlinearity))
    return std::sqrt(2.0);
  if (std::holds_alternative<enumtype::kLeakyReLU>(nonlinearity))
    return std::sqrt(2.0 / (1 + param * param));
  // linear, the convolutions and sigmoid.
  return 1.0;
}

std::tuple<int64_t, int64_t>
_calculate_fan_in_and_fan_out(const Tensor &tensor) {
  check_defined(tensor, "_calculate_fan_in_and_fan_out");
  EMBER_CHECK_VALUE(tensor.dim() >= 2,
                    "Fan in and fan out can not be computed for tensor with "
                    "fewer than 2 dimensions (got ",
                    tensor.dim(), ")");
  int64_t receptive_field = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d)
    receptive_field *= tensor.size(d);
  return {tensor.size(1) * receptive_field, tensor.size(0) * receptive_field};
}

Tensor constant_(Tensor tensor, Scalar value) {
  check_defined(tensor, "constant_");
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) { return constant_(std::move(tensor), 0); }

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }

Tensor uniform_(Tensor tensor, double low, double high) {
  check_defined(tensor, "uniform_");
  EMBER_CHECK_VALUE(low <= high,
                    "uniform_ expects to return a [from, to) range, but "
                    "found from=",
                    low, " > to=", high);
  if (tensor.numel() == 0)
    return tensor;
  // (drawn with the tensor's own digits: [0, 1) stays below 1 in it)
  ScalarType dt = tensor.is_floating_point() ? tensor.scalar_type() : kDouble;
  fill_from(tensor, ember::rand(tensor.sizes(), TensorOptions(dt)).to(kDouble) *
                            (high - low) +
                        low);
  return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std) {
  check_defined(tensor, "normal_");
  EMBER_CHECK_VALUE(std >= 0, "normal_ expects std >= 0.0, but found std ",
                    std);
  if (tensor.numel() == 0)
    return tensor;
  fill_from(tensor,
            ember::randn(tensor.sizes(), TensorOptions(kDouble)) * std + mean);
  return tensor;
}

Tensor eye_(Tensor matrix) {
  check_defined(matrix, "eye_");
  EMBER_CHECK_VALUE(matrix.dim() == 2,
                    "Only tensors with 2 dimensions are supported by eye_, "
                    "got ",
                    matrix.dim());
  fill_from(matrix,
            ember::eye(matrix.size(0), matrix.size(1), TensorOptions(kDouble)));
  return matrix;
}

Tensor xavier_uniform_(Tensor tensor, double gain) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  double std = gain * std::sqrt(2.0 / double(fan_in + fan_out));
  double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(tensor);
  double std = gain * std::sqrt(2.0 / double(fan_in + fan_out));
  return normal_(std::move(tensor), 0, std);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanModeType mode,
                        NonlinearityType nonlinearity) {
  check_defined(tensor, "kaiming_uniform_");
  // A zero-element tensor is a no-op (PyTorch warns), before the fan check.
  if (tensor.numel() == 0)
    return tensor;
  double std =
      calculate_gain(nonlinearity, a) / std::sqrt(correct_fan(tensor, mode));
  double bound = std::sqrt(3.0) * std;
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanModeType mode,
                       NonlinearityType nonlinearity) {
  check_defined(tensor, "kaiming_normal_");
  if (tensor.numel() == 0)
    return tensor;
  double std =
      calculate_gain(nonlinearity, a) / std::sqrt(correct_fan(tensor, mode));
  return normal_(std::move(tensor), 0, std);
}

} // namespace ember::nn::init
