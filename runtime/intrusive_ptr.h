#pragma once
/// A refcounted pointer whose count lives in the object (like c10's): one
/// allocation per TensorImpl/StorageImpl, and handles the size of a pointer.

#include <atomic>
#include <cstdint>
#include <utility>

namespace ember {

class intrusive_ptr_target {
  template <class T> friend class intrusive_ptr;
  mutable std::atomic<uint32_t> refcount_{0};

public:
  virtual ~intrusive_ptr_target() = default;
  intrusive_ptr_target() = default;
  intrusive_ptr_target(const intrusive_ptr_target &) : refcount_(0) {}
  intrusive_ptr_target &operator=(const intrusive_ptr_target &) {
    return *this;
  }
  uint32_t use_count() const {
    return refcount_.load(std::memory_order_relaxed);
  }
};

template <class T> class intrusive_ptr {
  T *p_ = nullptr;
  void retain() {
    if (p_)
      p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete p_;
  }

public:
  intrusive_ptr() = default;
  /// Takes ownership of a fresh object (refcount 0).
  explicit intrusive_ptr(T *p) : p_(p) { retain(); }
  intrusive_ptr(const intrusive_ptr &o) : p_(o.p_) { retain(); }
  intrusive_ptr(intrusive_ptr &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U> intrusive_ptr(const intrusive_ptr<U> &o) : p_(o.get()) {
    retain();
  }
  ~intrusive_ptr() { release(); }
  intrusive_ptr &operator=(const intrusive_ptr &o) {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr &operator=(intrusive_ptr &&o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }
  void swap(intrusive_ptr &o) noexcept { std::swap(p_, o.p_); }
  void reset() { intrusive_ptr().swap(*this); }
  T *get() const { return p_; }
  T *operator->() const { return p_; }
  T &operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  uint32_t use_count() const { return p_ ? p_->use_count() : 0; }
  bool operator==(const intrusive_ptr &o) const { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr &o) const { return p_ != o.p_; }

  template <class... Args> static intrusive_ptr make(Args &&...args) {
    return intrusive_ptr(new T(std::forward<Args>(args)...));
  }
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args &&...args) {
  return intrusive_ptr<T>::make(std::forward<Args>(args)...);
}

} // namespace ember
