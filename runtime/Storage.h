#pragma once
/// Storage: a refcounted buffer shared by every view of it.

#include "runtime/Allocator.h"
#include "runtime/intrusive_ptr.h"

#include <atomic>
#include <functional>

namespace ember {

namespace detail {
/// Note [Creation epochs]
/// compile()'s capture numbers each call it captures and sets the number as
/// this thread's creation epoch while the call runs (0 outside any); every
/// storage keeps the epoch it was made in. Capture can then tell memory the
/// function allocated during the call (a factory's result: zeros, full,
/// randn) from memory that existed before it (parameters, arguments), which
/// replay mode must not hand out twice. Returns the previous epoch.
uint32_t set_creation_epoch(uint32_t epoch);
uint32_t creation_epoch();
} // namespace detail

struct StorageImpl : intrusive_ptr_target {
  DataPtr data_ptr;
  size_t nbytes = 0;
  Allocator *allocator = nullptr; // null for borrowed (from_blob) memory
  /// Bumped by every in-place write through any view of this storage; autograd
  /// compares it with the value saved at forward time.
  std::atomic<uint32_t> version{0};
  /// Note [Creation epochs]
  const uint32_t epoch = detail::creation_epoch();
  StorageImpl(DataPtr d, size_t n, Allocator *a)
      : data_ptr(std::move(d)), nbytes(n), allocator(a) {}
};

/// Handle to a StorageImpl, as c10::Storage.
class Storage {
public:
  Storage() = default;
  explicit Storage(intrusive_ptr<StorageImpl> impl) : impl_(std::move(impl)) {}
  /// Allocates nbytes with `allocator`.
  static Storage allocate(size_t nbytes, Allocator *allocator);
  /// Wraps memory the caller owns; `deleter` (if any) runs when the last
  /// tensor viewing it dies.
  static Storage borrow(void *data, size_t nbytes, Device device,
                        std::function<void(void *)> deleter = nullptr);

  void *data() const { return impl_->data_ptr.get(); }
  template <class T> T *data() const { return static_cast<T *>(data()); }
  size_t nbytes() const { return impl_->nbytes; }
  Device device() const { return impl_->data_ptr.device(); }
  bool defined() const { return bool(impl_); }
  uint32_t use_count() const { return impl_.use_count(); }
  bool is_alias_of(const Storage &o) const { return impl_ == o.impl_; }
  StorageImpl *unsafeGetStorageImpl() const { return impl_.get(); }

private:
  intrusive_ptr<StorageImpl> impl_;
};

} // namespace ember
