// Bad input never crashes, corrupts memory or is silently wrong: regression
// tests for the findings of the hardening issue, each of which crashed or gave
// a wrong answer before its fix (run under ASan+UBSan as test_hardening_san).
#include "TestUtil.h"
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <thread>

using namespace ember;

namespace {

/// `fn` raises ember::Error whose message contains `text`.
template <class F>
::testing::AssertionResult raises(F fn, const std::string &text) {
  try {
    fn();
  } catch (const Error &e) {
    if (std::string(e.what()).find(text) != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "raised: " << e.what();
  } catch (const std::exception &e) {
    return ::testing::AssertionFailure()
           << "raised a non-ember exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not raise";
}

} // namespace

// --- Note [Checked storage arithmetic] ------------------------------------

TEST(Hardening, AsStridedBoundsCheckDoesNotOverflow) {
  Tensor b = zeros({8});
  Tensor other = zeros({8});
  // (INT64_MAX - 3) * 1 + 3 * 1 wraps to a negative span without the check,
  // which passed the bound and wrote through a huge stride.
  EXPECT_TRUE(raises(
      [&] {
        b.as_strided({2, 2}, {INT64_MAX - 3, 3});
      },
      "Storage size calculation overflowed"));
  EXPECT_TRUE(raises([&] { b.as_strided({2}, {INT64_MAX}); },
                     "Storage size calculation overflowed"));
  EXPECT_TRUE(raises([&] { b.as_strided({2}, {1}, INT64_MAX); },
                     "Storage size calculation overflowed"));
  EXPECT_TRUE(raises([&] { b.as_strided({3}, {4}); }, "require a storage"));
  // Empty views need no storage, whatever their strides.
  EXPECT_EQ(b.as_strided({0, 2}, {INT64_MAX, INT64_MAX}).numel(), 0);
  EXPECT_EQ(b.as_strided({2, 2}, {2, 1}, 4).sum().item<float>(), 0.0f);
  EXPECT_EQ(other.sum().item<float>(), 0.0f);
}

TEST(Hardening, EmptyStridedStorageSizeDoesNotOverflow) {
  // 1 + 2 * 2^61 elements of 4 bytes: 2^64 + 4 bytes, which wrapped to 4.
  EXPECT_TRUE(raises([] { empty_strided({3}, {int64_t(1) << 61}); },
                     "Storage size calculation overflowed"));
  EXPECT_TRUE(raises(
      [] {
        empty_strided({2, 2}, {INT64_MAX, 1});
      },
      "Storage size calculation overflowed"));
  Tensor t = empty_strided({3, 2}, {1, 3});
  EXPECT_EQ(t.storage().nbytes(), 6 * sizeof(float));
  EXPECT_EQ(empty_strided({0}, {INT64_MAX}).storage().nbytes(), 0u);
}

TEST(Hardening, CompiledAsStridedIsCheckedToo) {
  auto fn = [](const Tensor &x) {
    return x.as_strided({2, 2}, {INT64_MAX - 3, 3});
  };
  auto compiled = compile(fn);
  EXPECT_TRUE(raises([&] { compiled(zeros({8})); },
                     "Storage size calculation overflowed"));
}

// --- Note [Deleting long graphs] -------------------------------------------

TEST(Hardening, DestroyingALongGraphDoesNotRecurse) {
  // 200k nodes, each owning the next: a recursive teardown overflows the
  // stack (the sanitized build's frames are larger still).
  Tensor p = ones({1}).requires_grad_();
  Tensor total = zeros({1});
  for (int i = 0; i < 200000; ++i)
    total = total + p * 2;
  total = Tensor(); // the whole graph goes here
  // A shared tail survives its first owner.
  Tensor a = p * 3;
  Tensor b = a + 1, c = a + 2;
  b = Tensor();
  c.backward();
  EXPECT_EQ(p.grad().item<float>(), 3.0f);
}

// --- hooks -----------------------------------------------------------------

TEST(Hardening, HooksMustKeepTheGradientsShapeAndDtype) {
  Tensor w = randn({3}).requires_grad_();
  w.register_hook([](const Tensor &) { return ones({5}); });
  EXPECT_TRUE(raises([&] { (w * 2).sum().backward(); },
                     "hook has changed the size of value (was [3] got [5])"));
  Tensor v = randn({3}).requires_grad_();
  Tensor y = v * 2;
  y.register_hook([](const Tensor &g) { return g.to(kDouble); });
  EXPECT_TRUE(raises([&] { y.sum().backward(); },
                     "hook has changed the type of value"));
  // A hook returning its gradient scaled (same shape and dtype) still works.
  Tensor u = randn({3}).requires_grad_();
  u.register_hook([](const Tensor &g) { return g * 10; });
  (u * 2).sum().backward();
  EXPECT_TRUE(allclose(u.grad(), full({3}, 20.0f)));
}

// --- values that do not fit the dtype --------------------------------------

TEST(Hardening, FillValuesMustFitTheDtype) {
  EXPECT_TRUE(
      raises([] { full({2}, 300, kByte); },
             "value 300 cannot be converted to type uint8 without overflow"));
  EXPECT_TRUE(raises([] { full({2}, 1e10, kInt); }, "without overflow"));
  EXPECT_TRUE(raises([] { full({2}, 1e5, kHalf); }, "without overflow"));
  EXPECT_TRUE(raises([] { full({1}, std::nan(""), kLong); }, "overflow"));
  EXPECT_TRUE(raises([] { zeros({2}, kChar).fill_(128); }, "overflow"));
  // A negative double does not wrap into an unsigned type (c10's rule),
  // and a double must not exceed the maximum.
  EXPECT_TRUE(raises([] { full({2}, -1.0, kByte); }, "overflow"));
  EXPECT_TRUE(raises([] { full({2}, -0.5, kByte); }, "overflow"));
  EXPECT_TRUE(raises([] { full({2}, 127.5, kChar); }, "overflow"));
  // In range: as PyTorch, negatives wrap into unsigned types; inf and NaN
  // go into floating types; the limits themselves fit.
  EXPECT_EQ(full({1}, -1, kByte).item<int64_t>(), 255);
  EXPECT_EQ(full({1}, INT64_MIN, kLong).item<int64_t>(), INT64_MIN);
  EXPECT_EQ(full({1}, -128, kChar).item<int64_t>(), -128);
  EXPECT_TRUE(std::isinf(full({1}, INFINITY, kHalf).item<float>()));
  EXPECT_TRUE(std::isnan(full({1}, NAN, kBFloat16).item<float>()));
  EXPECT_EQ(full({1}, 65504.0, kHalf).item<float>(), 65504.0f);
}

TEST(Hardening, ItemChecksTheRequestedType) {
  // Converting 1e20 to int was undefined behaviour (UBSan flagged it).
  EXPECT_TRUE(raises([] { full({}, 1e20).item<int>(); },
                     "cannot be converted to type int32"));
  EXPECT_TRUE(raises([] { full({}, 70000, kInt).item<int16_t>(); },
                     "without overflow"));
  EXPECT_EQ(full({}, 2.5).item<int>(), 2);
  EXPECT_EQ(full({}, 1e20, kDouble).item<double>(), 1e20);
}

// --- PyTorch's semantics ---------------------------------------------------

TEST(Hardening, ReluPropagatesNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = tensor({nan, -1.0f, 2.0f, -0.0f});
  Tensor y = x.relu();
  EXPECT_TRUE(std::isnan(y[0].item<float>()));
  EXPECT_EQ(y[1].item<float>(), 0.0f);
  EXPECT_EQ(y[2].item<float>(), 2.0f);
  EXPECT_TRUE(std::signbit(y[3].item<float>())); // -0.0 passes, as PyTorch
  // The gradient passes where the result is NaN (threshold_backward).
  Tensor xg = x.clone().requires_grad_();
  xg.relu().backward(ones({4}));
  EXPECT_EQ(xg.grad()[0].item<float>(), 1.0f);
  EXPECT_EQ(xg.grad()[1].item<float>(), 0.0f);
  EXPECT_EQ(xg.grad()[2].item<float>(), 1.0f);
  EXPECT_TRUE(std::isnan(x.clone().relu_()[0].item<float>()));
  auto compiled = compile([](const Tensor &t) { return (t * 1).relu(); });
  EXPECT_TRUE(std::isnan(compiled(x)[0].item<float>()));
}

TEST(Hardening, ScalarOperandsConvertAsTheKernelDoes) {
  // fill_'s check is for values a user stores, not for operands: as
  // PyTorch, u8 + 300 wraps and half * -1e9 is -inf (attention masking).
  EXPECT_EQ((ones({2}, kByte) + 300)[0].item<int64_t>(), 45);
  EXPECT_TRUE(std::isinf((ones({2}, kHalf) * -1e9)[0].item<float>()));
  EXPECT_TRUE(std::isinf((ones({2}, kHalf) + 1e6)[0].item<float>()));
  Tensor u = ones({2}, kByte);
  u.add_(300);
  EXPECT_EQ(u[1].item<int64_t>(), 45);
}

TEST(Hardening, MasksAndConditionsMustBeBool) {
  Tensor x = ones({2});
  EXPECT_TRUE(raises([&] { x.masked_fill(ones({2}, kLong), 3); },
                     "expected a boolean tensor"));
  EXPECT_TRUE(raises([&] { where(ones({2}, kLong), x, zeros({2})); },
                     "expected a boolean tensor"));
  Tensor m = tensor({true, false});
  EXPECT_EQ(x.masked_fill(m, 3)[0].item<float>(), 3.0f);
  EXPECT_EQ(where(m, x, zeros({2}))[1].item<float>(), 0.0f);
}

// --- errors that are ember::Error ------------------------------------------

TEST(Hardening, HugeCountsRaiseEmberErrors) {
  // std::length_error and std::system_error escaped before.
  EXPECT_THROW(randperm(int64_t(1) << 62), Error);
  std::vector<Tensor> c = ones({4}).chunk(INT64_MAX);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(arange(10).chunk(INT64_MAX - 1).size(), 10u);
  EXPECT_EQ(arange(10).chunk(3).size(), 3u); // 4, 4, 2
  EXPECT_TRUE(raises([] { zeros({0}).chunk(INT64_MAX); }, "pieces"));
  EXPECT_EQ(zeros({0}).chunk(3).size(), 3u);
  int before = get_num_threads();
  EXPECT_TRUE(raises([] { set_num_threads(100000); }, "at most 1024"));
  EXPECT_EQ(get_num_threads(), before);
  EXPECT_TRUE(raises([] { randperm(300, TensorOptions(kByte)); },
                     "cannot be greater than 256"));
  EXPECT_TRUE(raises([] { randperm(2050, TensorOptions(kHalf)); },
                     "cannot be greater than 2049"));
  EXPECT_TRUE(raises([] { randperm(3, TensorOptions(kBool)); }, "Bool"));
  EXPECT_EQ(randperm(256, TensorOptions(kByte)).sum().item<int64_t>() >= 0,
            true);
  EXPECT_TRUE(raises([] { arange(4).split(-1); }, "non-negative"));
  Tensor p = randperm(1000);
  EXPECT_EQ(std::get<0>(p.sort()).equal(arange(1000)), true);
}

// --- settings --------------------------------------------------------------

TEST(Hardening, LayerNormOverNoElements) {
  // A normalized shape with no elements crashed (a null row pointer).
  namespace F = nn::functional;
  Tensor y = F::layer_norm(ones({2, 0}), F::LayerNormFuncOptions({0}));
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 0}));
  Tensor x = ones({3, 0, 4}).requires_grad_();
  Tensor w = ones({0, 4}).requires_grad_();
  Tensor z = F::layer_norm(
      x, F::LayerNormFuncOptions({0, 4}).weight(w).bias(zeros({0, 4})));
  z.sum().backward();
  EXPECT_EQ(x.grad().sizes(), IntArrayRef({3, 0, 4}));
  EXPECT_EQ(w.grad().sizes(), IntArrayRef({0, 4}));
  auto [out, mean, rstd] = native_layer_norm(ones({2, 0}), {0}, {}, {}, 1e-5);
  EXPECT_TRUE(std::isnan(mean[0][0].item<float>()));
}

TEST(Hardening, EmptyDebugDirIsUnsetNotTheRootFolder) {
  // EMBER_DEBUG_DIR="" wrote NAME.trace, NAME.mlir, ... into "/".
  auto traces_in_root = [] {
    int n = 0;
    for (const auto &e : std::filesystem::directory_iterator("/"))
      n += e.path().extension() == ".trace";
    return n;
  };
  int before = traces_in_root();
  ::setenv("EMBER_DEBUG_DIR", "", 1);
  auto f = compile([](const Tensor &x) { return (x * 3).exp(); });
  Tensor y = f(randn({4}));
  ::unsetenv("EMBER_DEBUG_DIR");
  EXPECT_EQ(y.numel(), 4);
  EXPECT_EQ(traces_in_root(), before);
}

// --- explain() under the lock ----------------------------------------------

TEST(Hardening, ExplainWhileAnotherThreadCalls) {
  // Each call breaks its graph at item(), so every call appends a break
  // reason while the other thread copies the statistics: without the lock
  // the copy reads a vector being reallocated (ASan: heap-use-after-free).
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &x) {
    Tensor y = x * 2;
    if (y.sum().item<float>() > 0)
      return y + 1;
    return y - 1;
  });
  Tensor x = randn({16});
  std::atomic<bool> done{false};
  std::thread caller([&] {
    for (int i = 0; i < 300; ++i)
      f(x);
    done = true;
  });
  int64_t seen = 0;
  while (!done)
    seen = std::max<int64_t>(seen, f.explain().graph_break_count);
  caller.join();
  EXPECT_EQ(f.explain().calls, 300);
  EXPECT_GE(f.explain().graph_break_count, 1);
}

TEST(Hardening, ExplainFromInsideTheCompiledFunction) {
  // The call holds the lock while it captures; explain() from the function
  // body (same thread) must not wait for it.
  NoGradGuard no_grad;
  int64_t calls_seen = -1;
  std::function<Tensor(const Tensor &)> body;
  auto f = compile([&](const Tensor &x) { return body(x); });
  body = [&](const Tensor &x) {
    calls_seen = f.explain().calls;
    return x + 1;
  };
  Tensor y = f(ones({2}));
  EXPECT_EQ(calls_seen, 1);
  EXPECT_TRUE(allclose(y, full({2}, 2.0)));
}

// --- Scalar arguments ------------------------------------------------------

TEST(Hardening, FloatAlphaOnIntegersRaises) {
  // PyTorch's alpha_check: a float alpha on integers would be truncated (to
  // 0 for 0.5).
  Tensor a = arange(4), b = ones({4}, kLong);
  EXPECT_TRUE(raises([&] { add(a, b, 0.5); }, "must not be a floating point"));
  EXPECT_TRUE(raises([&] { a.sub(b, 0.5); }, "must not be a floating point"));
  EXPECT_TRUE(raises([&] { a.clone().add_(b, 2.0); }, "argument alpha"));
  EXPECT_TRUE(raises([&] { add(a, b, true); }, "boolean alpha"));
  EXPECT_TRUE(raises(
      [&] { a.clone().index_add_(0, arange(2), b.narrow(0, 0, 2), 0.5); },
      "must not be a floating point"));
  EXPECT_EQ(add(a, b, 3)[1].item<int64_t>(), 4);
  EXPECT_EQ(add(a.to(kFloat), b, 0.5)[1].item<float>(), 1.5f);
  EXPECT_EQ(add(tensor({true}), tensor({true}), true)[0].item<bool>(), true);
  auto f = compile(
      [](const Tensor &x, const Tensor &y) { return add(x * 2, y, 0.5); });
  NoGradGuard no_grad;
  EXPECT_TRUE(raises([&] { f(a, b); }, "must not be a floating point"));
}

TEST(Hardening, ScalarArgumentsMustFitTheComputeDtype) {
  // As c10's checked Scalar::to<T>(): clamp bounds and masked_fill values
  // that the dtype cannot hold raise instead of wrapping.
  Tensor c = tensor({1, 2, 3}).to(kChar);
  // clamp drops a bound beyond the dtype on its own side (PyTorch's clamp;
  // Hardening.ClampBoundsOutsideAnIntegerRange); clamp_min/clamp_max raise.
  EXPECT_TRUE(equal(c.clamp(std::nullopt, 300), c));
  EXPECT_TRUE(
      raises([&] { c.clamp_min(-1000); }, "min value -1000 is outside"));
  Tensor m = tensor({true, false, true});
  EXPECT_TRUE(
      raises([&] { ones({3}, kByte).masked_fill(m, 256); }, "argument value"));
  EXPECT_TRUE(raises([&] { ones({3}, kHalf).masked_fill(m, -1e9); },
                     "without overflow"));
  // In range, and infinities for floats, pass.
  EXPECT_EQ(c.clamp(std::nullopt, 2)[2].item<int64_t>(), 2);
  EXPECT_TRUE(
      std::isinf(ones({3}, kHalf).masked_fill(m, -INFINITY)[0].item<float>()));
  // A promoting bound changes the dtype instead (int tensor, float bound).
  EXPECT_EQ(c.clamp_min(2.5).dtype(), kFloat);
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &x) { return (x + 1).clamp_max(300); });
  EXPECT_TRUE(raises([&] { f(c); }, "max value 300 is outside the range"));
}

// --- int64 edges of arguments ----------------------------------------------

TEST(Hardening, TriangleDiagonalsAtTheInt64Limits) {
  Tensor x = randn({3, 4}) + 5; // no zero entries
  EXPECT_TRUE(equal(triu(x, INT64_MAX), zeros({3, 4})));
  EXPECT_TRUE(equal(tril(x, INT64_MAX), x));
  EXPECT_TRUE(equal(triu(x, INT64_MIN), x));
  EXPECT_TRUE(equal(tril(x, INT64_MIN), zeros({3, 4})));
  EXPECT_TRUE(equal(triu(x, 4), zeros({3, 4})));
  EXPECT_EQ(triu(x, 3)[0][3].item<float>(), x[0][3].item<float>());
}

TEST(Hardening, NarrowAndPadDoNotOverflow) {
  Tensor x = arange(8);
  EXPECT_TRUE(raises([&] { x.narrow(0, 5, INT64_MAX); }, "exceeds dimension"));
  EXPECT_TRUE(raises([&] { x.narrow(0, -3, INT64_MAX); }, "exceeds dimension"));
  EXPECT_TRUE(equal(x.narrow(0, 5, 3), arange(5, 8)));
  EXPECT_TRUE(raises(
      [&] {
        constant_pad_nd(x, {INT64_MAX, INT64_MAX}, 0);
      },
      "overflows int64"));
  // A huge crop on one side, a huge pad on the other: 8 + MIN + MAX = 7.
  Tensor p = constant_pad_nd(x, {INT64_MIN, INT64_MAX}, 9);
  EXPECT_TRUE(equal(p, full({7}, 9, kLong)));
  EXPECT_TRUE(equal(constant_pad_nd(x, {-2, 1}, 9),
                    cat({arange(2, 8), full({1}, 9, kLong)})));
}

TEST(Hardening, ArangeNearTheInt64Limits) {
  Tensor top = arange(INT64_MAX - 3, INT64_MAX);
  ASSERT_EQ(top.numel(), 3);
  EXPECT_EQ(top[2].item<int64_t>(), INT64_MAX - 1);
  Tensor bottom = arange(INT64_MIN, INT64_MIN + 10, 3);
  ASSERT_EQ(bottom.numel(), 4);
  EXPECT_EQ(bottom[3].item<int64_t>(), INT64_MIN + 9);
  Tensor big_step = arange(INT64_MIN, INT64_MAX, INT64_MAX);
  ASSERT_EQ(big_step.numel(), 3); // MIN, -1, MAX - 1
  EXPECT_EQ(big_step[2].item<int64_t>(), INT64_MAX - 1);
  EXPECT_TRUE(raises([] { arange(INT64_MIN, INT64_MAX); },
                     "invalid number of elements"));
  EXPECT_TRUE(raises([] { arange(INT64_MAX, INT64_MIN, -1); },
                     "invalid number of elements"));
  EXPECT_TRUE(
      raises([] { arange(300, TensorOptions(kByte)); }, "without overflow"));
  EXPECT_TRUE(raises([] { arange(0.0, 1e30, 1e29, TensorOptions(kLong)); },
                     "without overflow"));
}

// --- errors that say what went wrong ---------------------------------------

TEST(Hardening, CheckpointMismatchIsACheckpointError) {
  int calls = 0;
  Tensor x = randn({4}).requires_grad_();
  Tensor y = checkpoint(
      [&](const Tensor &t) {
        // The recomputation sees a longer tensor than the forward did.
        Tensor u = ++calls == 1 ? t : t.repeat({2});
        return (u * u).sum();
      },
      x);
  try {
    y.backward();
    FAIL() << "backward did not raise";
  } catch (const CheckpointError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("different metadata"), std::string::npos) << msg;
    EXPECT_NE(msg.find("shape: [8]"), std::string::npos) << msg;
  }
}

TEST(Hardening, LoadingADirectorySaysSo) {
  auto dir = std::filesystem::temp_directory_path() / "ember_load_dir_test";
  std::filesystem::create_directories(dir);
  Tensor t;
  EXPECT_TRUE(raises([&] { load(t, dir.string()); }, "is a directory"));
  std::filesystem::remove_all(dir);
  // A file that is not an archive names the file.
  auto file = std::filesystem::temp_directory_path() / "ember_not_archive.pt";
  { std::ofstream(file) << "not an archive"; }
  EXPECT_TRUE(raises([&] { load(t, file.string()); }, file.string()));
  std::filesystem::remove(file);
}

TEST(Hardening, HalfTanhGeluGradientAtLargeInputs) {
  // x * x overflows float16 beyond 256; the gradient is 1 for large x and 0
  // for large -x, not NaN.
  for (ScalarType dt : {kHalf, kBFloat16}) {
    Tensor x = tensor({300.0f, -300.0f, 1.0f}).to(dt).requires_grad_();
    nn::functional::gelu(x,
                         nn::functional::GELUFuncOptions().approximate("tanh"))
        .sum()
        .backward();
    Tensor g = x.grad().to(kFloat);
    EXPECT_EQ(g[0].item<float>(), 1.0f) << dt;
    EXPECT_EQ(g[1].item<float>(), 0.0f) << dt;
    EXPECT_NEAR(g[2].item<float>(), 1.0830, 0.01) << dt;
  }
}

// --- compiled == eager at the edges ------------------------------------------

TEST(Hardening, SignedZeroExtremaDoNotDependOnOrder) {
  // IEEE 754-2019 maximum/minimum: -0 < +0, eagerly (any lane order) and in
  // compiled reductions (llvm.maximum).
  NoGradGuard no_grad;
  auto cmax = compile([](const Tensor &t) { return (t * 1).amax(); });
  auto cmin = compile([](const Tensor &t) { return (t * 1).amin(); });
  Tensor many = full({1000}, -0.0f); // one +0 where vector lanes meet it
  many[537].fill_(0.0);
  for (Tensor t : {tensor({-0.0f, 0.0f, -0.0f}), tensor({0.0f, -0.0f}),
                   tensor({-0.0, 0.0}), many}) {
    EXPECT_FALSE(std::signbit(t.amax().item<double>())) << t;
    EXPECT_FALSE(std::signbit(cmax(t).item<double>())) << t;
    EXPECT_TRUE(std::signbit(t.amin().item<double>())) << t;
    EXPECT_TRUE(std::signbit(cmin(t).item<double>())) << t;
  }
  Tensor a = tensor({-0.0f, 0.0f}), b = tensor({0.0f, -0.0f});
  for (const Tensor &m : {maximum(a, b), maximum(b, a)})
    EXPECT_FALSE(std::signbit(m[0].item<float>()) ||
                 std::signbit(m[1].item<float>()));
  for (const Tensor &m : {minimum(a, b), minimum(b, a)})
    EXPECT_TRUE(std::signbit(m[0].item<float>()) &&
                std::signbit(m[1].item<float>()));
}

TEST(Hardening, WritingThroughSelfOverlappingStridesRaises) {
  // as_strided({2, 2}, {1, 1}) reaches element 1 twice: eagerly add_ would
  // add 2 to it, a compiled kernel 1. Both raise (Note [Internal overlap]).
  Tensor b = arange(6).to(kFloat);
  EXPECT_TRUE(raises(
      [&] {
        b.as_strided({2, 2}, {1, 1}).add_(1);
      },
      "refers to a single memory location"));
  EXPECT_TRUE(raises(
      [&] {
        b.as_strided({2, 2}, {1, 1}).fill_(1);
      },
      "refers to a single memory location"));
  EXPECT_TRUE(equal(b, arange(6).to(kFloat))); // nothing was written
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &t) {
    t.as_strided({2, 2}, {1, 1}).add_(1);
    return t * 1;
  });
  EXPECT_TRUE(
      raises([&] { f(b.clone()); }, "refers to a single memory location"));
  // Strides that interleave without meeting are fine: offsets 0 2 4 3 5 7.
  Tensor c = zeros({8});
  c.as_strided({3, 2}, {2, 3}).add_(1);
  EXPECT_TRUE(
      equal(c, tensor({1.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 1.0f})));
  Tensor e = zeros({8});
  auto g = compile([](const Tensor &t) {
    t.as_strided({3, 2}, {2, 3}).add_(1);
    return t * 1;
  });
  EXPECT_TRUE(equal(g(e), c));
}

// --- Note [Deep re-entrant backward] ----------------------------------------

TEST(Hardening, DeepReentrantBackwardDoesNotOverflowTheStack) {
  // Each level's hook runs the next level's backward inside the engine:
  // 10,000 levels deep on one stack overflowed it.
  constexpr int kDepth = 10000;
  int reached = 0;
  std::function<void(int)> level = [&](int depth) {
    AutoGradMode grad_on(true); // hooks run with grad off, as in PyTorch
    Tensor x = ones({2}).requires_grad_();
    Tensor y = x * 3;
    y.register_hook([&, depth](const Tensor &g) {
      reached = std::max(reached, kDepth - depth);
      if (depth > 0)
        level(depth - 1);
      return g;
    });
    y.sum().backward();
    EXPECT_TRUE(equal(x.grad(), full({2}, 3.0f)));
  };
  level(kDepth);
  EXPECT_EQ(reached, kDepth);
}

TEST(Hardening, DeepReentrantBackwardKeepsTheThreadsState) {
  // Past the depth where backward moves to a new thread, the saved-tensor
  // hooks still apply and an error reaches the outermost caller.
  int packed = 0;
  autograd::graph::saved_tensors_hooks hooks(
      [&](const Tensor &t) -> std::any {
        ++packed;
        return t;
      },
      [](const std::any &a) { return std::any_cast<Tensor>(a); });
  std::function<void(int)> level = [&](int depth) {
    AutoGradMode grad_on(true);
    Tensor x = ones({2}).requires_grad_();
    Tensor y = x * x; // saves x twice, through the hooks
    y.register_hook([&, depth](const Tensor &g) {
      if (depth == 0)
        throw ValueError("raised at the bottom");
      level(depth - 1);
      return g;
    });
    y.sum().backward();
  };
  EXPECT_TRUE(raises([&] { level(100); }, "raised at the bottom"));
  EXPECT_EQ(packed, 2 * 101);
}

TEST(Hardening, EmptyTensorStridesDoNotOverflow) {
  // Found by test_size_fuzz: repeat({2, 2^62 - 1, 0, 4}) made an empty
  // tensor whose contiguous strides wrapped negative.
  const int64_t big = (int64_t(1) << 62) - 1;
  EXPECT_TRUE(raises(
      [&] {
        ones({1}).repeat({2, big, 0, 4});
      },
      "Stride calculation overflowed"));
  EXPECT_TRUE(raises(
      [&] {
        empty({2, big, 0, 4});
      },
      "Stride calculation overflowed"));
  Tensor e = empty({int64_t(1) << 40, 0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.stride(0), 3);
}

TEST(Hardening, SliceWithAHugeStep) {
  // Found by test_size_fuzz: the length (e - s + step - 1) / step and the
  // stride * step overflowed for steps near INT64_MAX.
  Tensor x = arange(24).view({4, 6});
  Tensor s = x.slice(1, -4, 3, INT64_MAX - 1);
  EXPECT_EQ(s.sizes(), IntArrayRef({4, 1}));
  EXPECT_EQ(s[3][0].item<int64_t>(), 20);
  Tensor t = x.slice(1, 0, 6, INT64_MAX);
  EXPECT_EQ(t.sizes(), IntArrayRef({4, 1}));
  EXPECT_TRUE(equal(x.slice(1, 1, 6, 2),
                    x.index({indexing::Slice(), indexing::Slice(1, 6, 2)})));
}

// --- findings of the independent probe ---------------------------------------

TEST(Hardening, BinaryCrossEntropyGradientAtZeroAndOne) {
  // PyTorch's gradient (x - y) / max(x (1 - x), 1e-12), not 0 * inf = NaN
  // through the clamped logs, where a probability is exactly 0 or 1.
  Tensor x = tensor({0.0, 1.0, 0.0, 0.3}, kDouble).requires_grad_();
  Tensor y = tensor({1.0, 0.0, 0.0, 1.0}, kDouble);
  Tensor loss = nn::functional::binary_cross_entropy(
      x, y, nn::functional::BinaryCrossEntropyFuncOptions(kSum));
  loss.backward();
  Tensor g = x.grad();
  EXPECT_DOUBLE_EQ(g[0].item<double>(), -1e12);
  EXPECT_DOUBLE_EQ(g[1].item<double>(), 1e12);
  EXPECT_DOUBLE_EQ(g[2].item<double>(), 0.0);
  EXPECT_NEAR(g[3].item<double>(), -1 / 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(loss.item<double>(), 200 - std::log(0.3));
  // And the gradient of the target, and through the top-level form.
  Tensor p = tensor({0.2, 0.9}, kDouble).requires_grad_(),
         t = tensor({0.5, 1.0}, kDouble).requires_grad_();
  ember::binary_cross_entropy(p, t).backward();
  EXPECT_NEAR(t.grad()[0].item<double>(), 0.5 * (std::log(0.8) - std::log(0.2)),
              1e-12);
  EXPECT_NEAR(p.grad()[1].item<double>(), 0.5 * (0.9 - 1) / (0.9 * 0.1), 1e-12);
}

TEST(Hardening, MoreScalarArgumentsMustFit) {
  Tensor u = zeros({4}, kByte);
  EXPECT_TRUE(raises(
      [&] {
        u.index_add_(0, tensor({int64_t(0), 1}), ones({2}, kByte), 256);
      },
      "without overflow"));
  EXPECT_TRUE(raises(
      [] {
        leaky_relu(tensor({0.0f, -0.5f}), 1e39);
      },
      "without overflow"));
  EXPECT_TRUE(raises([] { elu(tensor({0.0f}), 1e39); }, "without overflow"));
  EXPECT_TRUE(raises([] { linspace(0, 300, 3, TensorOptions(kByte)); },
                     "without overflow"));
  EXPECT_TRUE(raises([] { linspace(0, 1e5, 3, TensorOptions(kHalf)); },
                     "without overflow"));
  EXPECT_EQ(leaky_relu(tensor({-2.0f}), 0.5)[0].item<float>(), -1.0f);
  EXPECT_EQ(linspace(0, 250, 3, TensorOptions(kByte))[2].item<int64_t>(), 250);
}

TEST(Hardening, ViewShapeProductDoesNotOverflow) {
  // Found by test_size_fuzz under UBSan: the product of the known sizes of
  // a view overflowed (INT64_MAX - 1 times 3 * 2^32).
  Tensor x = randn({2, 3});
  EXPECT_TRUE(raises(
      [&] {
        x.view({INT64_MAX - 1, int64_t(3) << 32, -1});
      },
      "is invalid for input of size"));
  EXPECT_TRUE(raises(
      [&] {
        x.reshape({INT64_MAX - 1, int64_t(3) << 32});
      },
      "is invalid for input of size"));
}

TEST(Hardening, RepeatSizesDoNotOverflow) {
  // Found by test_size_fuzz under UBSan: INT64_MAX - 1 repeats of a size 3.
  EXPECT_TRUE(raises(
      [] {
        randn({2, 3}).repeat({1, INT64_MAX - 1});
      },
      "overflow"));
}

TEST(Hardening, DiagonalOffsetsAtTheInt64Limits) {
  // Found by test_size_fuzz under UBSan: offset * stride and size - offset
  // overflowed for offsets far outside the matrix.
  Tensor x = arange(12).view({3, 4});
  for (int64_t off :
       {INT64_MAX, INT64_MIN, int64_t(1) << 62, int64_t(4), int64_t(-3)})
    EXPECT_EQ(x.diagonal(off).numel(), 0) << off;
  EXPECT_TRUE(equal(x.diagonal(1), tensor({int64_t(1), 6, 11})));
  EXPECT_TRUE(equal(x.diagonal(-2), tensor({int64_t(8)})));
}

// Found by test_size_fuzz (seed 2) under UBSan: an empty view may carry an
// offset far beyond its storage, and its data address multiplied that
// offset by the item size in int64.
TEST(Hardening, EmptyViewWithAHugeOffsetHasAnAddress) {
  Tensor base = randn({4});
  Tensor v = base.as_strided({0}, {1}, int64_t(1) << 62);
  EXPECT_EQ(v.numel(), 0);
  EXPECT_EQ(v.storage_offset(), int64_t(1) << 62);
  EXPECT_EQ(v.data_ptr(), base.storage().data());
  EXPECT_EQ(v.clone().numel(), 0);
  EXPECT_EQ((v + 1).numel(), 0);
}

// Activations of integer tensors as PyTorch's: relu6 and hardtanh keep the
// dtype (they clamp), the others raise instead of promoting to float;
// sigmoid and tanh promote (unary float ops).
TEST(Hardening, IntegerActivationsFollowPyTorch) {
  namespace F = nn::functional;
  Tensor i = tensor({-2, 0, 3, 9}, kInt);
  Tensor r6 = F::relu6(i);
  EXPECT_EQ(r6.dtype(), kInt);
  EXPECT_TRUE(equal(r6, tensor({0, 0, 3, 6}, kInt)));
  Tensor ht = F::hardtanh(i);
  EXPECT_EQ(ht.dtype(), kInt);
  EXPECT_TRUE(equal(ht, tensor({-1, 0, 1, 1}, kInt)));
  EXPECT_TRUE(
      equal(F::hardtanh(i, F::HardtanhFuncOptions().min_val(-1.5).max_val(2.5)),
            tensor({-1, 0, 2, 2}, kInt)));
  EXPECT_TRUE(equal(ember::hardtanh(i.to(kByte), -1, 1),
                    tensor({1, 0, 1, 1}, kByte))); // -2 wraps to 254 as uint8
  Tensor in = i.clone();
  F::relu6(in, F::ReLU6FuncOptions(true));
  EXPECT_TRUE(equal(in, tensor({0, 0, 3, 6}, kInt)));
  EXPECT_EMBER_ERROR(F::hardtanh(i > 0), "Bool inputs not supported");
  EXPECT_EQ(sigmoid(i).dtype(), kFloat);
  EXPECT_EQ(tanh(i).dtype(), kFloat);
  const char *want = "is not implemented for dtype int32";
  EXPECT_EMBER_ERROR(F::leaky_relu(i), want);
  EXPECT_EMBER_ERROR(ember::leaky_relu(i), want);
  EXPECT_EMBER_ERROR(F::elu(i), want);
  EXPECT_EMBER_ERROR(F::gelu(i), "\"gelu\" is not implemented");
  EXPECT_EMBER_ERROR(F::gelu(i, F::GELUFuncOptions().approximate("tanh")),
                     "\"gelu\" is not implemented");
  EXPECT_EMBER_ERROR(F::silu(i), "\"silu\" is not implemented");
  EXPECT_EMBER_ERROR(F::softplus(i), "\"softplus\" is not implemented");
  EXPECT_EMBER_ERROR(F::logsigmoid(i), want);
  EXPECT_EMBER_ERROR(addcdiv(i, i, i), "\"addcdiv\" is not implemented");
  EXPECT_EMBER_ERROR(F::leaky_relu(i > 0), "dtype bool");
}

// Found by the probe: c10's conversion lets a negative bound wrap around
// uint8 (-5 -> 251), so clamp(u8, -5, 100) gave [100, 100]. clamp drops a
// bound beyond the dtype's range on its own side, as PyTorch's; the table
// ops clamp_min/clamp_max raise for any bound outside the range.
TEST(Hardening, ClampBoundsOutsideAnIntegerRange) {
  Tensor u = tensor({1, 200}, kByte);
  EXPECT_TRUE(equal(clamp(u, -5, 100), tensor({1, 100}, kByte)));
  EXPECT_TRUE(equal(clamp(u, -1000, 1000), u));
  EXPECT_FALSE(clamp(u, -1000, 1000).is_same(u));
  EXPECT_TRUE(equal(clamp(u, std::nullopt, 1000), u));
  Tensor c = tensor({1, 100, -100}, kChar);
  EXPECT_TRUE(equal(clamp(c, -5, 200), tensor({1, 100, -5}, kChar)));
  EXPECT_TRUE(equal(clamp(c, -200, 50), tensor({1, 50, -100}, kChar)));
  Tensor v = u.clone();
  v.clamp_(-5, 100);
  EXPECT_TRUE(equal(v, tensor({1, 100}, kByte)));
  EXPECT_EMBER_ERROR(clamp_max(u, -5), "outside the range of uint8 [0, 255]");
  EXPECT_EMBER_ERROR(clamp(u, std::nullopt, -5), "outside the range");
  EXPECT_EMBER_ERROR(clamp_min(u, -5), "outside the range");
  EXPECT_EMBER_ERROR(clamp(c, 300, 400), "outside the range of int8");
  // Compiled as eager: clamp is recorded as the ops it calls.
  NoGradGuard no_grad;
  auto f = compile([](const Tensor &x) { return clamp(x, -5, 100) + 1; });
  EXPECT_TRUE(equal(f(u), tensor({2, 101}, kByte)));
}

// Found by the probe: a padding cell (the lowest value) tied with a real
// -inf (or uint8 0) and won, so max pooling returned index -1 and dropped
// the gradient.
TEST(Hardening, MaxPoolPrefersRealPositionsOverPadding) {
  namespace F = nn::functional;
  auto opt = F::MaxPool2dFuncOptions({1, 2}).stride({1, 2}).padding({0, 1});
  float inf = std::numeric_limits<float>::infinity();
  Tensor b = tensor({-inf, 5.0f, 7.0f}).reshape({1, 1, 1, 3}).requires_grad_();
  auto [o, i] = F::max_pool2d_with_indices(b, opt);
  EXPECT_TRUE(equal(i, tensor({0, 2}, kLong).view({1, 1, 1, 2})));
  EXPECT_TRUE(equal(o.detach(), tensor({-inf, 7.0f}).view({1, 1, 1, 2})));
  o.sum().backward();
  EXPECT_TRUE(equal(b.grad(), tensor({1.0f, 0.0f, 1.0f}).view({1, 1, 1, 3})));
  auto [ou, iu] = F::max_pool2d_with_indices(
      tensor({0, 5, 7}, kByte).view({1, 1, 1, 3}), opt);
  EXPECT_TRUE(equal(iu, tensor({0, 2}, kLong).view({1, 1, 1, 2})));
  EXPECT_TRUE(equal(ou, tensor({0, 7}, kByte).view({1, 1, 1, 2})));
  // NaN still wins, and a real value above the padding is unaffected.
  Tensor n = tensor({std::nanf(""), 5.0f, 7.0f}).view({1, 1, 3});
  auto m = F::max_pool1d(n, F::MaxPool1dFuncOptions(2).stride(2).padding(1));
  EXPECT_TRUE(std::isnan(m[0][0][0].item<float>()));
  EXPECT_EQ(m[0][0][1].item<float>(), 7.0f);
}
