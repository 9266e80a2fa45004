// View ops: they only make new metadata over the same storage (DESIGN.md:
// views never copy). Registered for every backend.
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/NativeFunctions.h"

#include <algorithm>

namespace ember::native {

namespace {
Tensor makeView(const Tensor &self, IntArrayRef sizes, IntArrayRef strides,
                int64_t offset) {
  auto impl = make_intrusive<TensorImpl>(self.storage(), self.dtype(), sizes,
                                         strides, offset);
  return Tensor(std::move(impl));
}

// Note [View strides]
// view() reuses the strides when the new shape splits or merges dims that
// are contiguous with each other; otherwise it has no expression in strides,
// and the error suggests reshape() (which copies). Same algorithm as
// PyTorch's computeStride.
std::optional<DimVector>
computeStride(IntArrayRef oldSize, IntArrayRef oldStride, IntArrayRef newSize) {
  DimVector newStride(newSize.size());
  if (oldSize.empty()) {
    std::fill(newStride.begin(), newStride.end(), 1);
    return newStride;
  }
  int64_t numel = multiply_sizes(oldSize);
  if (numel == 0) {
    if (oldSize == newSize)
      return DimVector(oldStride);
    return contiguous_strides(newSize);
  }
  int64_t viewD = int64_t(newSize.size()) - 1;
  int64_t chunkBase = oldStride.back();
  int64_t tensorNumel = 1, viewNumel = 1;
  for (int64_t d = int64_t(oldSize.size()) - 1; d >= 0; --d) {
    tensorNumel *= oldSize[size_t(d)];
    if (d == 0 || (oldSize[size_t(d - 1)] != 1 &&
                   oldStride[size_t(d - 1)] != tensorNumel * chunkBase)) {
      while (viewD >= 0 &&
             (viewNumel < tensorNumel || newSize[size_t(viewD)] == 1)) {
        newStride[size_t(viewD)] = viewNumel * chunkBase;
        viewNumel *= newSize[size_t(viewD)];
        --viewD;
      }
      if (viewNumel != tensorNumel)
        return std::nullopt;
      if (d > 0) {
        chunkBase = oldStride[size_t(d - 1)];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD != -1)
    return std::nullopt;
  return newStride;
}
} // namespace

/// Resolves one -1 in a requested shape (view/reshape).
DimVector infer_view_size(IntArrayRef shape, int64_t numel) {
  DimVector out(shape);
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(!infer, "only one dimension can be inferred");
      infer = i;
    } else {
      EMBER_CHECK(shape[i] >= 0, "invalid shape dimension ", shape[i]);
      EMBER_CHECK(!__builtin_mul_overflow(known, shape[i], &known), "shape '",
                  shape, "' is invalid for input of size ", numel,
                  " (its size overflows int64)");
    }
  }
  if (infer) {
    EMBER_CHECK(known != 0 && numel % known == 0, "shape '", shape,
                "' is invalid for input of size ", numel);
    out[*infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, "shape '", shape,
                "' is invalid for input of size ", numel);
  }
  return out;
}

Tensor as_strided(const Tensor &self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset) {
  EMBER_CHECK(size.size() == stride.size(), "as_strided: mismatch in length ",
              "of strides and shape (", size.size(), " sizes, ", stride.size(),
              " strides)");
  int64_t off = storage_offset.value_or(self.storage_offset());
  EMBER_CHECK(off >= 0, "as_strided: negative storage offset ", off);
  for (size_t i = 0; i < size.size(); ++i) {
    EMBER_CHECK(size[i] >= 0, "as_strided: negative size ", size[i]);
    EMBER_CHECK(stride[i] >= 0, "as_strided: negative stride ", stride[i]);
  }
  size_t need = storage_nbytes(size, stride, self.element_size(), off);
  if (need > 0) {
    EMBER_CHECK(need <= self.storage().nbytes(), "setStorage: sizes ", size,
                ", strides ", stride, " and storage offset ", off,
                " require a storage of ", need, " bytes, but the storage has ",
                self.storage().nbytes(), " bytes");
  }
  return makeView(self, size, stride, off);
}

Tensor view(const Tensor &self, IntArrayRef size) {
  DimVector shape = infer_view_size(size, self.numel());
  auto stride = computeStride(self.sizes(), self.strides(), shape);
  EMBER_CHECK(stride.has_value(),
              "view size is not compatible with input tensor's size and "
              "stride (at least one dimension spans across two contiguous "
              "subspaces). Use .reshape(...) instead.");
  return makeView(self, shape, *stride, self.storage_offset());
}

Tensor reshape(const Tensor &self, IntArrayRef shape) {
  DimVector sz = infer_view_size(shape, self.numel());
  if (auto stride = computeStride(self.sizes(), self.strides(), sz))
    return self.view(sz); // through the dispatcher: modes see the view
  return self.clone().view(sz);
}

Tensor flatten(const Tensor &self, int64_t start_dim, int64_t end_dim) {
  int64_t s = maybe_wrap_dim(start_dim, self.dim());
  int64_t e = maybe_wrap_dim(end_dim, self.dim());
  EMBER_CHECK(s <= e, "flatten() has invalid args: start_dim cannot come ",
              "after end_dim");
  if (self.dim() == 0)
    return self.reshape({1});
  if (s == e)
    return self;
  DimVector shape;
  for (int64_t d = 0; d < s; ++d)
    shape.push_back(self.size(d));
  shape.push_back(-1);
  for (int64_t d = e + 1; d < self.dim(); ++d)
    shape.push_back(self.size(d));
  if (self.numel() == 0) { // -1 can't be inferred from 0 elements
    int64_t p = 1;
    for (int64_t d = s; d <= e; ++d)
      p *= self.size(d);
    shape[size_t(s)] = p;
  }
  return self.reshape(shape);
}

Tensor unflatten(const Tensor &self, int64_t dim, IntArrayRef sizes) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  EMBER_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  DimVector inner = infer_view_size(sizes, self.size(d));
  DimVector shape;
  for (int64_t i = 0; i < d; ++i)
    shape.push_back(self.size(i));
  for (int64_t s : inner)
    shape.push_back(s);
  for (int64_t i = d + 1; i < self.dim(); ++i)
    shape.push_back(self.size(i));
  return self.view(shape);
}

Tensor squeeze(const Tensor &self) {
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.size(d) != 1) {
      sz.push_back(self.size(d));
      st.push_back(self.stride(d));
    }
  return makeView(self, sz, st, self.storage_offset());
}

Tensor squeeze_dims(const Tensor &self, IntArrayRef dims) {
  auto mask = dim_list_to_bitset(dims, self.dim());
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!(mask[size_t(d)] && self.size(d) == 1)) {
      sz.push_back(self.size(d));
      st.push_back(self.stride(d));
    }
  return makeView(self, sz, st, self.storage_offset());
}

Tensor squeeze_dim(const Tensor &self, int64_t dim) {
  return squeeze_dims(self, dim);
}

Tensor unsqueeze(const Tensor &self, int64_t dim) {
  int64_t d = maybe_wrap_dim(dim, self.dim() + 1);
  DimVector sz(self.sizes()), st(self.strides());
  int64_t stride = d < self.dim() ? self.stride(d) * self.size(d) : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return makeView(self, sz, st, self.storage_offset());
}

Tensor transpose(const Tensor &self, int64_t dim0, int64_t dim1) {
  int64_t a = maybe_wrap_dim(dim0, self.dim());
  int64_t b = maybe_wrap_dim(dim1, self.dim());
  DimVector sz(self.sizes()), st(self.strides());
  if (self.dim() > 0) {
    std::swap(sz[size_t(a)], sz[size_t(b)]);
    std::swap(st[size_t(a)], st[size_t(b)]);
  }
  return makeView(self, sz, st, self.storage_offset());
}

Tensor t(const Tensor &self) {
  EMBER_CHECK(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, ",
              "but self is ", self.dim(), "D");
  return self.dim() < 2 ? transpose(self, 0, 0) : transpose(self, 0, 1);
}

Tensor permute(const Tensor &self, IntArrayRef dims) {
  EMBER_CHECK(int64_t(dims.size()) == self.dim(),
              "permute(): number of dimensions in the tensor input "
              "does not match the length of the desired ordering of "
              "dimensions i.e. input.dim() = ",
              self.dim(), " is not equal to len(dims) = ", dims.size());
  dim_list_to_bitset(dims, self.dim()); // checks repeats
  DimVector sz, st;
  for (int64_t d : dims) {
    int64_t w = maybe_wrap_dim(d, self.dim());
    sz.push_back(self.size(w));
    st.push_back(self.stride(w));
  }
  return makeView(self, sz, st, self.storage_offset());
}

Tensor expand(const Tensor &self, IntArrayRef size, bool implicit) {
  (void)implicit;
  EMBER_CHECK(int64_t(size.size()) >= self.dim(),
              "expand: the number of sizes provided (", size.size(), ") ",
              "must be greater or equal to the number of dimensions in the ",
              "tensor (", self.dim(), ")");
  size_t n = size.size();
  size_t off = n - size_t(self.dim());
  DimVector sz(n), st(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < off) {
      EMBER_CHECK(size[i] >= 0, "expand: the expanded size of the tensor (",
                  size[i],
                  ") isn't allowed in a leading, non-existing "
                  "dimension ",
                  i);
      sz[i] = size[i];
      st[i] = 0;
      continue;
    }
    int64_t cur = self.size(int64_t(i - off));
    int64_t want = size[i] == -1 ? cur : size[i];
    EMBER_CHECK(cur == want || cur == 1, "The expanded size of the tensor (",
                want, ") must match the existing size (", cur,
                ") at non-singleton dimension ", i, ".  Target sizes: ", size,
                ".  Tensor sizes: ", self.sizes());
    sz[i] = want;
    st[i] = cur == want ? self.stride(int64_t(i - off)) : 0;
  }
  return makeView(self, sz, st, self.storage_offset());
}

Tensor expand_as(const Tensor &self, const Tensor &other) {
  return self.expand(other.sizes());
}
Tensor broadcast_to(const Tensor &self, IntArrayRef size) {
  return self.expand(size);
}

Tensor narrow(const Tensor &self, int64_t dim, int64_t start, int64_t length) {
  EMBER_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t size = self.size(d);
  EMBER_CHECK_INDEX(start >= -size && start <= size, "start (", start,
                    ") is out of bounds for dimension ", d, " of size ", size);
  if (start < 0)
    start += size;
  EMBER_CHECK(length >= 0 && length <= size - start, "start (", start,
              ") + length (", length, ") exceeds dimension size (", size, ").");
  return self.slice(d, start, start + length, 1);
}

Tensor select(const Tensor &self, int64_t dim, int64_t index) {
  EMBER_CHECK_INDEX(self.dim() > 0, "select() cannot be applied to a 0-dim ",
                    "tensor.");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t size = self.size(d);
  EMBER_CHECK_INDEX(index >= -size && index < size, "index ", index,
                    " is out of bounds for dimension ", d, " with size ", size);
  if (index < 0)
    index += size;
  DimVector sz(self.sizes()), st(self.strides());
  int64_t off = self.storage_offset() + index * self.stride(d);
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  return makeView(self, sz, st, off);
}

Tensor slice(const Tensor &self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> end, int64_t step) {
  EMBER_CHECK_INDEX(self.dim() > 0, "slice() cannot be applied to a 0-dim ",
                    "tensor.");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  EMBER_CHECK_VALUE(step > 0, "slice step must be positive, got ", step);
  int64_t size = self.size(d);
  int64_t s = start.value_or(0), e = end.value_or(size);
  if (s < 0)
    s += size;
  if (e < 0)
    e += size;
  s = std::clamp<int64_t>(s, 0, size);
  e = std::clamp<int64_t>(e, s, size);
  DimVector sz(self.sizes()), st(self.strides());
  // (e - s + step - 1) / step overflows for a step near INT64_MAX; and
  // the stride only matters past the first element, where stride * step
  // fits (the elements lie in the storage).
  sz[size_t(d)] = e == s ? 0 : 1 + (e - s - 1) / step;
  if (sz[size_t(d)] > 1)
    EMBER_CHECK(!__builtin_mul_overflow(self.stride(d), step, &st[size_t(d)]),
                "slice: stride ", self.stride(d), " times step ", step,
                " overflows int64");
  return makeView(self, sz, st, self.storage_offset() + s * self.stride(d));
}

Tensor diagonal(const Tensor &self, int64_t offset, int64_t dim1,
                int64_t dim2) {
  int64_t a = maybe_wrap_dim(dim1, self.dim(), false);
  int64_t b = maybe_wrap_dim(dim2, self.dim(), false);
  EMBER_CHECK(a != b, "diagonal dimensions cannot be identical ", dim1, ", ",
              dim2);
  int64_t len, off = self.storage_offset();
  // An offset past the matrix (up to INT64_MIN/MAX) gives an empty
  // diagonal; only an offset inside it moves the start, where offset *
  // stride lies within the storage.
  if (offset >= 0) {
    len = offset >= self.size(b)
              ? 0
              : std::min(self.size(a), self.size(b) - offset);
    if (len > 0)
      off += offset * self.stride(b);
  } else {
    len = offset <= -self.size(a)
              ? 0
              : std::min(self.size(a) + offset, self.size(b));
    if (len > 0)
      off -= offset * self.stride(a);
  }
  DimVector sz, st;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != a && d != b) {
      sz.push_back(self.size(d));
      st.push_back(self.stride(d));
    }
  sz.push_back(len);
  st.push_back(self.stride(a) + self.stride(b));
  return makeView(self, sz, st, off);
}

Tensor unfold(const Tensor &self, int64_t dimension, int64_t size,
              int64_t step) {
  int64_t d = maybe_wrap_dim(dimension, self.dim());
  int64_t maxSize = self.dim() == 0 ? 1 : self.size(d);
  EMBER_CHECK(size <= maxSize, "maximum size for tensor at dimension ", d,
              " is ", maxSize, " but size is ", size);
  EMBER_CHECK(step > 0, "step is ", step, " but must be > 0");
  EMBER_CHECK(size >= 0, "size is ", size, " but must be >= 0");
  DimVector sz(self.sizes()), st(self.strides());
  if (self.dim() > 0) {
    sz[size_t(d)] = (self.size(d) - size) / step + 1;
    st[size_t(d)] = self.stride(d) * step;
  }
  sz.push_back(size);
  st.push_back(self.dim() == 0 ? 1 : self.stride(d));
  return makeView(self, sz, st, self.storage_offset());
}

std::vector<Tensor> split(const Tensor &self, int64_t split_size, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional ",
              "tensor");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t size = self.size(d);
  EMBER_CHECK_VALUE(split_size >= 0,
                    "split expects split_size be non-negative, but got "
                    "split_size=",
                    split_size);
  EMBER_CHECK(split_size > 0 || (split_size == 0 && size == 0),
              "split_size can only be 0 if dimension size is 0, but got "
              "dimension size of ",
              size);
  std::vector<Tensor> out;
  if (size == 0) {
    out.push_back(self);
    return out;
  }
  for (int64_t s = 0; s < size; s += split_size)
    out.push_back(self.narrow(d, s, std::min(split_size, size - s)));
  return out;
}

std::vector<Tensor> split_with_sizes(const Tensor &self,
                                     IntArrayRef split_sizes, int64_t dim) {
  EMBER_CHECK(self.dim() != 0, "split expects at least a 1-dimensional ",
              "tensor");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "split_with_sizes expects split_sizes to be ",
                "non-negative, but got ", split_sizes);
    total += s;
  }
  EMBER_CHECK(total == self.size(d), "split_with_sizes expects split_sizes ",
              "to sum exactly to ", self.size(d),
              " (input tensor's size at dimension ", d, "), but got ",
              "split_sizes=", split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(self.narrow(d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor &self, int64_t chunks, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, "chunk expects at least a 1-dimensional ",
              "tensor");
  EMBER_CHECK(chunks > 0,
              "chunk expects `chunks` to be greater than 0, got: ", chunks);
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t size = self.size(d);
  int64_t each = size / chunks + (size % chunks != 0); // no overflow
  if (each == 0) { // an empty dim: `chunks` empty pieces, as PyTorch
    constexpr int64_t kMaxPieces = int64_t(1) << 24;
    EMBER_CHECK_VALUE(chunks <= kMaxPieces,
                      "chunk: cannot split an empty "
                      "dimension into ",
                      chunks, " pieces (at most ", kMaxPieces, ")");
    std::vector<int64_t> sizes(size_t(chunks), 0);
    return self.split(sizes, d);
  }
  return self.split(each, d);
}

std::vector<Tensor> unbind(const Tensor &self, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, "Dimension specified as ", dim,
              " but tensor has no dimensions");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.size(d); ++i)
    out.push_back(self.select(d, i));
  return out;
}

} // namespace ember::native
