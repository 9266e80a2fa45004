#pragma once
/// ArrayRef (a non-owning view of a contiguous list, as c10::ArrayRef) and
/// SmallVector (inline storage for the common small case), used for sizes,
/// strides and argument lists.

#include "runtime/Error.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <type_traits>
#include <vector>

namespace ember {

template <class T> class ArrayRef {
public:
  using value_type = T;
  using iterator = const T *;
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T *data, size_t n) : data_(data), size_(n) {}
  constexpr ArrayRef(const T *b, const T *e) : data_(b), size_(size_t(e - b)) {}
  /// One element (so `x.sum(1)` passes a dim list of one).
  constexpr ArrayRef(const T &one) : data_(&one), size_(1) {}
  ArrayRef(const std::vector<T> &v) : data_(v.data()), size_(v.size()) {}
  template <size_t N>
  constexpr ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}
  template <class C, class = decltype(std::declval<const C &>().data()),
            class = std::enable_if_t<
                std::is_same_v<std::remove_const_t<std::remove_pointer_t<
                                   decltype(std::declval<const C &>().data())>>,
                               T>>>
  ArrayRef(const C &c) : data_(c.data()), size_(c.size()) {}
  // Like c10::ArrayRef: the list lives until the end of the full expression,
  // so `f({1, 2})` is safe and `IntArrayRef a = {1, 2};` dangles (GCC warns
  // about the latter in general; the warning is silenced for this one
  // constructor, whose uses are calls).
#if defined(__GNUC__) && !defined(__clang__) // clang has no such warning
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(const std::initializer_list<T> &l)
      : data_(l.begin() == l.end() ? nullptr : l.begin()), size_(l.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  const T *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }
  const T &operator[](size_t i) const { return data_[i]; }
  const T &at(size_t i) const {
    EMBER_CHECK_INDEX(i < size_, "ArrayRef: index ", i, " out of range for ",
                      "length ", size_);
    return data_[i];
  }
  const T &front() const { return data_[0]; }
  const T &back() const { return data_[size_ - 1]; }
  ArrayRef slice(size_t b, size_t n) const { return {data_ + b, n}; }
  ArrayRef slice(size_t b) const { return {data_ + b, size_ - b}; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }
  bool operator==(ArrayRef o) const { return equals(o); }
  bool operator!=(ArrayRef o) const { return !equals(o); }

private:
  const T *data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = ArrayRef<int64_t>;

/// An optional list of ints (schema type "int[]?"), as libtorch's
/// OptionalIntArrayRef. Unlike std::optional<IntArrayRef>, constructing it
/// from one int keeps a pointer to the caller's value (alive for the whole
/// call), never to a temporary made inside a constructor.
class OptionalIntArrayRef {
public:
  OptionalIntArrayRef() = default;
  OptionalIntArrayRef(std::nullopt_t) {}
  OptionalIntArrayRef(IntArrayRef a) : v_(a), has_(true) {}
  OptionalIntArrayRef(const int64_t &one) : v_(one), has_(true) {}
  OptionalIntArrayRef(const std::vector<int64_t> &v) : v_(v), has_(true) {}
  OptionalIntArrayRef(const std::initializer_list<int64_t> &l)
      : v_(l), has_(true) {}
  OptionalIntArrayRef(const std::optional<IntArrayRef> &o)
      : v_(o ? *o : IntArrayRef()), has_(o.has_value()) {}
  bool has_value() const { return has_; }
  explicit operator bool() const { return has_; }
  IntArrayRef value() const {
    EMBER_CHECK(has_, "OptionalIntArrayRef: no value");
    return v_;
  }
  IntArrayRef operator*() const { return v_; }
  const IntArrayRef *operator->() const { return &v_; }
  IntArrayRef value_or(IntArrayRef d) const { return has_ ? v_ : d; }

private:
  IntArrayRef v_;
  bool has_ = false;
};

/// A vector with N elements stored inline (no heap allocation for tensors of
/// up to N dims).
template <class T, size_t N> class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  SmallVector() = default;
  SmallVector(size_t n, T v = T()) { assign(n, v); }
  SmallVector(ArrayRef<T> a) { assign(a.begin(), a.end()); }
  SmallVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  template <class It> SmallVector(It b, It e) { assign(b, e); }
  SmallVector(const SmallVector &o) { assign(o.begin(), o.end()); }
  SmallVector &operator=(const SmallVector &o) {
    if (this != &o)
      assign(o.begin(), o.end());
    return *this;
  }
  SmallVector(SmallVector &&o) noexcept { steal(o); }
  SmallVector &operator=(SmallVector &&o) noexcept {
    if (this != &o) {
      freeHeap();
      steal(o);
    }
    return *this;
  }
  ~SmallVector() { freeHeap(); }

  template <class It> void assign(It b, It e) {
    size_t n = size_t(std::distance(b, e));
    size_ = 0;
    reserve(n);
    std::copy(b, e, data_);
    size_ = n;
  }
  void assign(size_t n, T v) {
    size_ = 0;
    reserve(n);
    std::fill(data_, data_ + n, v);
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_)
      return;
    size_t cap = std::max(n, cap_ * 2);
    T *p = new T[cap];
    std::copy(data_, data_ + size_, p);
    freeHeap();
    data_ = p;
    cap_ = cap;
  }
  void resize(size_t n, T v = T()) {
    reserve(n);
    if (n > size_)
      std::fill(data_ + size_, data_ + n, v);
    size_ = n;
  }
  void push_back(T v) {
    reserve(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(const T *pos, T v) {
    size_t i = size_t(pos - data_);
    reserve(size_ + 1);
    std::copy_backward(data_ + i, data_ + size_, data_ + size_ + 1);
    data_[i] = v;
    ++size_;
  }
  void erase(const T *pos) {
    size_t i = size_t(pos - data_);
    std::copy(data_ + i + 1, data_ + size_, data_ + i);
    --size_;
  }
  void clear() { size_ = 0; }

  T *data() { return data_; }
  const T *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T *begin() { return data_; }
  T *end() { return data_ + size_; }
  const T *begin() const { return data_; }
  const T *end() const { return data_ + size_; }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  T &back() { return data_[size_ - 1]; }
  const T &back() const { return data_[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(data_, size_); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool operator==(const SmallVector &o) const {
    return ArrayRef<T>(*this) == ArrayRef<T>(o);
  }

private:
  void freeHeap() {
    if (data_ != inline_)
      delete[] data_;
    data_ = inline_;
    cap_ = N;
  }
  void steal(SmallVector &o) {
    if (o.data_ == o.inline_) {
      std::copy(o.data_, o.data_ + o.size_, inline_);
      data_ = inline_;
      cap_ = N;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }
  T inline_[N];
  T *data_ = inline_;
  size_t size_ = 0, cap_ = N;
};

using DimVector = SmallVector<int64_t, 6>;

template <class T> std::ostream &operator<<(std::ostream &os, ArrayRef<T> a) {
  os << "[";
  for (size_t i = 0; i < a.size(); ++i)
    os << (i ? ", " : "") << a[i];
  return os << "]";
}
template <class T, size_t N>
std::ostream &operator<<(std::ostream &os, const SmallVector<T, N> &v) {
  return os << ArrayRef<T>(v);
}

} // namespace ember
