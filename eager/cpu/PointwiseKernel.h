#pragma once
/// The CPU kernel template of every pointwise op: type promotion,
/// broadcasting, output allocation and in-place checks, then a loop over the
/// op's functor (from PointwiseFunctors.h) with a vectorizable path for
/// contiguous and scalar-broadcast operands.

#include "eager/Dtype.h"
#include "eager/Meta.h"
#include "eager/TensorIterator.h"
#include "eager/cpu/HalfBlocks.h"
#include "eager/generated/Functions.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ember::native {

// The spec and the dtype/shape rule are the meta layer's (eager/Meta.h): the
// kernels and shape inference share them.
using meta::PointwiseSpec;
using meta::Promote;

/// Everything before the loop: the output, the inputs converted to the
/// compute dtype, and the iterator. Shared by every pointwise op.
struct PointwisePlan {
  ScalarType compute; ///< dtype of the (non-bool) inputs in the loop
  Tensor out;         ///< where the loop writes
  Tensor result;      ///< what the op returns (== out unless copied back)
  std::vector<Tensor> inputs;
  bool copy_back = false; ///< in-place into a dtype/alias the loop can't use
  bool inplace = false;
  /// Every input is contiguous with the output's shape or has one element,
  /// and the output is contiguous: one flat loop, no TensorIterator.
  bool flat = false;
};
PointwisePlan plan_pointwise(const PointwiseSpec &spec,
                             ArrayRef<const Tensor *> inputs,
                             ArrayRef<const Scalar *> scalars,
                             const Tensor *self_out);
void finish_pointwise(PointwisePlan &plan);

namespace detail {

/// In<K>: how input K is read from memory; InC<K>: what the functor takes.
/// A bool input is read as its byte and converted (!= 0): GCC 12 does not
/// vectorize a loop that loads `bool` beside a wider type ("no vectype"), and
/// masked_fill and where, a select per point, then branched on each one
/// (over 256x1024 floats on the 2-core VM: masked_fill, ReLU's backward,
/// 670-860 us, now 16-18; where 1.3-1.4 ms, now 26-30).
template <class S, class Fn> struct LoopTypes {
  using C = compute_t<S>;
  template <size_t K>
  using In = std::conditional_t<((Fn::bool_args >> K) & 1u) != 0, uint8_t, S>;
  template <size_t K>
  using InC = std::conditional_t<((Fn::bool_args >> K) & 1u) != 0, bool, C>;
};

/// Note [Pointwise runs in blocks]
/// A run whose output is contiguous and whose operands are each contiguous
/// or broadcast (stride 0) goes by blocks of kBlock points, each operand
/// read from memory where it is already what the loop takes, else from a
/// block in L1:
/// - A broadcast operand (where(mask, x, 0-dim), addcmul(x, 0-dim, y),
///   x * 0-dim) is a block of copies of its value, filled once. The general
///   strided loop does not vectorize (where over 1M floats with a 0-dim
///   operand took 3.5 ms against 0.11 ms contiguous on the 2-core VM), and a
///   loop hoisting each combination of broadcast operands would be 2^N loops
///   an op and dtype.
/// - A float16 operand computes in float (Note [Reduced precision
///   compute]). Converted one element at a time (Half's scalar F16C
///   instruction), it kept GCC from vectorizing the loop: float16 add 4x
///   and exp 18x slower than PyTorch's on 1M elements (Zen 5 VM). A
///   contiguous one is converted 8 at a time into a float block for each
///   block of the run, and a float16 output is computed into a float block
///   and converted 8 at a time.
/// The loop over a block is the contiguous loop, vectorized as float32's,
/// with the same functor. The conversions are the scalar ones'
/// instructions, so every value is the same as the element-wise loop's; a
/// NaN result's sign and payload may not be (maximum of two NaNs, silu and
/// 1/x of a NaN can keep another operand's NaN or sign), as for float32,
/// whose contiguous loops are vectorized and whose strided ones are not:
/// NaN bits are not part of an op's result, here or in PyTorch. Bool
/// operands (masks) are read as their bytes. bfloat16 needs no blocks: its
/// conversions are integer code that vectorizes in place.
template <class T>
inline constexpr bool kWidenInBlocks = (kHalfBlocks && std::is_same_v<T, Half>);

/// What a run in blocks reads of an operand stored as T: float for a
/// widened float16, else T itself.
template <class T>
using BlockElem = std::conditional_t<kWidenInBlocks<T>, float, T>;

/// Note [Pointwise runs in blocks]. The output is contiguous; operand K is
/// contiguous (st[K + 1] its element size) or broadcast (0).
template <class O, class S, class Fn, size_t... K>
void blocked_loop(const Fn &f, char **data, const int64_t *st, int64_t n,
                  std::index_sequence<K...>) {
  using LT = LoopTypes<S, Fn>;
  constexpr int64_t kBlock = 256;
  using R = std::invoke_result_t<const Fn &, typename LT::template InC<K>...>;
  constexpr bool narrow = kWidenInBlocks<O> && std::is_same_v<R, float>;
  std::tuple<std::array<BlockElem<typename LT::template In<K>>, kBlock>...>
      blocks;
  ((st[K + 1] == 0
        ? std::get<K>(blocks).fill(BlockElem<typename LT::template In<K>>(
              *reinterpret_cast<const typename LT::template In<K> *>(
                  data[K + 1])))
        : void()),
   ...);
  auto operand = [&]<size_t J>(std::integral_constant<size_t, J>, int64_t b,
                               int64_t len) {
    using T = typename LT::template In<J>;
    const BlockElem<T> *p = std::get<J>(blocks).data();
    if (st[J + 1] != 0) {
      const T *at = reinterpret_cast<const T *>(data[J + 1]) + b;
      if constexpr (kWidenInBlocks<T>)
        widen_half(at, std::get<J>(blocks).data(), len);
      else
        p = at;
    }
    return p;
  };
  std::conditional_t<narrow, std::array<float, kBlock>, char> res;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    O *out = reinterpret_cast<O *>(data[0]) + b;
    std::tuple<const BlockElem<typename LT::template In<K>> *...> in(
        operand(std::integral_constant<size_t, K>{}, b, len)...);
    if constexpr (narrow) {
      for (int64_t i = 0; i < len; ++i)
        res[size_t(i)] = f(typename LT::template InC<K>(std::get<K>(in)[i])...);
      narrow_half(res.data(), out, len);
    } else {
      for (int64_t i = 0; i < len; ++i)
        out[i] = O(f(typename LT::template InC<K>(std::get<K>(in)[i])...));
    }
  }
}

template <class O, class S, class Fn, size_t... K>
inline void pointwise_loop(char **data, const int64_t *st, int64_t n,
                           const Fn &fn, std::index_sequence<K...>) {
  // The functor's members (a Scalar argument: masked_fill's value, add's
  // alpha) are read through a reference the compiler cannot prove distinct
  // from the output: masked_fill's scalar loop loaded its value again after
  // every store. A local copy keeps them in registers.
  const Fn f = fn;
  using LT = LoopTypes<S, Fn>;
  constexpr bool widen =
      kWidenInBlocks<O> || (kWidenInBlocks<typename LT::template In<K>> || ...);
  if (st[0] == int64_t(sizeof(O))) {
    bool contiguous =
        ((st[K + 1] == int64_t(sizeof(typename LT::template In<K>))) && ...);
    if (contiguous && !widen) {
      O *out = reinterpret_cast<O *>(data[0]);
      std::tuple<const typename LT::template In<K> *...> in(
          reinterpret_cast<const typename LT::template In<K> *>(
              data[K + 1])...);
      for (int64_t i = 0; i < n; ++i)
        out[i] = O(f(typename LT::template InC<K>(std::get<K>(in)[i])...));
      return;
    }
    if (contiguous ||
        ((st[K + 1] == 0 ||
          st[K + 1] == int64_t(sizeof(typename LT::template In<K>))) &&
         ...)) {
      blocked_loop<O, S>(f, data, st, n, std::index_sequence<K...>{});
      return;
    }
  }
  // General strided loop.
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<O *>(data[0] + i * st[0]) =
        O(f(typename LT::template InC<K>(
            *reinterpret_cast<const typename LT::template In<K> *>(
                data[K + 1] + i * st[K + 1]))...));
  }
}

} // namespace detail

/// Runs a pointwise op. `make` returns the functor for a compute type:
/// make.template operator()<C>().
template <DtypeGroup G, class Make>
Tensor run_pointwise(const PointwiseSpec &spec, ArrayRef<const Tensor *> inputs,
                     ArrayRef<const Scalar *> scalars, const Tensor *self_out,
                     Make &&make) {
  PointwisePlan plan = plan_pointwise(spec, inputs, scalars, self_out);
  const int64_t numel = plan.out.numel();
  if (numel != 0) {
    bool bool_out = plan.out.dtype() == kBool && plan.compute != kBool;
    dispatch_in<G>(plan.compute, spec.name, [&]<class S>() {
      using C = compute_t<S>;
      auto f = make.template operator()<C>();
      using Fn = decltype(f);
      constexpr size_t N = size_t(Fn::arity);
      auto run = [&]<class O>() {
        auto loop = [&](char **data, const int64_t *st, int64_t n) {
          detail::pointwise_loop<O, S>(data, st, n, f,
                                       std::make_index_sequence<N>{});
        };
        if (plan.flat) {
          // Note [Flat pointwise path]
          // Contiguous operands (or one-element ones, read with stride 0)
          // need no iterator; this is the path of small ops (per-op
          // overhead) and of large contiguous ones.
          char *base[N + 1];
          int64_t st[N + 1];
          base[0] = static_cast<char *>(plan.out.data_ptr());
          st[0] = int64_t(sizeof(O));
          for (size_t k = 0; k < N; ++k) {
            const Tensor &t = plan.inputs[k];
            base[k + 1] = static_cast<char *>(t.data_ptr());
            st[k + 1] = t.numel() == numel ? int64_t(t.element_size()) : 0;
          }
          parallel_for(0, numel, TensorIterator::kDefaultGrain,
                       [&](int64_t b, int64_t e) {
                         char *ptrs[N + 1];
                         for (size_t k = 0; k <= N; ++k)
                           ptrs[k] = base[k] + b * st[k];
                         loop(ptrs, st, e - b);
                       });
          return;
        }
        TensorIterator it =
            TensorIterator::build(plan.out, TensorList(plan.inputs));
        it.for_each(loop);
      };
      if (bool_out)
        run.template operator()<bool>();
      else
        run.template operator()<S>();
    });
  }
  finish_pointwise(plan);
  return plan.result;
}

/// In-place form: returns the self reference.
template <DtypeGroup G, class Make>
const Tensor &run_pointwise(const PointwiseSpec &spec,
                            ArrayRef<const Tensor *> inputs,
                            ArrayRef<const Scalar *> scalars,
                            const Tensor &self, Make &&make) {
  run_pointwise<G>(spec, inputs, scalars, &self, std::forward<Make>(make));
  return self;
}

} // namespace ember::native
