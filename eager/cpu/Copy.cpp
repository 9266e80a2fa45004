// copy_, fill_ and the conversions built on them.
#include "eager/Convert.h"
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace ember::native {

namespace {

// Note [Transposing copies]
// A copy whose output runs along a dim the input steps through with a large
// stride, while the input runs along another (x.t().contiguous(), k's
// transpose(-2, -1) made contiguous, a clone of a transposed view) walked
// the output in order and read the input a stride apart: one cache line
// per element read, 1.6 ms for a 1024x1024 float transpose on the 2-core
// VM, where PyTorch takes 0.42. Such a copy of one dtype (an element of 1,
// 2, 4 or 8 bytes: its bits are moved) goes by tiles of 32x32 elements
// over those two dims of the iterator, reading each tile's columns from
// the input contiguously and writing the tile (in L1) to the output; the
// tiles' rows are split over the threads. The values are the copy's.
template <class U>
void transposeTiles(const TensorIterator &it, char *dbase, const char *sbase) {
  constexpr int64_t kTile = 32;
  const int nd = it.ndim();
  IntArrayRef shape = it.shape(), so = it.strides(0), si = it.strides(1);
  const int64_t A = shape[size_t(nd - 2)], B = shape[size_t(nd - 1)];
  const int64_t ldo = so[size_t(nd - 2)] / int64_t(sizeof(U));
  const int64_t ldi = si[size_t(nd - 1)] / int64_t(sizeof(U));
  int64_t outer = 1;
  for (int d = 0; d < nd - 2; ++d)
    outer *= shape[size_t(d)];
  const int64_t rows = (A + kTile - 1) / kTile;
  const int64_t grain = std::max<int64_t>(1, kGrainSize * 4 / (kTile * B));
  parallel_for(0, outer * rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      int64_t o = job / rows, r = o, off_d = 0, off_s = 0;
      for (int d = nd - 3; d >= 0; --d) {
        const int64_t c = r % shape[size_t(d)];
        r /= shape[size_t(d)];
        off_d += c * so[size_t(d)];
        off_s += c * si[size_t(d)];
      }
      U *out = reinterpret_cast<U *>(dbase + off_d);
      const U *in = reinterpret_cast<const U *>(sbase + off_s);
      const int64_t a0 = (job % rows) * kTile, a1 = std::min(A, a0 + kTile);
      U tile[kTile][kTile];
      for (int64_t b0 = 0; b0 < B; b0 += kTile) {
        const int64_t b1 = std::min(B, b0 + kTile);
        for (int64_t b = b0; b < b1; ++b)
          for (int64_t a = a0; a < a1; ++a)
            tile[b - b0][a - a0] = in[a + b * ldi];
        for (int64_t a = a0; a < a1; ++a)
          for (int64_t b = b0; b < b1; ++b)
            out[a * ldo + b] = tile[b - b0][a - a0];
      }
    }
  });
}

/// Note [Transposing copies]: whether `it` (output, input of one dtype) is
/// such a copy, and then done.
bool copyByTiles(const TensorIterator &it, int64_t esize) {
  const int nd = it.ndim();
  if (nd < 2 || it.numel() < 4096)
    return false;
  IntArrayRef so = it.strides(0), si = it.strides(1);
  if (so[size_t(nd - 1)] != esize || si[size_t(nd - 2)] != esize ||
      si[size_t(nd - 1)] == esize || si[size_t(nd - 1)] % esize != 0 ||
      so[size_t(nd - 2)] % esize != 0)
    return false;
  char *d = it.data_ptr(0);
  const char *s = it.data_ptr(1);
  switch (esize) {
  case 1:
    transposeTiles<uint8_t>(it, d, s);
    return true;
  case 2:
    transposeTiles<uint16_t>(it, d, s);
    return true;
  case 4:
    transposeTiles<uint32_t>(it, d, s);
    return true;
  case 8:
    transposeTiles<uint64_t>(it, d, s);
    return true;
  default:
    return false;
  }
}

void copyKernel(const Tensor &dst, const Tensor &src,
                bool non_blocking = false) {
  if (dst.numel() == 0)
    return;
  if (!dst.is_cpu() || !src.is_cpu())
    return cuda::copy(dst, src, non_blocking);
  if (dst.dtype() == src.dtype() && dst.is_contiguous() &&
      src.is_contiguous() && dst.sizes() == src.sizes()) {
    char *d = static_cast<char *>(dst.data_ptr());
    const char *s = static_cast<const char *>(src.data_ptr());
    int64_t es = int64_t(dst.element_size());
    parallel_for(0, dst.numel(), kGrainSize * 4, [&](int64_t b, int64_t e) {
      std::memcpy(d + b * es, s + b * es, size_t((e - b) * es));
    });
    return;
  }
  Tensor s = src.dim() < dst.dim() || src.sizes() != dst.sizes()
                 ? src.expand(dst.sizes())
                 : src;
  TensorIterator it = TensorIterator::build(dst, {s});
  if (dst.dtype() == src.dtype() &&
      copyByTiles(it, int64_t(dst.element_size())))
    return;
  dispatch_dtype(dst.dtype(), "copy_", [&]<class D>() {
    dispatch_dtype(src.dtype(), "copy_", [&]<class S>() {
      it.for_each([](char **data, const int64_t *st, int64_t n) {
        if (st[0] == int64_t(sizeof(D)) && st[1] == int64_t(sizeof(S))) {
          D *o = reinterpret_cast<D *>(data[0]);
          const S *i = reinterpret_cast<const S *>(data[1]);
          int64_t k = 0;
#if defined(__F16C__) && defined(__AVX__)
          // float <-> float16, 8 at a time: Half's own conversion is the
          // same instruction's scalar form (runtime/Half.h, with F16C), one
          // element a call, which GCC does not vectorize (4x slower than
          // PyTorch's .half() on 1M floats on the Zen 5 VM).
          if constexpr (std::is_same_v<D, Half> && std::is_same_v<S, float>) {
            for (; k + 8 <= n; k += 8)
              _mm_storeu_si128(reinterpret_cast<__m128i *>(o + k),
                               _mm256_cvtps_ph(_mm256_loadu_ps(i + k),
                                               _MM_FROUND_TO_NEAREST_INT));
          } else if constexpr (std::is_same_v<D, float> &&
                               std::is_same_v<S, Half>) {
            for (; k + 8 <= n; k += 8)
              _mm256_storeu_ps(o + k,
                               _mm256_cvtph_ps(_mm_loadu_si128(
                                   reinterpret_cast<const __m128i *>(i + k))));
          }
#endif
          for (; k < n; ++k)
            o[k] = convert<D>(i[k]);
          return;
        }
        for (int64_t k = 0; k < n; ++k)
          *reinterpret_cast<D *>(data[0] + k * st[0]) =
              convert<D>(*reinterpret_cast<const S *>(data[1] + k * st[1]));
      });
    });
  });
}
} // namespace

const Tensor &copy_(const Tensor &self, const Tensor &src, bool non_blocking) {
  meta::check_copy(self, src);
  Tensor s = src;
  if (src.dim() > self.dim()) // leading 1s only (checked above)
    s = src.reshape(self.sizes());
  if (s.is_alias_of(self) && s.numel() > 0 && !s.is_same(self) &&
      !(s.data_ptr() == self.data_ptr() && s.strides() == self.strides() &&
        s.sizes() == self.sizes()))
    s = s.clone(); // overlapping views: read everything before writing
  if (!(s.data_ptr() == self.data_ptr() && s.dtype() == self.dtype() &&
        s.sizes() == self.sizes() && s.strides() == self.strides()))
    copyKernel(self, s, non_blocking);
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

const Tensor &fill_(const Tensor &self, const Scalar &value) {
  meta::check_fill(self);
  if (self.is_cuda()) {
    cuda::fill(self, value);
  } else if (self.numel() > 0) {
    TensorIterator it = TensorIterator::build(self, {});
    dispatch_dtype(self.dtype(), "fill_", [&]<class T>() {
      T v = value.checked_to<T>();
      it.for_each([v](char **data, const int64_t *st, int64_t n) {
        if (st[0] == int64_t(sizeof(T))) {
          T *o = reinterpret_cast<T *>(data[0]);
          for (int64_t k = 0; k < n; ++k)
            o[k] = v;
          return;
        }
        for (int64_t k = 0; k < n; ++k)
          *reinterpret_cast<T *>(data[0] + k * st[0]) = v;
      });
    });
  }
  self.unsafeGetTensorImpl()->bump_version();
  return self;
}

const Tensor &zero_(const Tensor &self) { return self.fill_(0); }

Tensor _to_copy(const Tensor &self, std::optional<ScalarType> dtype,
                std::optional<Device> device) {
  Device dev = meta::to_copy_device(self, device);
  Tensor out = empty(self.sizes(),
                     TensorOptions(dtype.value_or(self.dtype())).device(dev));
  copyKernel(out, self);
  return out;
}

Tensor clone(const Tensor &self) {
  Tensor out = empty(self.sizes(), self.options());
  copyKernel(out, self);
  return out;
}

// Note [as_strided_scatter]
// The functional form of writing through a view (compile()'s capture turns
// `x.select(0, 1).add_(1)` into add + as_strided_scatter into x's value).
// The geometry (size, stride, offset) is relative to self's row-major
// layout, whatever self's strides: values have no layout in the compiler.
Tensor as_strided_scatter(const Tensor &self, const Tensor &src,
                          IntArrayRef size, IntArrayRef stride,
                          std::optional<int64_t> storage_offset) {
  EMBER_CHECK(src.device() == self.device(),
              "Expected all tensors to be on the same device, but found at "
              "least two devices, ",
              self.device(), " and ", src.device(),
              "! (in as_strided_scatter)");
  Tensor out = empty(self.sizes(), self.options());
  copyKernel(out, self);
  Tensor region = out.as_strided(size, stride, storage_offset);
  EMBER_CHECK_VALUE(region.sizes() == src.sizes(),
                    "as_strided_scatter: expected src to have the size ",
                    region.sizes(), " of the region, but got ", src.sizes());
  region.copy_(src);
  return out;
}

} // namespace ember::native
