// sort, argsort and topk.
//
// Note [Sort order]
// Values compare in their compute type (float for Half/BFloat16) with NaN
// greater than every number and -0.0 equal to 0.0, as PyTorch: NaNs come
// last in ascending order and first in descending order, and count as the
// largest values in topk. Every sort is stable (equal values keep their
// input order, whether or not `stable` is asked for), so results never
// depend on the thread count; topk breaks ties by the lower index.
//
// Note [Sort keys]
// Each value maps to an unsigned integer key with the same order (floats:
// the sign-magnitude bits made monotonic, NaN canonicalized to the largest
// key; signed integers: the sign bit flipped). Descending order is ascending
// order of the complemented key. A key of at most 32 bits is packed with the
// element's index into one uint64 (key high, index low), so one std::sort of
// plain integers is both fast and stable; 64-bit keys sort (key, index)
// pairs.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/WrapDim.h"
#include "eager/generated/Functions.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace ember::native {

namespace {

/// The order-preserving unsigned key of v (Note [Sort keys]).
template <class T> auto sortKey(T v) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<C, float>) {
    float f = C(v);
    if (std::isnan(f))
      f = std::numeric_limits<float>::quiet_NaN();
    if (f == 0.0f)
      f = 0.0f; // -0.0 == 0.0
    uint32_t u = std::bit_cast<uint32_t>(f);
    // Negative: every bit flipped; else the sign bit set. Without a branch:
    // on random signs it mispredicted half the time, and building the keys
    // was 84% of a topk of 1024 rows of 1024.
    return u ^ (uint32_t(int32_t(u) >> 31) | 0x80000000u);
  } else if constexpr (std::is_same_v<C, double>) {
    double f = v;
    if (std::isnan(f))
      f = std::numeric_limits<double>::quiet_NaN();
    if (f == 0.0)
      f = 0.0;
    uint64_t u = std::bit_cast<uint64_t>(f);
    return u ^ (uint64_t(int64_t(u) >> 63) | (1ull << 63));
  } else if constexpr (std::is_same_v<C, bool> || std::is_same_v<C, uint8_t>) {
    return uint32_t(v);
  } else if constexpr (sizeof(C) <= 4) {
    return uint32_t(int32_t(v)) ^ 0x80000000u;
  } else {
    return uint64_t(v) ^ (1ull << 63);
  }
}

enum class Mode {
  Sort,   ///< the whole row, in order
  Top,    ///< the first k of the order, in order
  Select, ///< the first k of the order, in index order
};

/// Stable LSD radix sort of a[0, n) by bits [loBit, hiBit) of key(item), 8
/// bits a pass; a pass whose digit is the same for every item is skipped.
template <class Item, class KeyFn>
void radixSort(Item *a, Item *tmp, int64_t n, int loBit, int hiBit, KeyFn key) {
  Item *src = a, *dst = tmp;
  for (int shift = loBit; shift < hiBit; shift += 8) {
    int64_t count[256] = {};
    for (int64_t i = 0; i < n; ++i)
      ++count[(key(src[i]) >> shift) & 255];
    if (std::any_of(count, count + 256, [n](int64_t c) { return c == n; }))
      continue;
    int64_t pos = 0;
    for (int64_t &c : count) {
      int64_t t = c;
      c = pos;
      pos += t;
    }
    for (int64_t i = 0; i < n; ++i)
      dst[count[(key(src[i]) >> shift) & 255]++] = src[i];
    std::swap(src, dst);
  }
  if (src != a)
    std::copy(src, src + n, a);
}

/// Orders items [a, a + n) (comparing by key, then index; the initial order
/// is by index) per `mode`, keeping the first k.
template <class Item, class KeyFn, class IndexOf>
void orderItems(Item *a, Item *tmp, int64_t n, int64_t k, Mode mode, int loBit,
                int hiBit, KeyFn key, IndexOf indexOf) {
  if (mode == Mode::Sort) {
    if (n >= 64)
      radixSort(a, tmp, n, loBit, hiBit, key);
    else
      std::sort(a, a + n);
  } else if (mode == Mode::Top) {
    std::partial_sort(a, a + k, a + n);
  } else {
    if (k < n)
      std::nth_element(a, a + (k - 1), a + n);
    std::sort(a, a + k, [&](const Item &x, const Item &y) {
      return indexOf(x) < indexOf(y);
    });
  }
}

// Note [Sorting along a dim]
// The contiguous input is seen as [outer, n, inner] and the op orders each
// of the outer * inner slices of length n (stride inner). Slices are taken
// in tiles of up to kTile neighbouring inner positions, read and written a
// row of the tile at a time, so no slice is ever walked with a large stride
// and no transposed copy is needed. Tiles run in parallel.
constexpr int64_t kTile = 16;

template <class T, class Item, class MakeItem, class KeyFn, class IndexOf>
void orderTiles(const T *in, int64_t outer, int64_t n, int64_t inner, int64_t k,
                Mode mode, int loBit, int hiBit, T *vals, int64_t *idxs,
                MakeItem makeItem, KeyFn key, IndexOf indexOf) {
  int64_t tiles = (inner + kTile - 1) / kTile;
  int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n * kTile, 1));
  parallel_for(0, outer * tiles, grain, [&](int64_t b, int64_t e) {
    std::vector<Item> buf, tmp;
    for (int64_t u = b; u < e; ++u) {
      int64_t o = u / tiles, i0 = (u % tiles) * kTile;
      int64_t w = std::min(kTile, inner - i0);
      buf.resize(size_t(w * n));
      tmp.resize(size_t(n));
      const T *base = in + o * n * inner + i0;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t t = 0; t < w; ++t)
          buf[size_t(t * n + j)] = makeItem(base[j * inner + t], j);
      for (int64_t t = 0; t < w; ++t)
        orderItems(buf.data() + t * n, tmp.data(), n, k, mode, loBit, hiBit,
                   key, indexOf);
      T *vo = vals + o * k * inner + i0;
      int64_t *io = idxs + o * k * inner + i0;
      for (int64_t j = 0; j < k; ++j)
        for (int64_t t = 0; t < w; ++t) {
          int64_t src = indexOf(buf[size_t(t * n + j)]);
          vo[j * inner + t] = base[src * inner + t];
          io[j * inner + t] = src;
        }
    }
  });
}

/// Orders every slice along dim d of self (Note [Sorting along a dim]) and
/// returns the first k of each: (values, indices), contiguous.
std::tuple<Tensor, Tensor> orderAlongDim(const Tensor &self, int64_t d,
                                         int64_t k, bool desc, Mode mode,
                                         const char *op) {
  Tensor c = self.contiguous();
  DimVector outSize(self.sizes());
  outSize[size_t(d)] = k;
  Tensor values = empty(outSize, self.options());
  Tensor indices = empty(outSize, TensorOptions(kLong));
  if (values.numel() == 0)
    return {values, indices};
  int64_t n = self.size(d), outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i)
    outer *= self.size(i);
  for (int64_t i = d + 1; i < self.dim(); ++i)
    inner *= self.size(i);
  dispatch_dtype(self.dtype(), op, [&]<class T>() {
    using Key = decltype(sortKey(T()));
    const T *in = static_cast<const T *>(c.data_ptr());
    T *vo = static_cast<T *>(values.data_ptr());
    int64_t *io = indices.data_ptr<int64_t>();
    auto keyOf = [desc](T v) {
      Key key = sortKey(v);
      return desc ? Key(~key) : key;
    };
    if (sizeof(Key) == 4 &&
        n <= int64_t(std::numeric_limits<uint32_t>::max())) {
      // Key in the high half, index in the low half: plain integer order
      // is (key, index) order.
      orderTiles<T, uint64_t>(
          in, outer, n, inner, k, mode, 32, 64, vo, io,
          [&](T v, int64_t j) {
            return (uint64_t(keyOf(v)) << 32) | uint64_t(j);
          },
          [](uint64_t x) { return x; },
          [](uint64_t x) { return int64_t(x & 0xffffffffull); });
    } else {
      using Item = std::pair<uint64_t, int64_t>;
      orderTiles<T, Item>(
          in, outer, n, inner, k, mode, 0, 8 * int(sizeof(Key)), vo, io,
          [&](T v, int64_t j) {
            return Item{uint64_t(keyOf(v)), j};
          },
          [](const Item &x) { return x.first; },
          [](const Item &x) { return x.second; });
    }
  });
  return {values, indices};
}

} // namespace

std::tuple<Tensor, Tensor> sort(const Tensor &self, int64_t dim,
                                bool descending, bool stable) {
  (void)stable; // always stable, Note [Sort order]
  int64_t d = maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0) {
    Tensor values = native::clone(self);
    Tensor indices = zeros({}, TensorOptions(kLong));
    return {values, indices};
  }
  return orderAlongDim(self, d, self.size(d), descending, Mode::Sort, "sort");
}

Tensor argsort(const Tensor &self, int64_t dim, bool descending, bool stable) {
  return std::get<1>(ember::sort(self, dim, descending, stable));
}

std::tuple<Tensor, Tensor> topk(const Tensor &self, int64_t k, int64_t dim,
                                bool largest, bool sorted) {
  int64_t d = meta::check_topk(self, k, dim);
  if (self.dim() == 0) { // k is 0 or 1
    if (k == 1)
      return {native::clone(self), zeros({}, TensorOptions(kLong))};
    return {empty({0}, self.options()), empty({0}, TensorOptions(kLong))};
  }
  return orderAlongDim(self, d, k, largest, sorted ? Mode::Top : Mode::Select,
                       "topk");
}

} // namespace ember::native
