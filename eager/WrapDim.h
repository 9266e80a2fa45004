#pragma once
/// Dimension wrapping (negative dims count from the end) with PyTorch's
/// error messages.

#include "eager/ArrayRef.h"

#include <bitset>

namespace ember {

/// Wraps `dim` into [0, ndim); a 0-dim tensor accepts dims -1 and 0.
inline int64_t maybe_wrap_dim(int64_t dim, int64_t ndim,
                              bool scalar_ok = true) {
  int64_t n = (ndim == 0 && scalar_ok) ? 1 : ndim;
  EMBER_CHECK_INDEX(n > 0, "dimension specified as ", dim,
                    " but tensor has no dimensions");
  EMBER_CHECK_INDEX(dim >= -n && dim < n,
                    "Dimension out of range (expected to be in range of [", -n,
                    ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

/// Wraps a dim list; repeated dims are an error.
inline std::bitset<64> dim_list_to_bitset(IntArrayRef dims, int64_t ndim) {
  EMBER_CHECK(ndim <= 64, "only tensors with up to 64 dims are supported");
  std::bitset<64> seen;
  for (int64_t d : dims) {
    int64_t w = maybe_wrap_dim(d, ndim);
    EMBER_CHECK(!seen[size_t(w)], "dim ", w,
                " appears multiple times in the list of dims");
    seen.set(size_t(w));
  }
  return seen;
}

} // namespace ember
