#pragma once
/// Indexing as libtorch's torch::indexing: x.index({Slice(1, None), 0}),
/// x.index_put_({mask}, 0), with integers, slices, None, Ellipsis, booleans,
/// bool masks and integer tensors.

#include "eager/Tensor.h"

#include <optional>

namespace ember::indexing {

constexpr std::nullopt_t None = std::nullopt;

struct EllipsisIndexType {};
constexpr EllipsisIndexType Ellipsis{};

/// A Python slice start:stop:step (each may be None).
class Slice {
public:
  Slice(std::optional<int64_t> start = std::nullopt,
        std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {
    EMBER_CHECK_VALUE(step_ != 0, "slice step cannot be zero");
    EMBER_CHECK_VALUE(step_ > 0, "step must be greater than zero");
  }
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

/// One index of an indexing expression.
class TensorIndex {
public:
  enum class Kind { None, Ellipsis, Integer, Boolean, Slice, Tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}
  /// "..." means Ellipsis, as in libtorch.
  TensorIndex(const char *s);
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}
  TensorIndex(int i) : TensorIndex(int64_t(i)) {}
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice &slice() const { return slice_; }
  const Tensor &tensor() const { return tensor_; }

private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

} // namespace ember::indexing
