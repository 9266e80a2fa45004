#pragma once
/// Factories: empty, zeros, ones, full, arange, linspace, eye, rand, randn,
/// randint, randperm, the *_like forms, tensor() from nested braces and
/// from_blob, with TensorOptions as libtorch.

#include "eager/Tensor.h"

#include <functional>
#include <initializer_list>

namespace ember {

Tensor empty(IntArrayRef size, const TensorOptions &options = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride,
                     const TensorOptions &options = {});
Tensor zeros(IntArrayRef size, const TensorOptions &options = {});
Tensor ones(IntArrayRef size, const TensorOptions &options = {});
/// Filled with `value`; without a dtype, the dtype is inferred from the value
/// (bool, int64 or the default float) as torch.full.
Tensor full(IntArrayRef size, const Scalar &value,
            const TensorOptions &options = {});
Tensor empty_like(const Tensor &t, const TensorOptions &options = {});
Tensor zeros_like(const Tensor &t, const TensorOptions &options = {});
Tensor ones_like(const Tensor &t, const TensorOptions &options = {});
Tensor full_like(const Tensor &t, const Scalar &value,
                 const TensorOptions &options = {});
Tensor rand_like(const Tensor &t, const TensorOptions &options = {});
Tensor randn_like(const Tensor &t, const TensorOptions &options = {});

/// [0, end), [start, end) with `step`; int64 when every bound is integral.
Tensor arange(const Scalar &end, const TensorOptions &options = {});
Tensor arange(const Scalar &start, const Scalar &end,
              const TensorOptions &options = {});
Tensor arange(const Scalar &start, const Scalar &end, const Scalar &step,
              const TensorOptions &options = {});
Tensor linspace(const Scalar &start, const Scalar &end, int64_t steps,
                const TensorOptions &options = {});
Tensor eye(int64_t n, const TensorOptions &options = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions &options = {});

/// Uniform on [0, 1).
Tensor rand(IntArrayRef size, const TensorOptions &options = {});
Tensor rand(IntArrayRef size, std::optional<Generator> generator,
            const TensorOptions &options = {});
/// Standard normal.
Tensor randn(IntArrayRef size, const TensorOptions &options = {});
Tensor randn(IntArrayRef size, std::optional<Generator> generator,
             const TensorOptions &options = {});
/// Integers uniform on [low, high); int64 by default.
Tensor randint(int64_t high, IntArrayRef size,
               const TensorOptions &options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef size,
               const TensorOptions &options = {});
Tensor randint(int64_t low, int64_t high, IntArrayRef size,
               std::optional<Generator> generator,
               const TensorOptions &options = {});
/// A random permutation of [0, n); int64 by default.
Tensor randperm(int64_t n, const TensorOptions &options = {});
Tensor randperm(int64_t n, std::optional<Generator> generator,
                const TensorOptions &options = {});

/// Wraps memory the caller owns, without copying. The memory must outlive
/// every tensor viewing it, or pass a deleter that frees it.
Tensor from_blob(void *data, IntArrayRef sizes,
                 const TensorOptions &options = {});
Tensor from_blob(void *data, IntArrayRef sizes, IntArrayRef strides,
                 const TensorOptions &options = {});
Tensor from_blob(void *data, IntArrayRef sizes,
                 const std::function<void(void *)> &deleter,
                 const TensorOptions &options = {});

/// A 0-dim tensor holding `s` (its dtype from options, else from the value).
Tensor scalar_tensor(const Scalar &s, const TensorOptions &options = {});
/// A 0-dim "wrapped number" (x + 2): promotes like a Python scalar.
Tensor wrapped_scalar_tensor(const Scalar &s);

// --- tensor() from nested braces -------------------------------------------

namespace detail {
/// A nested-brace literal: a scalar or a list of nested literals. Ints make
/// int64 tensors, floats the default dtype, bools bool (as torch.tensor).
class TensorDataContainer {
public:
  TensorDataContainer(double v) : scalar_(v), kind_(kDouble) {}
  TensorDataContainer(float v) : scalar_(double(v)), kind_(kDouble) {}
  TensorDataContainer(bool v) : scalar_(v), kind_(kBool) {}
  TensorDataContainer(int v) : scalar_(int64_t(v)), kind_(kLong) {}
  TensorDataContainer(long v) : scalar_(int64_t(v)), kind_(kLong) {}
  TensorDataContainer(long long v) : scalar_(int64_t(v)), kind_(kLong) {}
  TensorDataContainer(unsigned v) : scalar_(int64_t(v)), kind_(kLong) {}
  TensorDataContainer(std::initializer_list<TensorDataContainer> l);
  template <class T>
  TensorDataContainer(const std::vector<T> &v)
      : TensorDataContainer(fromVector(v)) {}
  TensorDataContainer(const std::vector<bool> &v);

  bool is_scalar() const { return !is_list_; }
  IntArrayRef sizes() const { return sizes_; }
  ScalarType kind() const { return kind_; }
  void fill(char *&dst, ScalarType dtype) const;

private:
  TensorDataContainer() = default;
  template <class T>
  static TensorDataContainer fromVector(const std::vector<T> &v) {
    TensorDataContainer c;
    c.is_list_ = true;
    c.sizes_ = {int64_t(v.size())};
    c.kind_ = std::is_floating_point_v<T> ? kDouble : kLong;
    for (const T &x : v)
      c.elems_.push_back(TensorDataContainer(x));
    return c;
  }
  Scalar scalar_;
  ScalarType kind_ = kLong;
  bool is_list_ = false;
  DimVector sizes_;
  std::vector<TensorDataContainer> elems_;
};
} // namespace detail

/// ember::tensor({{1, 2}, {3, 4}}): a tensor from nested braces.
Tensor tensor(detail::TensorDataContainer data,
              const TensorOptions &options = {});

} // namespace ember
