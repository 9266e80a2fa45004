#pragma once
/// Note [One scalar semantics]
/// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
/// A compiled kernel computes what eager computes, to the bit: its loop is
/// built here with IRBuilder, but every scalar operation in it is eager's own
/// code. gen_scalar_library.py writes, from the op table, one extern "C"
/// function per pointwise op and compute type that calls the op's functor
/// (eager/generated/PointwiseFunctors.h, the same template the eager CPU
/// kernel instantiates), one per pair of dtypes that calls eager's
/// conversion (eager/Convert.h), and the 16-bit floats' load and store.
/// clang compiles that file to LLVM bitcode at build time; the bitcode is
/// embedded in libember and linked into each kernel module, where the
/// functions are inlined. Float transcendentals are eager's branch-free
/// polynomials (eager/VecMath.h), so the loop vectorizer sees plain
/// arithmetic: no scalar libm call stays in a float kernel's inner loop.
///
/// Why this rather than emitting each op's IR by hand, or lowering through
/// MLIR's math dialect: one definition of every op's semantics (promotion,
/// NaN handling, integer division, rounding) serves eager and compiled code,
/// so they cannot drift apart; and IRBuilder plus the LLVM O3 pipeline
/// compiles a kernel in milliseconds (TOOLCHAIN.md: 8-15 ms against 15-60 ms
/// through MLIR's lowering).
///
/// Values travel in *register types*: i1 for bool, the integers, float for
/// float32, float16 and bfloat16 (a 16-bit float is held as the float it
/// converts to exactly), double. The library is built twice, for baseline
/// x86-64 and for x86-64-v3 (AVX2, FMA, F16C): the v3 build uses fused
/// multiply-adds where eager, built with -march=native on such a CPU, does.

#include "eager/Dispatcher.h"
#include "runtime/ScalarType.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace ember::codegen {

/// The tag a dtype has in the library's function names: "b8", "u8", "i8",
/// "i16", "i32", "i64", "f16", "bf16", "f32", "f64". Raises for dtypes the
/// library does not cover.
const char *dtype_tag(ScalarType t);
/// The same, or null for a dtype the library does not cover.
const char *find_dtype_tag(ScalarType t);

/// The dtype eager computes a pointwise op of storage dtype `t` in (float
/// for the 16-bit floats).
ScalarType compute_dtype(ScalarType t);

/// The library's bitcode: the x86-64-v3 build or the baseline one.
struct Bitcode {
  const unsigned char *data;
  size_t size;
  const char *name;
};
Bitcode scalar_library(bool v3);

/// The size of a pointwise op's library function for compute dtype
/// `compute` relative to add's in the same dtype (at least 1): the
/// instructions of the function and of the library functions it calls,
/// counted once per process from the bitcode. A fusion's share of a
/// kernel's compile (Note [Fusion size] in passes/Passes.h).
int64_t pointwise_weight(const OperatorHandle &op, ScalarType compute);

/// The C++ name of a pointwise op's functional form: "add_Tensor" for
/// ember::add.Tensor and its in-place form ember::add_.Tensor (the in-place
/// form computes the same expression). Its functor is `<cname>_op`.
std::string pointwise_cname(const OperatorHandle &op);
/// `ember_pw_<cname>_<tag>`: the library function of a pointwise op
/// (ember::add.Tensor, or its in-place form ember::add_.Tensor) for compute
/// dtype `compute`.
std::string pointwise_function(const OperatorHandle &op, ScalarType compute);
/// Whether the library has that function: the op table says which compute
/// types each pointwise op has (its `dtypes` group).
bool has_pointwise_function(const OperatorHandle &op, ScalarType compute);

} // namespace ember::codegen
