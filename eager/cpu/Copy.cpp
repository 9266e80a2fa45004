// copy_, fill_ and the conversions built on them.
#include "eager/Convert.h"
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/TensorIterator.h"
#include "eager/cuda/Pointwise.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/ThreadPool.h"

#include <cstring>

namespace ember::native {

namespace {
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
  dispatch_dtype(dst.dtype(), "copy_", [&]<class D>() {
    dispatch_dtype(src.dtype(), "copy_", [&]<class S>() {
      it.for_each([](char **data, const int64_t *st, int64_t n) {
        if (st[0] == int64_t(sizeof(D)) && st[1] == int64_t(sizeof(S))) {
          D *o = reinterpret_cast<D *>(data[0]);
          const S *i = reinterpret_cast<const S *>(data[1]);
          for (int64_t k = 0; k < n; ++k)
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
