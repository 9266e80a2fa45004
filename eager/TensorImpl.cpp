#include "eager/TensorImpl.h"
#include "eager/autograd/GradMode.h"

namespace ember {

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector st(sizes.size());
  int64_t s = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; --i) {
    st[size_t(i)] = s;
    // An empty tensor's strides can overflow although it has no element
    // (sizes [2^62, 4, 0]): raise, as PyTorch, rather than store a
    // negative stride.
    EMBER_CHECK(i == 0 || !__builtin_mul_overflow(
                              s, std::max<int64_t>(sizes[size_t(i)], 1), &s),
                "Stride calculation overflowed for sizes ", sizes);
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

namespace {
[[noreturn]] void span_overflow(IntArrayRef sizes, IntArrayRef strides,
                                int64_t offset) {
  throw Error(
      detail::str("Storage size calculation overflowed with sizes=", sizes,
                  ", strides=", strides, " and storage offset ", offset));
}
} // namespace

int64_t storage_span(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  EMBER_CHECK(sizes.size() == strides.size(), "storage_span: ", sizes.size(),
              " sizes but ", strides.size(), " strides");
  for (int64_t s : sizes)
    if (s == 0)
      return 0;
  int64_t span = 0;
  if (__builtin_add_overflow(offset, int64_t(1), &span))
    span_overflow(sizes, strides, offset);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t reach;
    if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) ||
        __builtin_add_overflow(span, reach, &span))
      span_overflow(sizes, strides, offset);
  }
  return span;
}

size_t storage_nbytes(IntArrayRef sizes, IntArrayRef strides, size_t itemsize,
                      int64_t offset) {
  int64_t span = storage_span(sizes, strides, offset);
  int64_t bytes;
  if (__builtin_mul_overflow(span, int64_t(itemsize), &bytes))
    span_overflow(sizes, strides, offset);
  return size_t(bytes);
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
CaptureSaveFn capture_save_fn = nullptr;
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
