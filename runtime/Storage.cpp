#include "runtime/Storage.h"

namespace ember {

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
