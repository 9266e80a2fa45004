#include "frontend/CudaGraphs.h"

#include "eager/TensorImpl.h"
#include "frontend/Executor.h"
#include "runtime/CudaAllocator.h"
#include "runtime/CudaGraph.h"

#include <algorithm>

namespace ember::frontend {

// Note [CUDA graphs in replay mode]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With CompileOptions().replay(true), a call that matches a cached replay
// key runs the cached program without running the function. On CUDA, the
// first such call (the program has run once already, when the call was
// captured: its kernels are compiled and loaded, cuBLAS is set up) captures
// the program into a CUDA graph on ember's capture stream, and every replay
// after it is one cuGraphLaunch on the caller's current stream, the
// addresses of its inputs' and outputs' storages patched into the graph's
// nodes (Note [CUDA graphs with patched addresses] in runtime/CudaGraph.cpp).
// Each replay's outputs are new tensors, from the caching allocator as
// eager's are, except that an output storage of the last replay that no
// tensor holds any more is written again (on the same stream): a loop that
// drops its outputs patches nothing but its inputs. An output that views an
// input is rebuilt over that input's storage. The intermediates stay where they
// were captured, blocks the graph owns until it is destroyed (Note [Memory of a
// CUDA graph]); launches of one graph run one after another (the driver orders
// them), so they never share them at once.
//
// The graph is not used, and explain() says why on the graph's line, when a
// CPU tensor is among the inputs (its copy to the device would be captured
// from pageable memory), when the capture fails (a synchronizing call in the
// program; the driver's message is kept), or when a node cannot be patched.
// Replay mode already excludes what would make a graph replay wrong: graph
// breaks, eager parts, random numbers (whose state is read at each call),
// and joint graphs. A call made while the profiler records runs the program
// (its kernels are timed one by one) and keeps the graph for later calls.
// CompileOptions().cuda_graphs(false) turns graphs off.

std::optional<std::string> graph_blocker(const std::vector<Tensor> &inputs) {
  int device = -1;
  bool cpu = false;
  for (const Tensor &t : inputs) {
    if (!t.defined())
      continue;
    if (!t.is_cuda()) {
      cpu = true;
      continue;
    }
    if (device >= 0 && t.device().index() != device)
      return std::string("its inputs are on two CUDA devices");
    device = t.device().index();
  }
  if (device < 0)
    return std::nullopt;
  if (cpu)
    return std::string("a CPU tensor is among its inputs (its copy to the "
                       "GPU cannot be captured)");
  return cuda::graphs_unsupported();
}

std::unique_ptr<GraphReplay>
GraphReplay::capture(const Program &program, const std::vector<Tensor> &inputs,
                     std::vector<Tensor> &outputs) {
  std::unique_ptr<GraphReplay> g(new GraphReplay());
  for (const Tensor &t : inputs)
    if (t.defined() && t.is_cuda())
      g->device_ = t.device().index();
  const int device = g->device_;
  cuda::CUDAStream caller = cuda::getCurrentCUDAStream(device);
  cuda::CUDAStream stream = cuda::capture_stream(device);
  CachingAllocator &alloc = cuda::caching_allocator(device);

  std::vector<Tensor> result;
  if (alloc.in_private()) // (checked again, under its lock, just below)
    return nullptr;
  alloc.begin_private(stream.id());
  CachingAllocator::PrivateBlocks blocks;
  // Frees what a failed capture kept (nothing of it ran).
  auto drop = [&] {
    result.clear();
    for (void *p : blocks.kept)
      alloc.free(p);
  };
  try {
    cuda::CUDAStreamGuard guard(stream);
    cuda::CudaGraph::begin_capture(stream);
    try {
      result = program.run(inputs);
    } catch (...) {
      cuda::CudaGraph::abandon_capture(stream);
      throw;
    }
    g->graph_ = cuda::CudaGraph::end_capture(stream);
  } catch (...) {
    blocks = alloc.end_private();
    drop();
    throw;
  }
  blocks = alloc.end_private();

  try {
    // The buffers: the inputs' storages (each once), then the storages of
    // the outputs the capture allocated.
    std::vector<cuda::GraphBuffer> buffers;
    auto buffer_at = [&](const Storage &s) {
      uint64_t base = reinterpret_cast<uint64_t>(s.data());
      for (size_t b = 0; b < buffers.size(); ++b)
        if (buffers[b].base == base)
          return int(b);
      buffers.push_back({base, s.nbytes()});
      g->made_bytes_.push_back(0);
      return int(buffers.size() - 1);
    };
    for (const Tensor &t : inputs)
      g->input_buffer_.push_back(t.defined() && t.storage().nbytes() > 0
                                     ? buffer_at(t.storage())
                                     : -1);
    const size_t input_buffers = buffers.size();
    for (size_t k = 0; k < result.size(); ++k) {
      const Tensor &t = result[k];
      Output o;
      o.dtype = t.scalar_type();
      o.sizes = t.sizes().vec();
      o.strides = t.strides().vec();
      o.offset = t.storage_offset();
      if (t.storage().nbytes() > 0) {
        for (size_t i = 0; i < inputs.size() && o.kind == Output::Kind::Empty;
             ++i)
          if (inputs[i].defined() &&
              t.storage().is_alias_of(inputs[i].storage())) {
            o.kind = Output::Kind::Input;
            o.input = int(i);
          }
        if (o.kind == Output::Kind::Empty) {
          void *p = t.storage().data();
          EMBER_CHECK(
              std::find(blocks.allocated.begin(), blocks.allocated.end(), p) !=
                      blocks.allocated.end() &&
                  std::find(blocks.kept.begin(), blocks.kept.end(), p) ==
                      blocks.kept.end(),
              "output ", k,
              " is a tensor the graph did not make (a constant of the "
              "program)");
          o.kind = Output::Kind::Made;
          o.buffer = buffer_at(t.storage());
          EMBER_CHECK(size_t(o.buffer) >= input_buffers, "output ", k,
                      " shares memory with an input");
          g->made_bytes_[size_t(o.buffer)] = t.storage().nbytes();
        }
      }
      g->outputs_.push_back(std::move(o));
    }
    g->graph_->plan(buffers);
    // An output the nodes never name is written where the scan did not see
    // (Note [CUDA graphs with patched addresses]): no graph then.
    std::vector<int> sites = g->graph_->sites_per_buffer();
    for (size_t b = input_buffers; b < buffers.size(); ++b)
      EMBER_CHECK(sites[b] > 0, "no node of the graph names the address of "
                                "an output it writes; it cannot be patched");
    std::vector<uint64_t> bases;
    for (const cuda::GraphBuffer &b : buffers)
      bases.push_back(b.base);
    g->done_ = std::make_unique<cuda::CUDAEvent>();
    g->graph_->launch(bases, caller);
    g->done_->record(caller);
    // This call's outputs came from the capture stream's pool but were
    // written on the caller's stream: their reuse waits for it.
    for (size_t b = input_buffers; b < buffers.size(); ++b)
      cuda::record_stream(reinterpret_cast<void *>(buffers[b].base), caller);
  } catch (...) {
    g->graph_.reset();
    drop();
    throw;
  }
  g->kept_ = std::move(blocks.kept);
  g->last_made_.resize(g->made_bytes_.size());
  for (size_t k = 0; k < result.size(); ++k)
    if (g->outputs_[k].kind == Output::Kind::Made)
      g->last_made_[size_t(g->outputs_[k].buffer)] = result[k].storage();
  g->last_stream_ = caller.stream();
  outputs = std::move(result);
  return g;
}

std::optional<std::vector<Tensor>>
GraphReplay::replay(const std::vector<Tensor> &inputs) {
  EMBER_CHECK(inputs.size() == input_buffer_.size(),
              "CUDA graph: ", inputs.size(), " inputs given, ",
              input_buffer_.size(), " captured");
  std::vector<uint64_t> bases(made_bytes_.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (input_buffer_[i] < 0)
      continue;
    // Inputs that shared a storage at the capture share one buffer; the
    // replay key compares the arguments' aliasing, but not that of empty
    // views or of tensors the function reads from outside its arguments.
    uint64_t &base = bases[size_t(input_buffer_[i])];
    uint64_t at = reinterpret_cast<uint64_t>(inputs[i].storage().data());
    if (base != 0 && base != at)
      return std::nullopt;
    base = at;
  }
  cuda::CUDAStream stream = cuda::getCurrentCUDAStream(device_);
  std::vector<Storage> made(made_bytes_.size());
  const bool same_stream = stream.stream() == last_stream_;
  for (size_t b = 0; b < made_bytes_.size(); ++b) {
    if (made_bytes_[b] == 0)
      continue;
    const bool reuse = same_stream && last_made_[b].defined() &&
                       last_made_[b].use_count() == 1;
    made[b] = reuse ? last_made_[b]
                    : Storage::allocate(made_bytes_[b],
                                        cuda::getCUDAAllocator(device_));
    bases[b] = reinterpret_cast<uint64_t>(made[b].data());
  }
  // (the last launch's storages not reused are the caller's now, or freed)
  last_made_ = made;
  last_stream_ = stream.stream();
  graph_->launch(bases, stream);
  done_->record(stream);
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (const Output &o : outputs_) {
    Storage s;
    switch (o.kind) {
    case Output::Kind::Made:
      s = made[size_t(o.buffer)];
      break;
    case Output::Kind::Input:
      s = inputs[size_t(o.input)].storage();
      break;
    case Output::Kind::Empty:
      s = Storage::allocate(0, cuda::getCUDAAllocator(device_));
      break;
    }
    out.emplace_back(make_intrusive<TensorImpl>(std::move(s), o.dtype, o.sizes,
                                                o.strides, o.offset));
  }
  return out;
}

std::string GraphReplay::summary() const {
  return "a CUDA graph of " + std::to_string(graph_->nodes()) + " nodes, " +
         std::to_string(graph_->patched_nodes()) +
         " of them naming an input or output (rewritten when it moves)";
}

GraphReplay::~GraphReplay() {
  // The intermediates are the graph's until its last launch has finished
  // (its event: a device-wide synchronize would break another thread's
  // capture).
  try {
    if (done_)
      done_->synchronize();
  } catch (...) {
    return; // (the driver is gone: at exit; nothing more to give back)
  }
  graph_.reset();
  CachingAllocator &alloc = cuda::caching_allocator(device_);
  for (void *p : kept_)
    alloc.free(p);
}

} // namespace ember::frontend
