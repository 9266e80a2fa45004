#pragma once
/// Note [Powers by cheaper ops]
/// pow(x, 2) is the most common power (squared errors, variances, norms),
/// and std::pow computes it as any power: 83x slower than x * x over 1M
/// floats on the 2-core VM. As PyTorch's pow_tensor_scalar kernel, a power
/// by a number whose result is floating runs the cheaper op for the
/// exponents that have one, with that op's values (PyTorch's results, which
/// differ from std::pow's in places: pow(-0, 0.5) is -0 as sqrt gives,
/// pow(-inf, 0.5) NaN), each product rounded to the dtype:
///   0.5: sqrt   -0.5: rsqrt   -1: reciprocal   2: x * x
///   3: (x * x) * x   -2: 1 / (x * x)
/// PyTorch sends float16 to std::pow for all but 2 and -1 (whose values
/// are std::pow's, rounded once): so does ember (a probe found float16's
/// pow(-0, 0.5) -0 where PyTorch gives +0). An integer tensor to a
/// floating power (x.pow(3.0) of an int tensor) is converted to the
/// result's dtype first and takes the same forms, as PyTorch's.
/// The eager kernel and the compiler's decomposition (so that the power
/// fuses with its neighbours) both take these forms: one set of values.
#include "eager/Dtype.h"
#include "eager/TensorIterator.h"
#include "eager/generated/Functions.h"

#include <optional>

namespace ember::native {

/// `self` to the power `exponent` by a cheaper op, or nullopt where there
/// is none (an integer tensor, another exponent).
inline std::optional<Tensor> pow_by_cheaper_ops(const Tensor &self,
                                                const Scalar &exponent) {
  if (!self.defined())
    return std::nullopt;
  const ScalarType t = result_type(self, exponent);
  if (!isFloatingType(t))
    return std::nullopt;
  const double e = exponent.toDouble();
  if (e != 0.5 && e != -0.5 && e != -1 && e != 2 && e != 3 && e != -2)
    return std::nullopt;
  if (t == kHalf && e != -1 && e != 2)
    return std::nullopt;
  const Tensor x = self.dtype() == t ? self : self.to(t);
  if (e == 0.5)
    return ember::sqrt(x);
  if (e == -0.5)
    return ember::rsqrt(x);
  if (e == -1)
    return ember::reciprocal(x);
  if (e == 2)
    return ember::mul(x, x);
  if (e == 3)
    return ember::mul(ember::mul(x, x), x);
  return ember::reciprocal(ember::mul(x, x));
}

} // namespace ember::native
