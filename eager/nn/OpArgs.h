#pragma once
/// Between nn::functional's options and the op table's arguments (the nn
/// ops' native functions and the F:: forms that call their op): internal to
/// eager/nn/*.cpp.

#include "eager/Tensor.h"
#include "eager/nn/Options.h"

#include <optional>

namespace ember::nn::op_args {

/// An option's tensor as an op's `Tensor?` (undefined: none).
inline std::optional<Tensor> optional_of(const Tensor &t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

/// An ATen `int[D]` argument: one value (for every dimension) or D values.
template <size_t D> ExpandingArray<D> expand(IntArrayRef a) {
  return a.size() == 1 ? ExpandingArray<D>(a[0]) : ExpandingArray<D>(a);
}

} // namespace ember::nn::op_args
