#include "eager/Tensor.h"
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/HostCopy.h"
#include "eager/Indexing.h"
#include "eager/WrapDim.h"
#include "eager/autograd/GradMode.h"
#include "eager/generated/Functions.h"
#include "runtime/CudaAllocator.h"

namespace ember {

int64_t Tensor::size(int64_t d) const {
  return sizes()[size_t(maybe_wrap_dim(d, dim(), false))];
}
int64_t Tensor::stride(int64_t d) const {
  return strides()[size_t(maybe_wrap_dim(d, dim(), false))];
}

void check_data_ptr_dtype(ScalarType actual, ScalarType requested) {
  EMBER_CHECK_TYPE(actual == requested, "expected scalar type ", requested,
                   " but found ", actual,
                   " (data_ptr<T>() must name the tensor's own dtype)");
}

Scalar Tensor::item(std::source_location loc) const {
  impl()->sync_capture("Tensor::item()", loc);
  EMBER_CHECK_VALUE(numel() == 1, "a Tensor with ", numel(),
                    " elements cannot be converted to Scalar");
  if (!is_cpu())
    return host_copy(*this).item();
  return dispatch_dtype(dtype(), "item", [&]<class T>() -> Scalar {
    T v = *static_cast<const T *>(impl()->data());
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return Scalar(double(float(v)));
    else
      return Scalar(v);
  });
}

Tensor host_copy(const Tensor &t) {
  if (t.is_cpu())
    return t;
  ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);
  NoGradGuard no_grad;
  return t.to(Device(kCPU));
}

std::string Tensor::toString() const {
  static const char *names[] = {"Byte", "Char",  "Short",  "Int",  "Long",
                                "Half", "Float", "Double", "Bool", "BFloat16"};
  return std::string(device().is_cuda() ? "CUDA" : "CPU") +
         names[int(dtype())] + "Type";
}

// --- conversions
// --------------------------------------------------------------

namespace {
Tensor pinnedEmpty(IntArrayRef sizes, ScalarType dt) {
  Storage st =
      Storage::allocate(size_t(multiply_sizes(sizes)) * elementSize(dt),
                        cuda::getPinnedAllocator());
  return Tensor(make_intrusive<TensorImpl>(std::move(st), dt, sizes));
}
} // namespace

Tensor Tensor::to(const TensorOptions &o, bool non_blocking, bool copy) const {
  ScalarType dt = o.has_dtype() ? o.dtype() : dtype();
  Device dev = o.has_device() ? o.device() : device();
  if (dev.is_cuda() && !dev.has_index()) // "cuda": the current device
    dev = Device(kCUDA, cuda::current_device());
  if (!copy && dt == dtype() && dev == device())
    return *this;
  if (non_blocking && dev != device()) {
    // An asynchronous copy (as PyTorch: to the host into pinned memory,
    // which the caller reads after synchronizing the stream).
    Tensor out = dev.is_cpu() && cuda::is_available()
                     ? pinnedEmpty(sizes(), dt)
                     : empty(sizes(), options().dtype(dt).device(dev));
    return out.copy_(*this, true);
  }
  return ember::_to_copy(*this, dt, dev);
}

bool Tensor::is_pinned() const {
  return is_cpu() && numel() > 0 && cuda::is_available() &&
         cuda::is_pinned_ptr(impl()->data());
}

Tensor Tensor::pin_memory() const {
  EMBER_CHECK(is_cpu(), "cannot pin '", device(),
              "' memory: only dense CPU tensors can be pinned");
  if (is_pinned())
    return *this;
  EMBER_CHECK(cuda::is_available(),
              "pin_memory: page-locked memory needs CUDA, which is not "
              "available (ember::cuda::is_available() is false)");
  return pinnedEmpty(sizes(), dtype()).copy_(*this);
}
Tensor Tensor::to(ScalarType t, bool nb, bool copy) const {
  return to(TensorOptions(t), nb, copy);
}
Tensor Tensor::to(Device d, ScalarType t, bool nb, bool copy) const {
  return to(TensorOptions(t).device(d), nb, copy);
}
Tensor Tensor::to(Device d, bool nb, bool copy) const {
  return to(TensorOptions(d), nb, copy);
}
Tensor Tensor::to(const Tensor &other, bool nb, bool copy) const {
  return to(other.options(), nb, copy);
}

Tensor Tensor::contiguous(MemoryFormat) const {
  return is_contiguous() ? *this : clone();
}

// --- operators
// ----------------------------------------------------------------

Tensor Tensor::operator-() const { return neg(); }
Tensor Tensor::operator~() const { return bitwise_not(); }
Tensor &Tensor::operator+=(const Tensor &o) {
  add_(o);
  return *this;
}
Tensor &Tensor::operator+=(const Scalar &o) {
  add_(o);
  return *this;
}
Tensor &Tensor::operator-=(const Tensor &o) {
  sub_(o);
  return *this;
}
Tensor &Tensor::operator-=(const Scalar &o) {
  sub_(o);
  return *this;
}
Tensor &Tensor::operator*=(const Tensor &o) {
  mul_(o);
  return *this;
}
Tensor &Tensor::operator*=(const Scalar &o) {
  mul_(o);
  return *this;
}
Tensor &Tensor::operator/=(const Tensor &o) {
  div_(o);
  return *this;
}
Tensor &Tensor::operator/=(const Scalar &o) {
  div_(o);
  return *this;
}

#define EMBER_DEFINE_OPERATORS(op, fn, scalar_first)                           \
  Tensor operator op(const Tensor &a, const Tensor &b) { return fn(a, b); }    \
  Tensor operator op(const Tensor &a, const Scalar &b) {                       \
    return fn(a, wrapped_scalar_tensor(b));                                    \
  }                                                                            \
  Tensor operator op(const Scalar &a, const Tensor &b) { return scalar_first; }
#define EMBER_DEFINE_OPERATOR(op, fn)                                          \
  EMBER_DEFINE_OPERATORS(op, fn, fn(wrapped_scalar_tensor(a), b))
// number + tensor and number * tensor are tensor + number and tensor *
// number, as libtorch's operators (y.add(x), y.mul(x)): in float16 a number
// second keeps float precision in mul (Note [Numbers in reduced precision]).
#define EMBER_DEFINE_COMMUTATIVE_OPERATOR(op, fn)                              \
  EMBER_DEFINE_OPERATORS(op, fn, fn(b, wrapped_scalar_tensor(a)))
EMBER_DEFINE_COMMUTATIVE_OPERATOR(+, add)
EMBER_DEFINE_OPERATOR(-, sub)
EMBER_DEFINE_COMMUTATIVE_OPERATOR(*, mul)
EMBER_DEFINE_OPERATOR(/, div)
EMBER_DEFINE_OPERATOR(%, remainder)
EMBER_DEFINE_OPERATOR(==, eq)
EMBER_DEFINE_OPERATOR(!=, ne)
EMBER_DEFINE_OPERATOR(<, lt)
EMBER_DEFINE_OPERATOR(<=, le)
EMBER_DEFINE_OPERATOR(>, gt)
EMBER_DEFINE_OPERATOR(>=, ge)
EMBER_DEFINE_OPERATOR(&, bitwise_and)
EMBER_DEFINE_OPERATOR(|, bitwise_or)
EMBER_DEFINE_OPERATOR(^, bitwise_xor)
#undef EMBER_DEFINE_OPERATOR
#undef EMBER_DEFINE_COMMUTATIVE_OPERATOR
#undef EMBER_DEFINE_OPERATORS

} // namespace ember
