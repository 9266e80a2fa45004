// Pointwise ops whose form depends on an argument's value (gelu's
// approximation, div's rounding mode, clamp's optional bounds): they pick
// the pointwise op to run.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/autograd/GradMode.h"
#include "eager/cpu/PowByCheaperOps.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"

#include <array>
#include <limits>
#include <vector>

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
  // Note [Powers by cheaper ops]; and as PyTorch's pow_out, a floating
  // tensor to the power 0 is ones, to the power 1 a copy.
  if (std::optional<Tensor> r = pow_by_cheaper_ops(self, exponent))
    return *r;
  if (self.defined() && isFloatingType(self.dtype())) {
    if (exponent.toDouble() == 0)
      return ember::ones_like(self);
    if (exponent.toDouble() == 1)
      return self.clone();
  }
  return ember::pow(self, wrapped_scalar_tensor(exponent));
}

const Tensor &pow__scalar(const Tensor &self, const Scalar &exponent) {
  // x.pow_(2): the power (its forms, its gradient), written into self; as
  // PyTorch, a result self's dtype cannot hold raises.
  Tensor r = ember::pow(self, exponent);
  EMBER_CHECK_TYPE(
      can_cast(r.dtype(), self.dtype()), "result type ", toString(r.dtype()),
      " can't be cast to the desired output type ", toString(self.dtype()));
  return self.copy_(r);
}

Tensor pow_scalar_tensor(const Scalar &self, const Tensor &exponent) {
  return ember::pow(wrapped_scalar_tensor(self), exponent);
}

Tensor floor_divide(const Tensor &self, const Tensor &other) {
  return ember::div(self, other, "floor"); // as PyTorch's floor_divide
}

Tensor floor_divide_scalar(const Tensor &self, const Scalar &other) {
  return ember::div(self, other, "floor");
}

namespace {
/// nan_to_num's replacements: the given ones, else 0 for NaN and the
/// dtype's largest and lowest finite values for the infinities.
std::array<Scalar, 3> nanToNumValues(ScalarType t, std::optional<double> nan,
                                     std::optional<double> posinf,
                                     std::optional<double> neginf) {
  // The largest finite value, and where rounding to the dtype reaches
  // infinity (half an ulp above it, the tie rounding up).
  double top = t == kHalf       ? 65504.0
               : t == kBFloat16 ? 3.3895313892515355e38
               : t == kFloat    ? double(std::numeric_limits<float>::max())
                                : std::numeric_limits<double>::max();
  double edge = t == kHalf       ? 65520.0
                : t == kBFloat16 ? 0x1.ffp127
                : t == kFloat    ? 0x1.ffffffp127
                                 : INFINITY;
  // A given value beyond the dtype's range becomes what PyTorch's cast
  // makes of it: inf from the edge up, else the largest value (1e10 for a
  // float16 tensor is inf there; it would not pass the op's checked
  // conversion).
  auto cast = [&](double v) {
    return std::fabs(v) >= edge ? std::copysign(INFINITY, v)
           : std::fabs(v) > top ? std::copysign(top, v)
                                : v;
  };
  return {cast(nan.value_or(0.0)), cast(posinf.value_or(top)),
          cast(neginf.value_or(-top))};
}
} // namespace

Tensor nan_to_num(const Tensor &self, std::optional<double> nan,
                  std::optional<double> posinf, std::optional<double> neginf) {
  if (self.defined() && !isFloatingType(self.dtype()))
    return self.clone(); // (no NaN or infinity to replace, as PyTorch)
  auto v = nanToNumValues(self.defined() ? self.dtype() : kFloat, nan, posinf,
                          neginf);
  return ember::_nan_to_num(self, v[0], v[1], v[2]);
}

const Tensor &nan_to_num_(const Tensor &self, std::optional<double> nan,
                          std::optional<double> posinf,
                          std::optional<double> neginf) {
  if (self.defined() && !isFloatingType(self.dtype()))
    return self;
  auto v = nanToNumValues(self.defined() ? self.dtype() : kFloat, nan, posinf,
                          neginf);
  return ember::_nan_to_num_(self, v[0], v[1], v[2]);
}

namespace {
/// A number where() writes into its result must fit the result's dtype
/// (PyTorch: "value cannot be converted to type int8_t without overflow").
/// float16 and bfloat16 results take any number (PyTorch's where gives inf
/// or the rounded value there).
const Tensor &checkFits(const Tensor &result, const Scalar &s) {
  if (result.dtype() != kHalf && result.dtype() != kBFloat16)
    dispatch_dtype(result.dtype(), "where",
                   [&]<class T>() { (void)s.template checked_to<T>(); });
  return result;
}
} // namespace

Tensor where_scalar_self(const Tensor &condition, const Scalar &self,
                         const Tensor &other) {
  return checkFits(ember::where(condition, wrapped_scalar_tensor(self), other),
                   self);
}

Tensor where_scalar_other(const Tensor &condition, const Tensor &self,
                          const Scalar &other) {
  return checkFits(ember::where(condition, self, wrapped_scalar_tensor(other)),
                   other);
}

Tensor where_scalars(const Tensor &condition, const Scalar &self,
                     const Scalar &other) {
  return checkFits(
      checkFits(ember::where(condition, wrapped_scalar_tensor(self),
                             wrapped_scalar_tensor(other)),
                self),
      other);
}

Tensor count_nonzero_dims(const Tensor &self, IntArrayRef dim) {
  return (self != 0).sum(dim);
}

Tensor count_nonzero(const Tensor &self, std::optional<int64_t> dim) {
  return dim ? (self != 0).sum(IntArrayRef{*dim}) : (self != 0).sum();
}

namespace {
/// clamp's one rule for every form: at least one bound must be given.
void checkClampBounds(bool hasMin, bool hasMax) {
  EMBER_CHECK(hasMin || hasMax, "torch.clamp: At least one of 'min' or 'max' ",
              "must not be None");
}
/// PyTorch's clamp of an integral dtype `t`: a bound beyond t's range on
/// its own side (a min below the lowest value, a max above the highest)
/// clamps nothing and is dropped. One beyond the other side reaches
/// clamp_min/clamp_max, which raise (their `bound_scalars`).
std::optional<Scalar> effectiveBound(const std::optional<Scalar> &b,
                                     ScalarType t, bool isMin) {
  if (!b || !isIntegralType(t, false) || !b->isIntegral(false))
    return b;
  bool beyond = false;
  dispatch_dtype(t, "clamp", [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      int64_t v = b->toLong();
      beyond = isMin ? v < int64_t(std::numeric_limits<T>::lowest())
                     : v > int64_t(std::numeric_limits<T>::max());
    }
  });
  return beyond ? std::nullopt : b;
}
/// A Tensor? bound: given and defined.
bool present(const std::optional<Tensor> &t) { return t && t->defined(); }
} // namespace

Tensor clamp(const Tensor &self, const std::optional<Scalar> &min,
             const std::optional<Scalar> &max) {
  checkClampBounds(min.has_value(), max.has_value());
  EMBER_CHECK(self.defined(), "clamp: argument 0 is an undefined tensor");
  // The result's dtype, promoting with both bounds (as PyTorch's clamp).
  const Tensor *ts[] = {&self};
  std::vector<const Scalar *> ss;
  for (const auto *b : {&min, &max})
    if (b->has_value())
      ss.push_back(&**b);
  ScalarType t = result_type(ArrayRef<const Tensor *>(ts, 1),
                             ArrayRef<const Scalar *>(ss.data(), ss.size()));
  std::optional<Scalar> lo = effectiveBound(min, t, true),
                        hi = effectiveBound(max, t, false);
  if (!lo && !hi) // every bound beyond the dtype's range: a copy
    return ember::clone(self.to(t));
  Tensor r = self.to(t);
  if (lo && hi)
    return ember::_clamp(r, *lo, *hi);
  return lo ? ember::clamp_min(r, *lo) : ember::clamp_max(r, *hi);
}

Tensor clamp_tensor(const Tensor &self, const std::optional<Tensor> &min,
                    const std::optional<Tensor> &max) {
  bool hasMin = present(min), hasMax = present(max);
  checkClampBounds(hasMin, hasMax);
  EMBER_CHECK(self.defined(), "clamp: argument 0 is an undefined tensor");
  // The result's dtype, promoting with both bounds at once (as PyTorch's
  // clamp.Tensor; pairwise, a float16 self rounded an int32 lower bound of
  // 2049 to 2048 before a float32 upper bound made the result float32).
  std::vector<const Tensor *> ts{&self};
  if (hasMin)
    ts.push_back(&*min);
  if (hasMax)
    ts.push_back(&*max);
  Tensor r =
      self.to(result_type(ArrayRef<const Tensor *>(ts.data(), ts.size())));
  if (hasMin && hasMax)
    return ember::_clamp_tensor(r, *min, *max);
  return hasMin ? ember::clamp_min(r, *min) : ember::clamp_max(r, *max);
}

const Tensor &clamp_(const Tensor &self, const std::optional<Scalar> &min,
                     const std::optional<Scalar> &max) {
  checkClampBounds(min.has_value(), max.has_value());
  std::optional<Scalar> lo = effectiveBound(min, self.dtype(), true),
                        hi = effectiveBound(max, self.dtype(), false);
  if (lo && hi)
    ember::_clamp_(self, *lo, *hi);
  else if (lo)
    self.clamp_min_(*lo);
  else if (hi)
    self.clamp_max_(*hi);
  return self;
}

const Tensor &clamp__tensor(const Tensor &self,
                            const std::optional<Tensor> &min,
                            const std::optional<Tensor> &max) {
  bool hasMin = present(min), hasMax = present(max);
  checkClampBounds(hasMin, hasMax);
  // (both at once: computed in the type of all three, as clamp_tensor)
  if (hasMin && hasMax)
    return ember::_clamp_tensor_(self, *min, *max);
  return hasMin ? self.clamp_min_(*min) : self.clamp_max_(*max);
}

namespace {
/// masked_fill with a value that records a gradient: as PyTorch, the value
/// gets the sum of the gradient over the filled points (value.item() would
/// cut it off). The mask must broadcast to self's shape, as for the fill.
bool valueNeedsGrad(const Tensor &value) {
  return value.requires_grad() && GradMode::is_enabled();
}
Tensor filledWithGrad(const Tensor &self, const Tensor &mask,
                      const Tensor &value) {
  return ember::where(mask.expand(self.sizes()), value.to(self.dtype()), self);
}
} // namespace

Tensor masked_fill_tensor(const Tensor &self, const Tensor &mask,
                          const Tensor &value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional ",
              "value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  if (valueNeedsGrad(value))
    return filledWithGrad(self, mask, value);
  return ember::masked_fill(self, mask, value.item());
}

const Tensor &masked_fill__tensor(const Tensor &self, const Tensor &mask,
                                  const Tensor &value) {
  EMBER_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional ",
              "value tensor, but got tensor with ", value.dim(),
              " dimension(s).");
  if (valueNeedsGrad(value))
    return self.copy_(filledWithGrad(self, mask, value));
  return self.masked_fill_(mask, value.item());
}

} // namespace ember::native
