#include "eager/TensorIterator.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <numeric>

namespace ember {

DimVector infer_size(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                ") must match the size of ", "tensor b (", db,
                ") at non-singleton dimension ", i, " (shapes ", a, " and ", b,
                " do not broadcast)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

TensorIterator TensorIterator::build(const Tensor &out, TensorList inputs) {
  TensorIterator it;
  EMBER_CHECK(inputs.size() + 1 <= size_t(kMaxOperands),
              "TensorIterator: too many operands");
  const int64_t nd = out.dim();
  IntArrayRef shape = out.sizes();
  it.numel_ = out.numel();
  auto addOperand = [&](const Tensor &t) {
    Operand op;
    op.data = static_cast<char *>(t.data_ptr());
    op.elsize = int64_t(t.element_size());
    op.strides.resize(size_t(nd), 0);
    int64_t off = nd - t.dim();
    EMBER_INTERNAL_ASSERT(off >= 0);
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t sz = t.size(d);
      EMBER_INTERNAL_ASSERT(sz == shape[size_t(d + off)] || sz == 1);
      op.strides[size_t(d + off)] = sz == 1 ? 0 : t.stride(d) * op.elsize;
    }
    it.ops_[size_t(it.nops_++)] = std::move(op);
  };
  addOperand(out);
  for (const Tensor &t : inputs)
    addOperand(t);

  // Drop size-1 dims, then order dims by the output's strides (innermost =
  // smallest), so that a transposed output still walks memory in order.
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < nd; ++d)
    if (shape[size_t(d)] != 1)
      dims.push_back(d);
  const auto &os = it.ops_[0].strides;
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) {
    // Larger output stride first (outer); ties keep the logical order.
    return os[size_t(a)] > os[size_t(b)];
  });

  // Merge adjacent dims (outer a, inner b) that are contiguous for every
  // operand: stride[a] == stride[b] * size[b].
  DimVector newShape;
  std::vector<DimVector> newStrides(size_t(it.nops_));
  for (int64_t d : dims) {
    int64_t sz = shape[size_t(d)];
    bool merge = !newShape.empty();
    if (merge) {
      // The current innermost of the merged list is `newShape.back()`; d is
      // inner to it.
      for (size_t k = 0; k < size_t(it.nops_); ++k)
        if (newStrides[k].back() != it.ops_[k].strides[size_t(d)] * sz) {
          merge = false;
          break;
        }
    }
    if (merge) {
      newShape.back() *= sz;
      for (size_t k = 0; k < size_t(it.nops_); ++k)
        newStrides[k].back() = it.ops_[k].strides[size_t(d)];
    } else {
      newShape.push_back(sz);
      for (size_t k = 0; k < size_t(it.nops_); ++k)
        newStrides[k].push_back(it.ops_[k].strides[size_t(d)]);
    }
  }
  it.shape_ = newShape;
  for (size_t k = 0; k < size_t(it.nops_); ++k)
    it.ops_[k].strides = newStrides[k];
  return it;
}

bool TensorIterator::is_contiguous() const {
  if (shape_.size() > 1)
    return false;
  if (shape_.empty())
    return true;
  for (int k = 0; k < nops_; ++k)
    if (ops_[size_t(k)].strides[0] != ops_[size_t(k)].elsize)
      return false;
  return true;
}

void TensorIterator::serial_for_each(const Loop &loop, int64_t begin,
                                     int64_t end) const {
  const int nt = ntensors();
  char *ptrs[kMaxOperands];
  int64_t inner[kMaxOperands];
  const int nd = ndim();
  if (nd == 0) { // a single element
    for (int k = 0; k < nt; ++k) {
      ptrs[k] = ops_[size_t(k)].data;
      inner[k] = 0;
    }
    if (begin < end)
      loop(ptrs, inner, 1);
    return;
  }
  const int64_t isz = shape_[size_t(nd - 1)];
  for (int k = 0; k < nt; ++k)
    inner[k] = ops_[size_t(k)].strides[size_t(nd - 1)];
  // Multi-index of `begin` over the outer dims.
  int64_t idx[16] = {0};
  std::vector<int64_t> bigIdx;
  int64_t *counter = idx;
  if (nd > 16) {
    bigIdx.resize(size_t(nd));
    counter = bigIdx.data();
  }
  int64_t pos = begin;
  int64_t innerStart = pos % isz;
  int64_t rest = pos / isz;
  for (int d = nd - 2; d >= 0; --d) {
    counter[d] = rest % shape_[size_t(d)];
    rest /= shape_[size_t(d)];
  }
  while (pos < end) {
    int64_t n = std::min(isz - innerStart, end - pos);
    for (int k = 0; k < nt; ++k) {
      const auto &op = ops_[size_t(k)];
      int64_t off = innerStart * op.strides[size_t(nd - 1)];
      for (int d = 0; d < nd - 1; ++d)
        off += counter[d] * op.strides[size_t(d)];
      ptrs[k] = op.data + off;
    }
    loop(ptrs, inner, n);
    pos += n;
    innerStart = 0;
    for (int d = nd - 2; d >= 0; --d) {
      if (++counter[d] < shape_[size_t(d)])
        break;
      counter[d] = 0;
    }
  }
}

void TensorIterator::for_each(const Loop &loop, int64_t grain) const {
  if (numel_ == 0)
    return;
  parallel_for(0, numel_, grain,
               [&](int64_t b, int64_t e) { serial_for_each(loop, b, e); });
}

// ---------------------------------------------------------------------------
// Type promotion
// ---------------------------------------------------------------------------

namespace {
ScalarType promoteSkipUndefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined)
    return b;
  if (b == ScalarType::Undefined)
    return a;
  return promoteTypes(a, b);
}
// PyTorch's combine_categories: a lower-priority operand only changes the
// result when it is of a higher category (bool < int < float).
ScalarType combineCategories(ScalarType higher, ScalarType lower) {
  if (higher != ScalarType::Undefined && isFloatingType(higher))
    return higher;
  if (higher == kBool ||
      (lower != ScalarType::Undefined && isFloatingType(lower)))
    return promoteSkipUndefined(higher, lower);
  if (higher != ScalarType::Undefined)
    return higher;
  return lower;
}
ScalarType wrappedType(ScalarType t) {
  // A Python float is the default dtype, an int int64, a bool bool.
  return isFloatingType(t) ? get_default_dtype() : t;
}
} // namespace

ScalarType result_type(ArrayRef<const Tensor *> tensors,
                       ArrayRef<const Scalar *> scalars) {
  ScalarType dimR = ScalarType::Undefined, zeroR = ScalarType::Undefined,
             wrapR = ScalarType::Undefined;
  for (const Tensor *t : tensors) {
    if (!t || !t->defined())
      continue;
    ScalarType dt = t->dtype();
    if (t->unsafeGetTensorImpl()->is_wrapped_number())
      wrapR = promoteSkipUndefined(wrapR, wrappedType(dt));
    else if (t->dim() == 0)
      zeroR = promoteSkipUndefined(zeroR, dt);
    else
      dimR = promoteSkipUndefined(dimR, dt);
  }
  for (const Scalar *s : scalars)
    if (s)
      wrapR = promoteSkipUndefined(wrapR, wrappedType(s->type()));
  ScalarType r = combineCategories(dimR, combineCategories(zeroR, wrapR));
  EMBER_CHECK(r != ScalarType::Undefined,
              "result_type: no tensor or scalar to take a dtype from");
  return r;
}

ScalarType result_type(const Tensor &a, const Tensor &b) {
  const Tensor *ts[] = {&a, &b};
  return result_type(ArrayRef<const Tensor *>(ts, 2));
}
ScalarType result_type(const Tensor &a, const Scalar &b) {
  const Tensor *ts[] = {&a};
  const Scalar *ss[] = {&b};
  return result_type(ArrayRef<const Tensor *>(ts, 1),
                     ArrayRef<const Scalar *>(ss, 1));
}
ScalarType result_type(const Scalar &a, const Tensor &b) {
  return result_type(b, a);
}

bool can_cast(ScalarType from, ScalarType to) {
  if (isFloatingType(from) && isIntegralType(to, true))
    return false;
  if (from != kBool && to == kBool)
    return false;
  return true;
}

} // namespace ember
