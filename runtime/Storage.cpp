#include "runtime/Storage.h"

namespace ember {

namespace detail {
namespace {
thread_local uint32_t tls_creation_epoch = 0;
} // namespace
uint32_t set_creation_epoch(uint32_t epoch) {
  uint32_t prev = tls_creation_epoch;
  tls_creation_epoch = epoch;
  return prev;
}
uint32_t creation_epoch() { return tls_creation_epoch; }
} // namespace detail

Storage Storage::allocate(size_t nbytes, Allocator *allocator) {
  return Storage(make_intrusive<StorageImpl>(allocator->allocate(nbytes),
                                             nbytes, allocator));
}

namespace {
struct BorrowCtx {
  void *data;
  std::function<void(void *)> deleter;
};
void borrowDeleter(void *ctx) {
  auto *c = static_cast<BorrowCtx *>(ctx);
  if (c->deleter)
    c->deleter(c->data);
  delete c;
}
} // namespace

Storage Storage::borrow(void *data, size_t nbytes, Device device,
                        std::function<void(void *)> deleter) {
  auto *ctx = new BorrowCtx{data, std::move(deleter)};
  return Storage(make_intrusive<StorageImpl>(
      DataPtr(data, ctx, &borrowDeleter, device), nbytes, nullptr));
}

} // namespace ember
