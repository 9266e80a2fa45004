#pragma once
/// A CPU kernel for one fusion of pointwise ops: what it computes
/// (KernelSpec, independent of MLIR and LLVM) and the compiled result.
///
///   KernelSpec k;
///   k.shape = {4, 8};
///   int x = k.input(kFloat, {8, 1});            // value 0
///   int b = k.input(kFloat, {0, 1});            // a row, broadcast
///   int s = k.step("ember::add.Tensor", {x, b}, {Scalar(1)}, kFloat, kFloat);
///   k.outputs = {k.step("ember::silu", {s}, {}, kFloat, kFloat)};
///   CompiledKernel c = compile_kernel(k);
///   c.run({out.data_ptr(), x.data_ptr(), b.data_ptr()});
///
/// Every value is evaluated at every point of the iteration space `shape`
/// (a value of a smaller, broadcast shape is recomputed where it is used: a
/// pointwise op is cheaper than a round trip through memory). Inputs are
/// read through their strides over `shape` (0 on broadcast dims); outputs are
/// written contiguously.

#include "eager/Scalar.h"
#include "runtime/ScalarType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::codegen {

struct KernelSpec {
  std::vector<int64_t> shape; ///< the iteration space (the outputs' shape)

  struct Input {
    ScalarType dtype;
    std::vector<int64_t> strides; ///< in elements, over `shape`
  };
  struct Constant {
    ScalarType dtype;
    Scalar value;
  };
  /// One pointwise op: its dialect name ("ember::mul.Tensor", in-place forms
  /// included), its tensor arguments (value ids), its Scalar arguments, the
  /// dtype it computes in (after promotion: meta::pointwise's `compute`) and
  /// the dtype of its result. A conversion is a step with op "convert", one
  /// argument and `out` its dtype.
  struct Step {
    std::string op;
    std::vector<int> args;
    std::vector<Scalar> scalars;
    ScalarType compute, out;
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

  int input(ScalarType dtype, std::vector<int64_t> strides);
  int constant(ScalarType dtype, Scalar value);
  int step(std::string op, std::vector<int> args, std::vector<Scalar> scalars,
           ScalarType compute, ScalarType out);
  /// Value `v` converted to `dtype` as eager converts (copy_, to()).
  int convert(int v, ScalarType dtype);
  ScalarType dtype(int value) const;
  int64_t numel() const;

  /// A readable, complete description: the kernel cache's key, and what the
  /// debug directory shows next to the kernel's LLVM IR.
  std::string str() const;
};

/// A compiled kernel: `fn(ptrs, begin, end)` computes the points
/// [begin, end) of the iteration space (row-major order); `ptrs` holds the
/// outputs' data pointers, then the inputs'.
struct CompiledKernel {
  using Fn = void (*)(char **ptrs, int64_t begin, int64_t end);
  Fn fn = nullptr;
  int64_t numel = 0;
  std::string name;    ///< its symbol: "ember_kernel_<hash>"
  std::string llvm_ir; ///< the optimized LLVM IR (when asked for)
  double compile_seconds = 0;
  /// Where it came from: "compiled", "disk cache", or "compiled (<why the
  /// disk cache entry was not used>)" for a stale or corrupt entry.
  std::string origin;

  /// Runs the whole iteration space, in parallel over the runtime's thread
  /// pool when it is large.
  void run(char **ptrs) const;
};

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

} // namespace ember::codegen
