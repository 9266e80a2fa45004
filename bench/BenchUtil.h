#pragma once
/// Pieces the benchmark programs share.

#include <ember/ember.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace ember::bench {

/// The copy floor every benchmark compares kernels with: `src`'s bytes
/// copied into `dst` (both contiguous, of one size) by memcpy in parallel
/// on ember's thread pool, the pool the kernels run on, in chunks of at
/// least 1 MiB.
inline void parallel_copy(const Tensor &dst, const Tensor &src) {
  char *d = static_cast<char *>(dst.data_ptr());
  const char *s = static_cast<const char *>(src.data_ptr());
  parallel_for(0, int64_t(src.nbytes()), int64_t(1) << 20,
               [&](int64_t lo, int64_t hi) {
                 std::memcpy(d + lo, s + lo, size_t(hi - lo));
               });
}

/// Prints `ms` as the JSON array of a result line: `"ms": [1.2345, ...]}`
/// and a newline, then flushes.
inline void print_ms(const std::vector<double> &ms) {
  std::printf("\"ms\": [");
  for (size_t i = 0; i < ms.size(); ++i)
    std::printf("%s%.4f", i ? ", " : "", ms[i]);
  std::printf("]}\n");
  std::fflush(stdout);
}

} // namespace ember::bench
