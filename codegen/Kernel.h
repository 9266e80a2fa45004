#pragma once
/// A CPU kernel for one fusion of pointwise ops: what it computes
/// (KernelSpec, independent of MLIR and LLVM) and the compiled result.
///
///   KernelSpec k;
///   k.shape = {4, 8};
///   int x = k.input(kFloat, {8, 1});            // value 0
///   int b = k.input(kFloat, {0, 1});            // a row, broadcast
///   int s = k.step(op("ember::add.Tensor"), {x, b}, {Scalar(1)}, kFloat,
///                  kFloat);
///   k.outputs = {k.step(op("ember::silu"), {s}, {}, kFloat, kFloat)};
///   CompiledKernel c = compile_kernel(k);
///   c.run({out.data_ptr(), x.data_ptr(), b.data_ptr()});
///
/// Every value is evaluated at every point of the iteration space `shape`
/// (a value of a smaller, broadcast shape is recomputed where it is used: a
/// pointwise op is cheaper than a round trip through memory). Inputs are
/// read through their strides over `shape` (0 on broadcast dims); outputs are
/// written contiguously.
///
/// Note [Reduction kernels]
/// A kernel with reduce steps folds the dims `reduced` of `shape`; all its
/// reduce steps fold the same dims. Its values have one of two levels:
/// *full* (one per point of `shape`: inputs that vary along a reduced dim
/// and the steps that read them) and *reduced* (one per kept point: the
/// reduce steps, inputs and constants constant along the reduced dims, and
/// the steps over only those). The kernel runs over the kept points; for a
/// block of them (one point when the innermost dim is reduced, a run along
/// the innermost dim otherwise, which then is the vectorized loop) it runs
/// one loop over the reduced dims per reduce step, in order, computing the
/// full values that step reads (again: softmax's exp runs in the sum's loop
/// and in the division's, never through memory), then one loop storing the
/// full outputs, then the reduced outputs. Reduced values live in per-block
/// arrays. The rows of the block stay in cache between its loops, so the
/// kernel reads its inputs from memory about once: softmax and layer_norm
/// are one kernel each (a "persistent reduction" in Inductor's terms).

#include "eager/Dispatcher.h"
#include "eager/Reduction.h"
#include "eager/Scalar.h"
#include "runtime/ScalarType.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ember::codegen {

struct KernelSpec {
  std::vector<int64_t> shape; ///< the iteration space (the outputs' shape)

  /// An input read at every point of `shape`. `extent` is its logical
  /// size along each dim of `shape` (1 where it is broadcast): what the
  /// kernel computes depends on it, never on `strides`, which only say
  /// where the elements are (an expanded input has stride 0 along a dim it
  /// spans; Note [Reduction kernels]).
  struct Input {
    ScalarType dtype;
    std::vector<int64_t> strides; ///< in elements, over `shape`
    std::vector<int64_t> extent;  ///< per dim of `shape`: its size, or 1
  };
  struct Constant {
    ScalarType dtype;
    Scalar value;
  };
  /// One step of the kernel, of one of three kinds:
  ///  - Pointwise: an op of the op table (`op`, in-place forms included)
  ///    over its tensor arguments `args` (value ids) and its Scalar
  ///    arguments, computed in `compute` (after promotion: meta::pointwise's
  ///    `compute`), giving `out`;
  ///  - Convert: `args[0]` converted to `out` as eager converts;
  ///  - Reduce: a fold `fold` of `args[0]` over the reduced dims (reduce()).
  enum class Kind { Pointwise, Convert, Reduce };
  struct Step {
    Kind kind = Kind::Pointwise;
    const OperatorHandle *op = nullptr;            ///< Pointwise
    ReductionInfo::Kind fold = ReductionInfo::Sum; ///< Reduce
    std::vector<int> args;
    std::vector<Scalar> scalars;
    ScalarType compute = ScalarType::Undefined, out = ScalarType::Undefined;
    ScalarType in = ScalarType::Undefined; ///< Reduce: see reduce()
    /// Reduce, Mean: the number of elements the mean divides by; 0: the
    /// kernel's reduced_numel() (a split reduction's combine folds partial
    /// sums: Note [Split reductions]).
    int64_t count = 0;
    /// "ember::add.Tensor", "convert" or the fold ("sum", ...).
    std::string name() const;
    /// Reduce: whether the fold adds (sum, mean), and the dtype it
    /// accumulates in: `compute` for sums, `in` for amax and amin.
    bool sums() const {
      return fold == ReductionInfo::Sum || fold == ReductionInfo::Mean;
    }
    ScalarType acc_dtype() const { return sums() ? compute : in; }
  };
  /// Values are numbered in the order they are added: inputs, constants and
  /// steps interleaved as the builder calls come.
  struct Value {
    enum class Kind { Input, Constant, Step } kind;
    int index;
  };

  std::vector<Input> inputs;
  std::vector<Constant> constants;
  std::vector<Step> steps;
  std::vector<Value> values;
  std::vector<int> outputs; ///< value ids written, in order
  /// Per dim of `shape`: folded by the reduce steps (all false, or empty,
  /// for a pointwise kernel).
  std::vector<bool> reduced;
  /// Per output: the input whose buffer it is written into (the caller
  /// passes that buffer for both), or -1; empty: none. The kernel then
  /// addresses both through one pointer, so LLVM sees each point read
  /// before it is written (no runtime alias check failing on them).
  std::vector<int> output_inputs;

  /// An input; `extent` defaults to the strides' own (1 where a stride is
  /// 0), which is right for an input laid out over its logical shape.
  int input(ScalarType dtype, std::vector<int64_t> strides,
            std::vector<int64_t> extent = {});
  int constant(ScalarType dtype, Scalar value);
  int step(const OperatorHandle &op, std::vector<int> args,
           std::vector<Scalar> scalars, ScalarType compute, ScalarType out);
  /// Value `v` converted to `dtype` as eager converts (copy_, to()).
  int convert(int v, ScalarType dtype);
  /// A fold of `v` over the `reduced` dims: Sum, Mean, Amax or Amin
  /// (eager's semantics: sum and mean accumulate in `acc`, double
  /// for floats and int64 for integers; amax and amin in the compute type
  /// of `v`'s dtype, a NaN wins), giving dtype `out`. `v` is first
  /// converted to `in` (the op's `dtype` argument, or its own dtype).
  int reduce(ReductionInfo::Kind fold, int v, ScalarType in, ScalarType acc,
             ScalarType out);
  const Step &step_of(int value) const; ///< the step defining a Step value
  /// An input tensor of `sizes` and `strides` (in elements) over the
  /// iteration space, as the kernel indexes it (ir::Domain::dims_of: an
  /// input is broadcast right-aligned): its strides per dim of `shape` in
  /// `out`, its extent in `extent`. False when it does not fit.
  bool strides_over(IntArrayRef sizes, IntArrayRef strides,
                    std::vector<int64_t> &out,
                    std::vector<int64_t> *extent = nullptr) const;
  bool is_reduce(int value) const;
  /// Whether a value varies along the reduced dims (Note [Reduction
  /// kernels]); every value is full in a pointwise kernel.
  bool is_full(int value) const;
  bool has_reduction() const;
  /// Points of the output space: the kept points of a reduction kernel.
  int64_t output_numel() const;
  /// Points folded into each output (1 for a pointwise kernel).
  int64_t reduced_numel() const;
  ScalarType dtype(int value) const;
  int64_t numel() const;

  /// A readable, complete description: the kernel cache's key, and what the
  /// debug directory shows next to the kernel's LLVM IR.
  std::string str() const;
};

/// The iteration space of a kernel after merging dims that every operand
/// walks contiguously (TensorIterator's coalescing): sizes and, per operand
/// (outputs then inputs), strides in elements; outer dims first. Size-1 dims
/// are dropped; a one-point space is one dim of size 1. Outputs are
/// contiguous over `shape`. Both code generators walk these loops.
struct Loops {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides; // [operand][dim]
};
Loops coalesce(const KernelSpec &k);

/// A reduction with few output points and many folded into each, as two
/// kernels (Note [Split reductions] in Kernel.cpp): `partial` folds each of
/// `parts` slices of the outermost reduced dim into accumulators (its
/// outputs, in the folds' accumulator dtypes, over [parts, kept...]), and
/// `combine` folds those into the outputs. When to split is the code
/// generator's SplitPolicy.
struct SplitSpecs {
  KernelSpec partial, combine;
  int64_t parts = 0;
};
struct SplitPolicy {
  int64_t max_outputs; ///< split kernels of at most this many output points,
  int64_t min_total;   ///< folding at least this many points in all,
  int64_t min_part;    ///< into parts of at least this many points,
  int64_t max_parts;   ///< at most this many parts,
  int64_t max_items;   ///< and at most this many parts times output points
  /// A column layout (the innermost dim kept) of at most this many output
  /// points and `column_total` points in all splits too, into parts of at
  /// least `column_part` points (0: as any other kernel).
  int64_t column_outputs = 0, column_part = 0, column_total = 0;
};
inline constexpr SplitPolicy kCpuSplit{
    64, 0, 16384, 64, int64_t(1) << 22, int64_t(1) << 20, 64, int64_t(1) << 20};
inline constexpr SplitPolicy kCudaSplit{8192, int64_t(1) << 18, 256, 256,
                                        65536};
/// The split of `k` under `policy`, or nullopt when it runs as one kernel.
std::optional<SplitSpecs> split_reduction(const KernelSpec &k,
                                          SplitPolicy policy);

/// A compiled kernel: `fn(ptrs, begin, end)` computes the points
/// [begin, end) of the output space (row-major order); `ptrs` holds the
/// outputs' data pointers, then the inputs'.
struct CompiledKernel {
  using Fn = void (*)(char **ptrs, int64_t begin, int64_t end);
  Fn fn = nullptr;
  int64_t numel = 0;      ///< output points (kept points of a reduction)
  int64_t point_work = 1; ///< elements read per output point
  /// The cost of one output point in adds (its steps' weights, Note
  /// [Fusion size], times point_work): how run_combined sizes its chunks.
  int64_t point_cost = 1;
  std::string name;    ///< its symbol: "ember_kernel_<hash>"
  std::string llvm_ir; ///< the optimized LLVM IR (when asked for)
  double compile_seconds = 0;
  /// Where it came from: "compiled", "disk cache", or "compiled (<why the
  /// disk cache entry was not used>)" for a stale or corrupt entry.
  std::string origin;

  /// A split reduction (Note [Split reductions]): `fn` writes per-part
  /// partial folds into scratch buffers of `partial_bytes` each (one per
  /// output), and `combine` folds them into the outputs.
  std::shared_ptr<const CompiledKernel> combine;
  std::vector<int64_t> partial_bytes;
  int inputs = 0; ///< the number of input pointers after the outputs

  /// Runs the whole iteration space, in parallel over the runtime's thread
  /// pool when it is large.
  void run(char **ptrs) const;
};

/// Runs `kernels[i]` over `ptrs[i]` for every i as one launch (Note
/// [Combined kernels] in codegen/CpuFusion.cpp): one parallel region whose
/// threads each go through a contiguous run of chunks of the kernels'
/// points (about kGrainSize adds of work each, by point_cost), then take
/// the others' remaining chunks (Note [Combined launches] in Kernel.cpp). A
/// split reduction (its two kernels) runs on its own after the others.
void run_combined(const std::vector<const CompiledKernel *> &kernels,
                  const std::vector<char **> &ptrs);

struct CompileKernelOptions {
  bool keep_ir = false; ///< fill CompiledKernel::llvm_ir
};

/// Builds the kernel's LLVM IR, optimizes it at O3 for the host and JIT-
/// compiles it; or loads it from the in-process cache, or from the disk
/// cache (Note [Disk kernel cache] in CpuJit.cpp). Raises ember::Error for a
/// spec it cannot compile (an op without a scalar library function, a dtype
/// it does not cover).
CompiledKernel compile_kernel(const KernelSpec &spec,
                              const CompileKernelOptions &options = {});

/// Forgets the in-process cache (kernels already handed out stay valid):
/// the next compile of a kernel reads the disk cache, as a new process
/// would (benchmarks of the disk cache).
void clear_kernel_cache();

} // namespace ember::codegen
