#pragma once
/// compile()'s replay mode on CUDA: a cached program captured once into a
/// CUDA graph and launched at each replay, its inputs' and outputs'
/// addresses patched into the graph (Note [CUDA graphs in replay mode]).

#include "eager/Tensor.h"
#include "runtime/Cuda.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ember::cuda {
class CudaGraph;
} // namespace ember::cuda

namespace ember::frontend {

class Program;

/// Whether a program run on `inputs` may be captured: std::nullopt when it
/// is not a CUDA program (no CUDA tensor), "" when it may, else why not.
std::optional<std::string> graph_blocker(const std::vector<Tensor> &inputs);

class GraphReplay {
public:
  /// Captures `program` run on `inputs` into a CUDA graph, launches it for
  /// this call and returns its outputs in `outputs`. Raises ember::Error
  /// saying why when the program cannot be captured or patched; nothing
  /// has run then. Returns null, having done nothing, while another thread
  /// captures on the device (a later call tries again).
  static std::unique_ptr<GraphReplay> capture(const Program &program,
                                              const std::vector<Tensor> &inputs,
                                              std::vector<Tensor> &outputs);
  /// Launches the graph on `inputs` (matching the captured ones in
  /// metadata: the replay key's guards), writing new output tensors;
  /// std::nullopt, launching nothing, when inputs that shared a storage at
  /// the capture do not now (the program runs instead).
  std::optional<std::vector<Tensor>> replay(const std::vector<Tensor> &inputs);
  /// "a CUDA graph of 3 nodes, 2 of them naming an input or output
  /// (rewritten when it moves)".
  std::string summary() const;
  ~GraphReplay();

private:
  GraphReplay() = default;
  struct Output {
    enum class Kind { Made, Input, Empty } kind = Kind::Empty;
    int buffer = -1; ///< Made: the buffer its storage is
    int input = -1;  ///< Input: the input whose storage it views
    ScalarType dtype = ScalarType::Float;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
  };
  int device_ = 0;
  std::unique_ptr<cuda::CudaGraph> graph_;
  std::vector<int> input_buffer_;  ///< per input, its buffer or -1
  std::vector<size_t> made_bytes_; ///< per buffer, its bytes if Made, else 0
  std::vector<Output> outputs_;
  std::vector<void *> kept_; ///< intermediates the graph owns
  /// The output storages of the last launch, and its stream: a storage no
  /// tensor holds any more is written again by the next launch on that
  /// stream, whose nodes then keep their addresses (nothing to patch).
  std::vector<Storage> last_made_;
  void *last_stream_ = nullptr;
  /// Recorded after each launch: the graph's intermediates are free once
  /// it completed.
  std::unique_ptr<cuda::CUDAEvent> done_;
};

} // namespace ember::frontend
