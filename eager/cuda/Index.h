#pragma once
/// The CUDA index kernels: gather, index_select, scatter_, scatter_add_ and
/// index_add_ (Note [CUDA index kernels] in eager/cuda/Index.cpp).

#include "eager/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::cuda {

/// One launch of the index kernel, planned (IndexKernel.cuh's IndexPlan in
/// host form): for each point of `sizes`, `direct` at its strides and
/// `indexed` at its strides (0 along the indexed dim) plus
/// index[its strides] * indexed_stride. Mode 0 gathers into `direct`, 1
/// assigns `direct` into `indexed`, 2 adds alpha * direct into `indexed`.
struct IndexLaunch {
  int mode = 0;
  Tensor direct, indexed, index; ///< index: int64, contiguous
  std::vector<int64_t> sizes, direct_strides, indexed_strides, index_strides;
  int64_t indexed_stride = 0;
  Scalar alpha = 1;
  int64_t numel() const;
};

/// The launches of the five ops, on tensors of any device (the ops' checks
/// done, results allocated): `out` is gather's or index_select's result;
/// `work` is the tensor scatter_ / scatter_add_ / index_add_ write.
IndexLaunch plan_gather(const Tensor &out, const Tensor &self, int64_t dim,
                        const Tensor &index);
IndexLaunch plan_index_select(const Tensor &out, const Tensor &self,
                              int64_t dim, const Tensor &index);
IndexLaunch plan_scatter(const Tensor &work, int64_t dim, const Tensor &index,
                         const Tensor &src, bool add);
IndexLaunch plan_index_add(const Tensor &work, int64_t dim, const Tensor &index,
                           const Tensor &source, const Scalar &alpha);

/// A launch over `sizes` whose indexed operand is read or written at its
/// `indexed_strides` (0 along `dim`) plus offsets[position along `dim`]
/// elements (int64, contiguous): advanced indexing, whose offsets combine
/// several indices (Note [CUDA advanced indexing]).
IndexLaunch plan_offsets(int mode, const Tensor &direct,
                         std::vector<int64_t> direct_strides,
                         const Tensor &indexed, std::vector<int64_t> sizes,
                         std::vector<int64_t> indexed_strides, int64_t dim,
                         const Tensor &offsets);
/// Row-major strides of `sizes`.
std::vector<int64_t> plan_contiguous_strides(const std::vector<int64_t> &sizes);

/// Raises IndexError (the CPU kernels' text, after `op`) unless every index
/// of the launch is in [0, the indexed operand's size along `dim`).
void check_range_of(const IndexLaunch &launch, const char *op, int64_t dim);

/// Runs a launch on its CUDA device (NVRTC-compiled on first use).
void run_index(const IndexLaunch &launch);
/// Runs a launch on the host, point by point: the device code compiled as
/// host C++, on CPU tensors (how test_cuda checks the kernels without a
/// GPU).
void run_index_on_host(const IndexLaunch &launch);
/// The NVRTC source of the kernel "ember_index" of `mode` on `dtype`.
std::string index_source(int mode, ScalarType dtype);

} // namespace ember::cuda
