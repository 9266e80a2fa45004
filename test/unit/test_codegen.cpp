// codegen/: CPU kernels for pointwise fusions, against eager's results bit
// for bit (the kernels run eager's own scalar code: Note [One scalar
// semantics]).
#include "codegen/Kernel.h"
#include "codegen/ScalarLibrary.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <tuple>

using namespace ember;
using codegen::compile_kernel;
using codegen::CompiledKernel;
using codegen::KernelSpec;

namespace {

/// The op handle of a dispatcher op ("ember::add.Tensor").
const OperatorHandle &op(const std::string &name) {
  return Dispatcher::singleton().findSchemaOrThrow(name);
}
const OperatorHandle &op_of(const char *name) { return op(name); }

Tensor random(IntArrayRef shape, ScalarType dt, uint64_t seed) {
  Generator g(seed);
  Tensor t = randn(shape, g) * 3;
  if (isIntegralType(dt, /*includeBool=*/true))
    t = t.round();
  return t.to(dt);
}

/// Strides of `t` over `shape` in elements (0 on broadcast dims).
std::vector<int64_t> strides_over(const Tensor &t, IntArrayRef shape) {
  return t.expand(shape).strides().vec();
}

/// Runs `k` on `inputs` (their data pointers, as the strides in the spec
/// say) and returns fresh contiguous outputs.
std::vector<Tensor> run(const KernelSpec &k, const std::vector<Tensor> &inputs,
                        CompiledKernel *out = nullptr) {
  CompiledKernel c = compile_kernel(k);
  std::vector<Tensor> outs;
  std::vector<char *> ptrs;
  for (int o : k.outputs) {
    outs.push_back(empty(k.shape, TensorOptions(k.dtype(o))));
    ptrs.push_back(static_cast<char *>(outs.back().data_ptr()));
  }
  for (const Tensor &t : inputs)
    ptrs.push_back(static_cast<char *>(t.data_ptr()));
  c.run(ptrs.data());
  if (out)
    *out = c;
  return outs;
}

::testing::AssertionResult bit_equal(const Tensor &got, const Tensor &want) {
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes())
    return ::testing::AssertionFailure()
           << "got " << toString(got.dtype()) << got.sizes() << ", want "
           << toString(want.dtype()) << want.sizes();
  // Compare bits: NaN == NaN, -0 != 0.
  Tensor a = got.contiguous(), b = want.contiguous();
  if (std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got\n" << got << "\nwant\n" << want;
}

/// Softmax over rows of n as one kernel (max, exp, sum, division), its
/// output in `out_dt`, written in place of its input when `in_place`.
KernelSpec softmax_spec(int64_t rows, int64_t n, ScalarType out_dt = kFloat,
                        bool in_place = false) {
  KernelSpec k;
  k.shape = {rows, n};
  k.reduced = {false, true};
  int x = k.input(kFloat, {n, 1});
  int m = k.reduce(ReductionInfo::Amax, x, kFloat, kFloat, kFloat);
  int d = k.step(op("ember::sub.Tensor"), {x, m}, {Scalar(1)}, kFloat, kFloat);
  int e = k.step(op("ember::exp"), {d}, {}, kFloat, kFloat);
  int s = k.reduce(ReductionInfo::Sum, e, kFloat, kDouble, kFloat);
  int y = k.step(op("ember::div.Tensor"), {e, s}, {}, kFloat, kFloat);
  k.outputs = {out_dt == kFloat ? y : k.convert(y, out_dt)};
  if (in_place)
    k.output_inputs = {0};
  return k;
}

} // namespace

TEST(Codegen, FusedChainWithBroadcastEqualsEagerBitForBit) {
  // silu(x * w + b): w a row, b a column, x non-contiguous.
  NoGradGuard g;
  Tensor x = random({32, 40}, kFloat, 1).t(); // [40, 32], strides [1, 40]
  Tensor w = random({32}, kFloat, 2), b = random({40, 1}, kFloat, 3);
  KernelSpec k;
  k.shape = {40, 32};
  int vx = k.input(kFloat, strides_over(x, k.shape));
  int vw = k.input(kFloat, strides_over(w, k.shape));
  int vb = k.input(kFloat, strides_over(b, k.shape));
  int m = k.step(op("ember::mul.Tensor"), {vx, vw}, {}, kFloat, kFloat);
  int a = k.step(op("ember::add.Tensor"), {m, vb}, {Scalar(1)}, kFloat, kFloat);
  k.outputs = {k.step(op("ember::silu"), {a}, {}, kFloat, kFloat), m};
  auto outs = run(k, {x, w, b});
  EXPECT_TRUE(bit_equal(outs[0], nn::functional::silu(x * w + b)));
  EXPECT_TRUE(bit_equal(outs[1], (x * w).contiguous()));
}

TEST(Codegen, TranscendentalsAndSpecialValues) {
  NoGradGuard g;
  Tensor x = cat({random({1000}, kFloat, 4) * 10,
                  tensor({0.f, -0.f, 1e-40f, -1e-40f, 88.f, -104.f, 1e30f,
                          -1e30f, INFINITY, -INFINITY, NAN})});
  for (const char *op : {"ember::exp", "ember::log", "ember::tanh",
                         "ember::sigmoid", "ember::erf", "ember::expm1",
                         "ember::log1p", "ember::sqrt", "ember::_gelu_erf"}) {
    KernelSpec k;
    k.shape = {x.numel()};
    int v = k.input(kFloat, {1});
    k.outputs = {k.step(op_of(op), {v}, {}, kFloat, kFloat)};
    Tensor got = run(k, {x})[0];
    const OperatorHandle &h = Dispatcher::singleton().findSchemaOrThrow(op);
    Stack st{IValue(x)};
    h.callBoxed(st);
    EXPECT_TRUE(bit_equal(got, st[0].toTensor())) << op;
  }
}

TEST(Codegen, PromotionMasksAndSixteenBitFloats) {
  NoGradGuard g;
  Tensor i = random({64}, kInt, 5), h = random({64}, kHalf, 6),
         bf = random({64}, kBFloat16, 7), m = random({64}, kFloat, 8) > 0;
  KernelSpec k;
  k.shape = {64};
  int vi = k.input(kInt, {1}), vh = k.input(kHalf, {1}),
      vb = k.input(kBFloat16, {1}), vm = k.input(kBool, {1});
  // int32 + half -> half (computed in float, rounded to half)
  int s = k.step(op("ember::add.Tensor"), {vi, vh}, {Scalar(2)}, kHalf, kHalf);
  int e = k.step(op("ember::exp"), {s}, {}, kHalf, kHalf);
  // where(mask, bf16, half) -> float32? promote bf16 with half: float32
  int w = k.step(op("ember::where.self"), {vm, vb, e}, {}, kFloat, kFloat);
  int c = k.step(op("ember::gt.Tensor"), {w, vi}, {}, kFloat, kBool);
  int wrapped = k.constant(kDouble, Scalar(0.1)); // a wrapped number
  int r =
      k.step(op("ember::mul.Tensor"), {vb, wrapped}, {}, kBFloat16, kBFloat16);
  k.outputs = {s, e, w, c, r, k.convert(w, kChar)};
  auto outs = run(k, {i, h, bf, m});
  Tensor es = add(i, h, 2), ee = es.exp(), ew = where(m, bf, ee);
  EXPECT_TRUE(bit_equal(outs[0], es));
  EXPECT_TRUE(bit_equal(outs[1], ee));
  EXPECT_TRUE(bit_equal(outs[2], ew));
  EXPECT_TRUE(bit_equal(outs[3], ew > i));
  EXPECT_TRUE(bit_equal(outs[4], bf * 0.1));
  EXPECT_TRUE(bit_equal(outs[5], ew.to(kChar)));
}

TEST(Codegen, IntegerAndBoolArithmeticAsEager) {
  NoGradGuard g;
  Tensor a = random({50}, kChar, 9), b = random({50}, kChar, 10) + 100;
  KernelSpec k;
  k.shape = {50};
  int va = k.input(kChar, {1}), vb = k.input(kChar, {1});
  // int8 wraps as eager's does; remainder takes the divisor's sign.
  int mul = k.step(op("ember::mul.Tensor"), {va, vb}, {}, kChar, kChar);
  int rem = k.step(op("ember::remainder.Tensor"), {va, vb}, {}, kChar, kChar);
  int band =
      k.step(op("ember::bitwise_and.Tensor"), {va, vb}, {}, kChar, kChar);
  k.outputs = {mul, rem, band};
  Tensor nz = b.masked_fill(b == 0, 1);
  ASSERT_TRUE(nz.equal(b)); // no zero divisor: eager would raise
  auto outs = run(k, {a, b});
  EXPECT_TRUE(bit_equal(outs[0], a * b));
  EXPECT_TRUE(bit_equal(outs[1], a.remainder(b)));
  EXPECT_TRUE(bit_equal(outs[2], a.bitwise_and(b)));
}

TEST(Codegen, ZeroDimAndEmptySpaces) {
  NoGradGuard g;
  Tensor x = random({}, kFloat, 11);
  KernelSpec k;
  k.shape = {};
  int v = k.input(kFloat, {});
  k.outputs = {k.step(op("ember::neg"), {v}, {}, kFloat, kFloat)};
  EXPECT_TRUE(bit_equal(run(k, {x})[0], -x));

  KernelSpec e;
  e.shape = {3, 0};
  int ve = e.input(kFloat, {0, 1});
  e.outputs = {e.step(op("ember::relu"), {ve}, {}, kFloat, kFloat)};
  Tensor y = empty({0});
  EXPECT_EQ(run(e, {y})[0].sizes().vec(), std::vector<int64_t>({3, 0}));
}

TEST(Codegen, ContiguousFloatChainIsOneVectorLoopWithoutCalls) {
  // The optimized IR of gelu(x * w + b): vector arithmetic, the erf and exp
  // polynomials inlined (no call left), one store per element, no
  // intermediate buffer.
  KernelSpec k;
  k.shape = {1 << 16};
  int x = k.input(kFloat, {1}), w = k.input(kFloat, {1}),
      b = k.input(kFloat, {1});
  int m = k.step(op("ember::mul.Tensor"), {x, w}, {}, kFloat, kFloat);
  int a = k.step(op("ember::add.Tensor"), {m, b}, {Scalar(1)}, kFloat, kFloat);
  k.outputs = {k.step(op("ember::_gelu_erf"), {a}, {}, kFloat, kFloat)};
  codegen::CompileKernelOptions o;
  o.keep_ir = true;
  CompiledKernel c = compile_kernel(k, o);
  const std::string &ir = c.llvm_ir;
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos) << ir; // kLanes
  // Every call left is an LLVM intrinsic (fma, fabs...), none a function.
  for (size_t p = ir.find("call "); p != std::string::npos;
       p = ir.find("call ", p + 1)) {
    size_t at = ir.find('@', p), eol = ir.find('\n', p);
    ASSERT_LT(at, eol);
    EXPECT_EQ(ir.compare(at, 6, "@llvm."), 0) << ir.substr(p, eol - p);
  }
  EXPECT_EQ(ir.find("alloca"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("define internal"), std::string::npos); // library gone
  EXPECT_LT(c.compile_seconds, 1.0);
}

TEST(Codegen, UnknownOpIsAClearError) {
  KernelSpec k;
  k.shape = {4};
  int x = k.input(kFloat, {1});
  k.outputs = {k.step(op("ember::mm"), {x, x}, {}, kFloat, kFloat)};
  try {
    compile_kernel(k);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("ember_pw_mm_f32"), std::string::npos)
        << e.what();
  }
}

TEST(Codegen, ReductionReadsAnExpandedInputByItsExtent) {
  // Note [Reduction kernels]: a value spans a folded dim by its extent,
  // whatever its strides: an expanded input (stride 0 along the folded dim)
  // still gives a full value, stored at every point.
  KernelSpec k;
  k.shape = {3, 4};
  k.reduced = {true, false};
  Tensor row = random({1, 4}, kFloat, 3);
  int x = k.input(kFloat, {0, 1}, {3, 4});
  int two = k.constant(kFloat, Scalar(2.0));
  int m = k.step(op("ember::mul.Tensor"), {x, two}, {}, kFloat, kFloat);
  int s = k.reduce(ReductionInfo::Sum, m, kFloat, kDouble, kFloat);
  k.outputs = {s, m};
  EXPECT_TRUE(k.is_full(x) && k.is_full(m) && !k.is_full(s));
  CompiledKernel c = compile_kernel(k);
  Tensor sum = full({4}, -1.0f), prod = full({3, 4}, -1.0f);
  std::vector<char *> ptrs{static_cast<char *>(sum.data_ptr()),
                           static_cast<char *>(prod.data_ptr()),
                           static_cast<char *>(row.data_ptr())};
  c.run(ptrs.data());
  EXPECT_TRUE(bit_equal(prod, (row * 2).expand({3, 4}).contiguous()));
  EXPECT_TRUE(bit_equal(sum, (row * 2).expand({3, 4}).sum(0)));
}

TEST(Codegen, FullReductionsSplitAcrossThreads) {
  // Note [Split reductions]: a fold with few outputs and many points per
  // output is split into parts (a partial kernel over [P, kept...], then a
  // combine); the results are eager's: sums accumulate in double, a mean
  // divides by the whole count, amax keeps NaN.
  KernelSpec k;
  k.shape = {300, 257};
  k.reduced = {true, true};
  Tensor x = random({300, 257}, kFloat, 4);
  x.index_put_({7, 9}, std::numeric_limits<float>::quiet_NaN());
  Tensor y = random({300, 257}, kFloat, 5).t().contiguous().t(); // strided
  int a = k.input(kFloat, x.strides().vec());
  int b = k.input(kFloat, y.strides().vec());
  int e = k.step(op("ember::exp"), {b}, {}, kFloat, kFloat);
  k.outputs = {k.reduce(ReductionInfo::Sum, e, kFloat, kDouble, kFloat),
               k.reduce(ReductionInfo::Mean, e, kFloat, kDouble, kFloat),
               k.reduce(ReductionInfo::Amax, a, kFloat, kFloat, kFloat),
               k.reduce(ReductionInfo::Amin, b, kFloat, kFloat, kFloat)};
  CompiledKernel c = compile_kernel(k);
  ASSERT_TRUE(c.combine) << "not split";
  EXPECT_EQ(c.numel, 4); // 300 folded dim in 4 parts of 75 rows
  EXPECT_EQ(c.partial_bytes, (std::vector<int64_t>{32, 32, 16, 16}));
  std::vector<Tensor> want = {y.exp().sum(), y.exp().mean(), x.amax(),
                              y.amin()};
  std::vector<Tensor> got;
  std::vector<char *> ptrs;
  for (size_t o = 0; o < 4; ++o) {
    got.push_back(full({}, -1.0f));
    ptrs.push_back(static_cast<char *>(got.back().data_ptr()));
  }
  ptrs.push_back(static_cast<char *>(x.data_ptr()));
  ptrs.push_back(static_cast<char *>(y.data_ptr()));
  c.run(ptrs.data());
  EXPECT_TRUE(std::isnan(got[2].item<float>()));
  for (size_t o = 0; o < 4; ++o)
    EXPECT_TRUE(allclose(got[o], want[o], 1e-6, 1e-6, /*equal_nan=*/true))
        << o << ": " << got[o] << " vs " << want[o];

  // Kept points: a sum over dim 0 of [40000, 3] (3 outputs, 2 parts).
  KernelSpec r;
  r.shape = {40000, 3};
  r.reduced = {true, false};
  Tensor i = random({40000, 3}, kInt, 6);
  int in = r.input(kInt, {3, 1});
  r.outputs = {r.reduce(ReductionInfo::Sum, in, kInt, kLong, kLong)};
  Tensor out = full({3}, int64_t(-1));
  std::vector<char *> rp{static_cast<char *>(out.data_ptr()),
                         static_cast<char *>(i.data_ptr())};
  CompiledKernel rc = compile_kernel(r);
  ASSERT_TRUE(rc.combine);
  EXPECT_EQ(rc.numel, 6); // 40000 rows folded in 2 parts, 3 outputs each
  rc.run(rp.data());
  EXPECT_TRUE(bit_equal(out, i.sum(0)));

  // Not split: a fold feeding a pointwise step, and a prime folded dim.
  KernelSpec n;
  n.shape = {300, 257};
  n.reduced = {true, true};
  int s = n.reduce(ReductionInfo::Sum, n.input(kFloat, {257, 1}), kFloat,
                   kDouble, kFloat);
  n.outputs = {n.step(op("ember::exp"), {s}, {}, kFloat, kFloat)};
  EXPECT_FALSE(compile_kernel(n).combine);
  KernelSpec p;
  p.shape = {257, 300};
  p.reduced = {true, true};
  p.outputs = {p.reduce(ReductionInfo::Sum, p.input(kFloat, {300, 1}), kFloat,
                        kDouble, kFloat)};
  EXPECT_FALSE(compile_kernel(p).combine);
}

TEST(Codegen, LargeColumnReductionsSplitIntoRowBlocks) {
  // Note [Split reductions]: the CPU splits a large column layout (the
  // innermost dim kept: a weight gradient over a batch) into parts of 64
  // rows; the results are eager's. A small one runs as one kernel.
  KernelSpec k;
  k.shape = {1024, 1024};
  k.reduced = {true, false};
  Tensor x = random({1024, 1024}, kFloat, 7), g = random({1024}, kFloat, 8);
  int vx = k.input(kFloat, {1024, 1}), vg = k.input(kFloat, {0, 1});
  int p = k.step(op("ember::mul.Tensor"), {vx, vg}, {}, kFloat, kFloat);
  k.outputs = {k.reduce(ReductionInfo::Sum, p, kFloat, kDouble, kFloat),
               k.reduce(ReductionInfo::Amax, vx, kFloat, kFloat, kFloat)};
  std::optional<codegen::SplitSpecs> split =
      codegen::split_reduction(k, codegen::kCpuSplit);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->parts, 16);
  CompiledKernel c = compile_kernel(k);
  ASSERT_TRUE(c.combine) << "not split";
  Tensor sum = full({1024}, -1.0f), amax = full({1024}, -1.0f);
  std::vector<char *> ptrs{
      static_cast<char *>(sum.data_ptr()), static_cast<char *>(amax.data_ptr()),
      static_cast<char *>(x.data_ptr()), static_cast<char *>(g.data_ptr())};
  c.run(ptrs.data());
  EXPECT_TRUE(allclose(sum, (x * g).sum(0), 1e-5, 1e-5));
  EXPECT_TRUE(bit_equal(amax, x.amax(0)));
  k.shape = {200, 100};
  k.inputs[0].strides = {100, 1};
  EXPECT_FALSE(codegen::split_reduction(k, codegen::kCpuSplit).has_value());
}

// Note [Fusion size]: an op weighs its library function's size relative to
// add's; an opaque call (libm's sin behind llvm.sin) counts as much as a
// polynomial. A chain of expensive ops is cut into more kernels than one
// of adds, so no kernel takes seconds to compile.
TEST(Codegen, FusionWeightsFollowTheScalarLibrary) {
  auto op = [](const char *name) -> const OperatorHandle & {
    return Dispatcher::singleton().findSchemaOrThrow(name);
  };
  EXPECT_EQ(codegen::pointwise_weight(op("ember::add.Tensor"), kFloat), 1);
  EXPECT_EQ(codegen::pointwise_weight(op("ember::mul.Tensor"), kHalf), 1);
  EXPECT_GE(codegen::pointwise_weight(op("ember::exp"), kFloat), 8);
  EXPECT_GE(codegen::pointwise_weight(op("ember::sin"), kFloat), 8);
  EXPECT_GE(codegen::pointwise_weight(op("ember::sin"), kDouble), 8);
  NoGradGuard no_grad;
  auto kernels = [](auto step) {
    auto f = compile([step](const Tensor &x) {
      Tensor y = x;
      for (int i = 0; i < 2000; ++i)
        y = step(y);
      return y;
    });
    f(randn({8}));
    return f.explain().graphs.at(0).kernel_list.size();
  };
  EXPECT_EQ(kernels([](const Tensor &y) { return y + 0.5; }), 1u);
  EXPECT_GE(kernels([](const Tensor &y) { return sin(y); }), 4u);
}

TEST(Codegen, RowCacheLivesInTheOutputWhenItCan) {
  // Note [Row cache]: softmax's exps, needed by the sum's loop and the
  // division's, are kept in the output's row when the output is a fresh
  // float buffer; in place of the input (the division reads the cache
  // while writing the input's row) or in float16 they go to a stack
  // buffer. Each way the result is softmax.
  Tensor x = random({5, 777}, kFloat, 21);
  Tensor want = x.softmax(1);
  for (auto [dt, in_place, stack_buffer] :
       {std::tuple{kFloat, false, false}, std::tuple{kFloat, true, true},
        std::tuple{kHalf, false, true}}) {
    SCOPED_TRACE(std::string(toString(dt)) + (in_place ? " in place" : ""));
    KernelSpec k = softmax_spec(5, 777, dt, in_place);
    codegen::CompileKernelOptions o;
    o.keep_ir = true;
    CompiledKernel c = compile_kernel(k, o);
    EXPECT_EQ(c.llvm_ir.find("alloca") != std::string::npos, stack_buffer)
        << c.llvm_ir;
    Tensor in = x.clone();
    Tensor out = in_place ? in : empty({5, 777}, TensorOptions(dt));
    std::vector<char *> ptrs{static_cast<char *>(out.data_ptr()),
                             static_cast<char *>(in.data_ptr())};
    c.run(ptrs.data());
    const double tol = dt == kHalf ? 1e-3 : 1e-6;
    EXPECT_TRUE(allclose(out.to(kFloat), want, tol, tol * 0.1));
  }
}

// A float out of an 8- or 16-bit integer's range converts through int32 in
// the compiled kernel as in eager (eager/Convert.h): the vectorized loop of
// 128 doubles once saturated instead (found by a probe: -5.09 -> uint8 gave
// 0 where eager gives 251).
TEST(Codegen, NarrowIntegerConversionsOfFloatsAsEager) {
  NoGradGuard g;
  Tensor base = tensor(
      {-5.09, 300.5, 1e5, -70000.2, 3.0, 255.9, -1.0, 40000.7, -129.5, 127.9});
  for (ScalarType from : {kDouble, kFloat, kHalf})
    for (ScalarType to : {kByte, kChar, kShort}) {
      Tensor x = base.repeat({13}).to(from);
      KernelSpec k;
      k.shape = {x.numel()};
      int v = k.input(from, {1});
      k.outputs = {k.convert(v, to)};
      EXPECT_TRUE(bit_equal(run(k, {x})[0], x.to(to)))
          << toString(from) << " -> " << toString(to);
    }
}

// Note [Blocked float sums]: a row's float sum runs in float over chunks of
// kChunk points and adds each chunk's sum in double, so a long row loses no
// more than a short one. A row of 2^22 values 1 + 2^-10 sums exactly in
// double; summed in float per lane, each lane's partial passes 2^14 where
// the spacing of floats (2^-9) can no longer hold the 2^-10, and every
// further addition rounds the same way (about 1e-4 relative). Rows whose
// length is no multiple of the chunk, a mean and float16 too: the float
// partials cost a few ulps (below 5e-7 relative for positive values), as
// PyTorch's float sums do; rows ending in a partial run, and partials that
// overflow where the double sum does not, as the probe found them.
TEST(Codegen, LongFloatSumsAreBlocked) {
  // The fold feeds a step (times one), so that one long row is not split
  // into parts (Note [Split reductions]) but folded by one block.
  auto row_fold = [](ReductionInfo::Kind fold, ScalarType dt, int64_t rows,
                     int64_t n) {
    KernelSpec k;
    k.shape = {rows, n};
    k.reduced = {false, true};
    int x = k.input(dt, {n, 1});
    int s = k.reduce(fold, x, dt, kDouble, dt);
    int one = k.constant(dt, Scalar(1));
    k.outputs = {k.step(op("ember::mul.Tensor"), {s, one}, {},
                        dt == kDouble ? kDouble : kFloat, dt)};
    return k;
  };
  // run() gives outputs of the kernel's shape: a fold's are its first rows.
  auto folded = [&](ReductionInfo::Kind fold, const Tensor &x) {
    Tensor out =
        run(row_fold(fold, x.scalar_type(), x.size(0), x.size(1)), {x})[0];
    return out.flatten().slice(0, 0, x.size(0));
  };
  const int64_t big = int64_t(1) << 22;
  Tensor ones = full({1, big}, 1.0f + 1.0f / 1024);
  EXPECT_EQ(folded(ReductionInfo::Sum, ones).item<float>(),
            float(double(big) * (1.0 + 1.0 / 1024)));

  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(1024), int64_t(1025),
                    int64_t(5000), int64_t(70001)}) {
    SCOPED_TRACE(n);
    Tensor x = random({3, n}, kFloat, 30 + uint64_t(n)).abs() + 1;
    Tensor want = x.to(kDouble).sum(1);
    EXPECT_TRUE(
        allclose(folded(ReductionInfo::Sum, x).to(kDouble), want, 5e-7, 0));
    EXPECT_TRUE(allclose(folded(ReductionInfo::Mean, x).to(kDouble),
                         want / double(n), 5e-7, 0));
    Tensor h = x.to(kHalf);
    EXPECT_TRUE(bit_equal(folded(ReductionInfo::Sum, h),
                          h.to(kDouble).sum(1).to(kHalf)));
  }

  // Found by a probe: a row's last points (n % 64) were added in float to
  // the chunk's large partial, 26 ulps off for n = 1023 (now in double: at
  // most 1 ulp, at any length).
  for (int64_t n : {int64_t(958), int64_t(1023), int64_t(2047)}) {
    SCOPED_TRACE(n);
    Tensor c = full({1, n}, 0.15f);
    float want = float(double(0.15f) * double(n));
    float got = folded(ReductionInfo::Sum, c).item<float>();
    EXPECT_LE(std::fabs(got - want), std::nextafter(want, 1e9f) - want);
  }
  // A float partial that overflows where the double sum is finite (values
  // near FLT_MAX) sums its chunk again in double: finite as eagerly; a
  // chunk holding inf or NaN gives what the double sum gives.
  for (int64_t n : {int64_t(64), int64_t(1024), int64_t(5000)}) {
    SCOPED_TRACE(n);
    Tensor big = full({1, n}, 1e37f);
    EXPECT_EQ(folded(ReductionInfo::Mean, big).item<float>(), 1e37f);
    Tensor mixed = zeros({3, n});
    for (int64_t i : {int64_t(0), int64_t(16), int64_t(33)})
      mixed.index_put_({0, i}, i == 33 ? -3e38f : 3e38f);
    mixed.index_put_({1, n / 2}, std::numeric_limits<float>::infinity());
    mixed.index_put_({2, n - 1}, std::numeric_limits<float>::quiet_NaN());
    Tensor s = folded(ReductionInfo::Sum, mixed);
    EXPECT_EQ(s[0].item<float>(), 3e38f);
    EXPECT_EQ(s[1].item<float>(), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(s[2].item<float>()));
  }
}

// Note [Streaming stores] (codegen/CpuJit.cpp): a full output of at least 16
// MiB, written once, is stored with streaming stores where its address is
// aligned, and with plain stores where not; a small output, one written in
// place of an input, or one holding a row cache is never streamed. The
// results are the same whichever way each vector went.
TEST(Codegen, LargeOutputsAreStreamedWhereAligned) {
  auto streams = [](const CompiledKernel &c) {
    return c.llvm_ir.find("!nontemporal") != std::string::npos;
  };
  // y = x * 3 + 1 over rows of 1031 (no multiple of the vector width, so
  // most rows start unaligned), 4100 rows: 16.1 MiB of floats.
  auto affine = [](int64_t rows, int64_t n, bool in_place) {
    KernelSpec k;
    k.shape = {rows, n};
    int x = k.input(kFloat, {n, 1});
    int three = k.constant(kFloat, Scalar(3.0));
    int m = k.step(op("ember::mul.Tensor"), {x, three}, {}, kFloat, kFloat);
    int one = k.constant(kFloat, Scalar(1.0));
    k.outputs = {
        k.step(op("ember::add.Tensor"), {m, one}, {Scalar(1)}, kFloat, kFloat)};
    if (in_place)
      k.output_inputs = {0};
    return k;
  };
  codegen::CompileKernelOptions keep;
  keep.keep_ir = true;
  Tensor x = random({4100, 1031}, kFloat, 40);
  Tensor want = x * 3 + 1;
  CompiledKernel big = compile_kernel(affine(4100, 1031, false), keep);
  EXPECT_TRUE(streams(big));
  EXPECT_NE(big.llvm_ir.find("sfence"), std::string::npos);
  for (int64_t shift : {0, 1, 3}) {
    SCOPED_TRACE(shift); // the output's address, 4 * shift bytes past 64
    Tensor buf = full({4100 * 1031 + 16}, -1.0f);
    Tensor out = buf.slice(0, shift, shift + 4100 * 1031).view({4100, 1031});
    std::vector<char *> ptrs{static_cast<char *>(out.data_ptr()),
                             static_cast<char *>(x.data_ptr())};
    big.run(ptrs.data());
    EXPECT_TRUE(bit_equal(out, want));
    EXPECT_EQ(buf[shift + 4100 * 1031].item<float>(), -1.0f);
    if (shift > 0) {
      EXPECT_EQ(buf[shift - 1].item<float>(), -1.0f);
    }
  }
  EXPECT_FALSE(streams(compile_kernel(affine(100, 1031, false), keep)));
  EXPECT_FALSE(streams(compile_kernel(affine(4100, 1031, true), keep)));

  // A reduction kernel's full output (x - mean(x) over rows of 4096) is
  // streamed; softmax's, which holds the exps between its loops, is not.
  KernelSpec c;
  c.shape = {1025, 4096};
  c.reduced = {false, true};
  int cx = c.input(kFloat, {4096, 1});
  int mean = c.reduce(ReductionInfo::Mean, cx, kFloat, kDouble, kFloat);
  c.outputs = {
      c.step(op("ember::sub.Tensor"), {cx, mean}, {Scalar(1)}, kFloat, kFloat)};
  CompiledKernel centred = compile_kernel(c, keep);
  EXPECT_TRUE(streams(centred));
  Tensor r = random({1025, 4096}, kFloat, 41);
  Tensor got = empty({1025, 4096});
  std::vector<char *> rp{static_cast<char *>(got.data_ptr()),
                         static_cast<char *>(r.data_ptr())};
  centred.run(rp.data());
  EXPECT_TRUE(allclose(got, r - r.mean(1, true), 1e-5, 1e-5));

  EXPECT_FALSE(streams(compile_kernel(softmax_spec(1025, 4096), keep)));
}
