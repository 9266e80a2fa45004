#pragma once
/// Memory statistics per device, named as PyTorch's torch.cuda functions:
///
///   int64_t before = ember::memory_allocated();       // CPU by default
///   ember::Tensor t = ember::empty({1024, 1024});
///   ember::memory_allocated() - before;                 // 4 MiB
///   ember::max_memory_allocated();                      // peak since reset
///   std::cout << ember::memory_summary();
///
/// The CPU allocator keeps these counters now; ember::cuda:: holds the same
/// functions taking a CUDA device index (torch.cuda.memory_allocated(0)),
/// which raise a clear error while no GPU is available.
/// reset_peak_memory_stats(Device) and empty_cache(Device) come from
/// runtime/Allocator.h (both default to the CPU).

#include "runtime/Allocator.h"

#include <cstdint>
#include <map>
#include <string>

namespace ember {

/// Bytes currently held by tensors on `device` (rounded up to the
/// allocator's block sizes), as torch.cuda.memory_allocated.
int64_t memory_allocated(Device device = kCPU);
/// Peak of memory_allocated since the start or the last
/// reset_peak_memory_stats, as torch.cuda.max_memory_allocated.
int64_t max_memory_allocated(Device device = kCPU);
/// Bytes the caching allocator holds from the system (in use plus cached),
/// as torch.cuda.memory_reserved.
int64_t memory_reserved(Device device = kCPU);
/// Peak of memory_reserved, as torch.cuda.max_memory_reserved.
int64_t max_memory_reserved(Device device = kCPU);
/// Every counter of the allocator, keyed as torch.cuda.memory_stats()
/// ("allocated_bytes.all.current", "allocated_bytes.all.peak",
/// "reserved_bytes.all.current", "allocation.all.allocated",
/// "num_alloc_retries", "num_ooms", ...), sorted by key.
std::map<std::string, int64_t> memory_stats(Device device = kCPU);
/// A printable table of the allocator's counters (current, peak, total
/// allocated and total freed), laid out as torch.cuda.memory_summary.
std::string memory_summary(Device device = kCPU);

namespace cuda {
// The same functions for CUDA devices, by index (-1: the current device, 0
// for now), as torch.cuda's. They raise while ember::cuda::is_available() is
// false.

/// torch.cuda.memory_allocated(device).
int64_t memory_allocated(int device = -1);
/// torch.cuda.max_memory_allocated(device).
int64_t max_memory_allocated(int device = -1);
/// torch.cuda.memory_reserved(device).
int64_t memory_reserved(int device = -1);
/// torch.cuda.max_memory_reserved(device).
int64_t max_memory_reserved(int device = -1);
/// torch.cuda.reset_peak_memory_stats(device).
void reset_peak_memory_stats(int device = -1);
/// torch.cuda.empty_cache(): releases the cached blocks of every device.
void empty_cache();
/// torch.cuda.memory_stats(device).
std::map<std::string, int64_t> memory_stats(int device = -1);
/// torch.cuda.memory_summary(device).
std::string memory_summary(int device = -1);
} // namespace cuda

} // namespace ember
