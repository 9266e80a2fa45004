#pragma once
/// Helpers of the derivative formulas in ops.yaml (PyTorch's
/// FunctionsManual): each is written with ember ops, never raw loops, so a
/// backward pass is itself differentiable (create_graph) and capturable.

#include "eager/Tensor.h"

#include <array>
#include <optional>
#include <tuple>
#include <vector>

namespace ember::autograd::details {

using variable_list = std::vector<Tensor>;

/// grad * s, skipping the multiplication when s == 1.
Tensor scale(const Tensor &grad, const Scalar &s);
/// grad * -s.
Tensor neg_scale(const Tensor &grad, const Scalar &s);
/// Reinserts the reduced dims of a keepdim=false reduction (for broadcast).
Tensor unsqueeze_reduced(const Tensor &g, IntArrayRef self_sizes,
                         OptionalIntArrayRef dim, bool keepdim);
Tensor sum_backward(const Tensor &grad, IntArrayRef self_sizes,
                    OptionalIntArrayRef dim, bool keepdim);
Tensor mean_backward(const Tensor &grad, IntArrayRef self_sizes,
                     OptionalIntArrayRef dim, bool keepdim);
/// Gradients of mm(mat1, mat2), computed in the memory layout of the input
/// they are for: a column-major (transposed) input such as Linear's
/// weight.t() gets a column-major gradient, whose transpose back is then
/// contiguous (no transposing copy when it is accumulated).
Tensor mm_mat1_backward(const Tensor &grad, const Tensor &mat2,
                        IntArrayRef mat1_strides);
Tensor mm_mat2_backward(const Tensor &grad, const Tensor &mat1,
                        IntArrayRef mat2_strides);
Tensor prod_backward(const Tensor &grad, const Tensor &self, int64_t dim,
                     bool keepdim);
/// max.dim / min.dim / sort / topk: the gradient goes to the selected
/// elements.
Tensor value_selecting_reduction_backward(const Tensor &grad, int64_t dim,
                                          const Tensor &indices,
                                          IntArrayRef self_sizes, bool keepdim);
/// amax / amin: split evenly between ties.
Tensor amax_backward(const Tensor &grad, const Tensor &self,
                     const Tensor &result, IntArrayRef dim, bool keepdim);
Tensor var_backward(const Tensor &grad, const Tensor &self,
                    OptionalIntArrayRef dim,
                    const std::optional<Scalar> &correction, bool keepdim);
Tensor norm_backward(const Tensor &grad, const Tensor &self,
                     const std::optional<Scalar> &p, const Tensor &result,
                     IntArrayRef dim, bool keepdim);
Tensor logsumexp_backward(const Tensor &grad, const Tensor &self,
                          const Tensor &result, IntArrayRef dim, bool keepdim);
Tensor cumsum_backward(const Tensor &grad, int64_t dim);
Tensor cumprod_backward(const Tensor &grad, const Tensor &self, int64_t dim,
                        const Tensor &result);
/// softmax / log_softmax: their one-kernel backward ops
/// (_softmax_backward_data), in the input's dtype.
Tensor softmax_backward(const Tensor &grad, const Tensor &result, int64_t dim,
                        ScalarType self_dtype);
Tensor log_softmax_backward(const Tensor &grad, const Tensor &result,
                            int64_t dim, ScalarType self_dtype);
/// Double backward of _softmax_backward_data(g, y, dim) = y * (g - sum(g y)):
/// the gradient for y.
Tensor softmax_backward_data_output_backward(const Tensor &grad,
                                             const Tensor &grad_output,
                                             const Tensor &output, int64_t dim);
/// Double backward of _log_softmax_backward_data(g, y, dim) =
/// g - exp(y) sum(g): the gradients for g and for y.
Tensor log_softmax_backward_data_grad_output_backward(const Tensor &grad,
                                                      const Tensor &output,
                                                      int64_t dim,
                                                      ScalarType dtype);
Tensor log_softmax_backward_data_output_backward(const Tensor &grad,
                                                 const Tensor &grad_output,
                                                 const Tensor &output,
                                                 int64_t dim);

/// d/dx of _gelu_erf_backward(g, x) = g * (Phi(x) + x phi(x)): g * phi(x) *
/// (2 - x^2).
Tensor gelu_erf_double_backward(const Tensor &grad, const Tensor &grad_output,
                                const Tensor &self);
/// native_layer_norm's gradients (input, weight, bias; those grad_input_mask
/// asks for): its backward kernel, or under create_graph the same formula
/// in differentiable ops (Note [Native layer_norm]).
std::tuple<Tensor, Tensor, Tensor>
layer_norm_backward(const Tensor &grad, const Tensor &input,
                    IntArrayRef normalized_shape, const Tensor &mean,
                    const Tensor &rstd, const std::optional<Tensor> &weight,
                    const std::optional<Tensor> &bias, double eps,
                    std::array<bool, 3> grad_input_mask);
Tensor gelu_tanh_backward(const Tensor &grad, const Tensor &self);
Tensor silu_backward(const Tensor &grad, const Tensor &self);
Tensor softplus_backward(const Tensor &grad, const Tensor &self,
                         const Scalar &beta, const Scalar &threshold);
Tensor pow_backward(const Tensor &grad, const Tensor &self,
                    const Scalar &exponent);
Tensor pow_backward_self(const Tensor &grad, const Tensor &self,
                         const Tensor &exponent);
Tensor pow_backward_exponent(const Tensor &grad, const Tensor &self,
                             const Tensor &exponent, const Tensor &result);
Tensor pow_backward_exponent(const Tensor &grad, const Scalar &base,
                             const Tensor &result);
/// maximum / minimum: split evenly on ties.
Tensor max_min_backward(const Tensor &grad, const Tensor &self,
                        const Tensor &other, bool is_max);
Tensor clamp_backward_mask(const Tensor &grad, const Tensor &keep);
/// fmax's (is_max) or fmin's gradient for self (for_self) or other.
Tensor fmax_fmin_backward(const Tensor &grad, const Tensor &self,
                          const Tensor &other, bool is_max, bool for_self);
/// clamp.Tensor's gradient for self (0), min (1) or max (2).
Tensor clamp_tensor_backward(const Tensor &grad, const Tensor &self,
                             const Tensor &min, const Tensor &max, int which);
/// atan2's gradient for self (y) or other (x).
Tensor atan2_backward(const Tensor &grad, const Tensor &self,
                      const Tensor &other, bool for_self);

Tensor as_strided_backward(const Tensor &grad, const Tensor &self,
                           IntArrayRef size, IntArrayRef stride,
                           std::optional<int64_t> storage_offset);
Tensor permute_backward(const Tensor &grad, IntArrayRef dims);
Tensor select_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                       int64_t index);
Tensor slice_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                      std::optional<int64_t> start, std::optional<int64_t> end,
                      int64_t step);
Tensor diagonal_backward(const Tensor &grad, IntArrayRef self_sizes,
                         int64_t offset, int64_t dim1, int64_t dim2);
Tensor unfold_backward(const Tensor &grad, IntArrayRef self_sizes,
                       int64_t dimension, int64_t size, int64_t step);
variable_list cat_backward(const Tensor &grad, int64_t dim,
                           const std::vector<std::vector<int64_t>> &sizes);
Tensor index_select_backward(const Tensor &grad, IntArrayRef self_sizes,
                             int64_t dim, const Tensor &index);
Tensor gather_backward(const Tensor &grad, IntArrayRef self_sizes, int64_t dim,
                       const Tensor &index);
/// scatter's src gradient: gather at index, zero-padded to src's shape
/// (src may be larger than index; its extra elements are not read).
Tensor scatter_src_backward(const Tensor &grad, int64_t dim,
                            const Tensor &index, IntArrayRef src_sizes);
Tensor masked_select_backward(const Tensor &grad, const Tensor &self,
                              const Tensor &mask);
Tensor index_backward(const Tensor &grad, IntArrayRef self_sizes,
                      const std::vector<Tensor> &indices);
Tensor index_put_self_backward(const Tensor &grad,
                               const std::vector<Tensor> &indices,
                               bool accumulate);
Tensor index_put_values_backward(const Tensor &grad,
                                 const std::vector<Tensor> &indices);
Tensor index_add_source_backward(const Tensor &grad, int64_t dim,
                                 const Tensor &index, int64_t source_dim,
                                 const Scalar &alpha);
Tensor constant_pad_nd_backward(const Tensor &grad, IntArrayRef pad);
Tensor im2col_backward(const Tensor &grad, IntArrayRef self_sizes,
                       IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride);

} // namespace ember::autograd::details
