#pragma once
/// The intra-op thread pool: one per process, sized by EMBER_NUM_THREADS.

#include <cstdint>
#include <functional>

namespace ember {

/// Threads used by parallel_for, matrix products included (BLAS itself runs
/// on one thread: Note [Threading matrix products]).
int get_num_threads();
void set_num_threads(int n);

/// Below this many elements of work, a kernel runs on the calling thread.
constexpr int64_t kGrainSize = 32768;

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                       const std::function<void(int64_t, int64_t)> &fn);
bool in_parallel_region();
} // namespace detail

/// Splits [begin, end) into contiguous chunks of at least `grain` and runs
/// fn(chunk_begin, chunk_end) on the pool; the calling thread takes a chunk.
/// Chunking depends only on the range and the thread count, so results are
/// deterministic for a given EMBER_NUM_THREADS. Nested calls run serially.
template <class F>
inline void parallel_for(int64_t begin, int64_t end, int64_t grain,
                         const F &fn) {
  if (end <= begin)
    return;
  if (end - begin <= grain || get_num_threads() == 1 ||
      detail::in_parallel_region()) {
    fn(begin, end);
    return;
  }
  detail::parallel_for_impl(begin, end, grain, fn);
}

} // namespace ember
