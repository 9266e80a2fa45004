#include "runtime/CudaGraph.h"

#include "runtime/CudaDriver.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <utility>

namespace ember::cuda {

// Note [CUDA graphs with patched addresses]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured graph's nodes hold the addresses its work was captured with.
// PyTorch's CUDA graphs (and torch.compile's mode="reduce-overhead") keep
// them: each replay first copies the new inputs into the captured input
// buffers, and the outputs are the same buffers every time, overwritten by
// the next replay. ember patches instead: after the capture, each node's
// parameters are read back from the driver (a kernel's parameter bytes, a
// memcpy's or memset's addresses) and every 8-byte word holding an address
// inside one of the graph's *buffers* (its inputs' storages and its outputs'
// storages, as captured) is noted as (word, buffer, offset in the buffer).
// At a launch, the words of the nodes whose buffers moved are rewritten for
// the new addresses and set on the instantiated graph
// (cuGraphExec*NodeSetParams), then the graph is launched. So a replay
// copies nothing, takes the caller's inputs where they are and writes fresh
// output tensors that later replays do not overwrite.
//
// A kernel's parameters are bytes without types; their layout comes from the
// driver (cuFuncGetParamInfo, cuKernelGetParamInfo for library kernels such
// as cuBLAS's; or the one buffer of a launch made with `extra`). A word is
// taken for an address when it falls inside a buffer: device addresses are
// 2^32 and above, so a size or a stride would have to be terabytes to be
// mistaken for one; two 32-bit values packed in one word could, in
// principle, and the tests compare every replay with eager results.
// A node that is not a kernel, memcpy or memset and may hold addresses (a
// host callback, a child graph, a conditional) makes plan() raise: the
// graph is not used. Intermediates stay at their captured addresses, which
// the graph owns (Note [Memory of a CUDA graph] in
// runtime/CachingAllocator.h).

using driver::CUcontext;
using driver::CUdeviceptr;
using driver::CUfunction;
using driver::CUresult;
using driver::CUstream;

namespace {
using CUgraph = void *;
using CUgraphExec = void *;
using CUgraphNode = void *;
using CUkernel = void *;

constexpr int kCaptureModeRelaxed = 2; // CU_STREAM_CAPTURE_MODE_RELAXED
constexpr CUresult kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE
enum NodeType {
  kKernel = 0,
  kMemcpy = 1,
  kMemset = 2,
  kHost = 3,
  kChildGraph = 4,
  kEmpty = 5,
  kWaitEvent = 6,
  kEventRecord = 7,
  kMemAlloc = 10,
  kMemFree = 11,
};
constexpr int kMemoryTypeDevice = 2, kMemoryTypeUnified = 4;

/// CUDA_KERNEL_NODE_PARAMS_v2 (cuda.h).
struct KernelParams {
  CUfunction func;
  unsigned grid[3], block[3];
  unsigned shared_bytes;
  void **kernel_params;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
};
/// CUDA_MEMSET_NODE_PARAMS.
struct MemsetParams {
  CUdeviceptr dst;
  size_t pitch;
  unsigned value, element_size;
  size_t width, height;
};
/// CUDA_MEMCPY3D.
struct MemcpyParams {
  size_t src_x, src_y, src_z, src_lod;
  int src_type;
  const void *src_host;
  CUdeviceptr src_device;
  void *src_array, *reserved0;
  size_t src_pitch, src_height;
  size_t dst_x, dst_y, dst_z, dst_lod;
  int dst_type;
  void *dst_host;
  CUdeviceptr dst_device;
  void *dst_array, *reserved1;
  size_t dst_pitch, dst_height;
  size_t width, height, depth;
};

#define EMBER_FORALL_CUDA_GRAPH(_)                                             \
  _(cuStreamBeginCapture_v2, CUstream, int)                                    \
  _(cuStreamEndCapture, CUstream, CUgraph *)                                   \
  _(cuGraphInstantiateWithFlags, CUgraphExec *, CUgraph, unsigned long long)   \
  _(cuGraphLaunch, CUgraphExec, CUstream)                                      \
  _(cuGraphExecDestroy, CUgraphExec)                                           \
  _(cuGraphDestroy, CUgraph)                                                   \
  _(cuGraphGetNodes, CUgraph, CUgraphNode *, size_t *)                         \
  _(cuGraphNodeGetType, CUgraphNode, int *)                                    \
  _(cuGraphKernelNodeGetParams_v2, CUgraphNode, KernelParams *)                \
  _(cuGraphExecKernelNodeSetParams_v2, CUgraphExec, CUgraphNode,               \
    const KernelParams *)                                                      \
  _(cuGraphMemsetNodeGetParams, CUgraphNode, MemsetParams *)                   \
  _(cuGraphExecMemsetNodeSetParams, CUgraphExec, CUgraphNode,                  \
    const MemsetParams *, CUcontext)                                           \
  _(cuGraphMemcpyNodeGetParams, CUgraphNode, MemcpyParams *)                   \
  _(cuGraphExecMemcpyNodeSetParams, CUgraphExec, CUgraphNode,                  \
    const MemcpyParams *, CUcontext)                                           \
  _(cuFuncGetParamInfo, CUfunction, size_t, size_t *, size_t *)                \
  _(cuKernelGetParamInfo, CUkernel, size_t, size_t *, size_t *)                \
  _(cuCtxGetCurrent, CUcontext *)

struct GraphApi {
#define EMBER_CUG_FIELD(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  EMBER_FORALL_CUDA_GRAPH(EMBER_CUG_FIELD)
#undef EMBER_CUG_FIELD
  std::string why; ///< "" when every entry point loaded
};

const GraphApi &graph_api() {
  // (never destroyed: graphs of static compiled functions outlive statics)
  static const GraphApi &g = *new GraphApi([] {
    GraphApi r;
    if (!driver::api()) {
      r.why = "CUDA is not available";
      return r;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      r.why = "the CUDA driver did not load";
      return r;
    }
#define EMBER_CUG_LOAD(name, ...)                                              \
  r.name = reinterpret_cast<decltype(r.name)>(dlsym(lib, #name));              \
  if (!r.name && r.why.empty())                                                \
    r.why = "the CUDA driver has no " #name " (CUDA graphs need a driver of "  \
            "CUDA 12.4 or newer)";
    EMBER_FORALL_CUDA_GRAPH(EMBER_CUG_LOAD)
#undef EMBER_CUG_LOAD
    return r;
  }());
  return g;
}

const GraphApi &checked_graph_api() {
  const GraphApi &g = graph_api();
  EMBER_CHECK(g.why.empty(), "CUDA graphs are unavailable: ", g.why);
  return g;
}

#define EMBER_CUG(name, ...)                                                   \
  driver::check(checked_graph_api().name(__VA_ARGS__), #name)

void check_disjoint(const std::vector<GraphBuffer> &buffers) {
  std::vector<GraphBuffer> b = buffers;
  std::sort(b.begin(), b.end(), [](const GraphBuffer &x, const GraphBuffer &y) {
    return x.base < y.base;
  });
  for (size_t i = 1; i < b.size(); ++i)
    EMBER_CHECK(b[i - 1].base + b[i - 1].bytes <= b[i].base,
                "CUDA graph: buffers overlap (internal error)");
}
} // namespace

std::vector<PatchSite> find_pointers(const void *bytes, size_t n,
                                     const std::vector<GraphBuffer> &buffers) {
  check_disjoint(buffers);
  std::vector<PatchSite> sites;
  const auto *p = static_cast<const unsigned char *>(bytes);
  for (size_t off = 0; off + 8 <= n; off += 8) {
    uint64_t w;
    std::memcpy(&w, p + off, 8);
    for (size_t i = 0; i < buffers.size(); ++i)
      if (buffers[i].bytes > 0 && w >= buffers[i].base &&
          w - buffers[i].base < buffers[i].bytes) {
        sites.push_back({off, int(i), w - buffers[i].base});
        break;
      }
  }
  return sites;
}

void apply_patches(void *bytes, const std::vector<PatchSite> &sites,
                   const std::vector<uint64_t> &bases) {
  auto *p = static_cast<unsigned char *>(bytes);
  for (const PatchSite &s : sites) {
    uint64_t w = bases.at(size_t(s.buffer)) + s.delta;
    std::memcpy(p + s.offset, &w, 8);
  }
}

std::string graphs_unsupported() {
  if (!is_available())
    return "CUDA is not available";
  return graph_api().why;
}

CUDAStream capture_stream(int device) {
  int d = checked_device(device, "ember::cuda::capture_stream");
  struct Slot {
    std::once_flag once;
    CUstream s = nullptr;
  };
  static std::array<Slot, 64> slots;
  Slot &slot = slots.at(size_t(d));
  std::call_once(slot.once, [&] {
    driver::set_context(d);
    int least = 0, greatest = 0;
    EMBER_CU(cuCtxGetStreamPriorityRange, &least, &greatest);
    EMBER_CU(cuStreamCreateWithPriority, &slot.s,
             driver::CU_STREAM_NON_BLOCKING, least);
  });
  return CUDAStream(d, slot.s);
}

/// A node with addresses of buffers: its parameters as captured, where
/// those addresses are, and the buffers it reads or writes.
struct CudaGraph::Node {
  CUgraphNode node = nullptr;
  int type = kKernel;
  /// As the driver gave them, but with kernelParams (or extra) pointing
  /// into `bytes`: what SetParams gets once `bytes` is patched.
  KernelParams kernel{};
  std::vector<unsigned char> bytes; ///< kernel parameters, each 8-aligned
  std::vector<void *> param_ptrs;   ///< into `bytes`, one per parameter
  size_t extra_size = 0;            ///< a launch made with `extra`
  std::array<void *, 5> extra{};
  MemsetParams memset{};
  MemcpyParams memcpy{};
  std::vector<PatchSite> sites;
  std::vector<int> buffers; ///< those the sites name
};

CudaGraph::CudaGraph(int device, void *graph, void *exec)
    : device_(device), graph_(graph), exec_(exec) {}

CudaGraph::~CudaGraph() {
  const GraphApi &g = graph_api();
  if (!g.why.empty())
    return;
  // (no raising here; a driver already shut down at exit fails quietly)
  if (exec_)
    g.cuGraphExecDestroy(exec_);
  if (graph_)
    g.cuGraphDestroy(graph_);
}

void CudaGraph::begin_capture(const CUDAStream &s) {
  const GraphApi &g = checked_graph_api();
  EMBER_CHECK(s.stream() != nullptr,
              "CUDA graphs: the default stream cannot be captured");
  driver::set_context(s.device_index());
  driver::check(g.cuStreamBeginCapture_v2(static_cast<CUstream>(s.stream()),
                                          kCaptureModeRelaxed),
                "cuStreamBeginCapture");
}

std::unique_ptr<CudaGraph> CudaGraph::end_capture(const CUDAStream &s) {
  const GraphApi &g = checked_graph_api();
  driver::set_context(s.device_index());
  CUgraph graph = nullptr;
  EMBER_CUG(cuStreamEndCapture, static_cast<CUstream>(s.stream()), &graph);
  EMBER_CHECK(graph, "cuStreamEndCapture returned no graph");
  CUgraphExec exec = nullptr;
  if (CUresult r = g.cuGraphInstantiateWithFlags(&exec, graph, 0); r != 0) {
    g.cuGraphDestroy(graph);
    driver::fail(r, "cuGraphInstantiateWithFlags");
  }
  std::unique_ptr<CudaGraph> out(new CudaGraph(s.device_index(), graph, exec));
  size_t n = 0;
  EMBER_CUG(cuGraphGetNodes, graph, nullptr, &n);
  out->node_count_ = n;
  return out;
}

void CudaGraph::abandon_capture(const CUDAStream &s) noexcept {
  const GraphApi &g = graph_api();
  if (!g.why.empty())
    return;
  CUgraph graph = nullptr;
  g.cuStreamEndCapture(static_cast<CUstream>(s.stream()), &graph);
  if (graph)
    g.cuGraphDestroy(graph);
}

void CudaGraph::plan(const std::vector<GraphBuffer> &buffers) {
  const GraphApi &g = checked_graph_api();
  driver::set_context(device_);
  std::vector<CUgraphNode> all(node_count_);
  size_t n = node_count_;
  EMBER_CUG(cuGraphGetNodes, graph_, all.data(), &n);
  all.resize(n);
  nodes_.clear();
  auto note = [&](std::unique_ptr<Node> node, const void *bytes, size_t size) {
    node->sites = find_pointers(bytes, size, buffers);
    if (node->sites.empty())
      return;
    for (const PatchSite &s : node->sites)
      if (std::find(node->buffers.begin(), node->buffers.end(), s.buffer) ==
          node->buffers.end())
        node->buffers.push_back(s.buffer);
    nodes_.push_back(std::move(node));
  };
  for (CUgraphNode handle : all) {
    int type = -1;
    EMBER_CUG(cuGraphNodeGetType, handle, &type);
    auto node = std::make_unique<Node>();
    node->node = handle;
    node->type = type;
    switch (type) {
    case kKernel: {
      KernelParams &k = node->kernel;
      EMBER_CUG(cuGraphKernelNodeGetParams_v2, handle, &k);
      EMBER_CHECK(k.func || k.kern || k.extra,
                  "CUDA graph: a kernel node without a function");
      if (k.extra) {
        // {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE,
        //  &size, CU_LAUNCH_PARAM_END}
        const void *buf = nullptr;
        for (size_t i = 0; k.extra[i] != nullptr; i += 2) {
          if (k.extra[i] == reinterpret_cast<void *>(1))
            buf = k.extra[i + 1];
          else if (k.extra[i] == reinterpret_cast<void *>(2))
            node->extra_size = *static_cast<size_t *>(k.extra[i + 1]);
        }
        EMBER_CHECK(buf || node->extra_size == 0,
                    "CUDA graph: a kernel node's parameters cannot be read");
        node->bytes.assign(static_cast<const unsigned char *>(buf),
                           static_cast<const unsigned char *>(buf) +
                               node->extra_size);
        node->extra = {reinterpret_cast<void *>(1), node->bytes.data(),
                       reinterpret_cast<void *>(2), &node->extra_size, nullptr};
        k.extra = node->extra.data();
        k.kernel_params = nullptr;
      } else {
        // Each parameter's size from the driver, copied 8-aligned.
        std::vector<size_t> offsets;
        for (size_t i = 0;; ++i) {
          size_t offset = 0, size = 0;
          CUresult r = k.func
                           ? g.cuFuncGetParamInfo(k.func, i, &offset, &size)
                           : g.cuKernelGetParamInfo(k.kern, i, &offset, &size);
          if (r == kInvalidValue)
            break;
          driver::check(r, "cuFuncGetParamInfo");
          size_t at = (node->bytes.size() + 7) / 8 * 8;
          offsets.push_back(at);
          node->bytes.resize(at + size);
          std::memcpy(node->bytes.data() + at, k.kernel_params[i], size);
        }
        // (`bytes` is not resized after this: the pointers stay valid)
        for (size_t at : offsets)
          node->param_ptrs.push_back(node->bytes.data() + at);
        k.kernel_params = node->param_ptrs.data();
        k.extra = nullptr;
      }
      const void *bytes = node->bytes.data();
      const size_t size = node->bytes.size();
      note(std::move(node), bytes, size);
      break;
    }
    case kMemset: {
      EMBER_CUG(cuGraphMemsetNodeGetParams, handle, &node->memset);
      uint64_t word = node->memset.dst;
      note(std::move(node), &word, 8);
      break;
    }
    case kMemcpy: {
      MemcpyParams &m = node->memcpy;
      EMBER_CUG(cuGraphMemcpyNodeGetParams, handle, &m);
      auto device_side = [](int t) {
        return t == kMemoryTypeDevice || t == kMemoryTypeUnified;
      };
      // (the words: source first, then destination; 0 for host memory)
      uint64_t words[2] = {device_side(m.src_type) ? m.src_device : 0,
                           device_side(m.dst_type) ? m.dst_device : 0};
      note(std::move(node), words, 16);
      break;
    }
    case kEmpty:
    case kWaitEvent:
    case kEventRecord:
    case kMemAlloc:
    case kMemFree:
      break; // no addresses of buffers
    default:
      throw Error(detail::str(
          "CUDA graph: a node of type ", type,
          " (a host callback, child graph or conditional) cannot be patched "
          "for new addresses"));
    }
  }
  last_.clear();
  for (const GraphBuffer &b : buffers)
    last_.push_back(b.base);
}

void CudaGraph::launch(const std::vector<uint64_t> &bases,
                       const CUDAStream &s) {
  EMBER_CHECK(bases.size() == last_.size(), "CUDA graph: ", bases.size(),
              " buffers given, ", last_.size(), " planned");
  driver::set_context(device_);
  CUcontext ctx = nullptr;
  // (a patch that fails part way leaves nodes at unknown addresses: every
  // node is patched at the next launch)
  std::vector<uint64_t> last = std::exchange(last_, {});
  last_.assign(last.size(), ~uint64_t(0));
  for (const std::unique_ptr<Node> &node : nodes_) {
    bool moved = false;
    for (int b : node->buffers)
      moved = moved || bases[size_t(b)] != last[size_t(b)];
    if (!moved)
      continue;
    switch (node->type) {
    case kKernel:
      apply_patches(node->bytes.data(), node->sites, bases);
      EMBER_CUG(cuGraphExecKernelNodeSetParams_v2, exec_, node->node,
                &node->kernel);
      break;
    case kMemset: {
      apply_patches(&node->memset.dst, node->sites, bases);
      if (!ctx)
        EMBER_CUG(cuCtxGetCurrent, &ctx);
      EMBER_CUG(cuGraphExecMemsetNodeSetParams, exec_, node->node,
                &node->memset, ctx);
      break;
    }
    case kMemcpy: {
      // (the words as plan() read them: source, then destination)
      uint64_t words[2] = {node->memcpy.src_device, node->memcpy.dst_device};
      apply_patches(words, node->sites, bases);
      node->memcpy.src_device = words[0];
      node->memcpy.dst_device = words[1];
      if (!ctx)
        EMBER_CUG(cuCtxGetCurrent, &ctx);
      EMBER_CUG(cuGraphExecMemcpyNodeSetParams, exec_, node->node,
                &node->memcpy, ctx);
      break;
    }
    default:
      break;
    }
  }
  last_ = bases;
  EMBER_CUG(cuGraphLaunch, exec_, static_cast<CUstream>(s.stream()));
}

std::vector<int> CudaGraph::sites_per_buffer() const {
  std::vector<int> n(last_.size(), 0);
  for (const std::unique_ptr<Node> &node : nodes_)
    for (const PatchSite &s : node->sites)
      ++n.at(size_t(s.buffer));
  return n;
}

size_t CudaGraph::nodes() const { return node_count_; }
size_t CudaGraph::patched_nodes() const { return nodes_.size(); }

} // namespace ember::cuda
