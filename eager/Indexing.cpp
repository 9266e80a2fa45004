// The libtorch indexing API: x.index({...}), x.index_put_({...}, v) and
// x[i], with Python's x[...] semantics.
//
// Note [Basic then advanced indexing]
// As PyTorch's applySlicing: a walk over the indices applies the basic ones
// as views (integers select, slices slice, None and booleans unsqueeze,
// Ellipsis skips dims), and records the tensor indices (and booleans, as a
// long index of one or zero elements into the dim they add) by the dim of
// the view they index. If nothing was recorded the view is the result, and
// writes go through it; otherwise the native index / index_put_ ops apply
// the recorded indices to the view, with NumPy's placement of the advanced
// dims (see Note [Advanced indexing plan] in eager/cpu/Index.cpp).
#include "eager/Indexing.h"
#include "eager/Factory.h"
#include "eager/generated/Functions.h"

#include <cstring>
#include <string_view>

namespace ember {

namespace indexing {
TensorIndex::TensorIndex(const char *s) : kind_(Kind::Ellipsis) {
  EMBER_CHECK_VALUE(s && std::string_view(s) == "...",
                    "Expected \"...\" to represent an ellipsis index, but got "
                    "\"",
                    s ? s : "(null)", "\"");
}
} // namespace indexing

using indexing::TensorIndex;
using Kind = TensorIndex::Kind;

namespace {

bool isMask(const Tensor &t) {
  return t.dtype() == kBool || t.dtype() == kByte;
}

/// The dims of the indexed tensor that the indices consume (a mask consumes
/// one dim for each of its own dims; None, Ellipsis and booleans none).
int64_t countSpecifiedDims(ArrayRef<TensorIndex> indices) {
  int64_t n = 0;
  for (const TensorIndex &i : indices) {
    if (i.kind() == Kind::Integer || i.kind() == Kind::Slice)
      ++n;
    else if (i.kind() == Kind::Tensor && i.tensor().defined())
      n += isMask(i.tensor()) ? i.tensor().dim() : 1;
  }
  return n;
}

/// A boolean index as a long index into the size-1 dim it adds: [0] for
/// true (keep), [] for false (select nothing).
Tensor boolToIndex(bool b) {
  return b ? zeros({1}, TensorOptions(kLong))
           : empty({0}, TensorOptions(kLong));
}

struct Sliced {
  Tensor view;                       ///< self after the basic indices
  std::vector<Tensor> tensorIndices; ///< per dim of `view` (undefined: none)
};

Sliced applySlicing(const Tensor &self, ArrayRef<TensorIndex> indices) {
  int64_t nd = self.dim();
  int ellipses = 0;
  for (const TensorIndex &i : indices) {
    ellipses += i.kind() == Kind::Ellipsis;
    EMBER_CHECK_INDEX(!(nd == 0 && i.kind() == Kind::Integer),
                      "invalid index of a 0-dim tensor. Use `tensor.item()` "
                      "in Python or `tensor.item<T>()` in C++ to convert a "
                      "0-dim tensor to a number");
    EMBER_CHECK_INDEX(i.kind() != Kind::Tensor || i.tensor().defined(),
                      "index: an undefined tensor can't be used as an index");
  }
  EMBER_CHECK_INDEX(ellipses <= 1,
                    "an index can only have a single ellipsis ('...')");
  int64_t specified = countSpecifiedDims(indices);
  EMBER_CHECK_INDEX(specified <= nd,
                    "too many indices for tensor of dimension ", nd);

  Sliced s;
  Tensor result = self;
  int64_t dim = 0;     // current dim of `result`
  int64_t realDim = 0; // the matching dim of `self` (for messages)
  int64_t covered = 0; // dims of `result` that tensorIndices account for
  auto record = [&](const Tensor &t) {
    for (; covered < dim; ++covered)
      s.tensorIndices.emplace_back();
    s.tensorIndices.push_back(t);
    int64_t n = isMask(t) ? t.dim() : 1;
    covered += n;
    dim += n;
  };
  auto selectAt = [&](int64_t i) {
    int64_t size = result.size(dim);
    EMBER_CHECK_INDEX(i >= -size && i < size, "index ", i,
                      " is out of bounds for dimension ", realDim,
                      " with size ", size);
    result = result.select(dim, i);
    ++realDim;
  };

  for (const TensorIndex &idx : indices) {
    switch (idx.kind()) {
    case Kind::Integer:
      selectAt(idx.integer());
      break;
    case Kind::Slice: {
      const indexing::Slice &sl = idx.slice();
      result = result.slice(dim, sl.start(), sl.stop(), sl.step());
      ++dim;
      ++realDim;
      break;
    }
    case Kind::Ellipsis:
      dim += nd - specified;
      realDim += nd - specified;
      break;
    case Kind::None:
      result = result.unsqueeze(dim);
      ++dim;
      break;
    case Kind::Boolean:
      result = result.unsqueeze(dim);
      record(boolToIndex(idx.boolean()));
      break;
    case Kind::Tensor: {
      const Tensor &t = idx.tensor();
      ScalarType dt = t.dtype();
      EMBER_CHECK_INDEX(dt == kLong || dt == kInt || isMask(t),
                        "tensors used as indices must be long, int, byte or "
                        "bool tensors (got ",
                        dt, ")");
      if (t.dim() == 0 && !isMask(t)) { // a 0-dim integer: like an int
        selectAt(t.item<int64_t>());
      } else if (t.dim() == 0) { // a 0-dim mask: like a bool
        result = result.unsqueeze(dim);
        record(boolToIndex(t.item<bool>()));
      } else {
        record(t);
        realDim += isMask(t) ? t.dim() : 1;
      }
      break;
    }
    }
  }
  s.view = result;
  return s;
}

/// `v` without leading dims of size 1 (as PyTorch's slicePrefix1sSize), so
/// a [1, n] value can be assigned to an [n] destination.
Tensor stripLeadingOnes(const Tensor &v) {
  int64_t k = 0;
  while (k < v.dim() && v.size(k) == 1)
    ++k;
  if (k == 0)
    return v;
  return v.view(v.sizes().slice(size_t(k)));
}

} // namespace

Tensor Tensor::operator[](int64_t i) const { return select(0, i); }

Tensor Tensor::operator[](const Tensor &i) const { return index({i}); }

Tensor Tensor::index(ArrayRef<TensorIndex> indices) const {
  Sliced s = applySlicing(*this, indices);
  if (s.tensorIndices.empty()) {
    if (s.view.is_same(*this)) // x[...] is a new view, as in PyTorch
      return as_strided(sizes(), strides(), storage_offset());
    return s.view;
  }
  return ember::index(s.view, s.tensorIndices);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(ArrayRef<TensorIndex>(indices));
}

Tensor &Tensor::index_put_(ArrayRef<TensorIndex> indices, const Tensor &rhs) {
  EMBER_CHECK(rhs.defined(), "index_put_: the value tensor is undefined");
  Sliced s = applySlicing(*this, indices);
  Tensor value = stripLeadingOnes(rhs);
  if (s.tensorIndices.empty())
    s.view.copy_(value.expand(s.view.sizes()));
  else
    ember::index_put_(s.view, s.tensorIndices, value, false);
  return *this;
}

Tensor &Tensor::index_put_(ArrayRef<TensorIndex> indices, const Scalar &v) {
  Sliced s = applySlicing(*this, indices);
  if (s.tensorIndices.empty())
    s.view.fill_(v);
  else
    ember::index_put_(s.view, s.tensorIndices, scalar_tensor(v, options()),
                      false);
  return *this;
}

Tensor &Tensor::index_put_(std::initializer_list<TensorIndex> indices,
                           const Tensor &rhs) {
  return index_put_(ArrayRef<TensorIndex>(indices), rhs);
}

Tensor &Tensor::index_put_(std::initializer_list<TensorIndex> indices,
                           const Scalar &v) {
  return index_put_(ArrayRef<TensorIndex>(indices), v);
}

} // namespace ember
