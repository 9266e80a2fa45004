#pragma once
/// The output geometry and metadata checks of the `cpu:` ops: one function
/// per rule, called by the op's CPU kernel where it sizes its output and by
/// its shape rule (eager/meta/Rules.cpp), so eager and shape inference share
/// one implementation (Note [One set of shape rules] in eager/Meta.cpp).
/// Each reads only metadata and raises the kernel's error on bad arguments;
/// the checks that need values (indices in range) stay in the kernels.

#include "eager/Meta.h"

#include <optional>

namespace ember::meta {

// --- pointwise forms --------------------------------------------------------

/// pow(Tensor, Scalar): no negative integer power of an integer tensor.
void check_pow_exponent(ScalarType self, const Scalar &exponent);

// --- reductions -------------------------------------------------------------

/// sum / prod: int64 for integer and bool inputs unless `dtype` is given.
ScalarType sum_dtype(ScalarType self, std::optional<ScalarType> dtype);
/// mean: a floating dtype (`dtype` or the input's), else TypeError.
ScalarType mean_dtype(ScalarType self, std::optional<ScalarType> dtype);
/// cumsum / cumprod: int64 for integer and bool inputs unless `dtype`.
ScalarType scan_dtype(ScalarType self, std::optional<ScalarType> dtype);
/// softmax / log_softmax: `dtype` or the input's, which must be floating.
ScalarType softmax_dtype(ScalarType self, std::optional<ScalarType> dtype,
                         const char *op);
/// var (and std): floating inputs only.
/// _softmax_backward_data / _log_softmax_backward_data: grad_output and
/// output of one shape and device, floating, and a floating input_dtype.
void check_softmax_backward(const Tensor &grad_output, const Tensor &output,
                            ScalarType input_dtype, const char *op);
void check_var(ScalarType self);
/// native_layer_norm: input [*, normalized_shape] (floating), weight and
/// bias (optional) of normalized_shape on the input's device. M rows of N
/// elements; mean and rstd have stat_sizes (the leading dims, then a 1 per
/// normalized dim) and the compute dtype (float for float16 / bfloat16).
struct LayerNormShape {
  int64_t M = 1, N = 1;
  DimVector stat_sizes;
  ScalarType compute;
};
LayerNormShape layer_norm_shape(const Tensor &input,
                                IntArrayRef normalized_shape,
                                const std::optional<Tensor> &weight,
                                const std::optional<Tensor> &bias);
/// native_layer_norm_backward: the forward's checks, and grad_out, mean and
/// rstd of the shapes the forward gives.
LayerNormShape layer_norm_backward_shape(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask);
/// norm: floating input, a usable order p (none of NaN, a negative order
/// on an empty input, an infinite order over an empty reduction).
void check_norm(const Tensor &self, const std::optional<Scalar> &p,
                IntArrayRef dim);
/// logsumexp: integers and bool compute in the default float dtype.
ScalarType logsumexp_dtype(ScalarType self);
/// all / any: uint8 stays uint8, everything else gives bool.
ScalarType all_any_dtype(ScalarType self);

// --- linear algebra ---------------------------------------------------------

/// mm: [n, k] x [k, m] -> [n, m], same dtype, CPU, no bool.
DimVector mm_sizes(const Tensor &self, const Tensor &mat2);
/// addmm: mm's checks on mat1, mat2; self of their dtype, broadcastable to
/// the product's shape.
DimVector addmm_sizes(const Tensor &self, const Tensor &mat1,
                      const Tensor &mat2);
/// bmm: [b, n, k] x [b, k, m] -> [b, n, m].
DimVector bmm_sizes(const Tensor &self, const Tensor &mat2);
/// baddbmm: bmm's checks on batch1, batch2; self as addmm's.
DimVector baddbmm_sizes(const Tensor &self, const Tensor &batch1,
                        const Tensor &batch2);
/// dot: two 1-d tensors of one dtype and length; the result is 0-dim.
void check_dot(const Tensor &self, const Tensor &tensor);

// --- shape and data ops -----------------------------------------------------

/// What cat produces (Note [Legacy empty tensors in cat], eager/cpu/Shape.cpp).
struct CatMeta {
  DimVector sizes;
  ScalarType dtype;
  Device device;
  int64_t dim = 0;               ///< wrapped concatenation dim
  bool all_legacy_empty = false; ///< every input is a 1-d tensor of size 0
};
CatMeta cat(TensorList tensors, int64_t dim);
/// tril / triu: at least 2 dims.
void check_triangle(const Tensor &self, const char *name);
/// constant_pad_nd: the padded (or cropped) sizes.
DimVector constant_pad_sizes(const Tensor &self, IntArrayRef pad);
/// equal: same device and dtype (sizes may differ: then false).
void check_equal(const Tensor &self, const Tensor &other);
/// _to_copy: the device the copy goes to (this build: the CPU only).
Device to_copy_device(const Tensor &self, std::optional<Device> device);
/// copy_: src defined and broadcastable to self, self writable.
void check_copy(const Tensor &self, const Tensor &src);
/// fill_: self writable (one element may be written through any strides).
void check_fill(const Tensor &self);

// --- indexing ---------------------------------------------------------------

/// index_select: the index is a 0-d or 1-d int32/int64 tensor; self's sizes
/// with dim `dim` replaced by the number of indices.
DimVector index_select_sizes(const Tensor &self, int64_t dim,
                             const Tensor &index);
/// gather / scatter shape rules (PyTorch's gather_shape_check and
/// scatter_shape_check) for a wrapped dim; `src` null for gather.
void check_scatter_gather(const char *op, const Tensor &self, int64_t dim,
                          const Tensor &index, const Tensor *src);
/// scatter_ / scatter_add_: dtypes, shapes, self writable.
void check_scatter(const char *op, const Tensor &self, int64_t dim,
                   const Tensor &index, const Tensor &src);
/// index_add_: index a vector of int32/int64, source of self's dtype and
/// shape but along dim, self writable, an integer alpha on integer dtypes.
void check_index_add(const Tensor &self, int64_t dim, const Tensor &index,
                     const Tensor &source, const Scalar &alpha);
/// masked_select: a bool mask broadcastable with self; the broadcast shape.
DimVector masked_select_shape(const Tensor &self, const Tensor &mask);

/// Advanced indexing (index, index_put_): checks every index (count, dtype,
/// masks' shapes); returns whether one is a mask (bool or uint8), whose
/// result shape depends on its values.
bool check_indices(const Tensor &self, TensorList indices);
/// The shape of an advanced-indexing result (Note [Advanced indexing plan]
/// in eager/cpu/Index.cpp), from one entry per dim of self, masks already
/// turned into integer indices (undefined: the whole dim).
struct IndexShape {
  DimVector b_shape;            ///< broadcast shape of the indices
  DimVector result;             ///< the result's shape
  SmallVector<int64_t, 8> dims; ///< the indexed dims
  bool adjacent = false;        ///< the indexed dims are adjacent
};
IndexShape index_shape(const Tensor &self, TensorList per_dim);
/// index_put_: values of self's dtype that broadcast to the indexing
/// result's shape.
void check_index_put_values(const Tensor &self, const Tensor &values,
                            IntArrayRef result_shape);

// --- sort, topk -------------------------------------------------------------

/// topk: 0 <= k <= size of (wrapped) dim; returns the wrapped dim.
int64_t check_topk(const Tensor &self, int64_t k, int64_t dim);

// --- _im2col / _col2im ------------------------------------------------------

// --- random numbers ---------------------------------------------------------

/// _philox_uniform / _philox_normal / _philox_randint: the state is a CPU
/// int64 tensor of 2 elements (seed, offset), the dtype floating (any
/// dtype when `any_dtype`), the size valid.
void check_philox(const Tensor &state, IntArrayRef size, ScalarType dtype,
                  bool any_dtype, const char *op);
/// randint / _philox_randint: low < high, and for an integral or bool dtype
/// low and high - 1 in its range (PyTorch's check_from_to_in_range).
void check_randint_range(int64_t low, int64_t high, ScalarType dtype);

// --- _im2col / _col2im ------------------------------------------------------

/// A sliding window (kernel, dilation, padding, stride), validated.
struct Window {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};
Window check_window(IntArrayRef kernel_size, IntArrayRef dilation,
                    IntArrayRef padding, IntArrayRef stride);
/// Sliding blocks along one dim (0 when the input is too small).
int64_t sliding_blocks(int64_t size, int64_t k, int64_t d, int64_t p,
                       int64_t s);
/// _im2col: [N, C, H, W] (or [C, H, W]) -> [N, C*kh*kw, L]; a NaN
/// pad_value has no integer value.
DimVector im2col_sizes(const Tensor &self, IntArrayRef kernel_size,
                       IntArrayRef dilation, IntArrayRef padding,
                       IntArrayRef stride, const Scalar &pad_value);
/// _col2im: [N, C*kh*kw, L] (or 2-d) -> [N, C, H, W].
DimVector col2im_sizes(const Tensor &self, IntArrayRef output_size,
                       IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride);

} // namespace ember::meta
