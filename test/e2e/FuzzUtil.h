#pragma once
// What the differential fuzzers (e2e_fuzz.cpp, e2e_fuzz_state.cpp) share:
// telling a compiled result that differs from eager's by rounding, which a
// discontinuous op then magnified, from one that is wrong.
#include "E2EUtil.h"
#include "eager/Meta.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>

namespace ember::test {

/// Note [Unstable values]
/// A compiled kernel may round differently from eager's (a contracted
/// multiply-add, a sum in another order): a few ulps, within the tolerance,
/// until a discontinuous op (floor, fmod, a comparison, a float-to-int
/// conversion) turns them into a different integer or bool. The fuzzer
/// finds such positions by running the program eagerly twice more with
/// every computed value nudged up, then down, by a few ulps: where those
/// runs disagree with the plain one, the value is unstable and not compared
/// (its dtype, shape, strides and aliasing still are).
/// A few ulps of `dt`, relative.
inline double nudge(ScalarType dt) {
  switch (dt) {
  case kDouble:
    return std::ldexp(1.0, -49);
  case kHalf:
    return std::ldexp(1.0, -8);
  case kBFloat16:
    return std::ldexp(1.0, -5);
  default:
    return std::ldexp(1.0, -20);
  }
}

/// `x` moved by a few ulps of its own size and of the tensor's largest
/// value (a difference of rounding after a cancellation is absolute: x -
/// max - log(sum) near 0 is off by ulps of max).
inline Tensor nudged(const Tensor &x, int direction) {
  Tensor a = x.to(kDouble).abs();
  a = a.masked_fill(a != a, 0).masked_fill(a == INFINITY, 0);
  double scale = a.numel() ? a.max().item<double>() : 0;
  double eps = direction * nudge(x.dtype());
  return (x.to(kDouble) + (x.to(kDouble).abs() + scale) * eps).to(x.dtype());
}

/// Where `a` and `b` agree within the tolerances of same() (NaNs equal).
inline Tensor agree(const Tensor &a, const Tensor &b) {
  Tensor x = a.to(kDouble), y = b.to(kDouble);
  Tolerance t = tolerance(a.dtype());
  return (x == y) | (x.isnan() & y.isnan()) |
         ((x - y).abs() <= (y.abs() * t.rtol + t.atol));
}

/// `got` against `want` where `stable` (Note [Unstable values]).
inline ::testing::AssertionResult
same_where(const Tensor &got, const Tensor &want, const Tensor &stable) {
  if (!stable.defined())
    return same(got, want);
  return same(got.masked_select(stable), want.masked_select(stable));
}

/// Where the nudged runs agree with the plain one (undefined: everywhere).
inline Tensor stable_mask(const Tensor &plain, const Tensor &up,
                          const Tensor &down) {
  if (!up.defined() || !down.defined())
    return Tensor();
  return agree(up, plain) & agree(down, plain);
}

/// The functional pointwise ops of the op table whose arguments the fuzzers
/// can fill (tensors, and Scalars with defaults).
inline std::vector<const OperatorHandle *> pointwise_ops() {
  std::vector<const OperatorHandle *> ops;
  for (const OperatorHandle *op : Dispatcher::singleton().allOps()) {
    if (!meta::find_pointwise_spec(*op))
      continue;
    const auto &args = op->schema().arguments;
    bool ok = !args.empty() && !args[0].is_write;
    for (const Argument &a : args)
      ok = ok && (a.type == "Tensor" ||
                  (a.type == "Scalar" && a.default_value.has_value()));
    if (ok)
      ops.push_back(op);
  }
  return ops;
}

/// The random choices both fuzzers' program generators make, from one seed.
class FuzzRandom {
public:
  explicit FuzzRandom(uint64_t seed) : rng_(seed), seed_(seed) {}
  uint64_t seed() const { return seed_; }

protected:
  int pick(int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  std::mt19937_64 rng_;
  uint64_t seed_;
};

/// A longer run asked for by the environment (scripts/ember.sh fuzz):
/// FUZZ_PROGRAMS programs from FUZZ_SEED (default 1), starting at program
/// FUZZ_FIRST (default 0: rerun one failing program with FUZZ_PROGRAMS=1).
struct FuzzRequest {
  uint64_t seed = 1;
  int first = 0, programs = 0;
};
inline std::optional<FuzzRequest> fuzz_request() {
  const char *n = std::getenv("FUZZ_PROGRAMS");
  if (!n)
    return std::nullopt;
  FuzzRequest r;
  r.programs = std::atoi(n);
  if (const char *seed = std::getenv("FUZZ_SEED"))
    r.seed = std::strtoull(seed, nullptr, 10);
  if (const char *first = std::getenv("FUZZ_FIRST"))
    r.first = std::atoi(first);
  return r;
}

/// Whether a compiled function ran at least one generated kernel.
inline bool ran_kernels(const ExplainOutput &e) {
  for (const GraphInfo &g : e.graphs)
    if (g.kernels > 0)
      return true;
  return false;
}

} // namespace ember::test
