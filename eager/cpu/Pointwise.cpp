#include "eager/Factory.h"
#include "eager/cpu/PointwiseKernel.h"

namespace ember::native {

namespace {
// Note [In-place overlap]
// An in-place op may write into `self` while reading an input that views the
// same memory. Reading exactly the same elements (same view) is safe
// elementwise; any other overlap (x.add_(x.t())) is computed into a
// temporary and copied back, which gives the result of the functional op.
// A `self` whose elements overlap each other (an expanded tensor) cannot be
// written at all.
bool sameView(const Tensor &a, const Tensor &b) {
  return a.data_ptr() == b.data_ptr() && a.sizes() == b.sizes() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}
} // namespace

PointwisePlan plan_pointwise(const PointwiseSpec &spec,
                             ArrayRef<const Tensor *> inputs,
                             ArrayRef<const Scalar *> scalars,
                             const Tensor *self_out) {
  PointwisePlan plan;
  meta::PointwiseMeta m = meta::pointwise(spec, inputs, scalars, self_out);
  ScalarType result = m.compute, outType = m.out;
  const DimVector &shape = m.shape;
  const Device device = m.device;

  // Note [Numbers in reduced precision]
  // float16 / bfloat16 compute in float, each op rounding its result. A C++
  // number operand (a wrapped number) is converted to the op's dtype like
  // any operand (h + 0.3 adds half(0.3)), except as the second operand of
  // the ops whose entry says `float_numbers` (mul, div): there it keeps
  // float precision, as PyTorch's opmath scalar (h * 0.1 multiplies by
  // 0.1f; 1.7 / h is libtorch's empty_like(h).fill_(1.7).div_(h), the
  // number rounded first). The loop then runs in float, its result rounded
  // once. The compiled kernels do the same (codegen/Kernel.cpp converts
  // such a constant to the compute type).
  ScalarType loop_out = outType;
  if (spec.float_numbers && (result == kHalf || result == kBFloat16) &&
      inputs.size() > 1 && !((spec.bool_args >> 1) & 1u) &&
      inputs[1]->unsafeGetTensorImpl()->is_wrapped_number()) {
    if (outType == result)
      loop_out = kFloat;
    result = kFloat;
  }
  plan.compute = result;

  // Output.
  if (self_out) {
    const Tensor &self = *self_out;
    bool overlap = false;
    for (const Tensor *t : inputs)
      if (t->is_alias_of(self) && !sameView(*t, self) && t->numel() > 0)
        overlap = true;
    plan.result = self;
    plan.inplace = true;
    plan.copy_back = overlap || self.dtype() != loop_out;
    plan.out = plan.copy_back
                   ? empty(shape, TensorOptions(loop_out).device(device))
                   : self;
  } else if (loop_out != outType) {
    plan.out = empty(shape, TensorOptions(loop_out).device(device));
    plan.result = empty(shape, TensorOptions(outType).device(device));
    plan.copy_back = true;
  } else {
    plan.out = empty(shape, TensorOptions(outType).device(device));
    plan.result = plan.out;
  }

  // Inputs in the loop's dtypes.
  plan.inputs.reserve(inputs.size());
  plan.flat = plan.out.is_contiguous();
  for (size_t i = 0; i < inputs.size(); ++i) {
    ScalarType want = ((spec.bool_args >> i) & 1u) ? kBool : result;
    const Tensor &t = *inputs[i];
    if (t.dtype() == want)
      plan.inputs.push_back(t);
    else if (t.numel() == 1 && t.dim() == 0) {
      // A 0-dim operand converted as the kernel converts it (u8 + 300
      // wraps, half * -1e9 is -inf, as PyTorch), not checked as fill_
      // checks a value a user asked to store.
      Tensor c = empty({}, TensorOptions(want));
      Scalar v = t.item();
      dispatch_dtype(want, spec.name,
                     [&]<class T>() { *c.data_ptr<T>() = v.to<T>(); });
      plan.inputs.push_back(c);
    } else
      plan.inputs.push_back(t.to(want));
    const Tensor &in = plan.inputs.back();
    plan.flat =
        plan.flat && (in.numel() == 1 ||
                      (in.is_contiguous() && in.sizes() == plan.out.sizes()));
  }
  if (spec.nonzero_divisor >= 0 && isIntegralType(result, true) &&
      plan.out.numel() > 0) {
    const Tensor &d = plan.inputs[size_t(spec.nonzero_divisor)];
    EMBER_CHECK_VALUE(
        !d.eq(wrapped_scalar_tensor(Scalar(0))).to(kCPU).any().item<bool>(),
        "ZeroDivisionError: ", spec.name, " of integer tensors by zero");
  }
  return plan;
}

void finish_pointwise(PointwisePlan &plan) {
  if (plan.copy_back)
    plan.result.copy_(plan.out); // copy_ bumps the version itself
  else if (plan.inplace)
    plan.result.unsafeGetTensorImpl()->bump_version();
}

} // namespace ember::native
