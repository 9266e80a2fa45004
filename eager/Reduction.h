#pragma once
/// The reductions code generators compute: ops.yaml `reduction: <kind>`.

#include "eager/Dispatcher.h"

namespace ember {

/// How a reduction op folds `self`: its kind and where its arguments are.
struct ReductionInfo {
  /// sum: in acc_t (double for floats, int64 for integers); mean: the sum
  /// divided by the count, in double; amax / amin: in the compute type, a
  /// NaN wins.
  enum Kind { Sum, Mean, Amax, Amin } kind;
  int dim = -1;     ///< index of `int[1]? dim` (-1: every dim)
  int keepdim = -1; ///< index of `bool keepdim` (-1: false)
  int dtype = -1;   ///< index of `ScalarType? dtype` (-1: none)
};

/// The fold of a reduction op, or null for an op that is not one of those
/// kinds (argmax, var, ...: its own kernel only).
const ReductionInfo *find_reduction(const OperatorHandle &op);

} // namespace ember
