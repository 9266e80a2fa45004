// Shape and data-movement ops: cat, stack, repeat, tile, flip, roll, tril,
// triu, constant_pad_nd, one_hot, and the comparisons isclose, allclose and
// equal.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ember::native {

namespace {

int64_t prod(IntArrayRef s, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e; ++i)
    p *= s[i];
  return p;
}

} // namespace

// --- cat / stack -------------------------------------------------------------

// Note [Legacy empty tensors in cat]
// Before 0-dim tensors existed, an empty tensor had shape [0], and
// cat({x, empty}) is still accepted for any x: PyTorch skips 1-d tensors of
// size 0 when checking shapes and copying (they still take part in type
// promotion). If every input is such a tensor, the result is one as well.
Tensor cat(TensorList tensors, int64_t dim) {
  meta::CatMeta m = meta::cat(tensors, dim);
  Tensor out = empty(m.sizes, TensorOptions(m.dtype).device(m.device));
  if (m.all_legacy_empty) // every input is a legacy empty tensor
    return out;
  const int64_t d = m.dim;
  const ScalarType dtype = m.dtype;
  IntArrayRef outSize = out.sizes();
  const int64_t total = outSize[size_t(d)];
  if (out.numel() == 0)
    return out;

  // Each input fills the slab [offset, offset + size(d)) of dim d. On the
  // CPU, inputs of the output dtype that are contiguous are copied row by
  // row with memcpy; the rest, and every input on CUDA (this is cat's CUDA
  // kernel too), go through copy_ (which converts and handles any strides).
  int64_t outer = prod(outSize, 0, size_t(d));
  int64_t inner = prod(outSize, size_t(d) + 1, outSize.size());
  size_t es = out.element_size();
  char *o = static_cast<char *>(out.data_ptr());
  int64_t outRow = total * inner;
  int64_t offset = 0;
  for (const Tensor &t : tensors) {
    if (t.dim() == 1 && t.size(0) == 0)
      continue;
    int64_t n = t.size(d);
    if (n == 0)
      continue;
    if (t.dtype() == dtype && t.is_contiguous() && !out.is_cuda()) {
      const char *s = static_cast<const char *>(t.data_ptr());
      int64_t row = n * inner;
      int64_t grain =
          std::max<int64_t>(1, kGrainSize / std::max<int64_t>(row, 1));
      parallel_for(0, outer, grain, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          std::memcpy(o + size_t((r * outRow + offset * inner)) * es,
                      s + size_t(r * row) * es, size_t(row) * es);
      });
    } else {
      native::copy_(native::slice(out, d, offset, offset + n, 1), t, false);
    }
    offset += n;
  }
  return out;
}

Tensor stack(TensorList tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "stack(): tensor number ", i,
                " in the list is undefined");
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                "stack expects each tensor to be equal size, but got ",
                tensors[0].sizes(), " at entry 0 and ", tensors[i].sizes(),
                " at entry ", i);
  }
  int64_t d = maybe_wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor &t : tensors)
    parts.push_back(t.unsqueeze(d));
  return ember::cat(parts, d);
}

// --- repeat / tile -----------------------------------------------------------

// Note [repeat as expand + reshape]
// x.repeat(r) views x (padded with leading 1s) as [1, s0, 1, s1, ...],
// expands it to [r0, s0, r1, s1, ...] (no copy) and reshapes to
// [r0*s0, r1*s1, ...], which materializes the copy. Built from view ops, it
// needs no kernel and no derivative of its own.
Tensor repeat(const Tensor &self, IntArrayRef repeats) {
  EMBER_CHECK(int64_t(repeats.size()) >= self.dim(),
              "Number of dimensions of repeat dims can not be smaller than "
              "number of dimensions of tensor");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, "Trying to create tensor with negative dimension ", r,
                ": ", repeats);
  size_t n = repeats.size();
  size_t pad = n - size_t(self.dim());
  DimVector padded, inter, expanded, target;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = i < pad ? 1 : self.size(int64_t(i - pad));
    padded.push_back(s);
    inter.push_back(1);
    inter.push_back(s);
    expanded.push_back(repeats[i]);
    expanded.push_back(s);
    int64_t size;
    EMBER_CHECK(!__builtin_mul_overflow(repeats[i], s, &size),
                "repeat: ", repeats[i], " repeats of a dimension of size ", s,
                " overflow int64");
    target.push_back(size);
  }
  Tensor out = self.reshape(inter).expand(expanded).reshape(target);
  if (out.is_alias_of(self)) // every repeat is 1: still a new tensor
    out = out.clone();
  return out;
}

Tensor tile(const Tensor &self, IntArrayRef dims) {
  DimVector reps;
  for (int64_t i = int64_t(dims.size()); i < self.dim(); ++i)
    reps.push_back(1);
  for (int64_t r : dims)
    reps.push_back(r);
  return self.repeat(reps);
}

// --- flip / roll -------------------------------------------------------------

Tensor flip(const Tensor &self, IntArrayRef dims) {
  auto flipped = dim_list_to_bitset(dims, self.dim());
  Tensor out = empty(self.sizes(), self.options());
  if (out.numel() == 0)
    return out;
  // Read self through strides negated on the flipped dims, starting at the
  // last element of each flipped dim.
  int64_t nd = self.dim();
  DimVector st(self.strides());
  const char *base = static_cast<const char *>(self.data_ptr());
  size_t es = self.element_size();
  for (int64_t d = 0; d < nd; ++d)
    if (flipped[size_t(d)]) {
      base += (self.size(d) - 1) * self.stride(d) * int64_t(es);
      st[size_t(d)] = -st[size_t(d)];
    }
  if (nd == 0) {
    std::memcpy(out.data_ptr(), base, es);
    return out;
  }
  int64_t inner = self.size(nd - 1), innerStride = st[size_t(nd - 1)];
  int64_t rows = out.numel() / inner;
  char *o = static_cast<char *>(out.data_ptr());
  dispatch_by_size(es, [&]<class U>() {
    const U *src = reinterpret_cast<const U *>(base);
    U *dst = reinterpret_cast<U *>(o);
    int64_t grain = std::max<int64_t>(1, kGrainSize / inner);
    parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t off = 0, rem = r;
        for (int64_t d = nd - 2; d >= 0; --d) {
          off += (rem % self.size(d)) * st[size_t(d)];
          rem /= self.size(d);
        }
        const U *s = src + off;
        U *dd = dst + r * inner;
        for (int64_t k = 0; k < inner; ++k)
          dd[k] = s[k * innerStride];
      }
    });
  });
  return out;
}

namespace {
Tensor rollOne(const Tensor &t, int64_t shift, int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, t.dim());
  int64_t size = t.size(d);
  if (size == 0)
    return t.clone();
  int64_t start = (size - shift % size) % size;
  if (start < 0)
    start += size;
  return ember::cat({t.narrow(d, start, size - start), t.narrow(d, 0, start)},
                    d);
}
} // namespace

Tensor roll(const Tensor &self, IntArrayRef shifts, IntArrayRef dims) {
  EMBER_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // Roll the flattened tensor, then restore the shape.
    Tensor flat = self.reshape({self.numel()});
    return rollOne(flat, shifts[0], 0).view(self.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  Tensor out = self;
  for (size_t i = 0; i < shifts.size(); ++i)
    out = rollOne(out, shifts[i], dims[i]);
  return out;
}

// --- tril / triu -------------------------------------------------------------

namespace {
/// Copies self, then zeroes each row's columns outside the kept band:
/// tril keeps j <= i + diagonal, triu keeps j >= i + diagonal.
Tensor triangle(const Tensor &self, int64_t diagonal, bool lower,
                const char *name) {
  meta::check_triangle(self, name);
  Tensor out = native::clone(self);
  int64_t R = self.size(-2), C = self.size(-1);
  if (out.numel() == 0)
    return out;
  // Diagonals beyond the matrix keep or zero everything: clamping them
  // changes nothing and keeps `i + diagonal + 1` from overflowing.
  diagonal = std::clamp<int64_t>(diagonal, -R - 1, C + 1);
  int64_t rows = out.numel() / C;
  size_t es = out.element_size();
  char *o = static_cast<char *>(out.data_ptr());
  int64_t grain = std::max<int64_t>(1, kGrainSize / C);
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % R;
      int64_t lo, hi; // zeroed columns [lo, hi)
      if (lower) {
        lo = std::clamp<int64_t>(i + diagonal + 1, 0, C);
        hi = C;
      } else {
        lo = 0;
        hi = std::clamp<int64_t>(i + diagonal, 0, C);
      }
      if (hi > lo) // every dtype's zero is all-zero bits
        std::memset(o + size_t(r * C + lo) * es, 0, size_t(hi - lo) * es);
    }
  });
  return out;
}
} // namespace

Tensor tril(const Tensor &self, int64_t diagonal) {
  return triangle(self, diagonal, true, "tril");
}
Tensor triu(const Tensor &self, int64_t diagonal) {
  return triangle(self, diagonal, false, "triu");
}

// --- constant_pad_nd ---------------------------------------------------------

// Note [constant_pad_nd]
// `pad` lists (before, after) pairs starting from the last dim, as F.pad.
// Negative pads crop. The output is filled with `value`, then the part of
// the input that survives cropping is copied into the part of the output
// that isn't padding (two narrowed views of the same shape).
// Device-agnostic (fill_ and copy_ serve both devices): the CUDA kernel
// too.
Tensor constant_pad_nd(const Tensor &self, IntArrayRef pad,
                       const Scalar &value) {
  Tensor out = empty(meta::constant_pad_sizes(self, pad), self.options());
  int64_t nd = self.dim();
  int64_t npd = int64_t(pad.size()) / 2;
  native::fill_(out, value);
  Tensor src = self, dst = out;
  for (int64_t i = 0; i < npd; ++i) {
    int64_t d = nd - 1 - i;
    int64_t before = pad[size_t(2 * i)], after = pad[size_t(2 * i + 1)];
    // Crop the input by negative pads, the output by positive ones.
    // (before or after may be INT64_MIN, when the other side makes up for
    // it: compare instead of negating.)
    int64_t sb =
        before < 0 ? (before < -src.size(d) ? src.size(d) : -before) : 0;
    int64_t se = after < 0 ? (after < -src.size(d) ? 0 : src.size(d) + after)
                           : src.size(d);
    int64_t db = std::max<int64_t>(before, 0);
    int64_t de = dst.size(d) - std::max<int64_t>(after, 0);
    if (se <= sb || de <= db) // nothing of the input survives
      return out;
    src = native::slice(src, d, sb, se, 1);
    dst = native::slice(dst, d, db, de, 1);
  }
  native::copy_(dst, src, false);
  return out;
}

// --- one_hot -----------------------------------------------------------------

Tensor one_hot(const Tensor &self, int64_t num_classes) {
  EMBER_CHECK_TYPE(self.dtype() == kLong,
                   "one_hot is only applicable to index tensor of type "
                   "LongTensor (int64), but got ",
                   self.dtype());
  EMBER_CHECK_VALUE(num_classes >= -1,
                    "one_hot: num_classes must be -1 (infer it from the "
                    "values) or non-negative, but got ",
                    num_classes);
  DimVector shape(self.sizes());
  if (self.numel() == 0) {
    EMBER_CHECK(num_classes > 0, "Can not infer total number of classes "
                                 "from empty tensor.");
    shape.push_back(num_classes);
    return empty(shape, self.options());
  }
  // The class values decide the output shape, so they are read here (a sync
  // point, as .item() is in PyTorch's one_hot).
  Tensor c = self.to(Device(kCPU)).contiguous();
  const int64_t *p = c.data_ptr<int64_t>();
  int64_t lo = p[0], hi = p[0];
  for (int64_t i = 1; i < c.numel(); ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  EMBER_CHECK(lo >= 0, "Class values must be non-negative (got ", lo, ").");
  if (num_classes == -1)
    num_classes = hi + 1;
  else
    EMBER_CHECK(hi < num_classes,
                "Class values must be smaller than "
                "num_classes (got ",
                hi, " with num_classes=", num_classes, ").");
  shape.push_back(num_classes);
  Tensor out = zeros(shape, self.options());
  Tensor idx = self.unsqueeze(-1);
  out.scatter_(-1, idx, ones_like(idx));
  return out;
}

// --- comparisons -------------------------------------------------------------

// Note [isclose]
// As PyTorch: |self - other| <= atol + rtol * |other|, checked only where the
// difference is finite (infinities are close only to the same infinity,
// through the equality test), NaNs close to NaNs only with equal_nan. Bool
// inputs are compared in the default float dtype; integers promote to it
// through `rtol * other`.
Tensor isclose(const Tensor &self, const Tensor &other, double rtol,
               double atol, bool equal_nan) {
  EMBER_CHECK_TYPE(self.dtype() == other.dtype(), "isclose(): ", self.dtype(),
                   " did not match ", other.dtype(),
                   " (both tensors must have the same dtype)");
  EMBER_CHECK_VALUE(rtol >= 0,
                    "rtol must be greater than or equal to zero, "
                    "but got ",
                    rtol);
  EMBER_CHECK_VALUE(atol >= 0,
                    "atol must be greater than or equal to zero, "
                    "but got ",
                    atol);
  Tensor close = ember::eq(self, other);
  if (equal_nan && self.is_floating_point())
    close = close.logical_or(self.isnan().logical_and(other.isnan()));
  if (rtol == 0 && atol == 0)
    return close;
  Tensor a = self.dtype() == kBool ? self.to(get_default_dtype()) : self;
  Tensor b = other.dtype() == kBool ? other.to(get_default_dtype()) : other;
  Tensor allowed = (b * rtol).abs() + atol;
  Tensor actual = (a - b).abs();
  Tensor finite = actual < std::numeric_limits<double>::infinity();
  return close.logical_or(finite.logical_and(actual <= allowed));
}

bool allclose(const Tensor &self, const Tensor &other, double rtol, double atol,
              bool equal_nan) {
  Tensor c = ember::isclose(self, other, rtol, atol, equal_nan)
                 .to(Device(kCPU))
                 .contiguous();
  const bool *p = c.data_ptr<bool>();
  return std::all_of(p, p + c.numel(), [](bool v) { return v; });
}

bool equal(const Tensor &self, const Tensor &other) {
  meta::check_equal(self, other);
  if (self.sizes() != other.sizes())
    return false;
  if (self.numel() == 0)
    return true;
  Tensor a = self.contiguous(), b = other.contiguous();
  bool eq = true;
  dispatch_dtype(self.dtype(), "equal", [&]<class T>() {
    const T *x = static_cast<const T *>(a.data_ptr());
    const T *y = static_cast<const T *>(b.data_ptr());
    using C = compute_t<T>;
    for (int64_t i = 0, n = a.numel(); i < n && eq; ++i)
      eq = C(x[i]) == C(y[i]); // NaN != NaN, -0.0 == 0.0
  });
  return eq;
}

} // namespace ember::native
