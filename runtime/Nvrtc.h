#pragma once
/// NVRTC, loaded at run time like the driver (Note [Loading the CUDA
/// driver]), and the cache of the CUDA kernels ember compiles with it: the
/// eager CUDA kernels generated from the op table (PyTorch's jiterator
/// method), compiled on first use for the device's architecture.

#include <cstddef>
#include <string>

namespace ember::cuda {

namespace nvrtc {
/// True when libnvrtc was found (it needs no GPU).
bool is_available();
/// NVRTC's version as major * 1000 + minor * 10 (13000 for 13.0); raises
/// when NVRTC is unavailable.
int version();

struct Compiled {
  std::string binary; ///< a cubin, or PTX text (NUL-terminated)
  bool cubin = false;
  std::string log;
};
/// Compiles CUDA C++ `source` for compute capability `arch` (90: sm_90):
/// a cubin when `cubin` is true and NVRTC knows the architecture, else PTX
/// (which the driver compiles when it loads it). Raises ember::Error with
/// NVRTC's log when the source does not compile.
Compiled compile(const std::string &source, const std::string &name, int arch,
                 bool cubin);
} // namespace nvrtc

/// A kernel of device `device`: `entry` (an extern "C" __global__ function)
/// of `source`, compiled by NVRTC on first use and cached in memory and on
/// disk (Note [Disk kernel cache]; the key holds the source, architecture
/// and NVRTC version). Returns the driver's CUfunction.
void *get_kernel(int device, const std::string &source,
                 const std::string &entry);

/// Names kernel `fn` in the profiler's tables (its entry until then).
void name_kernel(void *fn, const std::string &name);

/// Launches `fn` (a kernel of device `device`) on that device's current
/// stream (a device event of the profiler: Note [Device activity]).
void launch_kernel(int device, void *fn, unsigned grid, unsigned block,
                   void **args, size_t shared_bytes = 0);

/// Counters of get_kernel, for tests: NVRTC compilations, loads from the
/// disk cache, and hits in memory.
struct KernelCacheStats {
  long compiled = 0, from_disk = 0, from_memory = 0;
};
KernelCacheStats kernel_cache_stats();

} // namespace ember::cuda
