#include "eager/TensorImpl.h"
#include "eager/autograd/GradMode.h"

namespace ember {

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t s = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
    st[size_t(i)] = s;
    s *= std::max<int64_t>(sizes[size_t(i)], 1);
  }
  return st;
}

int64_t multiply_sizes(IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    EMBER_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s,
                ": ", sizes);
    EMBER_CHECK(!__builtin_mul_overflow(n, s, &n),
                "The number of elements of a tensor of sizes ", sizes,
                " overflows int64");
  }
  return n;
}

static DispatchKeySet backendKey(Device d) {
  return d.is_cuda() ? DispatchKeySet(DispatchKey::CUDA)
                     : DispatchKeySet(DispatchKey::CPU);
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes,
                       IntArrayRef strides, int64_t storage_offset)
    : storage_(std::move(storage)), sizes_(sizes), strides_(strides),
      storage_offset_(storage_offset), dtype_(dtype),
      inference_(InferenceMode::is_enabled()),
      key_set_(backendKey(storage_.device())) {
  refresh();
}

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes)
    : TensorImpl(std::move(storage), dtype, sizes, contiguous_strides(sizes),
                 0) {}

void TensorImpl::set_sizes_and_strides(IntArrayRef sizes, IntArrayRef strides,
                                       int64_t storage_offset) {
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  storage_offset_ = storage_offset;
  refresh();
}

void TensorImpl::refresh() {
  EMBER_INTERNAL_ASSERT(sizes_.size() == strides_.size());
  numel_ = multiply_sizes(sizes_);
  // Contiguous iff strides are row-major, ignoring dims of size 1 (as
  // PyTorch); an empty tensor is contiguous.
  is_contiguous_ = true;
  if (numel_ == 0)
    return;
  int64_t expected = 1;
  for (int64_t i = int64_t(sizes_.size()) - 1; i >= 0; --i) {
    if (sizes_[size_t(i)] == 1)
      continue;
    if (strides_[size_t(i)] != expected) {
      is_contiguous_ = false;
      return;
    }
    expected *= sizes_[size_t(i)];
  }
}

void TensorImpl::set_autograd_meta(std::unique_ptr<AutogradMetaInterface> m) {
  autograd_meta_ = std::move(m);
}

void TensorImpl::set_key(DispatchKey k, bool on) {
  key_set_ = on ? key_set_ | k : key_set_ - k;
}

} // namespace ember

namespace ember {
namespace detail {
CaptureSyncFn capture_sync_fn = nullptr;
} // namespace detail

void TensorImpl::sync_capture(const char *reason,
                              const std::source_location &where) const {
  if (!key_set_.has(DispatchKey::Capture))
    return;
  EMBER_CHECK(detail::capture_sync_fn,
              "a capture tensor was used outside of ember::compile (", reason,
              "); capture tensors exist only while compile() runs");
  detail::capture_sync_fn(const_cast<TensorImpl &>(*this), reason, where);
}
} // namespace ember
