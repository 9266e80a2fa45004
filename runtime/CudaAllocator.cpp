#include "runtime/CudaAllocator.h"
#include "runtime/CudaDriver.h"

#include <array>
#include <map>
#include <mutex>
#include <utility>

namespace ember::cuda {

using namespace driver;

namespace {

constexpr int kMaxDevices = 64;

/// DeviceMemory on the CUDA driver: segments from cuMemAlloc, events on
/// the device's streams.
class DriverMemory final : public DeviceMemory {
public:
  explicit DriverMemory(int device) : device_(device) {}
  void *raw_alloc(size_t bytes) override {
    set_context(device_);
    CUdeviceptr p = 0;
    CUresult r = checked_api().cuMemAlloc_v2(&p, bytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void *>(p);
  }
  void raw_free(void *p) override {
    set_context(device_);
    check(checked_api().cuMemFree_v2(reinterpret_cast<CUdeviceptr>(p)),
          "cuMemFree");
  }
  size_t total_memory() const override { return info().second; }
  size_t free_memory() const override { return info().first; }
  /// (free, total) bytes of the device.
  std::pair<size_t, size_t> info() const {
    set_context(device_);
    size_t free = 0, total = 0;
    check(checked_api().cuMemGetInfo_v2(&free, &total), "cuMemGetInfo");
    return {free, total};
  }
  uint64_t record_event(StreamId stream) override {
    set_context(device_);
    CUevent e;
    check(checked_api().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING),
          "cuEventCreate");
    check(checked_api().cuEventRecord(
              e, reinterpret_cast<CUstream>(intptr_t(stream))),
          "cuEventRecord");
    return uint64_t(reinterpret_cast<uintptr_t>(e));
  }
  bool event_done(uint64_t event) override {
    set_context(device_);
    CUresult r =
        checked_api().cuEventQuery(reinterpret_cast<CUevent>(uintptr_t(event)));
    if (r == CUDA_ERROR_NOT_READY)
      return false;
    check(r, "cuEventQuery");
    return true;
  }
  void destroy_event(uint64_t event) override {
    set_context(device_);
    checked_api().cuEventDestroy_v2(
        reinterpret_cast<CUevent>(uintptr_t(event)));
  }
  void synchronize() override {
    set_context(device_);
    check(checked_api().cuCtxSynchronize(), "cuCtxSynchronize");
  }

private:
  int device_;
};

struct DeviceAllocator final : Allocator {
  int device = 0;
  std::once_flag once;
  CachingAllocator *pool = nullptr; // never destroyed: tensors may outlive
                                    // static destruction order
  DataPtr allocate(size_t nbytes) override;
};

std::array<DeviceAllocator, kMaxDevices> &allocators() {
  static auto *a = new std::array<DeviceAllocator, kMaxDevices>();
  return *a;
}

// One deleter per device index: a DataPtr's context is the block's address
// and the deleter knows the pool.
template <int I> void free_on(void *p) { allocators()[I].pool->free(p); }
template <int... I>
constexpr std::array<DataPtr::Deleter, kMaxDevices>
make_deleters(std::integer_sequence<int, I...>) {
  return {&free_on<I>...};
}
constexpr auto kDeleters =
    make_deleters(std::make_integer_sequence<int, kMaxDevices>{});

DataPtr DeviceAllocator::allocate(size_t nbytes) {
  void *p = pool->malloc(nbytes, getCurrentCUDAStream(device).id());
  return DataPtr(p, p, p ? kDeleters[size_t(device)] : nullptr,
                 Device(kCUDA, device));
}

DeviceAllocator &device_allocator(int device) {
  int d = checked_device(device, "ember::cuda allocator");
  DeviceAllocator &a = allocators()[size_t(d)];
  std::call_once(a.once, [&] {
    a.device = d;
    a.pool = new CachingAllocator(std::make_shared<DriverMemory>(d),
                                  Device(kCUDA, d));
  });
  return a;
}

// --- pinned host memory ------------------------------------------------------

struct PinnedAllocator final : Allocator {
  std::mutex mu;
  std::map<uintptr_t, size_t> blocks; // start -> size, for is_pinned_ptr
  DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0)
      return DataPtr(nullptr, nullptr, nullptr, Device(kCPU));
    set_context(current_device());
    void *p = nullptr;
    CUresult r =
        checked_api().cuMemHostAlloc(&p, nbytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
      throw OutOfMemoryError(
          detail::str("pin_memory: out of page-locked host memory "
                      "allocating ",
                      nbytes, " bytes"));
    check(r, "cuMemHostAlloc");
    {
      std::lock_guard<std::mutex> g(mu);
      blocks[reinterpret_cast<uintptr_t>(p)] = nbytes;
    }
    return DataPtr(p, p, &release, Device(kCPU));
  }
  static void release(void *p);
};

PinnedAllocator &pinned() {
  static auto *a = new PinnedAllocator();
  return *a;
}

void PinnedAllocator::release(void *p) {
  {
    std::lock_guard<std::mutex> g(pinned().mu);
    pinned().blocks.erase(reinterpret_cast<uintptr_t>(p));
  }
  if (const Api *a = api())
    a->cuMemFreeHost(p); // waits for copies still reading it
}

} // namespace

Allocator *getCUDAAllocator(int device) { return &device_allocator(device); }

CachingAllocator &caching_allocator(int device) {
  return *device_allocator(device).pool;
}

void record_stream(void *ptr, const CUDAStream &stream) {
  if (ptr)
    caching_allocator(stream.device_index()).record_stream(ptr, stream.id());
}

Allocator *getPinnedAllocator() { return &pinned(); }

bool is_pinned_ptr(const void *ptr) {
  PinnedAllocator &a = pinned();
  std::lock_guard<std::mutex> g(a.mu);
  auto u = reinterpret_cast<uintptr_t>(ptr);
  auto it = a.blocks.upper_bound(u);
  if (it == a.blocks.begin())
    return false;
  --it;
  return u < it->first + it->second;
}

} // namespace ember::cuda
