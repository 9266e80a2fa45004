#pragma once
/// What _im2col's kernels share (eager/cpu/Im2col.cpp, eager/cuda/Index.cpp).

#include "eager/Scalar.h"
#include "runtime/ScalarType.h"

namespace ember::native {

/// The value _im2col pads with in dtype `t`, as a Scalar that converts to
/// `t` exactly: integer dtypes saturate (so -inf is the lowest value, which
/// max pooling relies on), floating dtypes round (1e6 is inf in float16).
Scalar im2col_pad_value(const Scalar &pad_value, ScalarType t);

} // namespace ember::native
