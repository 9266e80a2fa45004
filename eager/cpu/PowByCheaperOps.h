#pragma once
/// Note [Powers by cheaper ops]
/// pow(x, 2) is the most common power (squared errors, variances, norms),
/// and std::pow computes it as any power: 83x slower than x * x over 1M
/// floats on the 2-core VM. As PyTorch's pow_tensor_scalar kernel, a
/// floating tensor's power by a number runs the cheaper op for the
/// exponents that have one, with that op's values (PyTorch's results, which
/// differ from std::pow's in places: pow(-0, 0.5) is -0 as sqrt gives,
/// pow(-inf, 0.5) NaN):
///   0.5: sqrt   -0.5: rsqrt   -1: reciprocal   2: x * x
///   3: x * x * x   -2: 1 / (x * x)   (float and double only: a 16-bit
///   float rounds each product, where PyTorch rounds the power once, so
///   its 3 and -2 stay std::pow in float, rounded once)
/// The eager kernel and the compiler's decomposition (so that the power
/// fuses with its neighbours) both take these forms: one set of values.
#include "eager/Dtype.h"
#include "eager/generated/Functions.h"

#include <optional>

namespace ember::native {

/// `self` to the power `exponent` by a cheaper op, or nullopt where there
/// is none (an integer tensor, another exponent).
inline std::optional<Tensor> pow_by_cheaper_ops(const Tensor &self,
                                                const Scalar &exponent) {
  if (!self.defined() || !isFloatingType(self.dtype()))
    return std::nullopt;
  const double e = exponent.toDouble();
  const bool wide = !isReducedFloatingType(self.dtype());
  if (e == 0.5)
    return ember::sqrt(self);
  if (e == -0.5)
    return ember::rsqrt(self);
  if (e == -1)
    return ember::reciprocal(self);
  if (e == 2)
    return ember::mul(self, self);
  if (e == 3 && wide)
    return ember::mul(ember::mul(self, self), self);
  if (e == -2 && wide)
    return ember::reciprocal(ember::mul(self, self));
  return std::nullopt;
}

} // namespace ember::native
