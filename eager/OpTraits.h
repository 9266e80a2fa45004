#pragma once
/// Properties of ops the code generators ask the op table (ops.yaml).

#include "eager/Dispatcher.h"

namespace ember {

/// The op converts each element to another dtype (ops.yaml `conversion:`),
/// with eager/Convert.h's semantics, when its result is on its input's
/// device (_to_copy).
bool is_conversion(const OperatorHandle &op);

/// The schema argument whose last dim a contraction sums products over
/// (ops.yaml `contraction:`: mm's self, addmm's mat1), or -1 for any other
/// op. Such an op costs 2 * numel(result) * that size in FLOPs.
int contraction_arg(const OperatorHandle &op);

/// The schema argument holding the (seed, offset) generator state a random
/// op draws from (ops.yaml `random_state:`: _philox_uniform's state), or -1
/// for any other op.
int random_state_arg(const OperatorHandle &op);

} // namespace ember
