#pragma once
/// The eager CUDA kernels: pointwise ops generated from the op table and
/// compiled by NVRTC on first use (PyTorch's jiterator method), copies
/// between devices, fill_.
///
/// Note [CUDA pointwise kernels]
/// A pointwise op's CUDA kernel plans its output as the CPU kernel does
/// (plan_pointwise: promotion, broadcasting, in-place checks), then runs one
/// generated kernel: the device math prelude (eager/cuda/PointwiseMath.cuh,
/// the device twin of eager/PointwiseMath.h, so Note [Pointwise semantics]
/// holds on both devices), the op's functor (its ops.yaml `expr`, the same
/// text the CPU functor has) and a grid-stride loop over the TensorIterator's
/// coalesced dims, with the operands' dtypes and the compute type fixed in
/// the source. Each (op, dtypes) source is compiled once per device and
/// cached in memory and on disk (runtime/Nvrtc.h).

#include "eager/Dtype.h"
#include "eager/Meta.h"
#include "eager/Tensor.h"

#include <functional>
#include <string>

namespace ember::cuda {

/// A pointwise op's functor as CUDA source (generated from ops.yaml):
/// `template <class T> struct <name> {...}` with `nscalars` fields.
struct Functor {
  const char *name;
  int arity;
  int nscalars;
  const char *source;
  /// The op's spec (promotion, bool arguments) and its dtypes; null for the
  /// internal copy and fill functors.
  const meta::PointwiseSpec *spec = nullptr;
  DtypeGroup group = DtypeGroup::All;
};
/// The functor of every pointwise op of the op table (generated).
ArrayRef<Functor> pointwise_functors();

/// Runs a pointwise op on CUDA tensors (CPU 0-dim tensors may take part,
/// as in PyTorch); `self_out` is the in-place destination or null.
Tensor run_pointwise(const meta::PointwiseSpec &spec, DtypeGroup group,
                     const Functor &f, ArrayRef<const Tensor *> inputs,
                     ArrayRef<const Scalar *> scalars, const Tensor *self_out);

/// dst.copy_(src) where at least one is a CUDA tensor: src (broadcast to
/// dst's shape) converted to dst's dtype. `non_blocking` leaves a copy
/// between a CUDA tensor and pinned host memory running on the stream.
void copy(const Tensor &dst, const Tensor &src, bool non_blocking);
/// self.fill_(value) on a CUDA tensor.
void fill(const Tensor &self, const Scalar &value);
/// The value of `t`, a CPU 0-dim tensor, in a new 0-dim tensor of the same
/// dtype on `device`, written by a fill kernel whose launch carries the
/// value: no copy from host memory and no synchronization (a copy from
/// pageable memory waits for the stream), so a CUDA graph can capture it.
Tensor scalar_to_device(const Tensor &t, Device device);

/// Note [CUDA reductions]
/// sum, mean, amax and amin of a CUDA tensor with eager/Reduction.h's
/// semantics: sums accumulate in double for floats and in int64 for
/// integers, a mean divides the sum by the count in double, amax / amin
/// compare in the compute type and a NaN wins. The reduced dims are moved
/// last and made contiguous (one copy kernel), then one block folds each
/// output's row: a strided loop per thread, then warp shuffles and one
/// shared-memory step, in a fixed order (the result does not depend on
/// timing). Few long rows (fewer than 256, of at least 32768 points each)
/// split: each row is cut into parts of at least 16384 points, about 512
/// blocks in all, folded into accumulators by one kernel and combined in
/// order by another (a mean over 4M points took 3.3 ms as one block on an
/// H200). The parts depend on the shape alone, so a result does not change
/// with the device. One block a row is slow for many short rows: a split
/// over threads is the next step.
enum class ReduceKind { Sum, Mean, Amax, Amin };
/// `x` (already in the result's dtype) reduced over the dims of `mask`
/// into a tensor of `out_sizes`.
Tensor reduce(ReduceKind kind, const Tensor &x, const std::vector<bool> &mask,
              IntArrayRef out_sizes);
/// The dtype a reduction of `t` accumulates in.
ScalarType reduce_accumulator(ReduceKind kind, ScalarType t);
/// The source of reduce()'s kernels for `t`: ember_reduce(in, out, nout,
/// nred) (a block per row), and the split's ember_reduce_split(in, part,
/// nout, nred, splits, chunk) and ember_reduce_combine(part, out, nout,
/// splits, nred).
std::string reduce_source(ReduceKind kind, ScalarType t);

/// The variants of a pointwise kernel: `flat` for one iteration dim (each
/// operand contiguous or one broadcast element: offsets are i * stride, and
/// each thread takes 4 elements a tile), else the offsets of each dim; with
/// `index32`, index arithmetic is 32-bit (every offset of the launch must
/// fit in int32).
struct KernelShape {
  bool flat = true;
  bool index32 = false;
};
/// The CUDA source of the kernel of functor `f`: `dtypes` are the output's
/// then each input's, `compute` the functor's T (never a 16-bit float: those
/// compute in float), and bit k of `bool_args` marks input k as read as
/// bool. It is prelude() + functor_source(f) + pointwise_kernel(...).
std::string pointwise_source(const Functor &f, ScalarType compute,
                             ArrayRef<ScalarType> dtypes, unsigned bool_args,
                             KernelShape shape = {});
/// The pieces, for tests that compile many kernels in one NVRTC program:
/// the device math prelude, a functor's definition, and one kernel named
/// `entry` (after its functor in the program).
std::string prelude();

/// Device code of `ember_block_reduce<K>(v, identity)` (K: 0 sum, 1 max,
/// 2 min, NaN winning; `ember_combine<K>`), for a source after prelude()
/// (Note [Block reductions] in eager/cuda/Pointwise.cpp).
std::string block_reduce_source();
std::string functor_source(const Functor &f);
std::string pointwise_kernel(const Functor &f, ScalarType compute,
                             ArrayRef<ScalarType> dtypes, unsigned bool_args,
                             const std::string &entry, KernelShape shape = {});

namespace detail {
/// The CUDA C name of a dtype (the prelude declares the table's C types).
const char *ctype(ScalarType t);
/// The type a kernel computes a dtype in: float for the 16-bit floats.
ScalarType compute_of(ScalarType t);
/// The kernel `entry` of device `device` for `signature` (what the source
/// depends on: the op, dtypes, variant), compiled from make_source() on the
/// first request (NVRTC, the memory and disk caches: runtime/Nvrtc.h).
void *cached_kernel(int device, const std::string &signature, const char *entry,
                    const std::function<std::string()> &make_source);
/// The grid of a grid-stride launch over `n` items, `per_block` a block:
/// a block for every `per_block` items, at most 32 blocks per
/// multiprocessor of `device` (the blocks then loop).
int64_t grid_for(int device, int64_t n, int64_t per_block);
} // namespace detail

} // namespace ember::cuda
