#pragma once
/// Decompositions: ops written with other ops, for the compiler.
///
/// An op with `decompose: name` in ops.yaml has a second implementation,
/// ember::native::decompose::name in eager/ops/Decompositions.cpp, that
/// computes it with other ops (softmax: amax, sub, exp, sum, div). Eager never
/// calls it (the op's kernel is faster there); the compiler's ember-decompose
/// pass runs it on fake tensors under a recording mode and puts the ops it
/// called in place of the op, so that its reductions and pointwise ops fuse
/// with their neighbours. A decomposition raises ember::Error for an input it
/// does not cover (the op then stays whole).

#include "eager/Dispatcher.h"

namespace ember {

/// The decomposition of `op` as a kernel (called boxed: the op's arguments
/// on the stack, its results after), or null when it has none.
const KernelFunction *find_decomposition(const OperatorHandle &op);

} // namespace ember
