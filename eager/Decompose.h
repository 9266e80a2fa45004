#pragma once
/// Decompositions: ops written with other ops, for the compiler.
///
/// An op with `decompose: name` in ops.yaml has a second implementation,
/// ember::native::decompose::name in eager/ops/Decompositions.cpp, that
/// computes it with other ops (softmax: amax, sub, exp, sum, div). Eager never
/// calls it (the op's kernel is faster there); the compiler's ember-decompose
/// pass runs it on fake tensors under a recording mode and puts the ops it
/// called in place of the op, so that its reductions and pointwise ops fuse
/// with their neighbours. A decomposition raises ember::Error for an input it
/// does not cover (the op then stays whole).
///
/// Note [CUDA kernels from decompositions]
/// An op with a decomposition and no `cuda:` kernel of its own (softmax,
/// log_softmax and their backwards, native_layer_norm, var, logsumexp) runs
/// its decomposition as its CUDA kernel: the ops it calls (amax, exp, sum,
/// ...) have CUDA kernels, so the op is correct on the GPU as soon as they
/// are, at the cost of a few kernels where a fused one would do (the
/// compiled path fuses them). The inputs a decomposition does not cover
/// (empty tensors) run the op's CPU kernel on host copies: no work to speak
/// of. gen_ops.py writes the wrappers (eager/generated/Decompositions.cpp).

#include "eager/Dispatcher.h"

#include <tuple>

namespace ember {

namespace detail::decomposed {
// The pieces of a generated CUDA kernel from a decomposition.
inline bool empty(const Tensor &t) { return t.defined() && t.numel() == 0; }
inline bool empty(const std::optional<Tensor> &t) { return t && empty(*t); }
template <class T> bool empty(const T &) { return false; }
inline Tensor host(const Tensor &t) { return t.defined() ? t.cpu() : t; }
inline std::optional<Tensor> host(const std::optional<Tensor> &t) {
  return t ? std::optional<Tensor>(host(*t)) : std::nullopt;
}
template <class T> const T &host(const T &x) { return x; }
inline Tensor back(const Tensor &t, Device d) {
  return t.defined() ? t.to(d) : t;
}
template <class... Ts>
std::tuple<Ts...> back(const std::tuple<Ts...> &t, Device d) {
  return std::apply(
      [&](const auto &...e) { return std::tuple<Ts...>(back(e, d)...); }, t);
}
} // namespace detail::decomposed

/// The decomposition of `op` as a kernel (called boxed: the op's arguments
/// on the stack, its results after), or null when it has none.
const KernelFunction *find_decomposition(const OperatorHandle &op);

} // namespace ember
