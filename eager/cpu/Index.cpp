// Indexing kernels: index_select, gather, scatter_, scatter_add_, index_add_,
// masked_select, nonzero, and advanced indexing (index, index_put_), with
// the composite functional forms (scatter, scatter_add, index_add).
//
// Note [Index validation]
// Every index is checked against its bound, with PyTorch's message, before
// anything is read or written: a bad index raises and leaves the destination
// of an in-place op unchanged; it never reaches memory.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>

namespace ember::native {

namespace {

/// Row-major walk over positions [begin, end) of `shape`, calling fn(offs)
/// with, for each of K operands, the element offset sum(coord[d] *
/// strides[k][d]).
template <size_t K, class F>
void forEachOffset(IntArrayRef shape, const std::array<IntArrayRef, K> &strides,
                   int64_t begin, int64_t end, F &&fn) {
  int64_t nd = int64_t(shape.size());
  std::array<int64_t, K> off{};
  if (begin >= end)
    return;
  if (nd == 0) {
    fn(off);
    return;
  }
  DimVector coord(size_t(nd), 0);
  int64_t rem = begin;
  for (int64_t d = nd - 1; d >= 0; --d) {
    coord[size_t(d)] = rem % shape[size_t(d)];
    rem /= shape[size_t(d)];
    for (size_t k = 0; k < K; ++k)
      off[k] += coord[size_t(d)] * strides[k][size_t(d)];
  }
  for (int64_t i = begin; i < end; ++i) {
    fn(off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      size_t ud = size_t(d);
      for (size_t k = 0; k < K; ++k)
        off[k] += strides[k][ud];
      if (++coord[ud] < shape[ud])
        break;
      for (size_t k = 0; k < K; ++k)
        off[k] -= strides[k][ud] * shape[ud];
      coord[ud] = 0;
    }
  }
}

void checkNoInternalOverlap(const Tensor &t) {
  meta::check_no_internal_overlap(t);
}

/// The data of an integer index tensor as a contiguous int64 tensor.
Tensor asLong(const Tensor &index) { return index.to(kLong).contiguous(); }

/// Sizes and strides with a 0-dim tensor seen as 1-d of one element (as
/// PyTorch's ensure_nonempty_dim in scatter / gather).
DimVector nonemptySizes(const Tensor &t) {
  return t.dim() == 0 ? DimVector{1} : DimVector(t.sizes());
}
DimVector nonemptyStrides(const Tensor &t) {
  return t.dim() == 0 ? DimVector{1} : DimVector(t.strides());
}

/// Element offset of row-major position `pos` of `size` given `stride`.
int64_t offsetOf(int64_t pos, IntArrayRef size, IntArrayRef stride) {
  int64_t off = 0;
  for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
    off += (pos % size[size_t(d)]) * stride[size_t(d)];
    pos /= size[size_t(d)];
  }
  return off;
}

/// The one stride that walks dims `size` / `stride` in row-major order, when
/// they collapse into a single strided run (dims of size 1 ignored; no dims:
/// a run of one element).
std::optional<int64_t> flatStride(IntArrayRef size, IntArrayRef stride) {
  std::optional<int64_t> st;
  int64_t span = 1; // elements covered by the dims after d
  for (int64_t d = int64_t(size.size()) - 1; d >= 0; --d) {
    if (size[size_t(d)] == 1)
      continue;
    if (!st)
      st = stride[size_t(d)];
    else if (stride[size_t(d)] != *st * span)
      return std::nullopt;
    span *= size[size_t(d)];
  }
  return st.value_or(1);
}

// Note [Loops along an indexed dim]
// gather, scatter, index_select and index_add walk `shape` split as
// [pre, dim, post]: for each position p of the dims before `dim` and each
// chunk of positions q of the dims after it, j runs along `dim` in order and
// q innermost (contiguous for row-major tensors; a plain strided loop when
// the post dims collapse). Work items (p, q-chunk) run in parallel. Two
// writes can only collide when they differ in j alone, and those stay on one
// thread, in order of j: results never depend on the thread count (the
// chunking may). Ops that only read through the index (`splitDim`) also
// split j into chunks, for long 1-d gathers.
template <size_t K, class F>
void dimLoop(IntArrayRef shape, int64_t dim,
             const std::array<IntArrayRef, K> &strides, bool splitDim, F &&fn) {
  size_t ud = size_t(dim);
  int64_t n = shape[ud];
  IntArrayRef preSize = shape.slice(0, ud), postSize = shape.slice(ud + 1);
  int64_t P = multiply_sizes(preSize), Q = multiply_sizes(postSize);
  if (P == 0 || Q == 0 || n == 0)
    return;
  std::array<IntArrayRef, K> preStride, postStride;
  std::array<int64_t, K> dimStride, runStride;
  bool flat = true;
  for (size_t k = 0; k < K; ++k) {
    preStride[k] = strides[k].slice(0, ud);
    postStride[k] = strides[k].slice(ud + 1);
    dimStride[k] = strides[k][ud];
    std::optional<int64_t> fs = flatStride(postSize, postStride[k]);
    flat = flat && fs.has_value();
    runStride[k] = fs.value_or(0);
  }
  // Enough work items to feed the threads, none too small.
  constexpr int64_t kMinChunk = 2048;
  int64_t want = 4 * int64_t(get_num_threads());
  int64_t qChunk = Q, jChunk = n;
  if (P < want) {
    int64_t parts = (want + P - 1) / P;
    qChunk = std::max((Q + parts - 1) / parts, std::min(Q, kMinChunk));
  }
  int64_t nq = (Q + qChunk - 1) / qChunk;
  if (splitDim && P * nq < want) {
    int64_t parts = (want + P * nq - 1) / (P * nq);
    jChunk = std::min(n, std::max((n + parts - 1) / parts,
                                  (kMinChunk + qChunk - 1) / qChunk));
  }
  int64_t nj = (n + jChunk - 1) / jChunk;
  int64_t grain = std::max<int64_t>(1, kGrainSize / (jChunk * qChunk));
  parallel_for(0, P * nq * nj, grain, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t p = w / (nq * nj), r = w % (nq * nj);
      int64_t qb = (r / nj) * qChunk, qe = std::min(Q, qb + qChunk);
      int64_t jb = (r % nj) * jChunk, je = std::min(n, jb + jChunk);
      std::array<int64_t, K> base;
      for (size_t k = 0; k < K; ++k)
        base[k] = offsetOf(p, preSize, preStride[k]) + jb * dimStride[k];
      if (flat && qe - qb == 1) { // one position of post: walk j only
        std::array<int64_t, K> o;
        for (size_t k = 0; k < K; ++k)
          o[k] = base[k] + qb * runStride[k];
        for (int64_t j = jb; j < je; ++j) {
          fn(o, j);
          for (size_t k = 0; k < K; ++k)
            o[k] += dimStride[k];
        }
        continue;
      }
      for (int64_t j = jb; j < je; ++j) {
        if (flat) {
          std::array<int64_t, K> o;
          for (size_t k = 0; k < K; ++k)
            o[k] = base[k] + qb * runStride[k];
          for (int64_t q = qb; q < qe; ++q) {
            fn(o, j);
            for (size_t k = 0; k < K; ++k)
              o[k] += runStride[k];
          }
        } else {
          forEachOffset<K>(postSize, postStride, qb, qe,
                           [&](const std::array<int64_t, K> &off) {
                             std::array<int64_t, K> o;
                             for (size_t k = 0; k < K; ++k)
                               o[k] = base[k] + off[k];
                             fn(o, j);
                           });
        }
        for (size_t k = 0; k < K; ++k)
          base[k] += dimStride[k];
      }
    }
  });
}

/// Bounds message shared by every indexing op.
[[noreturn]] void throwOutOfBounds(const char *op, int64_t v, int64_t dim,
                                   int64_t size) {
  throw IndexError(detail::str(op, "index ", v,
                               " is out of bounds for dimension ", dim,
                               " with size ", size));
}

/// Checks every value of a contiguous int64 tensor is in [0, size).
void checkRange(const char *op, const Tensor &idx, int64_t dim, int64_t size) {
  const int64_t *p = idx.data_ptr<int64_t>();
  for (int64_t i = 0, n = idx.numel(); i < n; ++i)
    if (p[i] < 0 || p[i] >= size)
      throwOutOfBounds(op, p[i], dim, size);
}

/// Element pointer at element offset `off` (may be computed from any
/// strides) of a tensor's data.
template <class T> T *at(const Tensor &t, int64_t off) {
  return static_cast<T *>(t.data_ptr()) + off;
}

/// Adds b into a, computed in compute_t<T> (logical or for bool).
template <class T> void addInto(T &a, compute_t<T> b) {
  a = T(compute_t<T>(a) + b);
}

} // namespace

// --- index_select ------------------------------------------------------------

Tensor index_select(const Tensor &self, int64_t dim, const Tensor &index) {
  DimVector outSize = meta::index_select_sizes(self, dim, index);
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t n = index.numel();
  Tensor idx = asLong(index);
  DimVector sizes = nonemptySizes(self), strides = nonemptyStrides(self);
  checkRange("index_select(): ", idx, d, sizes[size_t(d)]);
  Tensor out = empty(outSize, self.options());
  if (out.numel() == 0)
    return out;
  DimVector iterSize(sizes);
  iterSize[size_t(d)] = n;
  DimVector outStrides = contiguous_strides(iterSize);
  DimVector selfStrides(strides);
  selfStrides[size_t(d)] = 0;
  int64_t sd = strides[size_t(d)];
  const int64_t *ip = idx.data_ptr<int64_t>();
  dispatch_by_size(self.element_size(), [&]<class U>() {
    U *o = at<U>(out, 0);
    const U *s = at<const U>(self, 0);
    dimLoop<2>(iterSize, d, {IntArrayRef(outStrides), IntArrayRef(selfStrides)},
               true, [&](const std::array<int64_t, 2> &off, int64_t j) {
                 o[off[0]] = s[off[1] + ip[j] * sd];
               });
  });
  return out;
}

// --- gather / scatter --------------------------------------------------------

namespace {
enum class ScatterKind { Assign, Add };

void scatterImpl(const char *op, const Tensor &self, int64_t dim,
                 const Tensor &index, const Tensor &src, ScatterKind kind) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_scatter(op, self, d, index, src);
  if (index.numel() == 0)
    return;
  // A private copy of the index when it shares memory with self: the
  // writes must not change indices already validated.
  Tensor idx = index.is_alias_of(self) ? index.clone() : index.contiguous();
  DimVector ss = nonemptySizes(self);
  checkRange("", idx, d, ss[size_t(d)]);
  // Write into self directly when contiguous, else into a contiguous copy
  // that is copied back; read src from a copy when it shares memory with
  // self.
  Tensor work = self.is_contiguous() ? self : self.contiguous();
  Tensor s = src.is_alias_of(self) ? src.clone() : src;
  DimVector is = nonemptySizes(idx);
  DimVector workStrides = nonemptyStrides(work);
  int64_t wd = workStrides[size_t(d)];
  workStrides[size_t(d)] = 0;
  DimVector idxStrides = contiguous_strides(is);
  DimVector srcStrides = nonemptyStrides(s);
  const int64_t *ip = idx.data_ptr<int64_t>();
  std::array<IntArrayRef, 3> st{IntArrayRef(workStrides),
                                IntArrayRef(idxStrides),
                                IntArrayRef(srcStrides)};
  if (kind == ScatterKind::Assign) {
    dispatch_by_size(self.element_size(), [&]<class U>() {
      U *w = at<U>(work, 0);
      const U *r = at<const U>(s, 0);
      dimLoop<3>(is, d, st, false,
                 [&](const std::array<int64_t, 3> &off, int64_t) {
                   w[off[0] + ip[off[1]] * wd] = r[off[2]];
                 });
    });
  } else {
    dispatch_dtype(self.dtype(), op, [&]<class T>() {
      T *w = at<T>(work, 0);
      const T *r = at<const T>(s, 0);
      dimLoop<3>(
          is, d, st, false, [&](const std::array<int64_t, 3> &off, int64_t) {
            addInto(w[off[0] + ip[off[1]] * wd], compute_t<T>(r[off[2]]));
          });
    });
  }
  if (!work.is_same(self))
    native::copy_(self, work, false);
  else
    self.unsafeGetTensorImpl()->bump_version();
}
} // namespace

Tensor gather(const Tensor &self, int64_t dim, const Tensor &index) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_scatter_gather("gather", self, d, index, nullptr);
  Tensor out = empty(index.sizes(), self.options());
  if (index.numel() == 0)
    return out;
  Tensor idx = index.contiguous();
  DimVector ss = nonemptySizes(self);
  checkRange("", idx, d, ss[size_t(d)]);
  DimVector is = nonemptySizes(idx);
  DimVector outStrides = contiguous_strides(is);
  DimVector selfStrides = nonemptyStrides(self);
  int64_t sd = selfStrides[size_t(d)];
  selfStrides[size_t(d)] = 0;
  const int64_t *ip = idx.data_ptr<int64_t>();
  dispatch_by_size(self.element_size(), [&]<class U>() {
    U *o = at<U>(out, 0);
    const U *s = at<const U>(self, 0);
    // The output and the index share their (contiguous) layout.
    dimLoop<2>(is, d, {IntArrayRef(outStrides), IntArrayRef(selfStrides)}, true,
               [&](const std::array<int64_t, 2> &off, int64_t) {
                 o[off[0]] = s[off[1] + ip[off[0]] * sd];
               });
  });
  return out;
}

const Tensor &scatter_(const Tensor &self, int64_t dim, const Tensor &index,
                       const Tensor &src) {
  scatterImpl("scatter", self, dim, index, src, ScatterKind::Assign);
  return self;
}

const Tensor &scatter_add_(const Tensor &self, int64_t dim, const Tensor &index,
                           const Tensor &src) {
  scatterImpl("scatter_add", self, dim, index, src, ScatterKind::Add);
  return self;
}

Tensor scatter_src(const Tensor &self, int64_t dim, const Tensor &index,
                   const Tensor &src) {
  Tensor out = self.clone();
  out.scatter_(dim, index, src);
  return out;
}

Tensor scatter_value(const Tensor &self, int64_t dim, const Tensor &index,
                     const Scalar &value) {
  Tensor out = self.clone();
  out.scatter_(dim, index,
               scalar_tensor(value, self.options()).expand(index.sizes()));
  return out;
}

Tensor scatter_add(const Tensor &self, int64_t dim, const Tensor &index,
                   const Tensor &src) {
  Tensor out = self.clone();
  out.scatter_add_(dim, index, src);
  return out;
}

// --- index_add ---------------------------------------------------------------

const Tensor &index_add_(const Tensor &self, int64_t dim, const Tensor &index,
                         const Tensor &source, const Scalar &alpha) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  meta::check_index_add(self, dim, index, source, alpha);
  DimVector ss = nonemptySizes(self), rs = nonemptySizes(source);
  Tensor idx = index.is_alias_of(self) ? asLong(index).clone() : asLong(index);
  checkRange("index_add_(): ", idx, d, ss[size_t(d)]);
  if (source.numel() == 0)
    return self;
  Tensor work = self.is_contiguous() ? self : self.contiguous();
  Tensor src = source.is_alias_of(self) ? source.clone() : source;
  DimVector workStrides = nonemptyStrides(work);
  int64_t wd = workStrides[size_t(d)];
  workStrides[size_t(d)] = 0;
  DimVector srcStrides = nonemptyStrides(src);
  const int64_t *ip = idx.data_ptr<int64_t>();
  dispatch_dtype(self.dtype(), "index_add_", [&]<class T>() {
    using C = compute_t<T>;
    C a = alpha.to<C>();
    T *w = at<T>(work, 0);
    const T *r = at<const T>(src, 0);
    dimLoop<2>(rs, d, {IntArrayRef(workStrides), IntArrayRef(srcStrides)},
               false, [&](const std::array<int64_t, 2> &off, int64_t j) {
                 if constexpr (std::is_same_v<T, bool>)
                   addInto(w[off[0] + ip[j] * wd], a && r[off[1]]);
                 else
                   addInto(w[off[0] + ip[j] * wd], C(a * C(r[off[1]])));
               });
  });
  if (!work.is_same(self))
    native::copy_(self, work, false);
  else
    self.unsafeGetTensorImpl()->bump_version();
  return self;
}

Tensor index_add(const Tensor &self, int64_t dim, const Tensor &index,
                 const Tensor &source, const Scalar &alpha) {
  Tensor out = self.clone();
  out.index_add_(dim, index, source, alpha);
  return out;
}

// --- masked_select / nonzero -------------------------------------------------

// Note [Stream compaction]
// masked_select and nonzero write a data-dependent number of elements. Both
// split the input into fixed chunks (independent of the thread count), count
// each chunk's hits in parallel, turn the counts into output offsets, and
// fill the chunks in parallel: output order is the input's row-major order.
namespace {
constexpr int64_t kCompactChunk = 65536;

/// Runs count(b, e) -> hits over fixed chunks of [0, n), then
/// fill(b, e, firstOutput) over the same chunks; returns the total.
template <class Count, class Fill>
int64_t compact(int64_t n, Count &&count, Fill &&fill,
                const std::function<void(int64_t)> &allocate) {
  int64_t nchunks = (n + kCompactChunk - 1) / kCompactChunk;
  std::vector<int64_t> offs(static_cast<size_t>(nchunks + 1), 0);
  parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c)
      offs[size_t(c + 1)] =
          count(c * kCompactChunk, std::min(n, (c + 1) * kCompactChunk));
  });
  for (int64_t c = 0; c < nchunks; ++c)
    offs[size_t(c + 1)] += offs[size_t(c)];
  int64_t total = offs[size_t(nchunks)];
  allocate(total);
  if (total == 0)
    return 0;
  parallel_for(0, nchunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c)
      fill(c * kCompactChunk, std::min(n, (c + 1) * kCompactChunk),
           offs[size_t(c)]);
  });
  return total;
}
} // namespace

Tensor masked_select(const Tensor &self, const Tensor &mask) {
  DimVector shape = meta::masked_select_shape(self, mask);
  Tensor s = self.expand(shape), m = mask.expand(shape);
  int64_t total = multiply_sizes(shape);
  const bool *mp = at<const bool>(m, 0);
  bool dense = s.is_contiguous() && m.is_contiguous();
  Tensor out;
  dispatch_by_size(self.element_size(), [&]<class U>() {
    const U *sp = at<const U>(s, 0);
    compact(
        total,
        [&](int64_t b, int64_t e) {
          int64_t k = 0;
          if (dense) {
            for (int64_t i = b; i < e; ++i)
              k += mp[i] ? 1 : 0;
            return k;
          }
          forEachOffset<1>(shape, {m.strides()}, b, e,
                           [&](const std::array<int64_t, 1> &off) {
                             k += mp[off[0]] ? 1 : 0;
                           });
          return k;
        },
        [&](int64_t b, int64_t e, int64_t first) {
          U *o = at<U>(out, first);
          if (dense) {
            for (int64_t i = b; i < e; ++i)
              if (mp[i])
                *o++ = sp[i];
            return;
          }
          forEachOffset<2>(shape, {m.strides(), s.strides()}, b, e,
                           [&](const std::array<int64_t, 2> &off) {
                             if (mp[off[0]])
                               *o++ = sp[off[1]];
                           });
        },
        [&](int64_t n) { out = empty({n}, self.options()); });
  });
  return out;
}

Tensor nonzero(const Tensor &self) {
  int64_t nd = self.dim();
  Tensor c = self.contiguous();
  IntArrayRef sizes = self.sizes();
  Tensor out;
  dispatch_dtype(self.dtype(), "nonzero", [&]<class T>() {
    const T *p = at<const T>(c, 0);
    // NaN counts as nonzero, as PyTorch.
    auto isNz = [](T v) { return compute_t<T>(v) != compute_t<T>(0); };
    compact(
        c.numel(),
        [&](int64_t b, int64_t e) {
          int64_t k = 0;
          for (int64_t i = b; i < e; ++i)
            k += isNz(p[i]) ? 1 : 0;
          return k;
        },
        [&](int64_t b, int64_t e, int64_t first) {
          if (nd == 0)
            return;
          int64_t *o = out.data_ptr<int64_t>() + first * nd;
          DimVector coord(static_cast<size_t>(nd));
          for (int64_t d = nd - 1, rem = b; d >= 0; --d) {
            coord[size_t(d)] = rem % sizes[size_t(d)];
            rem /= sizes[size_t(d)];
          }
          for (int64_t i = b; i < e; ++i) {
            if (isNz(p[i])) {
              std::copy(coord.begin(), coord.end(), o);
              o += nd;
            }
            for (int64_t d = nd - 1; d >= 0; --d) {
              if (++coord[size_t(d)] < sizes[size_t(d)])
                break;
              coord[size_t(d)] = 0;
            }
          }
        },
        [&](int64_t n) {
          out = empty({n, nd}, TensorOptions(kLong));
        });
  });
  return out;
}

// --- advanced indexing: index / index_put_ -----------------------------------

namespace {

// Note [Advanced indexing plan]
// index(self, indices) with indices[i] the index of dim i (undefined: the
// whole dim), as NumPy's advanced indexing:
//  * bool/byte masks become their nonzero() coordinates, one long index per
//    dim they cover;
//  * the integer indices broadcast together to a shape B;
//  * the result has the non-indexed dims with B in place of the indexed
//    ones when these are adjacent, else with B first.
// The plan splits the result into [pre, B, post]: `pre` and `post` are
// non-indexed dims of self (pre is empty unless the indexed dims are
// adjacent), each walked through self's strides, and every position b of B
// has a precomputed element offset boff[b] into self (negative indices
// wrapped and every index checked first, see Note [Index validation]).
struct IndexPlan {
  DimVector preSize, preStride;   // non-indexed dims before B (self strides)
  DimVector postSize, postStride; // non-indexed dims after B
  DimVector bShape;               // broadcast shape of the indices
  std::vector<int64_t> boff;      // per B position, element offset in self
  DimVector resultShape;          // pre + B + post
  int64_t preNumel = 1, postNumel = 1;
  size_t preDims = 0; // number of dims of the result before B
};

bool isMaskDtype(ScalarType t) { return t == kBool || t == kByte; }

IndexPlan makeIndexPlan(const Tensor &self, TensorList indices) {
  meta::check_indices(self, indices);
  // Expand masks into long indices, one per dim.
  std::vector<Tensor> idx;
  for (const Tensor &t : indices) {
    if (!t.defined() || !isMaskDtype(t.dtype())) {
      idx.push_back(t);
      continue;
    }
    Tensor nz = native::nonzero(t.dtype() == kBool ? t : t.to(kBool));
    for (int64_t j = 0; j < t.dim(); ++j)
      idx.push_back(nz.select(1, j));
  }
  idx.resize(size_t(self.dim()));

  // Broadcast the indices together: the shape rule shared with meta::.
  meta::IndexShape shape = meta::index_shape(self, idx);
  IndexPlan p;
  p.bShape = shape.b_shape;
  p.resultShape = shape.result;
  const auto &dims = shape.dims;
  const bool adjacent = shape.adjacent;

  // Offsets of the B positions, every index checked.
  int64_t nb = multiply_sizes(p.bShape);
  p.boff.assign(size_t(nb), 0);
  for (int64_t d : dims) {
    Tensor t = asLong(idx[size_t(d)].expand(p.bShape));
    const int64_t *ip = t.data_ptr<int64_t>();
    int64_t size = self.size(d), stride = self.stride(d);
    for (int64_t b = 0; b < nb; ++b) {
      int64_t v = ip[b];
      if (v < -size || v >= size)
        throwOutOfBounds("", v, d, size);
      p.boff[size_t(b)] += (v < 0 ? v + size : v) * stride;
    }
  }

  for (int64_t d = 0; d < self.dim(); ++d) {
    if (idx[size_t(d)].defined())
      continue;
    bool pre = adjacent && d < dims[0];
    (pre ? p.preSize : p.postSize).push_back(self.size(d));
    (pre ? p.preStride : p.postStride).push_back(self.stride(d));
  }
  p.preNumel = multiply_sizes(p.preSize);
  p.postNumel = multiply_sizes(p.postSize);
  p.preDims = p.preSize.size();
  return p;
}

/// Splits [0, pre * post) into work items (p, qbegin, qend), each doing
/// `perElem` units of work per post position, and runs fn on them in
/// parallel.
template <class F>
void forEachPrePost(const IndexPlan &p, int64_t perElem, F &&fn) {
  int64_t P = p.preNumel, Q = p.postNumel;
  int64_t want = 4 * int64_t(get_num_threads());
  int64_t qChunk = Q;
  if (P < want) {
    int64_t parts = (want + P - 1) / P;
    qChunk = std::max((Q + parts - 1) / parts, std::min<int64_t>(Q, 2048));
  }
  int64_t nq = (Q + qChunk - 1) / qChunk;
  int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(perElem * qChunk, 1));
  parallel_for(0, P * nq, grain, [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t pi = w / nq, qi = w % nq;
      fn(pi, qi * qChunk, std::min(Q, (qi + 1) * qChunk));
    }
  });
}

} // namespace

Tensor index(const Tensor &self, TensorList indices) {
  bool any = std::any_of(indices.begin(), indices.end(),
                         [](const Tensor &t) { return t.defined(); });
  if (!any) { // nothing to index: a copy, as an all-slices advanced index
    EMBER_CHECK_INDEX(int64_t(indices.size()) <= self.dim(),
                      "too many indices for tensor of dimension ", self.dim(),
                      " (got ", indices.size(), ")");
    return native::clone(self);
  }
  // x[mask] with a mask of x's own shape is masked_select.
  if (indices.size() == 1 && indices[0].defined() &&
      isMaskDtype(indices[0].dtype()) && indices[0].dim() > 0 &&
      indices[0].sizes() == self.sizes())
    return native::masked_select(
        self, indices[0].dtype() == kBool ? indices[0] : indices[0].to(kBool));
  IndexPlan p = makeIndexPlan(self, indices);
  Tensor out = empty(p.resultShape, self.options());
  if (out.numel() == 0)
    return out;
  int64_t nb = int64_t(p.boff.size());
  int64_t Q = p.postNumel;
  DimVector outPostStride = contiguous_strides(p.postSize);
  // Rows (pre, b) of the result are independent: split them over threads.
  // A row is one strided run of self when its post dims collapse.
  std::optional<int64_t> run = flatStride(p.postSize, p.postStride);
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(Q, 1));
  dispatch_by_size(self.element_size(), [&]<class U>() {
    U *o = at<U>(out, 0);
    const U *s = at<const U>(self, 0);
    parallel_for(0, p.preNumel * nb, grain, [&](int64_t rb, int64_t re) {
      int64_t pi = rb / nb, b = rb % nb;
      int64_t preOff = offsetOf(pi, p.preSize, p.preStride);
      for (int64_t r = rb; r < re; ++r, ++b) {
        if (b == nb) {
          b = 0;
          preOff = offsetOf(++pi, p.preSize, p.preStride);
        }
        U *orow = o + r * Q;
        const U *srow = s + preOff + p.boff[size_t(b)];
        if (Q == 1) {
          orow[0] = srow[0];
        } else if (run && *run == 1) {
          std::memcpy(orow, srow, size_t(Q) * sizeof(U));
        } else if (run) {
          for (int64_t q = 0, st = *run; q < Q; ++q)
            orow[q] = srow[q * st];
        } else {
          forEachOffset<2>(
              p.postSize,
              {IntArrayRef(outPostStride), IntArrayRef(p.postStride)}, 0, Q,
              [&](const std::array<int64_t, 2> &off) {
                orow[off[0]] = srow[off[1]];
              });
        }
      }
    });
  });
  return out;
}

const Tensor &index_put_(const Tensor &self, TensorList indices,
                         const Tensor &values, bool accumulate) {
  EMBER_CHECK(values.defined(), "index_put_: the values tensor is undefined");
  bool any = std::any_of(indices.begin(), indices.end(),
                         [](const Tensor &t) { return t.defined(); });
  if (!any) {
    EMBER_CHECK_INDEX(int64_t(indices.size()) <= self.dim(),
                      "too many indices for tensor of dimension ", self.dim(),
                      " (got ", indices.size(), ")");
    EMBER_CHECK_TYPE(values.dtype() == self.dtype(),
                     "Index put requires the source and destination dtypes "
                     "match, got ",
                     self.dtype(), " for the destination and ", values.dtype(),
                     " for the source.");
    if (accumulate)
      native::copy_(self, self + values, false);
    else
      native::copy_(self, values, false);
    return self;
  }
  IndexPlan p = makeIndexPlan(self, indices);
  meta::check_index_put_values(self, values, p.resultShape);
  checkNoInternalOverlap(self);
  int64_t nb = int64_t(p.boff.size());
  if (nb == 0 || p.preNumel == 0 || p.postNumel == 0)
    return self;
  Tensor v = (values.is_alias_of(self) ? values.clone() : values)
                 .expand(p.resultShape);
  // Split the (expanded) values' strides the same way as the result.
  size_t nB = p.bShape.size();
  DimVector vPre(v.strides().begin(), v.strides().begin() + p.preDims);
  DimVector vB(v.strides().begin() + p.preDims,
               v.strides().begin() + p.preDims + nB);
  DimVector vPost(v.strides().begin() + p.preDims + nB, v.strides().end());
  std::vector<int64_t> vboff(static_cast<size_t>(nb));
  {
    int64_t k = 0;
    forEachOffset<1>(p.bShape, {IntArrayRef(vB)}, 0, nb,
                     [&](const std::array<int64_t, 1> &off) {
                       vboff[size_t(k++)] = off[0];
                     });
  }
  std::optional<int64_t> sRun = flatStride(p.postSize, p.postStride);
  std::optional<int64_t> vRun = flatStride(p.postSize, vPost);
  auto run = [&]<class T>(auto &&op) {
    T *s = at<T>(self, 0);
    const T *vp = at<const T>(v, 0);
    forEachPrePost(p, nb, [&](int64_t pi, int64_t qb, int64_t qe) {
      int64_t sp = offsetOf(pi, p.preSize, p.preStride);
      int64_t vpo = offsetOf(pi, p.preSize, vPre);
      // Positions of B in order: repeated indices write (or add) in order.
      for (int64_t b = 0; b < nb; ++b) {
        T *sb = s + sp + p.boff[size_t(b)];
        const T *vb = vp + vpo + vboff[size_t(b)];
        if (sRun && vRun) {
          for (int64_t q = qb; q < qe; ++q)
            op(sb[q * *sRun], vb[q * *vRun]);
        } else {
          forEachOffset<2>(p.postSize,
                           {IntArrayRef(p.postStride), IntArrayRef(vPost)}, qb,
                           qe, [&](const std::array<int64_t, 2> &off) {
                             op(sb[off[0]], vb[off[1]]);
                           });
        }
      }
    });
  };
  if (accumulate) {
    dispatch_dtype(self.dtype(), "index_put_", [&]<class T>() {
      run.template operator()<T>(
          [](T &a, const T &b) { addInto(a, compute_t<T>(b)); });
    });
  } else {
    dispatch_by_size(self.element_size(), [&]<class U>() {
      run.template operator()<U>([](U &a, const U &b) { a = b; });
    });
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

} // namespace ember::native
