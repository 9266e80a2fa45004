#pragma once
/// NVRTC, loaded at run time like the driver (Note [Loading the CUDA
/// driver]), and the cache of the CUDA kernels ember compiles with it: the
/// eager CUDA kernels generated from the op table (PyTorch's jiterator
/// method), compiled on first use for the device's architecture.

#include <cstddef>
#include <string>
#include <vector>

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

/// A kernel to compile: an extern "C" __global__ function `entry` of
/// `source`.
struct KernelSource {
  std::string source, entry;
};

/// Note [The kernels of a graph compile in parallel]
/// compile() knows every kernel of a graph before it launches one: it
/// renders them all and hands them to precompile_kernels, which compiles
/// those that no cache holds for architecture `arch` (sm_<arch>: the
/// device's compute capability) on up to hardware_concurrency threads at
/// once (NVRTC compiles separate programs in parallel), into the disk
/// cache and a table of binaries in memory, where get_kernel then finds
/// them (with the disk cache off too); the disk cache's entries it read
/// go to that table as well, so get_kernel does not read them again. A kernel
/// NVRTC rejects is left for get_kernel, which raises with its log. Needs
/// NVRTC, not a GPU; with `device` >= 0, kernels already loaded on that device
/// are skipped. Returns how many it compiled.
int precompile_kernels(int arch, const std::vector<KernelSource> &kernels,
                       int device = -1);

/// Names kernel `fn` in the profiler's tables (its entry until then).
void name_kernel(void *fn, const std::string &name);

/// Launches `fn` (a kernel of device `device`) on that device's current
/// stream (a device event of the profiler: Note [Device activity]).
void launch_kernel(int device, void *fn, unsigned grid, unsigned block,
                   void **args, size_t shared_bytes = 0);

/// Counters of get_kernel, for tests: NVRTC compilations (by get_kernel,
/// or by precompile_kernels and then loaded: `precompiled` of them), loads
/// from the disk cache, and hits in memory; and the seconds NVRTC took for
/// the compiled ones (each its own time, parallel or not).
struct KernelCacheStats {
  long compiled = 0, from_disk = 0, from_memory = 0, precompiled = 0;
  double nvrtc_seconds = 0;
};
KernelCacheStats kernel_cache_stats();

} // namespace ember::cuda
