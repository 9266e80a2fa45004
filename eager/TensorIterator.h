#pragma once
/// TensorIterator: walks one output and N inputs of a common (broadcast)
/// shape, each with its own strides and dtype, as PyTorch's TensorIterator.
///
/// Note [TensorIterator]
/// build() broadcasts the shapes, drops dims of size 1, orders the dims so
/// that the innermost has the smallest output stride, and merges dims that
/// are contiguous for every operand. Kernels receive a 1-d inner loop
///   loop(char **data, const int64_t *byte_strides, int64_t n)
/// over runs of the innermost dim; for_each() splits the element range over
/// the thread pool (chunking depends only on the sizes and the thread
/// count, so results are deterministic). A loop whose strides all equal the
/// element size is contiguous, and kernels give it a vectorizable path.

#include "eager/Tensor.h"

#include <array>
#include <functional>

namespace ember {

class TensorIterator {
public:
  static constexpr int kMaxOperands = 8;

  /// operands[0] is the output (already allocated, with the broadcast shape
  /// of the inputs); the rest are inputs. Dtypes are the operands' own.
  static TensorIterator build(const Tensor &out, TensorList inputs);

  int ntensors() const { return nops_; }
  int64_t numel() const { return numel_; }
  int ndim() const { return int(shape_.size()); }
  IntArrayRef shape() const { return shape_; }
  /// Operand k's byte strides over shape()'s dims (the CUDA kernels' offset
  /// arithmetic).
  IntArrayRef strides(int k) const { return ops_[size_t(k)].strides; }
  /// Operand k's address at the iteration's first element.
  char *data_ptr(int k) const { return ops_[size_t(k)].data; }
  /// True when every operand is contiguous over the whole range.
  bool is_contiguous() const;

  using Loop = std::function<void(char **, const int64_t *, int64_t)>;
  /// Runs `loop` over every element, in parallel chunks of at least `grain`.
  void for_each(const Loop &loop, int64_t grain = kDefaultGrain) const;
  /// Runs `loop` over [begin, end) of the flattened iteration space.
  void serial_for_each(const Loop &loop, int64_t begin, int64_t end) const;

  static constexpr int64_t kDefaultGrain = 32768;

private:
  struct Operand {
    char *data;
    int64_t elsize;
    DimVector strides; // bytes, per iteration dim
  };
  std::array<Operand, kMaxOperands> ops_;
  int nops_ = 0;
  DimVector shape_; // innermost last
  int64_t numel_ = 0;
};

/// The broadcast shape of `a` and `b`, or an error naming both.
DimVector infer_size(IntArrayRef a, IntArrayRef b);

/// PyTorch's result_type over tensors (dim tensors > 0-dim tensors > wrapped
/// numbers) and Python-like scalars (which rank with the wrapped numbers).
ScalarType result_type(ArrayRef<const Tensor *> tensors,
                       ArrayRef<const Scalar *> scalars = {});
ScalarType result_type(const Tensor &a, const Tensor &b);
ScalarType result_type(const Tensor &a, const Scalar &b);
ScalarType result_type(const Scalar &a, const Tensor &b);
/// Whether a value of dtype `from` may be written into `to` in place
/// (PyTorch's canCast: no float into int, no int into bool).
bool can_cast(ScalarType from, ScalarType to);

} // namespace ember
