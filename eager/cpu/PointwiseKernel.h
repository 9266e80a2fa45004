#pragma once
/// The CPU kernel template of every pointwise op: type promotion,
/// broadcasting, output allocation and in-place checks, then a loop over the
/// op's functor (from PointwiseFunctors.h) with a vectorizable path for
/// contiguous and scalar-broadcast operands.

#include "eager/Dtype.h"
#include "eager/Meta.h"
#include "eager/TensorIterator.h"
#include "eager/generated/Functions.h"
#include "runtime/ThreadPool.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

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

#if defined(__F16C__) && defined(__AVX__)
/// Note [Float16 pointwise in blocks]
/// A float16 op computes in float (Note [Reduced precision compute]). Each
/// element converted on its own (Half's scalar F16C instruction) kept GCC
/// from vectorizing the loop: float16 add 4x and exp 18x slower than
/// PyTorch's on 1M elements (Zen 5 VM). Contiguous runs go by blocks of 256
/// instead: the float16 operands converted 8 at a time into float blocks,
/// the op's float loop (vectorized as float32's), its results converted 8
/// at a time. The conversions are the scalar ones' instructions, so every
/// value is the same; a NaN result's sign and payload may not be (a probe
/// found maximum of two NaNs, silu and 1/x of a NaN keeping another
/// operand's NaN or sign), as for float32, whose contiguous loops are
/// vectorized and whose strided ones are not: NaN bits are not part of an
/// op's result, here or in PyTorch. Bool operands (masks) are read as they
/// are.
template <class Fn, class... P>
void halfBlocks(const Fn &f, Half *out, int64_t n, const P *...in) {
  constexpr int64_t kBlock = 256;
  auto widen = [](const Half *h, float *to, int64_t len) {
    int64_t k = 0;
    for (; k + 8 <= len; k += 8)
      _mm256_storeu_ps(to + k, _mm256_cvtph_ps(_mm_loadu_si128(
                                   reinterpret_cast<const __m128i *>(h + k))));
    for (; k < len; ++k)
      to[k] = float(h[k]);
  };
  std::tuple<std::conditional_t<std::is_same_v<P, Half>,
                                std::array<float, kBlock>, char>...>
      wide;
  alignas(32) float res[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    auto operand = [&]<size_t K>(std::integral_constant<size_t, K>,
                                 const auto *p) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
      if constexpr (std::is_same_v<T, Half>) {
        widen(p + b, std::get<K>(wide).data(), len);
        return static_cast<const float *>(std::get<K>(wide).data());
      } else {
        return p + b;
      }
    };
    [&]<size_t... K>(std::index_sequence<K...>) {
      auto ptrs =
          std::make_tuple(operand(std::integral_constant<size_t, K>{}, in)...);
      for (int64_t i = 0; i < len; ++i)
        res[i] = f(typename LoopTypes<Half, Fn>::template InC<K>(
            std::get<K>(ptrs)[i])...);
    }
    (std::index_sequence_for<P...>{});
    int64_t k = 0;
    for (; k + 8 <= len; k += 8)
      _mm_storeu_si128(
          reinterpret_cast<__m128i *>(out + b + k),
          _mm256_cvtps_ph(_mm256_loadu_ps(res + k), _MM_FROUND_TO_NEAREST_INT));
    for (; k < len; ++k)
      out[b + k] = Half(res[k]);
  }
}
#endif

template <class O, class S, class Fn, size_t... K>
inline void pointwise_loop(char **data, const int64_t *st, int64_t n,
                           const Fn &fn, std::index_sequence<K...>) {
  // The functor's members (a Scalar argument: masked_fill's value, add's
  // alpha) are read through a reference the compiler cannot prove distinct
  // from the output: masked_fill's scalar loop loaded its value again after
  // every store. A local copy keeps them in registers.
  const Fn f = fn;
  using LT = LoopTypes<S, Fn>;
  constexpr size_t N = sizeof...(K);
  bool contiguous =
      st[0] == int64_t(sizeof(O)) &&
      ((st[K + 1] == int64_t(sizeof(typename LT::template In<K>))) && ...);
  if (contiguous) {
    O *out = reinterpret_cast<O *>(data[0]);
    std::tuple<const typename LT::template In<K> *...> in(
        reinterpret_cast<const typename LT::template In<K> *>(data[K + 1])...);
#if defined(__F16C__) && defined(__AVX__)
    if constexpr (std::is_same_v<S, Half> && std::is_same_v<O, Half> &&
                  std::is_same_v<
                      std::invoke_result_t<const Fn &,
                                           typename LT::template InC<K>...>,
                      float>) {
      halfBlocks(f, out, n, std::get<K>(in)...);
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i)
      out[i] = O(f(typename LT::template InC<K>(std::get<K>(in)[i])...));
    return;
  }
  if constexpr (N == 2) {
    // One operand broadcast (stride 0), the rest contiguous: hoist it.
    using I0 = typename LT::template In<0>;
    using I1 = typename LT::template In<1>;
    using C0 = typename LT::template InC<0>;
    using C1 = typename LT::template InC<1>;
    O *out = reinterpret_cast<O *>(data[0]);
    if (st[0] == int64_t(sizeof(O)) && st[1] == int64_t(sizeof(I0)) &&
        st[2] == 0) {
      const I0 *a = reinterpret_cast<const I0 *>(data[1]);
      const C1 b = C1(*reinterpret_cast<const I1 *>(data[2]));
      for (int64_t i = 0; i < n; ++i)
        out[i] = O(f(C0(a[i]), b));
      return;
    }
    if (st[0] == int64_t(sizeof(O)) && st[1] == 0 &&
        st[2] == int64_t(sizeof(I1))) {
      const C0 a = C0(*reinterpret_cast<const I0 *>(data[1]));
      const I1 *b = reinterpret_cast<const I1 *>(data[2]);
      for (int64_t i = 0; i < n; ++i)
        out[i] = O(f(a, C1(b[i])));
      return;
    }
  }
  if constexpr (N >= 3) {
    // Note [Broadcast operands in blocks]
    // where(mask, x, 0-dim), addcmul(x, 0-dim, y), lerp(x, y, 0-dim): some
    // operands broadcast (stride 0), the rest and the output contiguous.
    // The strided loop below does not vectorize (where over 1M floats with
    // a 0-dim operand took 3.5 ms against 0.11 ms contiguous on the 2-core
    // VM), and hoisting each combination (as two operands do above) would
    // be 2^N loops an op and dtype. Instead the contiguous loop runs over
    // blocks of kBlock points, each broadcast operand read from a block of
    // copies of its value, filled once (in L1).
    constexpr int64_t kBlock = 256;
    if (st[0] == int64_t(sizeof(O)) &&
        ((st[K + 1] == 0 ||
          st[K + 1] == int64_t(sizeof(typename LT::template In<K>))) &&
         ...)) {
      std::tuple<std::array<typename LT::template In<K>, kBlock>...> copies;
      ((st[K + 1] == 0
            ? std::get<K>(copies).fill(
                  *reinterpret_cast<const typename LT::template In<K> *>(
                      data[K + 1]))
            : void()),
       ...);
      for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t len = std::min(kBlock, n - b);
        O *out = reinterpret_cast<O *>(data[0]) + b;
        std::tuple<const typename LT::template In<K> *...> in(
            (st[K + 1] == 0
                 ? std::get<K>(copies).data()
                 : reinterpret_cast<const typename LT::template In<K> *>(
                       data[K + 1]) +
                       b)...);
        for (int64_t i = 0; i < len; ++i)
          out[i] = O(f(typename LT::template InC<K>(std::get<K>(in)[i])...));
      }
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
