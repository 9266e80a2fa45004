#pragma once
/// TensorImpl: storage + the metadata that makes it a tensor (as c10's).

#include "eager/ArrayRef.h"
#include "eager/DispatchKey.h"
#include "runtime/ScalarType.h"
#include "runtime/Storage.h"

#include <memory>
#include <source_location>
#include <string>

namespace ember {

class TensorImpl;
class Tensor;

/// What autograd keeps on a tensor. The eager core only needs to know whether
/// a tensor requires grad and the name of its grad_fn (for printing); the
/// autograd layer derives from this.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
  virtual bool requires_grad() const = 0;
  virtual void set_requires_grad(bool requires_grad, TensorImpl *self) = 0;
  /// "AddBackward0", or "" for tensors without a grad_fn.
  virtual std::string grad_fn_name() const = 0;
};

/// What the compiler's front end keeps on a capture tensor (frontend/): a
/// capture tensor has the Capture key, sizes, strides and dtype from shape
/// inference, and no data until it is materialized.
struct CaptureMetaInterface {
  virtual ~CaptureMetaInterface() = default;
};

namespace detail {
/// Installed by the front end: runs the graph recorded so far (a graph
/// break) and makes `t` a real tensor in place. Called before anything reads
/// a capture tensor's data; `reason` and `where` are reported by explain().
using CaptureSyncFn = void (*)(TensorImpl &t, const char *reason,
                               const std::source_location &where);
extern CaptureSyncFn capture_sync_fn;
/// Installed by the front end: what autograd saves for backward in place of
/// capture tensor `t` (SavedVariable), a stand-in that does not keep `t`
/// itself alive (Note [The joint graph] in frontend/Capture.cpp).
using CaptureSaveFn = Tensor (*)(const Tensor &t);
extern CaptureSaveFn capture_save_fn;
} // namespace detail

class TensorImpl : public intrusive_ptr_target {
public:
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes,
             IntArrayRef strides, int64_t storage_offset);
  /// A contiguous tensor over `storage`.
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return int64_t(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_.device(); }
  const Storage &storage() const { return storage_; }
  bool is_contiguous() const { return is_contiguous_; }
  DispatchKeySet key_set() const { return key_set_; }
  size_t itemsize() const { return elementSize(dtype_); }

  /// Address of element 0 (storage data + offset). A capture tensor is
  /// materialized first (a graph break).
  void *data() const {
    if (__builtin_expect(key_set_.has(DispatchKey::Capture), 0))
      sync_capture("reading a tensor's data");
    // An empty view's offset need not lie inside its storage (nothing is
    // read through it; it may be near INT64_MAX), so its address is the
    // storage's, as c10 gives nullptr for an empty tensor's data.
    if (numel_ == 0)
      return storage_.data();
    return static_cast<char *>(storage_.data()) +
           storage_offset_ * int64_t(itemsize());
  }

  /// Changes the view (used by the view ops and in-place metadata ops such
  /// as squeeze_/t_/as_strided_). Strides may be any integers; bounds were
  /// checked by the caller.
  void set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides,
                             int64_t storage_offset);
  void set_storage(Storage s) { storage_ = std::move(s); }
  /// Makes this impl hold `src`'s data (storage, dtype, device, sizes,
  /// strides, offset) while keeping its identity, so every handle to it sees
  /// the new data, and its autograd meta (libtorch's Tensor::set_data; used
  /// by nn::Module::to).
  void set_data_from(const TensorImpl &src) {
    storage_ = src.storage_;
    dtype_ = src.dtype_;
    view_base_ = src.view_base_;
    set_key(DispatchKey::CPU, !src.device().is_cuda());
    set_key(DispatchKey::CUDA, src.device().is_cuda());
    set_sizes_and_strides(src.sizes(), src.strides(), src.storage_offset());
  }

  uint32_t version() const {
    return storage_.unsafeGetStorageImpl()->version.load(
        std::memory_order_relaxed);
  }
  void bump_version() {
    storage_.unsafeGetStorageImpl()->version.fetch_add(
        1, std::memory_order_relaxed);
  }

  AutogradMetaInterface *autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m);
  /// Adds or removes a key from this tensor's own key set (Autograd,
  /// Capture).
  void set_key(DispatchKey k, bool on);

  /// The root base of a view (the tensor whose storage this one views),
  /// or null. Set by the view ops; used by autograd to rebase in-place ops.
  const intrusive_ptr<TensorImpl> &view_base() const { return view_base_; }
  void set_view_base(intrusive_ptr<TensorImpl> base) {
    view_base_ = std::move(base);
  }
  /// Capture tensors (DispatchKey::Capture): the front end's record, owned
  /// by the tensor (its destruction tells the front end the value is dead).
  CaptureMetaInterface *capture_meta() const { return capture_meta_.get(); }
  void set_capture_meta(std::unique_ptr<CaptureMetaInterface> m) {
    capture_meta_ = std::move(m);
  }
  /// Materializes a capture tensor (see detail::capture_sync_fn); a no-op on
  /// real tensors.
  void sync_capture(const char *reason,
                    const std::source_location &where =
                        std::source_location::current()) const;

  /// Created in InferenceMode.
  bool is_inference() const { return inference_; }

  /// A wrapped number is a 0-dim tensor made from a C++ scalar in an op
  /// (x + 2): it takes part in type promotion like a Python number.
  bool is_wrapped_number() const { return wrapped_number_; }
  void set_wrapped_number(bool w) { wrapped_number_ = w; }

private:
  void refresh();

  Storage storage_;
  DimVector sizes_, strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  bool wrapped_number_ = false;
  bool inference_ = false;
  intrusive_ptr<TensorImpl> view_base_;
  DispatchKeySet key_set_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  std::unique_ptr<CaptureMetaInterface> capture_meta_;
};

/// Row-major strides for `sizes`.
DimVector contiguous_strides(IntArrayRef sizes);
/// Product of sizes, checked for overflow.
int64_t multiply_sizes(IntArrayRef sizes);

/// Note [Checked storage arithmetic]
/// Every view and allocation asks these two functions how much storage a
/// layout reaches, so the int64 arithmetic users push to the edges (strides
/// near INT64_MAX, huge sizes) is checked in one place: an overflow raises
/// ember::Error ("Storage size calculation overflowed ...", PyTorch's
/// message) instead of wrapping into a small size that a later write runs
/// past. Sizes, strides and the offset must be non-negative (callers check
/// them first, with their own op's message).
///
/// The number of elements a layout reaches from its storage's start:
/// offset + 1 + sum((size - 1) * stride), or 0 when a size is 0.
int64_t storage_span(IntArrayRef sizes, IntArrayRef strides,
                     int64_t offset = 0);
/// storage_span(...) * itemsize, checked.
size_t storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                      int64_t offset = 0);

} // namespace ember
