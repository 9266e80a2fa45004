#pragma once
/// Compiled vs eager: run a program both ways on copies of the same inputs
/// and require equal results (dtypes and shapes; values exact for integers
/// and bools, within rounding for floats) and equal inputs afterwards
/// (mutations), at every optimisation level.

#include "TestUtil.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <tuple>

namespace ember::test {

/// Bitwise equality of two tensors (NaNs equal), with a readable failure.
inline ::testing::AssertionResult identical(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << toString(a.dtype()) << " != " << toString(b.dtype());
  return close(a, b, 0, 0);
}

/// (Note [The e2e suite on CUDA], below)
inline int &stay_on_cpu_depth() {
  static int depth = 0;
  return depth;
}
inline std::optional<Device> compiled_device() {
  static const std::optional<Device> device = []() -> std::optional<Device> {
    const char *v = std::getenv("E2E_DEVICE");
    if (!v || !*v)
      return std::nullopt;
    Device d(v);
    return d.is_cpu() ? std::nullopt : std::optional<Device>(d);
  }();
  return stay_on_cpu_depth() > 0 ? std::nullopt : device;
}

struct StayOnCpu {
  explicit StayOnCpu(const char *why) {
    if (compiled_device())
      std::printf("[ CPU ONLY ] compiled runs stay on the CPU: %s\n", why);
    ++stay_on_cpu_depth();
  }
  ~StayOnCpu() { --stay_on_cpu_depth(); }
  StayOnCpu(const StayOnCpu &) = delete;
  StayOnCpu &operator=(const StayOnCpu &) = delete;
};

/// A compiled result against eager's: integers and bools exact, floats
/// within |a - e| <= atol + rtol |e| (torch.testing's tolerances for
/// float16 and bfloat16; 1e-5 for float32 and float64). Fused kernels may
/// contract a multiply and an add into one rounding where an eager loop
/// rounds twice, which moves the last bit.
struct Tolerance {
  double rtol = 0, atol = 0;
};
inline Tolerance tolerance(ScalarType dtype) {
  switch (dtype) {
  case kHalf:
    return {1e-3, 1e-5};
  case kBFloat16:
    return {1.6e-2, 1e-5};
  case kFloat:
    return {compiled_device() ? 1e-4 : 1e-5, 1e-5};
  case kDouble:
    return {1e-5, 1e-5};
  default:
    return {0, 0};
  }
}
inline ::testing::AssertionResult same(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << toString(a.dtype()) << " != " << toString(b.dtype());
  Tolerance t = tolerance(a.dtype());
  return close(a, b, t.rtol, t.atol);
}

/// The whole storage of `t`, as a 1-D tensor of its dtype.
inline Tensor storage_of(const Tensor &t) {
  return t.as_strided({int64_t(t.storage().nbytes() / t.itemsize())}, {1}, 0);
}

/// Note [The e2e suite on CUDA]
/// With E2E_DEVICE=cuda (the GPU bundle's `run.sh e2e`), the compiled
/// side of every comparison below runs on the GPU: its arguments are copied
/// there over copies of their storages (so views, overlaps and aliasing
/// between arguments stay as they were) and its results and arguments come
/// back to the CPU to be compared with eager's, which ran on the CPU:
/// compiled CUDA against eager CPU, at every optimisation level. Tests that
/// compile CPU tensors themselves stay on the CPU. Requested on a machine
/// without a GPU, every test skips with the reason.
///
/// A test whose function cannot run on another device as written (it
/// closes over a module's CPU parameters, calls a custom op with a CPU
/// kernel only, reads a tensor's memory on the host) holds a StayOnCpu,
/// which says why: its compiled runs stay on the CPU.
///
/// Compiled CUDA against eager CPU compares float32 within rtol 1e-4 rather
/// than 1e-5: cuBLAS and the device's reductions sum in another order than
/// OpenBLAS and the CPU kernels.
class CompiledDeviceEnvironment : public ::testing::Environment {
  void SetUp() override {
    if (compiled_device() && !cuda::is_available())
      GTEST_SKIP() << "E2E_DEVICE=" << *compiled_device()
                   << " asks for compiled runs on a GPU, and this machine has "
                      "none (ember::cuda::is_available() is false)";
  }
};
inline ::testing::Environment *const kCompiledDeviceEnvironment =
    ::testing::AddGlobalTestEnvironment(new CompiledDeviceEnvironment);

/// The arguments of a compiled run (Note [The e2e suite on CUDA]): `args`
/// themselves on the CPU, else copies on compiled_device() that share
/// storages as `args` do and require grad as they do.
inline std::vector<Tensor> compiled_args(const std::vector<Tensor> &args) {
  if (!compiled_device())
    return args;
  std::map<const void *, Tensor> storages;
  std::vector<Tensor> out;
  for (const Tensor &t : args) {
    if (!t.defined() || !t.device().is_cpu()) {
      out.push_back(t);
      continue;
    }
    const void *key = t.storage().unsafeGetStorageImpl();
    auto it = storages.find(key);
    if (it == storages.end())
      it = storages.emplace(key, storage_of(t.detach()).to(*compiled_device()))
               .first;
    Tensor c =
        it->second.as_strided(t.sizes(), t.strides(), t.storage_offset());
    out.push_back(t.requires_grad() ? c.requires_grad_(true) : c);
  }
  return out;
}

/// A compiled result back on the CPU, to compare with eager's.
inline Tensor on_cpu(const Tensor &t) {
  return t.defined() && !t.device().is_cpu() ? t.cpu() : t;
}

/// Flattens what a program returns.
inline void flatten(const Tensor &t, std::vector<Tensor> &out) {
  out.push_back(t);
}
inline void flatten(const std::vector<Tensor> &v, std::vector<Tensor> &out) {
  out.insert(out.end(), v.begin(), v.end());
}
template <class... Ts>
void flatten(const std::tuple<Ts...> &t, std::vector<Tensor> &out) {
  std::apply([&](const auto &...e) { (flatten(e, out), ...); }, t);
}

/// Runs `fn(inputs...)` eagerly and through `compiled` (a CompiledFunction
/// of the same fn), `calls` times each, on fresh copies of `inputs`, and
/// checks equal outputs and equal inputs after each call.
template <class F, class C, size_t N>
void expect_same_with(F &fn, C &compiled, const Tensor (&inputs)[N],
                      int calls = 2) {
  for (int c = 0; c < calls; ++c) {
    std::array<Tensor, N> a, b;
    std::vector<Tensor> copies;
    for (size_t i = 0; i < N; ++i) {
      a[i] = inputs[i].clone();
      copies.push_back(inputs[i].clone());
    }
    copies = compiled_args(copies);
    std::copy(copies.begin(), copies.end(), b.begin());
    std::vector<Tensor> ra, rb;
    flatten(std::apply(fn, a), ra);
    flatten(std::apply(compiled, b), rb);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i)
      EXPECT_TRUE(same(on_cpu(rb[i]), ra[i]))
          << "output " << i << " of call " << c;
    for (size_t i = 0; i < N; ++i)
      EXPECT_TRUE(same(on_cpu(b[i]), a[i]))
          << "input " << i << " after call " << c;
  }
}

/// Strides that tell the same layout: equal on every dim of size > 1
/// (a size-1 dim's stride moves nothing).
inline bool same_layout(const Tensor &a, const Tensor &b) {
  if (a.sizes() != b.sizes())
    return false;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) > 1 && a.stride(d) != b.stride(d))
      return false;
  return true;
}

/// Compiled vs eager on inputs that `make()` builds afresh for each run
/// (expanded, overlapping or aliasing arguments, which clone() would not
/// keep): equal outputs (values, dtypes, shapes and layouts), equal
/// arguments afterwards (read through their storage), outputs that alias
/// the same arguments and each other as eager's do. `make` returns a
/// std::vector<Tensor>; `fn` takes it.
template <class F, class M>
void expect_same_fresh(F fn, M make, int calls = 2,
                       CompileOptions options = {}) {
  for (int64_t level = 0; level <= 2; ++level) {
    CompileOptions o = options;
    o.opt_level(level);
    auto compiled = compile(fn, o);
    for (int c = 0; c < calls; ++c) {
      std::vector<Tensor> a = make(), b = compiled_args(make());
      std::vector<Tensor> ra, rb;
      flatten(fn(a), ra);
      flatten(compiled(b), rb);
      ASSERT_EQ(ra.size(), rb.size());
      std::string where =
          "level " + std::to_string(level) + " call " + std::to_string(c);
      for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_TRUE(same(on_cpu(rb[i]), ra[i]))
            << "output " << i << ", " << where;
        EXPECT_TRUE(same_layout(rb[i], ra[i]))
            << "output " << i << " strides " << rb[i].strides() << ", eager "
            << ra[i].strides() << ", " << where;
        for (size_t j = 0; j < a.size(); ++j)
          EXPECT_EQ(rb[i].is_alias_of(b[j]), ra[i].is_alias_of(a[j]))
              << "output " << i << " aliasing argument " << j << ", " << where;
        for (size_t j = 0; j < i; ++j)
          EXPECT_EQ(rb[i].is_alias_of(rb[j]), ra[i].is_alias_of(ra[j]))
              << "outputs " << i << " and " << j << " aliasing, " << where;
      }
      for (size_t j = 0; j < a.size(); ++j) {
        EXPECT_TRUE(same(on_cpu(b[j]), a[j]))
            << "argument " << j << ", " << where;
        EXPECT_TRUE(same(on_cpu(storage_of(b[j])), storage_of(a[j])))
            << "storage of argument " << j << ", " << where;
      }
    }
  }
}

/// expect_same_with on a fresh compile(fn, options) at every optimisation
/// level (0: every op eager, exact; 1; 2: fused kernels); returns the
/// explain() of the level `options` names (2 by default).
template <class F, size_t N>
ExplainOutput expect_same(F fn, const Tensor (&inputs)[N], int calls = 2,
                          CompileOptions options = {}) {
  ExplainOutput chosen;
  for (int64_t level = 0; level <= 2; ++level) {
    CompileOptions o = options;
    o.opt_level(level);
    auto compiled = compile(fn, o);
    expect_same_with(fn, compiled, inputs, calls);
    if (level == options.opt_level())
      chosen = compiled.explain();
  }
  return chosen;
}

} // namespace ember::test

namespace ember::test {

/// `text` contains `part` (the whole text is shown on failure).
inline ::testing::AssertionResult contains(const std::string &text,
                                           const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in:\n"
                                       << text;
}

/// How many times `op` (a name as the trace prints it, "ember::mul", any
/// overload) is called in the traces of every compiled graph of `e`.
inline int64_t count_in_traces(const ExplainOutput &e, const std::string &op) {
  int64_t n = 0;
  std::string key = "= " + op;
  for (const GraphInfo &g : e.graphs)
    for (size_t p = g.trace.find(key); p != std::string::npos;
         p = g.trace.find(key, p + 1)) {
      char next = p + key.size() < g.trace.size() ? g.trace[p + key.size()] : 0;
      n += next == '(' || next == '.'; // the op or one of its overloads
    }
  return n;
}

} // namespace ember::test
