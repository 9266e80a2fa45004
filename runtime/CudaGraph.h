#pragma once
/// CUDA graphs (cuStreamBeginCapture, cuGraphLaunch) for compile()'s replay
/// mode: a stream's work captured once and launched again, with the
/// addresses of chosen buffers patched into its nodes at each launch (Note
/// [CUDA graphs with patched addresses]). Driver level: which tensors the
/// buffers are is frontend/CudaGraphs.cpp's business.

#include "runtime/Cuda.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::cuda {

/// A buffer whose address changes between launches: the bytes
/// [base, base + bytes) of device memory.
struct GraphBuffer {
  uint64_t base = 0;
  uint64_t bytes = 0;
};

/// A word of a node's parameters that holds an address inside a buffer.
struct PatchSite {
  size_t offset = 0;  ///< in the parameter bytes (8-byte aligned)
  int buffer = 0;     ///< the index of the buffer
  uint64_t delta = 0; ///< the address minus the buffer's base
};

/// The 8-byte words of `bytes` (at multiples of 8 from its start) holding
/// an address in [base, base + bytes) of one of `buffers`. Buffers must not
/// overlap (raises otherwise).
std::vector<PatchSite> find_pointers(const void *bytes, size_t n,
                                     const std::vector<GraphBuffer> &buffers);
/// Writes bases[site.buffer] + site.delta at each site of `bytes`.
void apply_patches(void *bytes, const std::vector<PatchSite> &sites,
                   const std::vector<uint64_t> &bases);

/// Why this process cannot capture CUDA graphs ("" when it can): no GPU,
/// or a driver without the graph entry points ember uses (CUDA 12.4's
/// cuFuncGetParamInfo the newest).
std::string graphs_unsupported();

/// The stream of `device` captures are made on: ember's own, non-blocking
/// (the legacy default stream cannot be captured), used for nothing else,
/// so that the caching allocator can tell its blocks apart (Note [Memory of
/// a CUDA graph] in runtime/CachingAllocator.h).
CUDAStream capture_stream(int device);

class CudaGraph {
public:
  /// Starts capturing `s` (relaxed mode: other threads' CUDA calls go on).
  static void begin_capture(const CUDAStream &s);
  /// Ends the capture of `s` and instantiates the graph; raises with the
  /// driver's reason when the capture was invalidated (a synchronizing
  /// call, a host copy from pageable memory).
  static std::unique_ptr<CudaGraph> end_capture(const CUDAStream &s);
  /// Ends a capture an error interrupted, dropping what it recorded.
  static void abandon_capture(const CUDAStream &s) noexcept;
  ~CudaGraph();
  CudaGraph(const CudaGraph &) = delete;
  CudaGraph &operator=(const CudaGraph &) = delete;

  /// Finds every node's addresses inside `buffers`, the buffers as
  /// captured. Raises naming the node when one cannot be patched (a host
  /// callback, a child graph).
  void plan(const std::vector<GraphBuffer> &buffers);
  /// Launches the graph on `s` with buffer i at bases[i], patching the
  /// nodes whose buffers moved since the last launch.
  void launch(const std::vector<uint64_t> &bases, const CUDAStream &s);

  /// For each buffer of plan(), how many words of the nodes point into it.
  std::vector<int> sites_per_buffer() const;
  size_t nodes() const;
  size_t patched_nodes() const; ///< nodes with an address of a buffer
  int device() const { return device_; }

private:
  struct Node;
  CudaGraph(int device, void *graph, void *exec);
  int device_;
  void *graph_, *exec_;
  std::vector<std::unique_ptr<Node>> nodes_;
  size_t node_count_ = 0;
  std::vector<uint64_t> last_; ///< the bases of the last launch
};

} // namespace ember::cuda
