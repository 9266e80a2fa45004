#pragma once
/// The CPU reduction engine shared by the reduction, scan and softmax
/// kernels: which dims a reduction covers, the [A, N, B] layout it runs over,
/// and run_reduce(), which folds a Reducer over that layout in parallel.
///
/// Note [Reduction layout]
/// Every reduction runs over a contiguous buffer seen as [A, N, B]: A outer
/// kept elements, N reduced elements, B inner kept elements; output o = a * B
/// + b is the fold of x[a, 0..N, b]. Two shapes of loop cover it:
///  - rows (B == 1): each output folds one contiguous run of N elements;
///  - columns (B > 1): each output lane b folds a strided column, and a tile
///    of up to kMaxTile lanes is folded together so the inner loop runs over
///    b (contiguous, vectorizable accumulation across the inner dim).
/// reduce_layout() finds the layout without copying when the input is
/// contiguous and its reduced dims form one block (sum over the last dims,
/// over the first dims, or over a middle block), or when permuting the
/// reduced dims last gives a contiguous tensor (a transposed input); any
/// other input is copied once (contiguous, or with the reduced dims last).
///
/// Note [Deterministic reductions]
/// Each output is folded by one thread in a fixed order, or, when there are
/// few outputs and many elements (a full reduction), over chunks of N whose
/// partial results are combined in chunk order. The chunking depends only on
/// the shape, never on the thread count (column tiles may follow the thread
/// count: they do not change any output's order), so float sums give the
/// same bits with any EMBER_NUM_THREADS. Row folds keep kLanes partial
/// accumulators (element i goes to lane i % kLanes) combined in a fixed tree:
/// GCC vectorizes that without -ffast-math, where a single accumulator would
/// be a serial chain. Rows shorter than 2 * kLanes fold sequentially.

#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

namespace ember::native::reduce {

// --- element helpers --------------------------------------------------------

/// True for a NaN of a floating compute type; false for every integer type.
template <class C> inline bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

/// Converts an accumulator or compute value to the element type T (the
/// 16-bit floats go through float; bool is "nonzero").
template <class T, class V> inline T cast_to(V v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return T(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, bool>)
    return v != V(0);
  else
    return static_cast<T>(v);
}

/// a + b, wrapping for integers (two's complement, as PyTorch) instead of
/// signed overflow, which is undefined behaviour in C++.
template <class A> inline A acc_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}
/// a * b, wrapping for integers.
template <class A> inline A acc_mul(A a, A b) {
  if constexpr (std::is_integral_v<A> && !std::is_same_v<A, bool>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

// --- which dims -------------------------------------------------------------

/// The dims a reduction covers and the shape of its result.
struct ReduceDims {
  std::bitset<64> mask; ///< reduced dims of the input
  DimVector out_sizes;  ///< result shape (reduced dims kept as 1 if keepdim)
  int64_t nreduce = 1;  ///< elements folded into each output
  int64_t nout = 1;     ///< number of outputs
};

/// Wraps `dims` (an empty list means every dim, as PyTorch's dim=None or
/// dim=[]), rejecting out-of-range and repeated dims, and computes the result
/// shape. A 0-dim input accepts dims 0 and -1 and gives a 0-dim result.
inline ReduceDims reduce_dims(const Tensor &self, IntArrayRef dims,
                              bool keepdim) {
  ReduceDims r;
  int64_t nd = self.dim();
  EMBER_CHECK(nd <= 64, "reductions support tensors of up to 64 dims, but ",
              "got one with ", nd);
  if (dims.empty()) {
    for (int64_t d = 0; d < nd; ++d)
      r.mask.set(size_t(d));
  } else {
    r.mask = dim_list_to_bitset(dims, nd);
  }
  for (int64_t d = 0; d < nd; ++d) {
    int64_t s = self.size(d);
    if (r.mask[size_t(d)]) {
      r.nreduce *= s;
      if (keepdim)
        r.out_sizes.push_back(1);
    } else {
      r.nout *= s;
      r.out_sizes.push_back(s);
    }
  }
  return r;
}

/// The same for a single dim.
inline ReduceDims reduce_dim(const Tensor &self, int64_t dim, bool keepdim) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  return reduce_dims(self, IntArrayRef(d), keepdim);
}

/// Raises PyTorch's error when a reduction without an identity (max, min,
/// argmax, ...) would fold zero elements into some output: a listed dim of
/// size 0, or no dims listed on an empty input.
inline void check_nonempty_reduction(const Tensor &self, IntArrayRef dims,
                                     const char *op) {
  if (dims.empty()) {
    EMBER_CHECK(self.numel() != 0, op,
                "(): Expected reduction dim to be specified for input.numel() "
                "== 0: cannot perform reduction function ",
                op,
                " on tensor with no elements because the operation does not "
                "have an identity. Specify the reduction dim with the 'dim' "
                "argument (over a dim of non-zero size).");
    return;
  }
  for (int64_t d : dims) {
    int64_t w = maybe_wrap_dim(d, self.dim());
    int64_t s = self.dim() == 0 ? 1 : self.size(w);
    EMBER_CHECK_INDEX(s != 0, op, "(): Expected reduction dim ", w,
                      " to have non-zero size: cannot perform reduction "
                      "function ",
                      op,
                      " on tensor with no elements because the operation "
                      "does not have an identity.");
  }
}

// --- layout -----------------------------------------------------------------

/// A contiguous buffer seen as [A, N, B] (Note [Reduction layout]).
struct Layout {
  Tensor src; ///< holds the data (the input itself, a view, or a copy)
  int64_t A = 1, N = 1, B = 1;
  template <class T> const T *data() const {
    return src.defined() && src.numel() > 0 ? src.data_ptr<T>() : nullptr;
  }
};

namespace detail {
/// The [A, N, B] split of `sizes` when the reduced dims (size-1 dims
/// ignored) form one block; nullopt otherwise.
inline std::optional<Layout> block_split(IntArrayRef sizes,
                                         const std::bitset<64> &mask) {
  Layout l;
  int state = 0; // 0: before the reduced block, 1: in it, 2: after it
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t s = sizes[d];
    if (s == 1)
      continue;
    if (mask[d]) {
      if (state == 2)
        return std::nullopt;
      state = 1;
      l.N *= s;
    } else if (state == 0) {
      l.A *= s;
    } else {
      state = 2;
      l.B *= s;
    }
  }
  if (state == 0) { // nothing of size > 1 is reduced: a copy-like pass
    l.B = l.A;
    l.A = 1;
  }
  return l;
}
} // namespace detail

/// The layout of a reduction of `x` over the dims in `mask`, copying `x`
/// only when no view of it has the [A, N, B] form.
inline Layout reduce_layout(const Tensor &x, const std::bitset<64> &mask) {
  int64_t nd = x.dim();
  if (x.numel() == 0) {
    Layout l;
    l.A = 1;
    l.N = 1;
    for (int64_t d = 0; d < nd; ++d)
      (mask[size_t(d)] ? l.N : l.A) *= x.size(d);
    return l; // no data: every output folds N (== 0) elements, or none
  }
  auto split = detail::block_split(x.sizes(), mask);
  if (split && x.is_contiguous()) {
    split->src = x;
    return *split;
  }
  DimVector perm;
  Layout rows;
  for (int64_t d = 0; d < nd; ++d)
    if (!mask[size_t(d)]) {
      perm.push_back(d);
      rows.A *= x.size(d);
    }
  for (int64_t d = 0; d < nd; ++d)
    if (mask[size_t(d)]) {
      perm.push_back(d);
      rows.N *= x.size(d);
    }
  Tensor xp = x.permute(perm);
  if (xp.is_contiguous()) {
    rows.src = xp;
    return rows;
  }
  if (split) {
    split->src = x.contiguous();
    return *split;
  }
  rows.src = xp.contiguous();
  return rows;
}

/// The [A, N, B] layout of a scan or softmax along `dim` (wrapped), copying
/// a non-contiguous input. The result of such an op is a contiguous tensor
/// of x's shape, in the same layout.
inline Layout dim_layout(const Tensor &x, int64_t dim) {
  Layout l;
  l.src = x.contiguous();
  for (int64_t d = 0; d < x.dim(); ++d)
    (d < dim ? l.A : d == dim ? l.N : l.B) *= x.size(d);
  return l;
}

// --- the engine -------------------------------------------------------------

/// Partial accumulators of a row fold (Note [Deterministic reductions]). 32
/// is what GCC vectorizes reliably for both sums and NaN-aware max/min (with
/// 8 or 16 it unrolls the lanes and then fails to vectorize the selects).
constexpr int kLanes = 32;
/// Widest column tile (inner lanes folded together by a column fold): long
/// contiguous runs per row keep the hardware prefetcher streaming.
constexpr int64_t kMaxTile = 2048;
/// Nominal tile width for the split decision (shape-only, so deterministic).
constexpr int64_t kSplitTile = 256;
/// Elements folded by one task when a reduction is split along N.
constexpr int64_t kChunk = 16384;
/// Reductions with fewer outputs (rows, or nominal column tiles) than this
/// and at least 2 * kChunk elements each are split along N.
constexpr int64_t kSplitBelow = 16;
/// At most this many chunks along N for a column reduction.
constexpr int64_t kMaxColChunks = 64;

/// The width of column tiles for A outer elements and B inner lanes: as wide
/// as kMaxTile, narrower when that would leave threads idle. Tiling does not
/// change results (each output folds its column in order either way).
inline int64_t column_tile(int64_t A, int64_t B) {
  int64_t tasks = 2 * int64_t(get_num_threads());
  int64_t tiles_per_a = std::max<int64_t>(1, (tasks + A - 1) / A);
  int64_t tb = (B + tiles_per_a - 1) / tiles_per_a;
  tb = std::clamp<int64_t>((tb + 15) / 16 * 16, 64, kMaxTile);
  return std::min(tb, B);
}

// A Reducer R over elements of type T provides:
//   using acc = ...;                        the accumulator
//   acc init() const;                       the identity
//   acc step(acc a, T x, int64_t n, int64_t o) const;
//                                           folds element n of output o
//   acc combine(acc a, acc b) const;        a's elements precede b's
//   void finish(int64_t o, acc a) const;    writes output o
// and optionally faster versions of the two folds below:
//   acc row(const T *x, int64_t n0, int64_t n1, int64_t o) const;
//   void cols(const T *x, int64_t B, int64_t n0, int64_t n1, int64_t nb,
//             int64_t o0, acc *acc) const;

/// Folds x[n0..n1) (x points at element 0 of output o's row).
template <class R, class T>
inline typename R::acc fold_row(const R &r, const T *x, int64_t n0, int64_t n1,
                                int64_t o) {
  using Acc = typename R::acc;
  if constexpr (requires { r.row(x, n0, n1, o); }) {
    return r.row(x, n0, n1, o);
  } else {
    if (n1 - n0 < 2 * kLanes) { // short rows: lanes would cost more
      Acc a = r.init();
      for (int64_t i = n0; i < n1; ++i)
        a = r.step(a, x[i], i, o);
      return a;
    }
    Acc l[kLanes];
    for (int j = 0; j < kLanes; ++j)
      l[j] = r.init();
    int64_t i = n0;
    for (; i + kLanes <= n1; i += kLanes)
      for (int j = 0; j < kLanes; ++j)
        l[j] = r.step(l[j], x[i + j], i + j, o);
    for (; i < n1; ++i)
      l[0] = r.step(l[0], x[i], i, o);
    for (int w = kLanes / 2; w > 0; w /= 2)
      for (int j = 0; j < w; ++j)
        l[j] = r.combine(l[j], l[j + w]);
    return l[0];
  }
}

/// Folds rows n0..n1 of nb columns into acc[0..nb) (x points at [a, 0, b0],
/// rows are B elements apart; o0 is the first output of the tile).
template <class R, class T>
inline void fold_cols(const R &r, const T *x, int64_t B, int64_t n0, int64_t n1,
                      int64_t nb, int64_t o0, typename R::acc *acc) {
  if constexpr (requires { r.cols(x, B, n0, n1, nb, o0, acc); }) {
    r.cols(x, B, n0, n1, nb, o0, acc);
  } else {
    for (int64_t n = n0; n < n1; ++n) {
      const T *row = x + n * B;
      for (int64_t b = 0; b < nb; ++b)
        acc[b] = r.step(acc[b], row[b], n, o0 + b);
    }
  }
}

/// Runs reducer `r` over the layout [A, N, B] at `x` (null when N or A*B is
/// 0), in parallel, deterministically (Note [Deterministic reductions]).
template <class R, class T>
void run_reduce(const R &r, const T *x, int64_t A, int64_t N, int64_t B) {
  using Acc = typename R::acc;
  if (A == 0 || B == 0)
    return;
  if (B == 1) {
    if (A < kSplitBelow && N >= 2 * kChunk) {
      int64_t nc = (N + kChunk - 1) / kChunk;
      // Not std::vector: vector<bool> packs bits, which threads can't share.
      std::unique_ptr<Acc[]> part(new Acc[size_t(A * nc)]);
      parallel_for(0, A * nc, 1, [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; ++u) {
          int64_t a = u / nc, c = u % nc;
          part[size_t(u)] = fold_row(r, x + a * N, c * kChunk,
                                     std::min(N, (c + 1) * kChunk), a);
        }
      });
      for (int64_t a = 0; a < A; ++a) {
        Acc acc = part[size_t(a * nc)];
        for (int64_t c = 1; c < nc; ++c)
          acc = r.combine(acc, part[size_t(a * nc + c)]);
        r.finish(a, acc);
      }
      return;
    }
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(N, 1));
    parallel_for(0, A, grain, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a)
        r.finish(a, fold_row(r, x ? x + a * N : x, 0, N, a));
    });
    return;
  }
  // Columns: tiles of tb inner lanes; with few outputs, also chunks of N.
  int64_t nominal_tiles = A * ((B + kSplitTile - 1) / kSplitTile);
  int64_t nc = 1;
  if (nominal_tiles < kSplitBelow && N * std::min(B, kSplitTile) >= 2 * kChunk)
    nc = std::clamp<int64_t>(N * B / kChunk, 2, kMaxColChunks);
  int64_t rows_per_chunk = (N + nc - 1) / nc;
  nc = (N + rows_per_chunk - 1) / rows_per_chunk;
  int64_t tb = column_tile(A * nc, B);
  int64_t nt = (B + tb - 1) / tb;
  int64_t grain = std::max<int64_t>(
      1, kGrainSize / std::max<int64_t>(rows_per_chunk * tb, 1));
  auto tile = [&](int64_t u, int64_t &a, int64_t &b0, int64_t &nb) {
    a = u / nt;
    b0 = (u % nt) * tb;
    nb = std::min(tb, B - b0);
  };
  if (nc == 1) {
    parallel_for(0, A * nt, grain, [&](int64_t u0, int64_t u1) {
      std::unique_ptr<Acc[]> acc(new Acc[size_t(tb)]);
      for (int64_t u = u0; u < u1; ++u) {
        int64_t a, b0, nb;
        tile(u, a, b0, nb);
        for (int64_t b = 0; b < nb; ++b)
          acc[b] = r.init();
        fold_cols(r, x + a * N * B + b0, B, 0, N, nb, a * B + b0, acc.get());
        for (int64_t b = 0; b < nb; ++b)
          r.finish(a * B + b0 + b, acc[b]);
      }
    });
    return;
  }
  // Split along N (few outputs: A * B < kSplitBelow * kSplitTile): partial
  // results per chunk, combined in chunk order.
  int64_t nout = A * B;
  std::unique_ptr<Acc[]> part(new Acc[size_t(nout * nc)]);
  parallel_for(0, A * nt * nc, grain, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      int64_t c = w % nc, a, b0, nb;
      tile(w / nc, a, b0, nb);
      Acc *acc = part.get() + c * nout + a * B + b0;
      for (int64_t b = 0; b < nb; ++b)
        acc[b] = r.init();
      fold_cols(r, x + a * N * B + b0, B, c * rows_per_chunk,
                std::min(N, (c + 1) * rows_per_chunk), nb, a * B + b0, acc);
    }
  });
  for (int64_t o = 0; o < nout; ++o) {
    Acc acc = part[size_t(o)];
    for (int64_t c = 1; c < nc; ++c)
      acc = r.combine(acc, part[size_t(c * nout + o)]);
    r.finish(o, acc);
  }
}

/// Runs `r` over a layout whose elements have type T.
template <class T, class R> void run_reduce(const R &r, const Layout &l) {
  run_reduce(r, l.data<T>(), l.A, l.N, l.B);
}

} // namespace ember::native::reduce
