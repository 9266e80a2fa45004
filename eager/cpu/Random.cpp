// The random-number ops of the table: element i of a draw is Philox's bits
// at counter offset + i under the seed (Note [Counter-based random numbers]
// in runtime/Philox.h), so the elements are computed in parallel and a draw
// is the same whatever the thread count.
#include "eager/Dtype.h"
#include "eager/Factory.h"
#include "eager/generated/NativeFunctions.h"
#include "eager/meta/Shapes.h"
#include "runtime/Generator.h"
#include "runtime/Half.h"
#include "runtime/Philox.h"
#include "runtime/ThreadPool.h"

#include <cmath>
#include <numbers>
#include <type_traits>

namespace ember::native {

namespace {

constexpr int64_t kGrain = 4096;

/// The (seed, offset) pair an op reads from its state tensor.
GeneratorState read_state(const Tensor &state) {
  Tensor s = state.contiguous();
  const int64_t *p = s.data_ptr<int64_t>();
  return {uint64_t(p[0]), uint64_t(p[1])};
}

/// The mantissa digits of T: a uniform number with that many random bits is
/// exact in T, so it never rounds up to 1.
template <class T> constexpr int digits() {
  if constexpr (std::is_same_v<T, Half>)
    return 11;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return 8;
  else if constexpr (std::is_same_v<T, float>)
    return 24;
  else
    return 53;
}

/// A tensor of `size` and `dtype` whose element i is value(bits of i).
template <class Value>
Tensor draw(const Tensor &state, IntArrayRef size, ScalarType dtype,
            DtypeGroup group, const char *op, Value value) {
  meta::check_philox(state, size, dtype, group == DtypeGroup::All, op);
  GeneratorState st = read_state(state);
  Tensor t = empty(size, TensorOptions(dtype));
  dispatch_group(dtype, group, op, [&]<class T>() {
    T *p = t.data_ptr<T>();
    parallel_for(0, t.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        p[i] = value.template operator()<T>(
            philox::bits(st.seed, st.offset + uint64_t(i)));
    });
  });
  return t;
}

} // namespace

Tensor _philox_uniform(const Tensor &state, IntArrayRef size,
                       ScalarType dtype) {
  return draw(state, size, dtype, DtypeGroup::Float, "_philox_uniform",
              []<class T>(const philox::Counter &c) {
                return T(philox::uniform(philox::word64(c, 0), digits<T>()));
              });
}

Tensor _philox_normal(const Tensor &state, IntArrayRef size, ScalarType dtype) {
  // Box-Muller on two 53-bit uniforms, one normal per element (the cosine
  // branch), so that each element depends on its own counter only.
  return draw(state, size, dtype, DtypeGroup::Float, "_philox_normal",
              []<class T>(const philox::Counter &c) {
                double u1 = 1.0 - philox::uniform(philox::word64(c, 0), 53);
                double u2 = philox::uniform(philox::word64(c, 1), 53);
                return T(std::sqrt(-2.0 * std::log(u1)) *
                         std::cos(2.0 * std::numbers::pi * u2));
              });
}

Tensor _philox_randint(const Tensor &state, int64_t low, int64_t high,
                       IntArrayRef size, ScalarType dtype) {
  meta::check_randint_range(low, high, dtype);
  uint64_t range = uint64_t(high) - uint64_t(low);
  return draw(state, size, dtype, DtypeGroup::All, "_philox_randint",
              [&]<class T>(const philox::Counter &c) {
                // (in uint64: low + a draw up to 2^64 - 2 wraps into range)
                return T(int64_t(uint64_t(low) + philox::word64(c, 0) % range));
              });
}

} // namespace ember::native
