// Pointwise ops whose form depends on an argument's value (gelu's
// approximation, div's rounding mode, clamp's optional bounds): they pick
// the pointwise op to run.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

namespace ember::native {

Tensor gelu(const Tensor &self, std::string_view approximate) {
  if (self.defined() &&
      !isFloatingType(self.dtype())) // as PyTorch's (no promotion)
    throw_unsupported_dtype("gelu", self.dtype());
  if (approximate == "none")
    return ember::_gelu_erf(self);
  if (approximate == "tanh")
    return ember::_gelu_tanh(self);
  throw ValueError("gelu: approximate must be 'none' or 'tanh', got '" +
                   std::string(approximate) + "'");
}

Tensor div_mode(const Tensor &self, const Tensor &other,
                std::optional<std::string_view> rounding_mode) {
  if (!rounding_mode)
    return ember::div(self, other);
  if (*rounding_mode == "trunc")
    return ember::_div_trunc(self, other);
  if (*rounding_mode == "floor")
    return ember::_div_floor(self, other);
  throw ValueError("div expected rounding_mode to be one of None, 'trunc', "
                   "or 'floor' but found '" +
                   std::string(*rounding_mode) + "'");
}

Tensor div_scalar_mode(const Tensor &self, const Scalar &other,
                       std::optional<std::string_view> rounding_mode) {
  return div_mode(self, wrapped_scalar_tensor(other), rounding_mode);
}

Tensor pow_tensor_scalar(const Tensor &self, const Scalar &exponent) {
  meta::check_pow_exponent(self.dtype(), exponent);
  return ember::pow(self, wrapped_scalar_tensor(exponent));
}

Tensor pow_scalar_tensor(const Scalar &self, const Tensor &exponent) {
  return ember::pow(wrapped_scalar_tensor(self), exponent);
}

namespace {
/// clamp's one rule for every form: at least one bound must be given.
void checkClampBounds(bool hasMin, bool hasMax) {
  EMBER_CHECK(hasMin || hasMax, "torch.clamp: At least one of 'min' or 'max' ",
              "must not be None");
}
/// A Tensor? bound: given and defined.
bool present(const std::optional<Tensor> &t) { return t && t->defined(); }
} // namespace

Tensor clamp(const Tensor &self, const std::optional<Scalar> &min,
             const std::optional<Scalar> &max) {
  checkClampBounds(min.has_value(), max.has_value());
  if (min && max) {
    // min then max, promoting with both bounds (as PyTorch's clamp).
    const Tensor *ts[] = {&self};
    const Scalar *ss[] = {&*min, &*max};
    ScalarType t = result_type(ArrayRef<const Tensor *>(ts, 1),
                               ArrayRef<const Scalar *>(ss, 2));
    return ember::clamp_max(ember::clamp_min(self.to(t), *min), *max);
  }
  return min ? ember::clamp_min(self, *min) : ember::clamp_max(self, *max);
}

Tensor clamp_tensor(const Tensor &self, const std::optional<Tensor> &min,
                    const std::optional<Tensor> &max) {
  bool hasMin = present(min), hasMax = present(max);
  checkClampBounds(hasMin, hasMax);
  Tensor r = self;
  if (hasMin)
    r = ember::clamp_min(r, *min);
  if (hasMax)
    r = ember::clamp_max(r, *max);
  return r;
}

const Tensor &clamp_(const Tensor &self, const std::optional<Scalar> &min,
                     const std::optional<Scalar> &max) {
  checkClampBounds(min.has_value(), max.has_value());
  if (min)
    self.clamp_min_(*min);
  if (max)
    self.clamp_max_(*max);
  return self;
}

const Tensor &clamp__tensor(const Tensor &self,
                            const std::optional<Tensor> &min,
                            const std::optional<Tensor> &max) {
  bool hasMin = present(min), hasMax = present(max);
  checkClampBounds(hasMin, hasMax);
  if (hasMin)
    self.clamp_min_(*min);
  if (hasMax)
    self.clamp_max_(*max);
  return self;
}

Tensor masked_fill_tensor(const Tensor &self, const Tensor &mask,
                          const Tensor &value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional ",
              "value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  return ember::masked_fill(self, mask, value.item());
}

const Tensor &masked_fill__tensor(const Tensor &self, const Tensor &mask,
                                  const Tensor &value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional ",
              "value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  return self.masked_fill_(mask, value.item());
}

} // namespace ember::native
