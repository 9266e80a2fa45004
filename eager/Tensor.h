#pragma once
/// Tensor: the user's handle to a TensorImpl, with libtorch's methods.

#include "eager/Scalar.h"
#include "eager/TensorImpl.h"
#include "eager/TensorOptions.h"
#include "runtime/Generator.h"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ember {

class Tensor;
using TensorList = ArrayRef<Tensor>;
namespace autograd {
struct Node;
}
namespace indexing {
class TensorIndex;
}

/// A refcounted handle; copies share the TensorImpl (as torch::Tensor).
class Tensor {
public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- identity and metadata -------------------------------------------
  bool defined() const { return bool(impl_); }
  TensorImpl *unsafeGetTensorImpl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl> &getIntrusivePtr() const { return impl_; }
  uint32_t use_count() const { return impl_.use_count(); }
  bool is_same(const Tensor &o) const { return impl_ == o.impl_; }
  void reset() { impl_.reset(); }

  IntArrayRef sizes() const { return impl()->sizes(); }
  IntArrayRef strides() const { return impl()->strides(); }
  /// Size of dim d (negative d counts from the end).
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const { return impl()->storage_offset(); }
  int64_t numel() const { return impl()->numel(); }
  int64_t dim() const { return impl()->dim(); }
  int64_t ndimension() const { return dim(); }
  bool is_contiguous() const { return impl()->is_contiguous(); }
  ScalarType scalar_type() const { return impl()->dtype(); }
  ScalarType dtype() const { return impl()->dtype(); }
  Device device() const { return impl()->device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  Layout layout() const { return kStrided; }
  TensorOptions options() const {
    return TensorOptions().dtype(dtype()).device(device());
  }
  size_t element_size() const { return impl()->itemsize(); }
  size_t itemsize() const { return impl()->itemsize(); }
  size_t nbytes() const { return size_t(numel()) * itemsize(); }
  const Storage &storage() const { return impl()->storage(); }
  /// True when both tensors view the same storage.
  bool is_alias_of(const Tensor &o) const {
    return storage().is_alias_of(o.storage());
  }
  bool is_floating_point() const { return isFloatingType(dtype()); }
  bool is_signed() const { return isSignedType(dtype()); }
  bool is_complex() const { return false; }
  /// Version counter shared by every view of the storage.
  uint32_t _version() const { return impl()->version(); }

  /// Pointer to element 0, checked against T. Inside ember::compile these
  /// are sync points: the graph so far runs first (a graph break at `loc`).
  template <class T>
  T *data_ptr(std::source_location loc = std::source_location::current()) const;
  void *
  data_ptr(std::source_location loc = std::source_location::current()) const {
    impl()->sync_capture("Tensor::data_ptr()", loc);
    return impl()->data();
  }
  const void *const_data_ptr(
      std::source_location loc = std::source_location::current()) const {
    impl()->sync_capture("Tensor::const_data_ptr()", loc);
    return impl()->data();
  }
  template <class T>
  const T *const_data_ptr(
      std::source_location loc = std::source_location::current()) const {
    return data_ptr<T>(loc);
  }

  /// The value of a one-element tensor (a sync point inside compile()).
  template <class T>
  T item(std::source_location loc = std::source_location::current()) const {
    return item(loc).checked_to<T>();
  }
  Scalar item(std::source_location loc = std::source_location::current()) const;

  std::string toString() const; // "CPUFloatType"

  // --- autograd (eager/autograd/) ----------------------------------------
  bool requires_grad() const;
  Tensor &set_requires_grad(bool r);
  const Tensor &requires_grad_(bool r = true) const;
  /// The gradient accumulated by backward() (undefined until one reaches
  /// this tensor; only leaves and tensors that retain_grad() get one).
  const Tensor &grad() const;
  /// The gradient, assignable (optimizers and zero_grad use it).
  Tensor &mutable_grad() const;
  /// True for tensors not produced by a recorded op (user-created tensors,
  /// and every tensor that does not require grad).
  bool is_leaf() const;
  /// The node that produced this tensor (null for leaves).
  const std::shared_ptr<autograd::Node> &grad_fn() const;
  /// Which output of grad_fn() this tensor is.
  uint32_t output_nr() const;
  /// Makes backward() fill grad() of this non-leaf tensor too.
  void retain_grad() const;
  bool retains_grad() const;
  /// Computes the gradient of this tensor with respect to the leaves of its
  /// graph and accumulates it into their grad(). `gradient` may be omitted
  /// for a one-element tensor. retain_graph defaults to create_graph.
  void backward(const Tensor &gradient = {},
                std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false,
                std::optional<TensorList> inputs = std::nullopt) const;
  /// A tensor sharing this one's data, outside of any graph.
  Tensor detach() const;
  /// Detaches this tensor from its graph, in place.
  const Tensor &detach_() const;
  /// The same data, without autograd history (as libtorch's .data()).
  Tensor data() const { return detach(); }
  /// Registers a hook called with this tensor's gradient during backward.
  /// The hook may return a tensor that replaces the gradient
  /// (Tensor(Tensor)) or observe it (void(Tensor)). Returns a handle for
  /// remove_hook().
  template <class Hook> unsigned register_hook(Hook &&hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<Hook, Tensor>>)
      return _register_hook([h = std::forward<Hook>(hook)](const Tensor &g) {
        h(g);
        return Tensor();
      });
    else
      return _register_hook(
          std::function<Tensor(const Tensor &)>(std::forward<Hook>(hook)));
  }
  unsigned _register_hook(std::function<Tensor(const Tensor &)> hook) const;
  void remove_hook(unsigned handle) const;
  /// Whether this tensor is a view of another (and which: the root base).
  bool is_view() const { return bool(impl()->view_base()); }
  Tensor _base() const {
    return is_view() ? Tensor(impl()->view_base()) : Tensor();
  }
  /// Whether this tensor was created in InferenceMode.
  bool is_inference() const { return impl()->is_inference(); }

  // --- conversions -------------------------------------------------------
  Tensor to(ScalarType dtype, bool non_blocking = false,
            bool copy = false) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false,
            bool copy = false) const;
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
  Tensor to(DeviceType device, bool non_blocking = false,
            bool copy = false) const {
    return to(Device(device), non_blocking, copy);
  }
  Tensor to(const TensorOptions &options, bool non_blocking = false,
            bool copy = false) const;
  Tensor to(const Tensor &other, bool non_blocking = false,
            bool copy = false) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  /// A copy on the current CUDA device (this tensor if already there).
  Tensor cuda() const { return to(Device(kCUDA)); }
  /// Whether this CPU tensor's memory is page-locked (pin_memory()).
  bool is_pinned() const;
  /// A copy in page-locked host memory, from which copies to CUDA with
  /// non_blocking=true run asynchronously (this tensor if already pinned).
  Tensor pin_memory() const;
  Tensor toType(ScalarType t) const { return to(t); }
  /// libtorch's type_as: to(other.options()), its dtype and its device.
  Tensor type_as(const Tensor &o) const {
    return to(TensorOptions(o.dtype()).device(o.device()));
  }
  Tensor contiguous(MemoryFormat f = MemoryFormat::Contiguous) const;

  // --- indexing (libtorch's operator[] and index / index_put_) -----------
  Tensor operator[](int64_t i) const;
  Tensor operator[](const Tensor &i) const;
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor &index_put_(ArrayRef<indexing::TensorIndex> indices,
                     const Tensor &rhs);
  Tensor &index_put_(ArrayRef<indexing::TensorIndex> indices, const Scalar &v);
  Tensor &index_put_(std::initializer_list<indexing::TensorIndex> indices,
                     const Tensor &rhs);
  Tensor &index_put_(std::initializer_list<indexing::TensorIndex> indices,
                     const Scalar &v);

  // --- C++ operators -----------------------------------------------------
  Tensor operator-() const;
  Tensor &operator+=(const Tensor &o);
  Tensor &operator+=(const Scalar &o);
  Tensor &operator-=(const Tensor &o);
  Tensor &operator-=(const Scalar &o);
  Tensor &operator*=(const Tensor &o);
  Tensor &operator*=(const Scalar &o);
  Tensor &operator/=(const Tensor &o);
  Tensor &operator/=(const Scalar &o);
  Tensor operator~() const;

  // --- ops from the op table (eager/ops/ops.yaml) ------------------------
#include "eager/generated/TensorMethods.inc"

private:
  TensorImpl *impl() const {
    EMBER_CHECK(impl_, "This tensor is undefined (default-constructed); "
                       "create it with a factory such as ember::zeros().");
    return impl_.get();
  }
  intrusive_ptr<TensorImpl> impl_;
};

std::ostream &operator<<(std::ostream &os, const Tensor &t);

// Binary operators with tensors and scalars on either side.
#define EMBER_BINARY_OPERATOR(op)                                              \
  Tensor operator op(const Tensor &a, const Tensor &b);                        \
  Tensor operator op(const Tensor &a, const Scalar &b);                        \
  Tensor operator op(const Scalar &a, const Tensor &b);
EMBER_BINARY_OPERATOR(+)
EMBER_BINARY_OPERATOR(-)
EMBER_BINARY_OPERATOR(*)
EMBER_BINARY_OPERATOR(/)
EMBER_BINARY_OPERATOR(%)
EMBER_BINARY_OPERATOR(==)
EMBER_BINARY_OPERATOR(!=)
EMBER_BINARY_OPERATOR(<)
EMBER_BINARY_OPERATOR(<=)
EMBER_BINARY_OPERATOR(>)
EMBER_BINARY_OPERATOR(>=)
EMBER_BINARY_OPERATOR(&)
EMBER_BINARY_OPERATOR(|)
EMBER_BINARY_OPERATOR(^)
#undef EMBER_BINARY_OPERATOR

/// Checks that T matches the tensor's dtype.
void check_data_ptr_dtype(ScalarType actual, ScalarType requested);

template <class T> T *Tensor::data_ptr(std::source_location loc) const {
  impl()->sync_capture("Tensor::data_ptr()", loc);
  check_data_ptr_dtype(dtype(), dtype_of<std::remove_const_t<T>>());
  return static_cast<T *>(impl()->data());
}

} // namespace ember
