// The shape rules of the `cpu:` ops (declared in the generated
// MetaFunctions.h, with their kernels' signatures). Each calls the geometry
// function its kernel calls (eager/meta/Shapes.h, or the reduction engine's
// reduce_dims) and wraps the result in fake tensors: contiguous, on the
// input's device, as the kernels allocate them.
#include "eager/WrapDim.h"
#include "eager/cpu/ReduceUtils.h"
#include "eager/generated/Functions.h"
#include "eager/generated/MetaFunctions.h"
#include "eager/meta/MetaSupport.h"
#include "eager/meta/Shapes.h"

namespace ember::meta::rules {

using detail::needs_data;
using detail::one;
using detail::two;
using native::reduce::check_nonempty_reduction;
using native::reduce::reduce_dim;
using native::reduce::reduce_dims;

namespace {

/// A fake tensor of `sizes` and `dtype` on ref's device.
Tensor like(IntArrayRef sizes, ScalarType dtype, const Tensor &ref) {
  return fake(sizes, dtype, ref.device());
}

/// The result of an in-place op: self itself, as eager returns it.
Result self_result(const Tensor &self) { return one(self); }

IntArrayRef dimsOrAll(OptionalIntArrayRef dim) {
  return dim.has_value() ? *dim : IntArrayRef();
}

/// The rule of another op of the table, on fake arguments.
Result inferOp(const OperatorHandle &op, Stack args) { return infer(op, args); }

} // namespace

// --- pointwise forms with a scalar ------------------------------------------

Result pow_tensor_scalar(const Tensor &self, const Scalar &exponent) {
  check_pow_exponent(self.dtype(), exponent);
  return inferOp(ops::pow_Tensor_Tensor(),
                 {self, fake_wrapped_number(exponent.type())});
}

Result pow_scalar_tensor(const Scalar &self, const Tensor &exponent) {
  return inferOp(ops::pow_Tensor_Tensor(),
                 {fake_wrapped_number(self.type()), exponent});
}

// --- data movement ----------------------------------------------------------

Result copy_(const Tensor &self, const Tensor &src, bool) {
  check_copy(self, src);
  return self_result(self);
}

Result fill_(const Tensor &self, const Scalar &) {
  check_fill(self);
  return self_result(self);
}

Result _to_copy(const Tensor &self, std::optional<ScalarType> dtype,
                std::optional<Device> device) {
  Device dev = to_copy_device(self, device);
  return one(fake(self.sizes(), dtype.value_or(self.dtype()), dev));
}

Result clone(const Tensor &self) {
  return one(like(self.sizes(), self.dtype(), self));
}

Result as_strided_scatter(const Tensor &self, const Tensor &src,
                          IntArrayRef size, IntArrayRef stride,
                          std::optional<int64_t> storage_offset) {
  Tensor out = like(self.sizes(), self.dtype(), self);
  // The region is a view of the (contiguous) output: its kernel checks the
  // geometry against the output's storage.
  Result region =
      inferOp(ops::as_strided(), {out, size, stride, IValue(storage_offset)});
  EMBER_CHECK_VALUE(region.outputs[0].sizes() == src.sizes(),
                    "as_strided_scatter: expected src to have the size ",
                    region.outputs[0].sizes(), " of the region, but got ",
                    src.sizes());
  check_copy(region.outputs[0], src); // the kernel copies src into it
  return one(out);
}

// --- reductions -------------------------------------------------------------

Result sum(const Tensor &self, OptionalIntArrayRef dim, bool keepdim,
           std::optional<ScalarType> dtype) {
  auto rd = reduce_dims(self, dimsOrAll(dim), keepdim);
  return one(like(rd.out_sizes, sum_dtype(self.dtype(), dtype), self));
}

Result sum_all(const Tensor &self, std::optional<ScalarType> dtype) {
  return rules::sum(self, std::nullopt, false, dtype);
}

Result mean(const Tensor &self, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  ScalarType out = mean_dtype(self.dtype(), dtype);
  auto rd = reduce_dims(self, dimsOrAll(dim), keepdim);
  return one(like(rd.out_sizes, out, self));
}

Result mean_all(const Tensor &self, std::optional<ScalarType> dtype) {
  return rules::mean(self, std::nullopt, false, dtype);
}

Result prod(const Tensor &self, int64_t dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  auto rd = reduce_dims(self, IntArrayRef(dim), keepdim);
  return one(like(rd.out_sizes, sum_dtype(self.dtype(), dtype), self));
}

namespace {
Result minmax(const Tensor &self, IntArrayRef dim, bool keepdim,
              const char *op) {
  check_nonempty_reduction(self, dim, op);
  auto rd = reduce_dims(self, dim, keepdim);
  return one(like(rd.out_sizes, self.dtype(), self));
}
Result argReduce(const Tensor &self, std::optional<int64_t> dim, bool keepdim,
                 bool with_values, const char *op) {
  IntArrayRef dims = dim ? IntArrayRef(*dim) : IntArrayRef();
  check_nonempty_reduction(self, dims, op);
  auto rd = reduce_dims(self, dims, keepdim);
  if (!with_values) {
    // argmax / argmin compare values: no bool (the kernel's dtype group).
    if (!in_group(self.dtype(), DtypeGroup::NoBool))
      throw_unsupported_dtype(op, self.dtype());
    return one(like(rd.out_sizes, kLong, self));
  }
  return two(like(rd.out_sizes, self.dtype(), self),
             like(rd.out_sizes, kLong, self));
}
} // namespace

Result max_dim(const Tensor &self, int64_t dim, bool keepdim) {
  return argReduce(self, dim, keepdim, true, "max");
}
Result min_dim(const Tensor &self, int64_t dim, bool keepdim) {
  return argReduce(self, dim, keepdim, true, "min");
}
Result amax(const Tensor &self, IntArrayRef dim, bool keepdim) {
  return minmax(self, dim, keepdim, "amax");
}
Result amin(const Tensor &self, IntArrayRef dim, bool keepdim) {
  return minmax(self, dim, keepdim, "amin");
}
Result argmax(const Tensor &self, std::optional<int64_t> dim, bool keepdim) {
  return argReduce(self, dim, keepdim, false, "argmax");
}
Result argmin(const Tensor &self, std::optional<int64_t> dim, bool keepdim) {
  return argReduce(self, dim, keepdim, false, "argmin");
}

Result var(const Tensor &self, OptionalIntArrayRef dim,
           const std::optional<Scalar> &, bool keepdim) {
  check_var(self.dtype());
  auto rd = reduce_dims(self, dimsOrAll(dim), keepdim);
  return one(like(rd.out_sizes, self.dtype(), self));
}

Result norm(const Tensor &self, const std::optional<Scalar> &p, IntArrayRef dim,
            bool keepdim) {
  check_norm(self, p, dim);
  auto rd = reduce_dims(self, dim, keepdim);
  return one(like(rd.out_sizes, self.dtype(), self));
}

Result logsumexp(const Tensor &self, IntArrayRef dim, bool keepdim) {
  auto rd = reduce_dims(self, dim, keepdim);
  return one(like(rd.out_sizes, logsumexp_dtype(self.dtype()), self));
}

Result all_dim(const Tensor &self, int64_t dim, bool keepdim) {
  auto rd = reduce_dim(self, dim, keepdim);
  return one(like(rd.out_sizes, all_any_dtype(self.dtype()), self));
}
Result any_dim(const Tensor &self, int64_t dim, bool keepdim) {
  return rules::all_dim(self, dim, keepdim);
}

Result cumsum(const Tensor &self, int64_t dim,
              std::optional<ScalarType> dtype) {
  maybe_wrap_dim(dim, self.dim());
  return one(like(self.sizes(), scan_dtype(self.dtype(), dtype), self));
}
Result cumprod(const Tensor &self, int64_t dim,
               std::optional<ScalarType> dtype) {
  return rules::cumsum(self, dim, dtype);
}

Result softmax(const Tensor &self, int64_t dim,
               std::optional<ScalarType> dtype) {
  ScalarType out = softmax_dtype(self.dtype(), dtype, "softmax");
  maybe_wrap_dim(dim, self.dim());
  return one(like(self.sizes(), out, self));
}
Result log_softmax(const Tensor &self, int64_t dim,
                   std::optional<ScalarType> dtype) {
  ScalarType out = softmax_dtype(self.dtype(), dtype, "log_softmax");
  maybe_wrap_dim(dim, self.dim());
  return one(like(self.sizes(), out, self));
}

Result softmax_backward_data(const Tensor &grad_output, const Tensor &output,
                             int64_t dim, ScalarType input_dtype) {
  check_softmax_backward(grad_output, output, input_dtype,
                         "_softmax_backward_data");
  maybe_wrap_dim(dim, output.dim());
  return one(like(output.sizes(), input_dtype, output));
}
Result log_softmax_backward_data(const Tensor &grad_output,
                                 const Tensor &output, int64_t dim,
                                 ScalarType input_dtype) {
  check_softmax_backward(grad_output, output, input_dtype,
                         "_log_softmax_backward_data");
  maybe_wrap_dim(dim, output.dim());
  return one(like(output.sizes(), input_dtype, output));
}

// --- normalization ----------------------------------------------------------

Result native_layer_norm(const Tensor &input, IntArrayRef normalized_shape,
                         const std::optional<Tensor> &weight,
                         const std::optional<Tensor> &bias, double) {
  LayerNormShape s = layer_norm_shape(input, normalized_shape, weight, bias);
  Result r = two(like(input.sizes(), input.dtype(), input),
                 like(s.stat_sizes, s.compute, input));
  r.outputs.push_back(like(s.stat_sizes, s.compute, input));
  return r;
}
Result native_layer_norm_backward(const Tensor &grad_out, const Tensor &input,
                                  IntArrayRef normalized_shape,
                                  const Tensor &mean, const Tensor &rstd,
                                  const std::optional<Tensor> &weight,
                                  const std::optional<Tensor> &bias,
                                  IntArrayRef output_mask) {
  layer_norm_backward_shape(grad_out, input, normalized_shape, mean, rstd,
                            weight, bias, output_mask);
  // As the kernel: a gradient output_mask leaves out is undefined.
  auto given = [](const std::optional<Tensor> &t) { return t && t->defined(); };
  Result r;
  r.outputs.push_back(output_mask[0] ? like(input.sizes(), input.dtype(), input)
                                     : Tensor());
  r.outputs.push_back(
      output_mask[1]
          ? like(normalized_shape,
                 given(weight) ? weight->dtype() : input.dtype(), input)
          : Tensor());
  r.outputs.push_back(
      output_mask[2] ? like(normalized_shape,
                            given(bias) ? bias->dtype() : input.dtype(), input)
                     : Tensor());
  return r;
}

// --- linear algebra ---------------------------------------------------------

Result mm(const Tensor &self, const Tensor &mat2) {
  return one(like(mm_sizes(self, mat2), self.dtype(), self));
}
Result bmm(const Tensor &self, const Tensor &mat2) {
  return one(like(bmm_sizes(self, mat2), self.dtype(), self));
}
Result addmm(const Tensor &self, const Tensor &mat1, const Tensor &mat2,
             const Scalar &, const Scalar &) {
  return one(like(addmm_sizes(self, mat1, mat2), mat2.dtype(), mat2));
}
Result baddbmm(const Tensor &self, const Tensor &batch1, const Tensor &batch2,
               const Scalar &, const Scalar &) {
  return one(like(baddbmm_sizes(self, batch1, batch2), batch2.dtype(), batch2));
}
Result dot(const Tensor &self, const Tensor &tensor) {
  check_dot(self, tensor);
  return one(like({}, self.dtype(), self));
}

// --- shape and data ops -----------------------------------------------------

Result cat(TensorList tensors, int64_t dim) {
  CatMeta m = meta::cat(tensors, dim);
  return one(fake(m.sizes, m.dtype, m.device));
}

Result flip(const Tensor &self, IntArrayRef dims) {
  dim_list_to_bitset(dims, self.dim());
  return one(like(self.sizes(), self.dtype(), self));
}

Result tril(const Tensor &self, int64_t) {
  check_triangle(self, "tril");
  return one(like(self.sizes(), self.dtype(), self));
}
Result triu(const Tensor &self, int64_t) {
  check_triangle(self, "triu");
  return one(like(self.sizes(), self.dtype(), self));
}

Result constant_pad_nd(const Tensor &self, IntArrayRef pad, const Scalar &) {
  return one(like(constant_pad_sizes(self, pad), self.dtype(), self));
}

Result equal(const Tensor &self, const Tensor &other) {
  check_equal(self, other);
  return needs_data("ember::equal: returns a bool computed from the values");
}

Result sort(const Tensor &self, int64_t dim, bool, bool) {
  maybe_wrap_dim(dim, self.dim());
  return two(like(self.sizes(), self.dtype(), self),
             like(self.sizes(), kLong, self));
}

Result topk(const Tensor &self, int64_t k, int64_t dim, bool, bool) {
  int64_t d = check_topk(self, k, dim);
  DimVector sizes(self.sizes());
  if (self.dim() == 0) { // k is 0 or 1
    if (k == 0)
      sizes = {0};
  } else {
    sizes[size_t(d)] = k;
  }
  return two(like(sizes, self.dtype(), self), like(sizes, kLong, self));
}

Result im2col(const Tensor &self, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride,
              const Scalar &pad_value) {
  return one(like(
      im2col_sizes(self, kernel_size, dilation, padding, stride, pad_value),
      self.dtype(), self));
}

Result col2im(const Tensor &self, IntArrayRef output_size,
              IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  return one(like(
      col2im_sizes(self, output_size, kernel_size, dilation, padding, stride),
      self.dtype(), self));
}

// --- indexing ---------------------------------------------------------------

Result index_select(const Tensor &self, int64_t dim, const Tensor &index) {
  return one(like(index_select_sizes(self, dim, index), self.dtype(), self));
}

Result gather(const Tensor &self, int64_t dim, const Tensor &index) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  check_scatter_gather("gather", self, d, index, nullptr);
  return one(like(index.sizes(), self.dtype(), self));
}

Result scatter_(const Tensor &self, int64_t dim, const Tensor &index,
                const Tensor &src) {
  check_scatter("scatter", self, maybe_wrap_dim(dim, self.dim()), index, src);
  return self_result(self);
}

Result scatter_add_(const Tensor &self, int64_t dim, const Tensor &index,
                    const Tensor &src) {
  check_scatter("scatter_add", self, maybe_wrap_dim(dim, self.dim()), index,
                src);
  return self_result(self);
}

Result index_add_(const Tensor &self, int64_t dim, const Tensor &index,
                  const Tensor &source, const Scalar &alpha) {
  check_index_add(self, dim, index, source, alpha);
  return self_result(self);
}

Result masked_select(const Tensor &self, const Tensor &mask) {
  masked_select_shape(self, mask);
  return needs_data(
      "ember::masked_select: output shape depends on the mask's values");
}

Result nonzero(const Tensor &) {
  return needs_data("ember::nonzero: output shape depends on the input's "
                    "values");
}

namespace {
bool anyDefined(TensorList indices) {
  for (const Tensor &t : indices)
    if (t.defined())
      return true;
  return false;
}
/// The indices of an advanced index without masks, one per dim of self.
std::vector<Tensor> perDim(const Tensor &self, TensorList indices) {
  std::vector<Tensor> idx(indices.begin(), indices.end());
  idx.resize(size_t(self.dim()));
  return idx;
}
} // namespace

Result index(const Tensor &self, TensorList indices) {
  if (!anyDefined(indices)) { // a copy (all slices)
    check_indices(self, indices);
    return one(like(self.sizes(), self.dtype(), self));
  }
  if (check_indices(self, indices))
    return needs_data("ember::index: indexing with a boolean mask gives a "
                      "shape that depends on the mask's values");
  IndexShape s = index_shape(self, perDim(self, indices));
  return one(like(s.result, self.dtype(), self));
}

Result index_put_(const Tensor &self, TensorList indices, const Tensor &values,
                  bool) {
  EMBER_CHECK(values.defined(), "index_put_: the values tensor is undefined");
  if (!anyDefined(indices)) {
    check_indices(self, indices);
    EMBER_CHECK_TYPE(values.dtype() == self.dtype(),
                     "Index put requires the source and destination dtypes "
                     "match, got ",
                     self.dtype(), " for the destination and ", values.dtype(),
                     " for the source.");
    // The kernel copies values (or self + values) into self.
    check_copy(self, values);
    return self_result(self);
  }
  if (check_indices(self, indices)) {
    // With a mask the indexing result's length is data: only the dtype can
    // be checked here (the kernel checks the values' shape).
    EMBER_CHECK_TYPE(values.dtype() == self.dtype(),
                     "Index put requires the source and destination dtypes "
                     "match, got ",
                     self.dtype(), " for the destination and ", values.dtype(),
                     " for the source.");
    check_no_internal_overlap(self);
    return self_result(self);
  }
  IndexShape s = index_shape(self, perDim(self, indices));
  check_index_put_values(self, values, s.result);
  check_no_internal_overlap(self);
  return self_result(self);
}

// --- random numbers -------------------------------------------------------

Result _philox_uniform(const Tensor &state, IntArrayRef size,
                       ScalarType dtype) {
  check_philox(state, size, dtype, false, "_philox_uniform");
  return one(fake(size, dtype, state.device()));
}

Result _philox_normal(const Tensor &state, IntArrayRef size, ScalarType dtype) {
  check_philox(state, size, dtype, false, "_philox_normal");
  return one(fake(size, dtype, state.device()));
}

Result _philox_randint(const Tensor &state, int64_t low, int64_t high,
                       IntArrayRef size, ScalarType dtype) {
  check_philox(state, size, dtype, true, "_philox_randint");
  check_randint_range(low, high, dtype);
  return one(fake(size, dtype, state.device()));
}

} // namespace ember::meta::rules
