#pragma once
/// The CUDA sort kernel: sort, argsort and topk (Note [CUDA sort] in
/// eager/cuda/Sort.cpp).

#include "eager/Tensor.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ember::cuda {

/// A bitonic sort of rows, planned (SortKernel.cuh's SortPlan in host form,
/// one launch per step): `keys` holds the rows padded to `p`, a power of
/// two, and `indices` each element's position in its row; the network
/// orders both by (key, index) in place.
struct SortLaunch {
  Tensor keys;    ///< (rows, p), contiguous, the dtype being sorted
  Tensor indices; ///< (rows, p), int64, contiguous: arange(p) in each row
  int64_t rows = 0, p = 1, n = 0;
  bool descending = false;
  /// The network's steps (k, j), in launch order: k = 2, 4, ..., p and
  /// j = k / 2, ..., 1; log2(p) * (log2(p) + 1) / 2 of them.
  std::vector<std::pair<int64_t, int64_t>> steps() const;
};

/// The launch that sorts `x` (any layout, on any device) along its last dim,
/// seen as rows x n: a copy of it padded to a power of two, and the indices.
SortLaunch plan_sort(const Tensor &x, bool descending);

/// Runs every step of a launch on its CUDA device (NVRTC-compiled on first
/// use).
void run_sort(const SortLaunch &launch);
/// Runs every step on the host, point by point: the device code compiled as
/// host C++, on CPU tensors (how test_cuda checks the kernel without a GPU).
void run_sort_on_host(const SortLaunch &launch);

/// `x` (at least 1-d) ordered along its last dim by the network, on its
/// device (run_sort for CUDA tensors, run_sort_on_host for CPU ones):
/// (values, int64 indices), each rows x n (views of the padded buffers).
std::tuple<Tensor, Tensor> sort_rows(const Tensor &x, bool descending);

/// The NVRTC source of the kernel "ember_sort" on `dtype`.
std::string sort_source(ScalarType dtype);

} // namespace ember::cuda
