// The output geometry and metadata checks of the `cpu:` ops (eager/meta/
// Shapes.h), shared by their kernels and their shape rules.
#include "eager/meta/Shapes.h"
#include "eager/Dtype.h"
#include "eager/TensorIterator.h"
#include "eager/WrapDim.h"
#include "runtime/Cuda.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember::meta {

namespace {

/// The name PyTorch's messages give a dtype (its C++ type, as TypeMeta).
const char *typeMetaName(ScalarType t) {
  switch (t) {
  case kByte:
    return "unsigned char";
  case kChar:
    return "signed char";
  case kShort:
    return "short int";
  case kInt:
    return "int";
  case kLong:
    return "long int";
  case kHalf:
    return "ember::Half";
  case kFloat:
    return "float";
  case kDouble:
    return "double";
  case kBool:
    return "bool";
  case kBFloat16:
    return "ember::BFloat16";
  default:
    return "undefined";
  }
}

/// The name of a dtype in PyTorch's ScalarType spelling ("Float", "Long").
const char *scalarTypeName(ScalarType t) {
  switch (t) {
  case kByte:
    return "Byte";
  case kChar:
    return "Char";
  case kShort:
    return "Short";
  case kInt:
    return "Int";
  case kLong:
    return "Long";
  case kHalf:
    return "Half";
  case kFloat:
    return "Float";
  case kDouble:
    return "Double";
  case kBool:
    return "Bool";
  case kBFloat16:
    return "BFloat16";
  default:
    return "Undefined";
  }
}

/// Sizes with a 0-dim tensor seen as 1-d of one element (as PyTorch's
/// ensure_nonempty_dim in scatter / gather).
DimVector nonemptySizes(const Tensor &t) {
  return t.dim() == 0 ? DimVector{1} : DimVector(t.sizes());
}

} // namespace

// --- pointwise forms --------------------------------------------------------

void check_pow_exponent(ScalarType self, const Scalar &exponent) {
  // Integer tensors raised to a negative integer power would be 0 or +-1
  // silently; PyTorch raises, so does ember.
  // (bool included, as PyTorch)
  EMBER_CHECK(!(isIntegralType(self, true) && exponent.isIntegral(false) &&
                exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
}

// --- reductions -------------------------------------------------------------

ScalarType sum_dtype(ScalarType self, std::optional<ScalarType> dtype) {
  if (dtype)
    return *dtype;
  return isIntegralType(self, /*includeBool=*/true) ? kLong : self;
}

ScalarType mean_dtype(ScalarType self, std::optional<ScalarType> dtype) {
  if (dtype)
    EMBER_CHECK_TYPE(isFloatingType(*dtype),
                     "mean(): could not infer output dtype. Optional dtype "
                     "must be either a floating point or complex dtype. Got: ",
                     toString(*dtype));
  else
    EMBER_CHECK_TYPE(isFloatingType(self),
                     "mean(): could not infer output dtype. Input dtype must "
                     "be either a floating point or complex dtype. Got: ",
                     toString(self),
                     " (pass dtype=ember::kFloat, or convert the input with "
                     ".to(ember::kFloat))");
  return dtype.value_or(self);
}

ScalarType scan_dtype(ScalarType self, std::optional<ScalarType> dtype) {
  // int64 for integers and bool unless dtype says otherwise (as PyTorch).
  return sum_dtype(self, dtype);
}

ScalarType softmax_dtype(ScalarType self, std::optional<ScalarType> dtype,
                         const char *op) {
  ScalarType out = dtype.value_or(self);
  EMBER_CHECK_TYPE(isFloatingType(out), op,
                   "(): expected a floating point input, but got dtype ",
                   toString(out),
                   " (pass dtype=ember::kFloat to compute in float)");
  return out;
}

LayerNormShape layer_norm_shape(const Tensor &input,
                                IntArrayRef normalized_shape,
                                const std::optional<Tensor> &weight,
                                const std::optional<Tensor> &bias) {
  int64_t k = int64_t(normalized_shape.size());
  EMBER_CHECK_VALUE(k >= 1,
                    "Expected normalized_shape to be at least 1-dimensional, "
                    "i.e., containing at least one element, but got "
                    "normalized_shape = []");
  bool match = input.dim() >= k;
  for (int64_t i = 0; match && i < k; ++i)
    match = input.size(input.dim() - k + i) == normalized_shape[size_t(i)];
  if (!match) {
    std::string want;
    for (size_t i = 0; i < normalized_shape.size(); ++i)
      want += (i ? ", " : "") + std::to_string(normalized_shape[i]);
    throw ValueError(
        ember::detail::str("Given normalized_shape=", normalized_shape,
                           ", expected input with shape [*, ", want,
                           "], but got input of size", input.sizes()));
  }
  const bool w = weight && weight->defined(), b = bias && bias->defined();
  for (const std::optional<Tensor> *t : {&weight, &bias})
    EMBER_CHECK(!*t || !(*t)->defined() || (*t)->device() == input.device(),
                "layer_norm: expected all tensors to be on the same device, "
                "but found at least two devices, ",
                input.device(), " and ", (*t)->device());
  EMBER_CHECK_VALUE(!w || weight->sizes() == normalized_shape,
                    "Expected weight to be of same shape as normalized_shape, "
                    "but got weight of shape ",
                    weight->sizes(),
                    " and normalized_shape = ", normalized_shape);
  EMBER_CHECK_VALUE(!b || bias->sizes() == normalized_shape,
                    "Expected bias to be of same shape as normalized_shape, "
                    "but got bias of shape ",
                    bias->sizes(),
                    " and normalized_shape = ", normalized_shape);
  EMBER_CHECK_TYPE(isFloatingType(input.dtype()),
                   "layer_norm: expected a floating input, but got a tensor "
                   "of dtype ",
                   toString(input.dtype()),
                   " (convert it with .to(ember::kFloat))");
  for (const std::optional<Tensor> *t : {&weight, &bias})
    EMBER_CHECK_TYPE(!*t || !(*t)->defined() || isFloatingType((*t)->dtype()),
                     "layer_norm: expected a floating weight and bias, but "
                     "got a tensor of dtype ",
                     toString((*t)->dtype()));
  LayerNormShape r;
  r.compute = isReducedFloatingType(input.dtype()) ? kFloat : input.dtype();
  int64_t axis = input.dim() - k;
  for (int64_t d = 0; d < input.dim(); ++d) {
    (d < axis ? r.M : r.N) *= input.size(d);
    r.stat_sizes.push_back(d < axis ? input.size(d) : 1);
  }
  return r;
}

LayerNormShape layer_norm_backward_shape(
    const Tensor &grad_out, const Tensor &input, IntArrayRef normalized_shape,
    const Tensor &mean, const Tensor &rstd, const std::optional<Tensor> &weight,
    const std::optional<Tensor> &bias, IntArrayRef output_mask) {
  LayerNormShape r = layer_norm_shape(input, normalized_shape, weight, bias);
  for (const Tensor *t : {&grad_out, &mean, &rstd})
    EMBER_CHECK(t->device() == input.device(),
                "native_layer_norm_backward: expected all tensors to be on "
                "the same device, but found at least two devices, ",
                input.device(), " and ", t->device());
  EMBER_CHECK_VALUE(grad_out.sizes() == input.sizes(),
                    "native_layer_norm_backward: expected grad_out of the "
                    "input's shape ",
                    input.sizes(), ", but got ", grad_out.sizes());
  EMBER_CHECK_VALUE(mean.numel() == r.M && rstd.numel() == r.M,
                    "native_layer_norm_backward: expected mean and rstd of ",
                    r.M, " elements (one per row), but got ", mean.numel(),
                    " and ", rstd.numel());
  EMBER_CHECK_VALUE(output_mask.size() == 3,
                    "native_layer_norm_backward: output_mask must have 3 "
                    "elements, but got ",
                    output_mask.size());
  EMBER_CHECK_TYPE(isFloatingType(grad_out.dtype()) &&
                       isFloatingType(mean.dtype()) &&
                       isFloatingType(rstd.dtype()),
                   "native_layer_norm_backward: expected floating grad_out, "
                   "mean and rstd");
  return r;
}

void check_softmax_backward(const Tensor &grad_output, const Tensor &output,
                            ScalarType input_dtype, const char *op) {
  EMBER_CHECK_VALUE(grad_output.sizes() == output.sizes(), op,
                    ": expected grad_output of the output's shape ",
                    output.sizes(), ", but got ", grad_output.sizes());
  EMBER_CHECK(grad_output.device() == output.device(), op,
              ": expected all tensors to be on the same device, but found at "
              "least two devices, ",
              grad_output.device(), " and ", output.device());
  EMBER_CHECK_TYPE(isFloatingType(output.dtype()) &&
                       isFloatingType(grad_output.dtype()) &&
                       isFloatingType(input_dtype),
                   op,
                   ": expected floating grad_output, output and "
                   "input_dtype, but got ",
                   toString(grad_output.dtype()), ", ",
                   toString(output.dtype()), " and ", toString(input_dtype));
}

void check_var(ScalarType self) {
  EMBER_CHECK_TYPE(isFloatingType(self),
                   "std and var only support floating point and complex "
                   "dtypes, but got a tensor of dtype ",
                   toString(self), " (convert it with .to(ember::kFloat))");
}

void check_norm(const Tensor &self, const std::optional<Scalar> &p,
                IntArrayRef dim) {
  EMBER_CHECK_TYPE(isFloatingType(self.dtype()),
                   "norm(): input dtype should be either floating point or "
                   "complex. Got ",
                   toString(self.dtype()),
                   " instead (convert it with .to(ember::kFloat)).");
  double pv = p ? p->toDouble() : 2.0;
  EMBER_CHECK_VALUE(!std::isnan(pv), "norm(): the order p must not be NaN");
  if (self.numel() == 0) {
    EMBER_CHECK_VALUE(pv >= 0, "norm(): the norm of negative order (p = ", pv,
                      ") cannot be computed on an empty tensor");
    if (std::isinf(pv)) {
      bool identity = !dim.empty();
      for (int64_t d : dim)
        if (self.size(maybe_wrap_dim(d, self.dim())) == 0)
          identity = false;
      EMBER_CHECK(identity,
                  "norm(): cannot compute the inf norm on an empty tensor "
                  "because the operation does not have an identity; reduce "
                  "over dims of non-zero size only");
    }
  }
}

ScalarType logsumexp_dtype(ScalarType self) {
  // Integers and bool compute in the default float dtype (as PyTorch).
  return isIntegralType(self, /*includeBool=*/true) ? get_default_dtype()
                                                    : self;
}

ScalarType all_any_dtype(ScalarType self) {
  return self == kByte ? kByte : kBool;
}

// --- linear algebra ---------------------------------------------------------

namespace {

/// Matrix products are defined for every dtype but bool (as PyTorch).
void checkProductDtype(const char *op, ScalarType t) {
  if (t == kBool)
    throw_unsupported_dtype(op, t);
}

void checkSameDtype(const Tensor &a, const Tensor &b, const char *na,
                    const char *nb) {
  EMBER_CHECK(a.dtype() == b.dtype(), "expected ", na, " and ", nb,
              " to have the same dtype, but got: ", typeMetaName(a.dtype()),
              " != ", typeMetaName(b.dtype()));
}

void checkDevices(const char *op, const Tensor &a, const Tensor &b) {
  EMBER_CHECK(a.device() == b.device(),
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              a.device(), " and ", b.device(), "! (in ", op, ")");
}

/// The checks shared by mm and addmm (PyTorch's messages).
void checkMatrixOperands(const Tensor &m1, const Tensor &m2, const char *n1,
                         const char *n2, bool withRank) {
  if (withRank) {
    EMBER_CHECK(m1.dim() == 2, n1, " must be a matrix, got ", m1.dim(),
                "-D tensor");
    EMBER_CHECK(m2.dim() == 2, n2, " must be a matrix, got ", m2.dim(),
                "-D tensor");
  } else {
    EMBER_CHECK(m1.dim() == 2, n1, " must be a matrix");
    EMBER_CHECK(m2.dim() == 2, n2, " must be a matrix");
  }
  EMBER_CHECK(m1.size(1) == m2.size(0), "mat1 and mat2 shapes cannot be ",
              "multiplied (", m1.size(0), "x", m1.size(1), " and ", m2.size(0),
              "x", m2.size(1), ")");
  checkSameDtype(m1, m2, "m1", "m2");
}

/// The checks shared by bmm and baddbmm.
void checkBatchOperands(const Tensor &b1, const Tensor &b2) {
  EMBER_CHECK(b1.dim() == 3, "batch1 must be a 3D tensor");
  EMBER_CHECK(b2.dim() == 3, "batch2 must be a 3D tensor");
  EMBER_CHECK(b2.size(0) == b1.size(0) && b2.size(1) == b1.size(2),
              "Expected size for first two dimensions of batch2 tensor to be: ",
              "[", b1.size(0), ", ", b1.size(2), "] but got: [", b2.size(0),
              ", ", b2.size(1), "].");
  checkSameDtype(b1, b2, "batch1", "batch2");
}

/// The addend of an addmm-like op: of the product's dtype and broadcastable
/// to its shape (PyTorch checks this even when beta == 0).
void checkAddend(const Tensor &self, IntArrayRef shape, const Tensor &other) {
  EMBER_CHECK(self.dtype() == other.dtype(), "self and mat2 must have the ",
              "same dtype, but got ", typeMetaName(self.dtype()), " and ",
              typeMetaName(other.dtype()));
  EMBER_CHECK(int64_t(shape.size()) >= self.dim(),
              "expand: the number of sizes provided (", shape.size(), ") ",
              "must be greater or equal to the number of dimensions in the ",
              "tensor (", self.dim(), ")");
  size_t off = shape.size() - size_t(self.dim());
  for (size_t i = off; i < shape.size(); ++i) {
    int64_t cur = self.size(int64_t(i - off));
    EMBER_CHECK(cur == shape[i] || cur == 1,
                "The expanded size of the tensor (", shape[i],
                ") must match the existing size (", cur,
                ") at non-singleton dimension ", i, ".  Target sizes: ", shape,
                ".  Tensor sizes: ", self.sizes());
  }
}

} // namespace

DimVector mm_sizes(const Tensor &self, const Tensor &mat2) {
  checkMatrixOperands(self, mat2, "self", "mat2", /*withRank=*/false);
  checkDevices("mm", self, mat2);
  checkProductDtype("mm", self.dtype());
  return {self.size(0), mat2.size(1)};
}

DimVector addmm_sizes(const Tensor &self, const Tensor &mat1,
                      const Tensor &mat2) {
  checkMatrixOperands(mat1, mat2, "mat1", "mat2", /*withRank=*/true);
  checkDevices("addmm", mat1, mat2);
  checkProductDtype("addmm", mat1.dtype());
  DimVector shape{mat1.size(0), mat2.size(1)};
  checkAddend(self, shape, mat2);
  return shape;
}

DimVector bmm_sizes(const Tensor &self, const Tensor &mat2) {
  checkBatchOperands(self, mat2);
  checkDevices("bmm", self, mat2);
  checkProductDtype("bmm", self.dtype());
  return {self.size(0), self.size(1), mat2.size(2)};
}

DimVector baddbmm_sizes(const Tensor &self, const Tensor &batch1,
                        const Tensor &batch2) {
  checkBatchOperands(batch1, batch2);
  checkDevices("baddbmm", batch1, batch2);
  checkProductDtype("baddbmm", batch1.dtype());
  DimVector shape{batch1.size(0), batch1.size(1), batch2.size(2)};
  checkAddend(self, shape, batch2);
  return shape;
}

void check_dot(const Tensor &self, const Tensor &tensor) {
  EMBER_CHECK(self.dim() == 1 && tensor.dim() == 1, "1D tensors expected, ",
              "but got ", self.dim(), "D and ", tensor.dim(), "D tensors");
  EMBER_CHECK(self.dtype() == tensor.dtype(), "dot : expected both vectors ",
              "to have same dtype, but found ", scalarTypeName(self.dtype()),
              " and ", scalarTypeName(tensor.dtype()));
  EMBER_CHECK(self.numel() == tensor.numel(), "inconsistent tensor size, ",
              "expected tensor [", self.numel(), "] and src [", tensor.numel(),
              "] to have the same number of elements, but got ", self.numel(),
              " and ", tensor.numel(), " elements respectively");
  checkDevices("dot", self, tensor);
  checkProductDtype("dot", self.dtype());
}

// --- shape and data ops -----------------------------------------------------

CatMeta cat(TensorList tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(),
              "torch.cat(): expected a non-empty list of Tensors");
  CatMeta m{{},
            ScalarType::Undefined,
            tensors[0].defined() ? tensors[0].device() : Device(kCPU)};
  const Tensor *ref = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    EMBER_CHECK(t.defined(), "torch.cat(): tensor number ", i,
                " in the list is undefined");
    EMBER_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
    EMBER_CHECK(t.device() == tensors[0].device(),
                "Expected all tensors to be on the same device, but found at "
                "least two devices, ",
                tensors[0].device(), " and ", t.device(), "!");
    m.dtype = m.dtype == ScalarType::Undefined
                  ? t.dtype()
                  : promoteTypes(m.dtype, t.dtype());
    bool skip = t.dim() == 1 && t.size(0) == 0;
    if (!skip && !ref)
      ref = &t;
  }
  if (!ref) { // every input is a legacy empty tensor
    m.all_legacy_empty = true;
    m.sizes = {0};
    return m;
  }
  m.dim = maybe_wrap_dim(dim, ref->dim());
  const int64_t d = m.dim;
  m.sizes = DimVector(ref->sizes());
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor &t = tensors[i];
    if (t.dim() == 1 && t.size(0) == 0)
      continue;
    EMBER_CHECK(t.dim() == ref->dim(),
                "Tensors must have same number of dimensions: got ", ref->dim(),
                " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k)
      EMBER_CHECK(k == d || t.size(k) == ref->size(k),
                  "Sizes of tensors must match except in dimension ", d,
                  ". Expected size ", ref->size(k), " but got size ", t.size(k),
                  " for tensor number ", i, " in the list.");
    total += t.size(d);
  }
  m.sizes[size_t(d)] = total;
  m.device = ref->device();
  return m;
}

void check_triangle(const Tensor &self, const char *name) {
  EMBER_CHECK(self.dim() >= 2, name,
              ": input tensor must have at least 2 dimensions");
}

DimVector constant_pad_sizes(const Tensor &self, IntArrayRef pad) {
  EMBER_CHECK(pad.size() % 2 == 0, "Length of pad must be even but instead ",
              "it equals ", pad.size());
  int64_t nd = self.dim();
  EMBER_CHECK(int64_t(pad.size()) / 2 <= nd,
              "Length of pad should be no more than twice the number of "
              "dimensions of the input. Pad length is ",
              pad.size(), " while the input has ", nd, " dimensions.");
  int64_t npd = int64_t(pad.size()) / 2;
  DimVector outSize(self.sizes());
  for (int64_t i = 0; i < npd; ++i) {
    int64_t d = nd - 1 - i;
    int64_t before = pad[size_t(2 * i)], after = pad[size_t(2 * i + 1)];
    int64_t n;
    EMBER_CHECK_VALUE(!__builtin_add_overflow(self.size(d), before, &n) &&
                          !__builtin_add_overflow(n, after, &n),
                      "pad: the input size ", self.size(d), " plus padding ",
                      before, " and ", after, " of dimension ", d,
                      " overflows int64");
    EMBER_CHECK(n >= 0, "The input size ", self.size(d),
                ", plus negative padding ", before, " and ", after,
                " resulted in a negative output size, which is invalid. "
                "Check dimension ",
                d, " of your input.");
    outSize[size_t(d)] = n;
  }
  return outSize;
}

void check_equal(const Tensor &self, const Tensor &other) {
  EMBER_CHECK(self.device() == other.device(),
              "equal(): expected both tensors on the same device, but got ",
              self.device(), " and ", other.device());
  EMBER_CHECK_TYPE(self.dtype() == other.dtype(),
                   "Expected object of scalar "
                   "type ",
                   self.dtype(), " but got scalar type ", other.dtype(),
                   " for argument 'other'");
}

Device to_copy_device(const Tensor &self, std::optional<Device> device) {
  Device dev = device.value_or(self.device());
  // "cuda" means the current device. The device `self` is already on needs
  // no check (nor a driver: a CUDA graph's IR verifies on any machine); a
  // copy to another raises where eager's would (no driver, no such
  // device), so a copy to a CUDA device verifies only where there is one.
  if (dev.is_cuda() && !(dev.has_index() && dev == self.device()))
    dev = Device(kCUDA, cuda::checked_device(dev.index(), "to"));
  return dev;
}

void check_copy(const Tensor &self, const Tensor &src) {
  EMBER_CHECK(src.defined(), "copy_: the source tensor is undefined");
  check_no_internal_overlap(self);
  infer_size(self.sizes(), src.sizes()); // checks broadcastability
  EMBER_CHECK(src.dim() <= self.dim() || src.numel() == self.numel(),
              "copy_: the source of shape ", src.sizes(),
              " can't be broadcast to the destination of shape ", self.sizes());
  for (int64_t i = 0; i < src.dim(); ++i) {
    int64_t sd = src.size(src.dim() - 1 - i);
    int64_t dd = i < self.dim() ? self.size(self.dim() - 1 - i) : 1;
    EMBER_CHECK(sd == dd || sd == 1, "copy_: the source of shape ", src.sizes(),
                " can't be broadcast to the destination of ", "shape ",
                self.sizes());
  }
}

void check_fill(const Tensor &self) {
  if (self.numel() > 1)
    check_no_internal_overlap(self);
}

// --- indexing ---------------------------------------------------------------

DimVector index_select_sizes(const Tensor &self, int64_t dim,
                             const Tensor &index) {
  EMBER_CHECK_INDEX(index.dim() <= 1,
                    "index_select(): Index is supposed to "
                    "be a vector (got a ",
                    index.dim(), "-d index)");
  EMBER_CHECK_TYPE(index.dtype() == kLong || index.dtype() == kInt,
                   "index_select(): Expected dtype int32 or int64 for index, "
                   "but got ",
                   index.dtype());
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t n = index.numel();
  EMBER_CHECK_INDEX(!(self.dim() == 0 && n != 1),
                    "index_select(): Index to scalar can have only 1 value, "
                    "got ",
                    n, " value(s)");
  DimVector outSize(self.sizes());
  if (self.dim() > 0)
    outSize[size_t(d)] = n;
  return outSize;
}

void check_scatter_gather(const char *op, const Tensor &self, int64_t dim,
                          const Tensor &index, const Tensor *src) {
  EMBER_CHECK_TYPE(index.dtype() == kLong, op,
                   "(): Expected dtype int64 for index, but got ",
                   index.dtype());
  DimVector ss = nonemptySizes(self), is = nonemptySizes(index);
  EMBER_CHECK(ss.size() == is.size(),
              "Index tensor must have the same "
              "number of dimensions as ",
              src ? "self" : "input", " tensor (", op, ": self has ",
              self.dim(), " dims, index has ", index.dim(), ")");
  if (src) {
    DimVector rs = nonemptySizes(*src);
    EMBER_CHECK(rs.size() == is.size(),
                "Index tensor must have the same "
                "number of dimensions as src tensor (",
                op, ": src has ", src->dim(), " dims, index has ", index.dim(),
                ")");
  }
  if (index.numel() == 0)
    return;
  for (size_t k = 0; k < is.size(); ++k) {
    bool ok = int64_t(k) == dim || is[k] <= ss[k];
    if (src)
      ok = ok && is[k] <= nonemptySizes(*src)[k];
    if (!src)
      EMBER_CHECK(ok, "Size does not match at dimension ", k,
                  " expected index ", index.sizes(),
                  " to be smaller than self ", self.sizes(),
                  " apart from dimension ", dim);
    else
      EMBER_CHECK(ok, "Expected index ", index.sizes(),
                  " to be smaller than self ", self.sizes(),
                  " apart from dimension ", dim,
                  " and to be smaller size than src ", src->sizes());
  }
}

void check_scatter(const char *op, const Tensor &self, int64_t dim,
                   const Tensor &index, const Tensor &src) {
  EMBER_CHECK_TYPE(self.dtype() == src.dtype(), op,
                   "(): Expected self.dtype to be equal to src.dtype (got ",
                   self.dtype(), " and ", src.dtype(), ")");
  check_scatter_gather(op, self, dim, index, &src);
  check_no_internal_overlap(self);
}

void check_index_add(const Tensor &self, int64_t dim, const Tensor &index,
                     const Tensor &source, const Scalar &alpha) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  check_integral_scalar("index_add_", "alpha", alpha, self.dtype());
  if (self.dtype() != kBool) // alpha must fit the dtype (c10's check)
    dispatch_dtype(self.dtype(), "index_add_",
                   [&]<class T>() { (void)alpha.checked_to<T>(); });
  EMBER_CHECK_INDEX(index.dim() <= 1,
                    "index_add_(): Index is supposed to be "
                    "a vector (got a ",
                    index.dim(), "-d index)");
  EMBER_CHECK_TYPE(index.dtype() == kLong || index.dtype() == kInt,
                   "index_add_(): Expected dtype int32/int64 for index, but "
                   "got ",
                   index.dtype());
  EMBER_CHECK_TYPE(self.dtype() == source.dtype(), "index_add_(): self (",
                   self.dtype(), ") and source (", source.dtype(),
                   ") must have the same scalar type");
  EMBER_CHECK_INDEX(d == 0 || d < source.dim(), "index_add_(): Indexing dim ",
                    d, " is out of bounds of the source tensor with dim ",
                    source.dim());
  int64_t n = index.numel();
  DimVector ss = nonemptySizes(self), rs = nonemptySizes(source);
  EMBER_CHECK(n == rs[size_t(d)], "index_add_(): Number of indices (", n,
              ") should be equal to source.size(dim) (", rs[size_t(d)], ")");
  bool sameShape = ss.size() == rs.size();
  for (size_t k = 0; sameShape && k < ss.size(); ++k)
    sameShape = int64_t(k) == d || ss[k] == rs[k];
  EMBER_CHECK(sameShape,
              "index_add_(): source tensor shape must match self "
              "tensor shape, excluding the specified dimension. "
              "Got self.shape = ",
              self.sizes(), " source.shape = ", source.sizes());
  check_no_internal_overlap(self);
}

DimVector masked_select_shape(const Tensor &self, const Tensor &mask) {
  EMBER_CHECK_TYPE(mask.dtype() == kBool,
                   "masked_select: expected BoolTensor "
                   "for mask, but got ",
                   mask.dtype());
  return infer_size(self.sizes(), mask.sizes());
}

namespace {
bool isMaskDtype(ScalarType t) { return t == kBool || t == kByte; }
} // namespace

bool check_indices(const Tensor &self, TensorList indices) {
  EMBER_CHECK_INDEX(int64_t(indices.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(),
                    " (got ", indices.size(), ")");
  bool mask = false;
  int64_t covered = 0; // dims of self the indices cover
  for (const Tensor &t : indices) {
    if (!t.defined()) {
      ++covered;
      continue;
    }
    ScalarType dt = t.dtype();
    EMBER_CHECK_INDEX(dt == kLong || dt == kInt || isMaskDtype(dt),
                      "tensors used as indices must be long, int, byte or "
                      "bool tensors (got ",
                      dt, ")");
    if (!isMaskDtype(dt)) {
      ++covered;
      continue;
    }
    mask = true;
    EMBER_CHECK_INDEX(t.dim() > 0, "index: a 0-dim bool index is not "
                                   "supported here; use Tensor::index({true}) "
                                   "or index({false}), which add a dim");
    int64_t first = covered;
    EMBER_CHECK_INDEX(first + t.dim() <= self.dim(),
                      "too many indices for tensor of dimension ", self.dim(),
                      " (a mask of ", t.dim(), " dims at dim ", first, ")");
    for (int64_t j = 0; j < t.dim(); ++j)
      EMBER_CHECK_INDEX(t.size(j) == self.size(first + j),
                        "The shape of the "
                        "mask ",
                        t.sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ",
                        self.sizes(), " at index ", first + j);
    covered += t.dim();
  }
  EMBER_CHECK_INDEX(covered <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim(),
                    " (got ", covered, ")");
  return mask;
}

IndexShape index_shape(const Tensor &self, TensorList per_dim) {
  EMBER_INTERNAL_ASSERT(int64_t(per_dim.size()) == self.dim());
  IndexShape s;
  bool first = true;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const Tensor &t = per_dim[size_t(d)];
    if (!t.defined())
      continue;
    s.dims.push_back(d);
    if (first) {
      s.b_shape = DimVector(t.sizes());
      first = false;
      continue;
    }
    try {
      s.b_shape = infer_size(s.b_shape, t.sizes());
    } catch (const Error &) {
      std::string shapes;
      for (const Tensor &u : per_dim)
        if (u.defined())
          shapes +=
              (shapes.empty() ? "" : ", ") + ember::detail::str(u.sizes());
      throw IndexError("shape mismatch: indexing tensors could not be "
                       "broadcast together with shapes " +
                       shapes);
    }
  }
  EMBER_INTERNAL_ASSERT(!s.dims.empty());
  s.adjacent = s.dims.back() - s.dims[0] + 1 == int64_t(s.dims.size());
  // [pre, B, post]: the non-indexed dims before the indexed block stay in
  // front only when the indexed dims are adjacent.
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!per_dim[size_t(d)].defined() && s.adjacent && d < s.dims[0])
      s.result.push_back(self.size(d));
  for (int64_t b : s.b_shape)
    s.result.push_back(b);
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!per_dim[size_t(d)].defined() && !(s.adjacent && d < s.dims[0]))
      s.result.push_back(self.size(d));
  return s;
}

void check_index_put_values(const Tensor &self, const Tensor &values,
                            IntArrayRef result_shape) {
  EMBER_CHECK_TYPE(values.dtype() == self.dtype(),
                   "Index put requires the source and destination dtypes "
                   "match, got ",
                   self.dtype(), " for the destination and ", values.dtype(),
                   " for the source.");
  bool expandable = values.dim() <= int64_t(result_shape.size());
  for (int64_t i = 0; expandable && i < values.dim(); ++i) {
    int64_t vs = values.size(values.dim() - 1 - i);
    int64_t rs = result_shape[result_shape.size() - 1 - size_t(i)];
    expandable = vs == rs || vs == 1;
  }
  EMBER_CHECK(expandable, "shape mismatch: value tensor of shape ",
              values.sizes(),
              " cannot be broadcast to indexing result of "
              "shape ",
              result_shape);
}

// --- sort, topk -------------------------------------------------------------

int64_t check_topk(const Tensor &self, int64_t k, int64_t dim) {
  // (as PyTorch's: sort takes bool, topk does not)
  EMBER_CHECK_TYPED(NotImplementedError, self.scalar_type() != kBool,
                    "topk does not support bool dtypes (on ", self.device(),
                    "); convert the input first, e.g. with "
                    ".to(ember::kByte)");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t size = self.dim() == 0 ? 1 : self.size(d);
  EMBER_CHECK_INDEX(k >= 0 && k <= size,
                    "selected index k out of range (k = ", k,
                    ", but dimension ", d, " has size ", size, ")");
  return d;
}

// --- random numbers ---------------------------------------------------------

void check_philox(const Tensor &state, IntArrayRef size, ScalarType dtype,
                  bool any_dtype, const char *op) {
  EMBER_CHECK_VALUE(state.scalar_type() == kLong && state.dim() == 1 &&
                        state.numel() == 2 && state.is_cpu(),
                    op,
                    ": expected the generator state as a CPU int64 tensor of "
                    "2 elements (seed, offset), but got a ",
                    state.scalar_type(), " tensor of shape ", state.sizes(),
                    " on ", state.device());
  if (!any_dtype && !in_group(dtype, DtypeGroup::Float))
    throw_unsupported_dtype(op, dtype);
  for (int64_t d : size)
    EMBER_CHECK_VALUE(d >= 0, op, ": negative dimension in the requested size ",
                      size);
}

void check_randint_range(int64_t low, int64_t high, ScalarType dtype) {
  EMBER_CHECK_VALUE(low < high, "random_ expects 'from' to be less than ",
                    "'to', but got from=", low, " >= to=", high);
  if (!isIntegralType(dtype, /*includeBool=*/true))
    return;
  int64_t lo = 0, hi = 1; // bool
  dispatch_group(dtype, DtypeGroup::Integral, "randint", [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      lo = int64_t(std::numeric_limits<T>::lowest());
      hi = int64_t(std::numeric_limits<T>::max());
    }
  });
  EMBER_CHECK_VALUE(low >= lo, "from is out of bounds for ", toString(dtype),
                    ": from=", low, " is below ", lo);
  EMBER_CHECK_VALUE(high - 1 <= hi, "to - 1 is out of bounds for ",
                    toString(dtype), ": to - 1 = ", high - 1, " is above ", hi);
}

// --- _im2col / _col2im ------------------------------------------------------

namespace {
void checkPair(IntArrayRef v, const char *name) {
  EMBER_CHECK_VALUE(v.size() == 2, "It is expected ", name,
                    " equals to 2, but got size ", v.size());
}
std::string pairStr(IntArrayRef v) {
  return ember::detail::str("(", v[0], ", ", v[1], ")");
}
} // namespace

Window check_window(IntArrayRef kernel_size, IntArrayRef dilation,
                    IntArrayRef padding, IntArrayRef stride) {
  checkPair(kernel_size, "kernel_size");
  checkPair(dilation, "dilation");
  checkPair(padding, "padding");
  checkPair(stride, "stride");
  Window w{kernel_size[0], kernel_size[1], dilation[0], dilation[1],
           padding[0],     padding[1],     stride[0],   stride[1]};
  EMBER_CHECK_VALUE(w.kh > 0 && w.kw > 0,
                    "It is expected kernel_size to be greater than zero, but "
                    "got kernel_height: ",
                    w.kh, " kernel_width: ", w.kw);
  EMBER_CHECK_VALUE(w.dh > 0 && w.dw > 0,
                    "It is expected dilation to be greater than zero, but "
                    "got dilation_height: ",
                    w.dh, " dilation_width: ", w.dw);
  EMBER_CHECK_VALUE(w.ph >= 0 && w.pw >= 0,
                    "It is expected padding to be non-negative, but got "
                    "pad_height: ",
                    w.ph, " pad_width: ", w.pw);
  EMBER_CHECK_VALUE(w.sh > 0 && w.sw > 0,
                    "It is expected stride to be greater than zero, but got "
                    "stride_height: ",
                    w.sh, " stride_width: ", w.sw);
  return w;
}

int64_t sliding_blocks(int64_t size, int64_t k, int64_t d, int64_t p,
                       int64_t s) {
  int64_t span = d * (k - 1) + 1;
  int64_t padded = size + 2 * p;
  if (padded < span)
    return 0;
  return (padded - span) / s + 1;
}

DimVector im2col_sizes(const Tensor &self, IntArrayRef kernel_size,
                       IntArrayRef dilation, IntArrayRef padding,
                       IntArrayRef stride, const Scalar &pad_value) {
  Window w = check_window(kernel_size, dilation, padding, stride);
  int64_t nd = self.dim();
  bool ok = nd == 3 || nd == 4;
  for (int64_t d = nd - 3; ok && d < nd; ++d)
    ok = self.size(d) != 0;
  EMBER_CHECK_VALUE(ok,
                    "Expected 3D or 4D (batch mode) tensor with possibly 0 "
                    "batch size and other non-zero dimensions for input, but "
                    "got: ",
                    self.sizes());
  bool batched = nd == 4;
  int64_t C = self.size(-3), H = self.size(-2), W = self.size(-1);
  int64_t OH = sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  EMBER_CHECK_VALUE(
      OH >= 1 && OW >= 1, "Given input with spatial size (", H, ", ", W,
      "), kernel_size=", pairStr(kernel_size), ", dilation=", pairStr(dilation),
      ", padding=", pairStr(padding),
      ", calculated shape of the array of sliding blocks as (", OH, ", ", OW,
      "), but its components must be at least one.");
  DimVector outSize;
  if (batched)
    outSize.push_back(self.size(0));
  outSize.push_back(C * w.kh * w.kw);
  outSize.push_back(OH * OW);
  if (multiply_sizes(outSize) > 0 && isIntegralType(self.dtype(), false) &&
      pad_value.isFloatingPoint())
    EMBER_CHECK_VALUE(!std::isnan(pad_value.toDouble()),
                      "_im2col: pad_value must not be NaN for an integer "
                      "input");
  return outSize;
}

DimVector col2im_sizes(const Tensor &self, IntArrayRef output_size,
                       IntArrayRef kernel_size, IntArrayRef dilation,
                       IntArrayRef padding, IntArrayRef stride) {
  EMBER_CHECK_VALUE(output_size.size() == 2,
                    "It is expected output_size equals to 2, but got size ",
                    output_size.size());
  Window w = check_window(kernel_size, dilation, padding, stride);
  int64_t H = output_size[0], W = output_size[1];
  EMBER_CHECK_VALUE(H > 0 && W > 0,
                    "It is expected output_size to be greater than zero, but "
                    "got output_height: ",
                    H, " output_width: ", W);
  int64_t nd = self.dim();
  bool ok = nd == 2 || nd == 3;
  for (int64_t d = nd - 2; ok && d < nd; ++d)
    ok = self.size(d) != 0;
  EMBER_CHECK_VALUE(ok,
                    "Expected 2D or 3D (batch mode) tensor with possibly 0 "
                    "batch size and non-zero dimensions for input, but got: ",
                    self.sizes());
  EMBER_CHECK_TYPE(self.dtype() != kBool,
                   "_col2im: sums overlapping blocks, which bool tensors "
                   "cannot hold; convert the input with .to(ember::kFloat)");
  bool batched = nd == 3;
  int64_t K = w.kh * w.kw;
  int64_t rows = self.size(-2), L = self.size(-1);
  EMBER_CHECK_VALUE(
      rows % K == 0, "Expected size of input's dimension ", batched ? 1 : 0,
      " to be divisible by the product of kernel_size, but got "
      "input.size(",
      batched ? 1 : 0, ")=", rows, " and kernel_size=", pairStr(kernel_size));
  int64_t OH = sliding_blocks(H, w.kh, w.dh, w.ph, w.sh);
  int64_t OW = sliding_blocks(W, w.kw, w.dw, w.pw, w.sw);
  EMBER_CHECK_VALUE(
      OH >= 1 && OW >= 1 && OH * OW == L,
      "Given output_size=", pairStr(output_size),
      ", kernel_size=", pairStr(kernel_size), ", dilation=", pairStr(dilation),
      ", padding=", pairStr(padding), ", stride=", pairStr(stride),
      ", expected size of input's dimension ", batched ? 2 : 1,
      " to match the calculated number of sliding blocks ", OH, " * ", OW,
      " = ", OH * OW, ", but got input.size(", batched ? 2 : 1, ")=", L, ".");
  DimVector outSize;
  if (batched)
    outSize.push_back(self.size(0));
  outSize.push_back(rows / K);
  outSize.push_back(H);
  outSize.push_back(W);
  return outSize;
}

} // namespace ember::meta
