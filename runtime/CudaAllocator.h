#pragma once
/// The CUDA allocators: device memory through a CachingAllocator per device
/// (Note [Device caching allocator]) backed by the driver, and page-locked
/// ("pinned") host memory for asynchronous copies.

#include "runtime/Allocator.h"
#include "runtime/CachingAllocator.h"
#include "runtime/Cuda.h"

namespace ember::cuda {

/// The allocator of device `device`'s memory; blocks are handed out for the
/// current stream of that device at allocation time.
Allocator *getCUDAAllocator(int device);
/// The pool behind getCUDAAllocator(device) (statistics, empty_cache).
CachingAllocator &caching_allocator(int device);
/// The block behind `ptr` (from getCUDAAllocator) is also used on `stream`:
/// its reuse after free waits for that stream (Tensor.record_stream).
void record_stream(void *ptr, const CUDAStream &stream);
/// Page-locked host memory (cuMemHostAlloc); its DataPtrs are on the CPU.
Allocator *getPinnedAllocator();
/// Whether `ptr` lies in memory from getPinnedAllocator().
bool is_pinned_ptr(const void *ptr);

} // namespace ember::cuda
