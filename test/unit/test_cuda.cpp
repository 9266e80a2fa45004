// CUDA: the device, streams, events, the caching allocator on the driver,
// copies between devices and the eager pointwise kernels generated from the
// op table (Note [CUDA pointwise kernels] in eager/cuda/Pointwise.h).
//
// Without a GPU (every CI machine) the tests that need one skip with the
// reason, and the rest run: every pointwise op's kernel source compiles
// under NVRTC (no GPU needed for that), and CUDA tensors raise clear errors.
// With a GPU, every pointwise op of the OpInfo table runs on CUDA tensors
// against its float64 reference, as test_pointwise runs it on the CPU.
#include "CudaTestUtil.h"
#include "OpInfo.h"
#include "TestUtil.h"
#include "eager/cuda/Index.h"
#include "eager/cuda/Pointwise.h"
#include "eager/cuda/Softmax.h"
#include "eager/cuda/Sort.h"
#include "eager/generated/NativeFunctions.h"
#include "runtime/CudaAllocator.h"
#include "runtime/Nvrtc.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

using namespace ember;
using namespace ember::test;

namespace {

/// `t` on the GPU with its layout kind: a non-contiguous tensor stays
/// non-contiguous there.
Tensor gpu(const Tensor &t) {
  Tensor g = t.cuda();
  return t.is_contiguous() ? g : noncontiguous(g);
}

std::vector<Tensor> gpu(const std::vector<Tensor> &in) {
  std::vector<Tensor> g;
  for (const Tensor &t : in)
    g.push_back(gpu(t));
  return g;
}

bool same_values(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return false;
  std::vector<double> x = values(a), y = values(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))))
      return false;
  return true;
}

} // namespace

// --- without a GPU
// ------------------------------------------------------------

TEST(CudaNoGpu, TensorsRaiseClearErrors) {
  if (cuda::is_available())
    GTEST_SKIP() << "a GPU is present: the no-GPU errors are not reachable";
  const char *msg = "CUDA is not available";
  EXPECT_EMBER_ERROR(zeros({2}, Device(kCUDA)), msg);
  EXPECT_EMBER_ERROR(empty({2}, TensorOptions().device(Device("cuda:0"))), msg);
  EXPECT_EMBER_ERROR(randn({2}, TensorOptions().device(kCUDA)), msg);
  EXPECT_EMBER_ERROR(arange(3, TensorOptions().device(kCUDA)), msg);
  EXPECT_EMBER_ERROR(ones({2}).cuda(), msg);
  EXPECT_EMBER_ERROR(ones({2}).to(kCUDA), msg);
  EXPECT_EMBER_ERROR(cuda::synchronize(), msg);
  EXPECT_EMBER_ERROR(cuda::current_device(), msg);
  EXPECT_EMBER_ERROR(cuda::getCurrentCUDAStream(), msg);
  EXPECT_EMBER_ERROR(ones({2}).pin_memory(), "needs CUDA");
  EXPECT_FALSE(ones({2}).is_pinned());
}

// Every pointwise op's CUDA kernel, for a float, an integer and a bool
// dtype where the op takes them, compiles under NVRTC for sm_90 (PTX: no
// GPU needed). All kernels go into one program, so that NVRTC reads the
// prelude once.
// The TF32 switch is a setting, on any machine
// (torch.set_float32_matmul_precision's strings).
TEST(CudaNoGpu, MatmulPrecisionSetting) {
  EXPECT_FALSE(cuda::allow_tf32());
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  set_float32_matmul_precision("medium");
  EXPECT_TRUE(cuda::allow_tf32());
  EXPECT_EQ(get_float32_matmul_precision(), "medium");
  cuda::set_allow_tf32(true); // (already allowed: stays "medium")
  EXPECT_EQ(get_float32_matmul_precision(), "medium");
  set_float32_matmul_precision("highest");
  EXPECT_FALSE(cuda::allow_tf32());
  EXPECT_EMBER_ERROR(set_float32_matmul_precision("fast"),
                     "invalid precision \"fast\"");
  EXPECT_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(true);
  EXPECT_EQ(get_float32_matmul_precision(), "high");
  cuda::set_allow_tf32(false);
}

TEST(CudaNoGpu, EveryPointwiseKernelCompilesUnderNvrtc) {
  REQUIRE_NVRTC();
  std::string all = cuda::prelude();
  int kernels = 0;
  std::set<std::tuple<int, int, unsigned>> signatures;
  for (const cuda::Functor &f : cuda::pointwise_functors()) {
    const meta::PointwiseSpec *spec = f.spec;
    ASSERT_TRUE(spec) << f.name;
    all += cuda::functor_source(f);
    for (ScalarType dt : {kFloat, kDouble, kLong, kInt, kChar, kBool}) {
      if (!in_group(dt, f.group))
        continue;
      ScalarType out = spec->promote == meta::Promote::Compare ||
                               spec->promote == meta::Promote::Bool
                           ? kBool
                           : dt;
      if (spec->promote == meta::Promote::Float && !isFloatingType(dt))
        continue;
      std::vector<ScalarType> dtypes{out};
      for (int k = 0; k < f.arity; ++k)
        dtypes.push_back(((spec->bool_args >> k) & 1u) ? kBool : dt);
      all += cuda::pointwise_kernel(f, dt, dtypes, spec->bool_args,
                                    "k" + std::to_string(kernels++));
      // The other variants differ in index arithmetic only: once per kind
      // of signature (arity, scalars, bool arguments).
      if (dt == kFloat &&
          signatures.insert({f.arity, f.nscalars, spec->bool_args}).second)
        for (cuda::KernelShape shape :
             {cuda::KernelShape{true, true}, cuda::KernelShape{false, false},
              cuda::KernelShape{false, true}})
          all += cuda::pointwise_kernel(f, dt, dtypes, spec->bool_args,
                                        "k" + std::to_string(kernels++), shape);
    }
  }
  EXPECT_GT(kernels, 200);
  cuda::nvrtc::Compiled c = cuda::nvrtc::compile(all, "all.cu", 90, false);
  EXPECT_FALSE(c.cubin);
  EXPECT_NE(c.binary.find(".entry k0"), std::string::npos);
  EXPECT_NE(c.binary.find(".entry k" + std::to_string(kernels - 1)),
            std::string::npos);
}

// A kernel's source is complete on its own: the prelude, the functor and
// the loop with the dtypes fixed (what get_kernel compiles).
TEST(CudaNoGpu, KernelSourceNamesItsTypes) {
  REQUIRE_NVRTC();
  const cuda::Functor *add = nullptr;
  for (const cuda::Functor &f : cuda::pointwise_functors())
    if (std::string(f.name) == "add_Tensor_op")
      add = &f;
  ASSERT_TRUE(add);
  std::string src =
      cuda::pointwise_source(*add, kFloat, {kHalf, kHalf, kFloat}, 0);
  EXPECT_NE(src.find("return self + alpha * other;"), std::string::npos);
  EXPECT_NE(src.find("convert<::ember::Half>"), std::string::npos);
  cuda::nvrtc::Compiled c = cuda::nvrtc::compile(src, "add.cu", 90, true);
  EXPECT_TRUE(c.cubin);
  EXPECT_GT(c.binary.size(), 100u);
  // A bad source raises with NVRTC's log.
  EXPECT_EMBER_ERROR(
      cuda::nvrtc::compile("this is not C++", "bad.cu", 90, false),
      "NVRTC could not compile");
}

// --- with a GPU
// ----------------------------------------------------------------

TEST(Cuda, DevicesAndProperties) {
  REQUIRE_GPU();
  EXPECT_GE(cuda::device_count(), 1);
  cuda::DeviceProperties p = cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 5);
  EXPECT_GT(p.total_memory, size_t(1) << 30);
  std::printf("[ INFO     ] %s, sm_%d%d, %d SMs, %.1f GiB\n", p.name.c_str(),
              p.major, p.minor, p.multi_processor_count,
              double(p.total_memory) / double(1 << 30));
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EMBER_ERROR(cuda::set_device(cuda::device_count()),
                     "invalid CUDA device index");
  {
    cuda::CUDAGuard g(0);
    EXPECT_EQ(cuda::current_device(), 0);
  }
}

TEST(Cuda, CopiesRoundTripEveryDtypeAndLayout) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kShort,
                        kChar, kByte, kBool}) {
    Tensor a = random({5, 7}, dt, 3);
    Tensor g = a.cuda();
    EXPECT_TRUE(g.is_cuda());
    EXPECT_EQ(g.device(), Device(kCUDA, 0));
    EXPECT_EQ(g.dtype(), dt);
    EXPECT_TRUE(same_values(g.cpu(), a)) << dt;
    // Non-contiguous on either side, and conversions on the way.
    EXPECT_TRUE(same_values(a.t().cuda().cpu(), a.t())) << dt;
    EXPECT_TRUE(same_values(g.t().cpu(), a.t())) << dt;
    EXPECT_TRUE(same_values(g.to(kDouble).cpu(), a.to(kDouble))) << dt;
    EXPECT_TRUE(same_values(a.cuda().to(kHalf).cpu(), a.to(kHalf))) << dt;
    Tensor dst = zeros({7, 5}, TensorOptions(dt).device(kCUDA)).t();
    dst.copy_(a);
    EXPECT_TRUE(same_values(dst.cpu(), a)) << dt;
    Tensor host = zeros({7, 5}, dt).t();
    host.copy_(g);
    EXPECT_TRUE(same_values(host, a)) << dt;
  }
  // Broadcasting copies, 0-dim and empty tensors.
  Tensor row = random({7}, kFloat, 4);
  Tensor dst = empty({3, 7}, TensorOptions().device(kCUDA));
  dst.copy_(row);
  EXPECT_TRUE(same_values(dst.cpu(), row.expand({3, 7})));
  dst.copy_(row.cuda());
  EXPECT_TRUE(same_values(dst.cpu(), row.expand({3, 7})));
  Tensor s = tensor(2.5).cuda();
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 2.5);
  EXPECT_EQ(empty({0, 3}).cuda().cpu().sizes(), IntArrayRef({0, 3}));
}

TEST(Cuda, FactoriesOnTheDevice) {
  REQUIRE_GPU();
  TensorOptions o = TensorOptions().device(kCUDA);
  EXPECT_TRUE(same_values(zeros({2, 3}, o).cpu(), zeros({2, 3})));
  EXPECT_TRUE(same_values(ones({4}, o.dtype(kHalf)).cpu(), ones({4}, kHalf)));
  EXPECT_TRUE(
      same_values(full({3}, 7, o.dtype(kLong)).cpu(), full({3}, 7, kLong)));
  EXPECT_TRUE(same_values(arange(10, o).cpu(), arange(10)));
  EXPECT_TRUE(same_values(linspace(0, 1, 5, o).cpu(), linspace(0, 1, 5)));
  EXPECT_TRUE(same_values(eye(3, o).cpu(), eye(3)));
  EXPECT_TRUE(same_values(tensor({1, 2, 3}, o).cpu(), tensor({1, 2, 3})));
  // The same seed draws the same numbers on every device.
  manual_seed(5);
  Tensor a = randn({100}, o);
  manual_seed(5);
  Tensor b = randn({100});
  EXPECT_TRUE(same_values(a.cpu(), b));
  // Filling checks the value against the dtype, as on the CPU.
  EXPECT_EMBER_ERROR(full({2}, 300, o.dtype(kByte)), "");
}

TEST(Cuda, PrintsItsDevice) {
  REQUIRE_GPU();
  std::ostringstream s;
  s << tensor({3.f, 5.f, 7.f}).cuda();
  EXPECT_EQ(s.str(), "tensor([3., 5., 7.], device='cuda:0')");
}

TEST(Cuda, MixingDevicesRaisesPyTorchsMessage) {
  REQUIRE_GPU();
  Tensor g = ones({3}).cuda(), c = ones({3});
  EXPECT_EMBER_ERROR(g + c, "Expected all tensors to be on the same device, "
                            "but found at least two devices, cuda:0 and cpu!");
  EXPECT_EMBER_ERROR(c + g, "but found at least two devices, cuda:0 and cpu!");
  // A CPU 0-dim tensor joins CUDA tensors (as PyTorch reads it as a scalar);
  // the result is on the GPU.
  Tensor r = g * tensor(2.0f);
  EXPECT_TRUE(r.is_cuda());
  EXPECT_TRUE(same_values(r.cpu(), full({3}, 2.0f)));
  Tensor r2 = tensor(2.0f) * g;
  EXPECT_TRUE(r2.is_cuda());
  // (every op of the table runs on CUDA tensors: the README's coverage)
  EXPECT_TRUE(same_values(g.cumsum(0).cpu(), c.cumsum(0)));
}

// Every pointwise op of the OpInfo table on CUDA tensors against its
// float64 reference, on every dtype the entry lists and every shape sample
// (same shape, non-contiguous, broadcast, 0-dim, empty).
TEST(Cuda, EveryPointwiseOpMatchesItsReference) {
  REQUIRE_GPU();
  uint64_t seed = 1;
  int checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    for (ScalarType dt : o->dtypes)
      for (const ShapeSample &s : pointwise_shapes(o->arity)) {
        if (s.label != "same shape" && dt != o->dtypes.front())
          continue;
        std::vector<Tensor> in = make_inputs(*o, s, dt, seed++);
        Tensor out;
        try {
          out = o->op(gpu(in));
        } catch (const Error &e) {
          ADD_FAILURE() << o->name << " on " << dt << " (" << s.label
                        << "): " << e.what();
          continue;
        }
        EXPECT_TRUE(out.is_cuda()) << o->name;
        EXPECT_TRUE(matches_reference(*o, out.cpu(), in, dt))
            << o->name << " on CUDA, " << dt << " (" << s.label << ")";
        ++checked;
      }
  }
  EXPECT_GT(checked, 300);
}

// In-place forms write into a (non-contiguous) CUDA self; scalar forms
// take a Scalar.
TEST(Cuda, InPlaceAndScalarForms) {
  REQUIRE_GPU();
  uint64_t seed = 900;
  int checked = 0;
  for (const OpInfo *o : pointwise_op_infos()) {
    ScalarType dt = o->dtypes.front();
    if (o->op_ && o->result_dtype(dt) == dt) {
      std::vector<Tensor> in = make_inputs(*o, pointwise_shapes(o->arity)[1],
                                           dt, seed++); // non-contiguous
      std::vector<Tensor> g = gpu(in);
      Tensor self = g[0];
      Tensor out = o->op_(g);
      EXPECT_TRUE(out.is_same(self)) << o->inplace;
      EXPECT_TRUE(matches_reference(*o, self.cpu(), in, dt)) << o->inplace;
      ++checked;
    }
    if (o->scalar) {
      Tensor a = sample_input({4, 5}, dt, o->domain, seed++);
      Tensor b = sample_input({}, dt, o->domain, seed++);
      EXPECT_TRUE(matches_reference(*o, o->scalar(a.cuda(), b.item()).cpu(),
                                    {a, b}, dt))
          << o->short_name() << " with a Scalar";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(Cuda, PointwiseSemanticsMatchTheCpu) {
  REQUIRE_GPU();
  // NaN propagation, signed zeros, Python's remainder and floor division,
  // round half to even, integer wrap-around: exactly the CPU's results.
  Tensor a = tensor({NAN, 1.f, -0.f, 0.f, 2.5f, -2.5f, 3.5f, -7.f});
  Tensor b = tensor({1.f, NAN, 0.f, -0.f, 2.f, 2.f, -2.f, 3.f});
  using Fn = std::function<Tensor(const Tensor &, const Tensor &)>;
  std::vector<Fn> fns = {
      [](const Tensor &x, const Tensor &y) { return maximum(x, y); },
      [](const Tensor &x, const Tensor &y) { return minimum(x, y); },
      [](const Tensor &x, const Tensor &y) { return remainder(x, y); },
      [](const Tensor &x, const Tensor &y) { return div(x, y, "floor"); },
      [](const Tensor &x, const Tensor &) { return round(x); },
      [](const Tensor &x, const Tensor &) { return sign(x); }};
  for (const Fn &f : fns)
    EXPECT_TRUE(same_values(f(a.cuda(), b.cuda()).cpu(), f(a, b)));
  Tensor i = tensor({INT64_MAX, INT64_MIN, -7, 7}, kLong);
  Tensor j = tensor({1, -1, 2, -2}, kLong);
  EXPECT_TRUE(same_values((i.cuda() + j.cuda()).cpu(), i + j));
  EXPECT_TRUE(
      same_values(div(i.cuda(), j.cuda(), "floor").cpu(), div(i, j, "floor")));
  EXPECT_TRUE(
      same_values(remainder(i.cuda(), j.cuda()).cpu(), remainder(i, j)));
  // Integer division by zero raises, as on the CPU.
  EXPECT_EMBER_ERROR(div(i.cuda(), zeros({4}, kLong).cuda(), "floor"),
                     "ZeroDivisionError");
}

// mm, addmm, bmm, baddbmm (and matmul and linear, built on them) through
// cuBLAS, against float64 products on the CPU: every float dtype, operands
// transposed or not, batches, K = 0, empty results (Note [cuBLAS
// precision]: float32 stays float32, no TF32).
TEST(Cuda, MatrixProductsThroughCublas) {
  REQUIRE_GPU();
  auto rel_err = [](const Tensor &got, const Tensor &want) {
    Tensor g = got.cpu().to(kDouble), w = want.to(kDouble);
    double num = (g - w).abs().max().item<double>();
    double den = w.abs().max().item<double>();
    return den == 0 ? num : num / den;
  };
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-5 : 1e-2;
    Tensor a = random({37, 53}, dt, 1), b = random({53, 29}, dt, 2);
    Tensor ref = a.to(kDouble).mm(b.to(kDouble));
    EXPECT_LT(rel_err(a.cuda().mm(b.cuda()), ref), tol) << dt;
    // Transposed operands (column-major for BLAS).
    Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
    EXPECT_LT(rel_err(at.cuda().mm(bt.cuda()), ref), tol) << dt;
    EXPECT_LT(rel_err(gpu(at).mm(gpu(bt)), ref), tol) << dt;
    // A strided operand BLAS cannot read is made contiguous first.
    Tensor wide = random({37, 106}, dt, 3).slice(1, 0, 106, 2);
    EXPECT_LT(
        rel_err(wide.cuda().mm(b.cuda()), wide.to(kDouble).mm(b.to(kDouble))),
        tol)
        << dt;
    // addmm with a broadcast addend, alpha and beta.
    Tensor c = random({29}, dt, 4);
    EXPECT_LT(
        rel_err(addmm(c.cuda(), a.cuda(), b.cuda(), 0.5, 2.0),
                addmm(c.to(kDouble), a.to(kDouble), b.to(kDouble), 0.5, 2.0)),
        tol)
        << dt;
    // Batches: bmm, baddbmm, matmul with broadcasting, linear.
    Tensor x = random({4, 7, 9}, dt, 5), y = random({4, 9, 6}, dt, 6);
    EXPECT_LT(rel_err(x.cuda().bmm(y.cuda()), x.to(kDouble).bmm(y.to(kDouble))),
              tol)
        << dt;
    Tensor z = random({4, 7, 6}, dt, 7);
    EXPECT_LT(rel_err(baddbmm(z.cuda(), x.cuda(), y.cuda(), 1.0, -1.0),
                      baddbmm(z.to(kDouble), x.to(kDouble), y.to(kDouble), 1.0,
                              -1.0)),
              tol)
        << dt;
    Tensor w = random({9, 6}, dt, 8);
    EXPECT_LT(rel_err(matmul(x.cuda(), w.cuda()),
                      matmul(x.to(kDouble), w.to(kDouble))),
              tol)
        << dt;
    Tensor lw = random({5, 9}, dt, 9), lb = random({5}, dt, 10);
    EXPECT_LT(rel_err(linear(x.cuda(), lw.cuda(), lb.cuda()),
                      linear(x.to(kDouble), lw.to(kDouble), lb.to(kDouble))),
              tol)
        << dt;
  }
  // K = 0: zeros (or beta * self); empty results.
  Tensor e = empty({3, 0}).cuda(), f = empty({0, 4}).cuda();
  EXPECT_TRUE(same_values(e.mm(f).cpu(), zeros({3, 4})));
  EXPECT_TRUE(same_values(addmm(ones({3, 4}).cuda(), e, f, 2.0).cpu(),
                          full({3, 4}, 2.0f)));
  EXPECT_EQ(empty({0, 5}).cuda().mm(empty({5, 2}).cuda()).sizes(),
            IntArrayRef({0, 2}));
  // Integers are not supported on CUDA; devices must match.
  EXPECT_EMBER_ERROR(ones({2, 2}, kLong).cuda().mm(ones({2, 2}, kLong).cuda()),
                     "not implemented for 'Long'");
  EXPECT_EMBER_ERROR(ones({2, 2}).cuda().mm(ones({2, 2})),
                     "Expected all tensors to be on the same device");
  EXPECT_EMBER_ERROR(ones({2, 2}).mm(ones({2, 2}).cuda()),
                     "Expected all tensors to be on the same device");
  EXPECT_EMBER_ERROR(addmm(ones({2}), ones({2, 2}).cuda(), ones({2, 2}).cuda()),
                     "Expected all tensors to be on the same device");
}

// Note [CUDA reductions]: few long rows run split (two kernels); the
// results are the CPU's, a NaN and an integer sum included.
TEST(Cuda, LongReductionsRunSplitAsOnTheCpu) {
  REQUIRE_GPU();
  Tensor x = random({8, 512, 64}, kFloat, 70);
  Tensor xd = x.to(kDouble), g = x.cuda(), gd = xd.cuda();
  EXPECT_TRUE(close(g.sum().cpu(), x.sum(), 1e-6, 1e-4));
  EXPECT_TRUE(close(g.mean().cpu(), x.mean(), 1e-6, 1e-7));
  EXPECT_TRUE(close(gd.mean().cpu(), xd.mean(), 1e-12, 1e-14));
  EXPECT_TRUE(close(g.amax().cpu(), x.amax(), 0, 0));
  EXPECT_TRUE(close(g.amin().cpu(), x.amin(), 0, 0));
  Tensor rows = random({3, 100000}, kFloat, 71);
  rows.select(0, 1).select(0, 77777).fill_(NAN);
  Tensor gr = rows.cuda();
  EXPECT_TRUE(close(gr.sum(1).cpu(), rows.sum(1), 1e-6, 1e-4));
  EXPECT_TRUE(close(gr.amax(1).cpu(), rows.amax(1), 0, 0));
  EXPECT_TRUE(close(gr.amin(1).cpu(), rows.amin(1), 0, 0));
  EXPECT_TRUE(std::isnan(gr.amax(1).cpu()[1].item<float>()));
  Tensor ints = randint(-9, 10, {1, 70001});
  EXPECT_TRUE(same_values(ints.cuda().sum(1).cpu(), ints.sum(1)));
  // A mean of 4M points (mse_loss's): one result, as the CPU's.
  Tensor big = random({8, 512, 1024}, kFloat, 72);
  EXPECT_TRUE(close(big.cuda().mean().cpu(), big.mean(), 1e-6, 1e-7));
}

// TF32 (Note [cuBLAS precision]): off by default, as PyTorch's; when
// allowed, float32 products round their inputs to TF32 (about 1e-3
// relative), compiled programs included, and float64 and 16-bit products
// are unchanged.
TEST(Cuda, Tf32OnlyWhereAllowed) {
  REQUIRE_GPU();
  ASSERT_FALSE(cuda::allow_tf32());
  struct Restore {
    ~Restore() { cuda::set_allow_tf32(false); }
  } restore;
  Tensor a = random({64, 4096}, kFloat, 1), b = random({4096, 48}, kFloat, 2);
  Tensor ref = a.to(kDouble).mm(b.to(kDouble));
  auto rel_err = [&](const Tensor &got) {
    Tensor g = got.cpu().to(kDouble);
    return ((g - ref).abs().max() / ref.abs().max()).item<double>();
  };
  auto mm_fn = [](const Tensor &x, const Tensor &y) { return x.mm(y); };
  auto compiled = compile(mm_fn);
  Tensor ga = a.cuda(), gb = b.cuda();
  EXPECT_LT(rel_err(ga.mm(gb)), 1e-5);
  EXPECT_LT(rel_err(compiled(ga, gb)), 1e-5);
  set_float32_matmul_precision("high");
  EXPECT_TRUE(cuda::allow_tf32());
  double eager = rel_err(ga.mm(gb)), comp = rel_err(compiled(ga, gb));
  EXPECT_GT(eager, 1e-5) << "TF32 was allowed but the product is exact";
  EXPECT_LT(eager, 5e-3);
  EXPECT_GT(comp, 1e-5) << "the compiled product ignored allow_tf32";
  EXPECT_LT(comp, 5e-3);
  // float64 is never rounded.
  EXPECT_LT(((a.to(kDouble).cuda().mm(b.to(kDouble).cuda())).cpu() - ref)
                .abs()
                .max()
                .item<double>(),
            1e-9);
  cuda::set_allow_tf32(false);
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  EXPECT_LT(rel_err(ga.mm(gb)), 1e-5);
}

// What the independent probe of the CUDA backend found (each was a crash,
// a wrong device or a raw driver error).
TEST(Cuda, ProbeFindings) {
  REQUIRE_GPU();
  // Composites that read values on the host copy them there first.
  Tensor hot = one_hot(tensor({0, 2}).cuda());
  EXPECT_TRUE(hot.is_cuda());
  EXPECT_TRUE(same_values(hot.cpu(), one_hot(tensor({0, 2}))));
  EXPECT_TRUE(allclose(ones({3}).cuda(), ones({3}).cuda()));
  EXPECT_FALSE(allclose(ones({3}).cuda(), zeros({3}).cuda()));
  // pow with a Scalar exponent or base.
  Tensor x = tensor({1.5f, 2.f, 3.f});
  EXPECT_TRUE(same_values(x.cuda().pow(2).cpu(), x.pow(2)));
  EXPECT_TRUE(same_values(pow(2.0, x.cuda()).cpu(), pow(2.0, x)));
  EXPECT_TRUE(same_values(pow(x.cuda(), 0.5).cpu(), pow(x, 0.5)));
  // In place on a CPU 0-dim self with a CUDA operand: PyTorch's message.
  Tensor c = ones({});
  EXPECT_EMBER_ERROR(c.add_(ones({}, TensorOptions().device(kCUDA))),
                     "found at least two devices, cpu and cuda:0");
  // A gradient on another device than its tensor.
  Tensor leaf = ones({4}).cuda().requires_grad_();
  EXPECT_EMBER_ERROR((leaf * 2).backward(ones({4})),
                     "invalid gradient at index 0 - expected device cuda:0 "
                     "but got cpu");
  // type_as takes the other tensor's device too (libtorch's to(options)).
  Tensor h = ones({2}, TensorOptions(kHalf).device(kCUDA));
  EXPECT_TRUE(arange(3).type_as(h).is_cuda());
  EXPECT_EQ(arange(3).type_as(h).dtype(), kHalf);
  EXPECT_TRUE(ones({2}).to(TensorOptions().device("cuda")).is_cuda());
  // Guards take CUDA devices only; high-priority streams are their own pool.
  EXPECT_EMBER_ERROR(cuda::CUDAGuard g{Device(kCPU)}, "expected a CUDA device");
  EXPECT_NE(cuda::getStreamFromPool(true), cuda::getStreamFromPool(false));
}

// sum, mean, amax, amin (Note [CUDA reductions]) against the CPU's, over
// every dim subset kind, keepdim, the dtypes, NaN, empty rows; and autograd
// through broadcasting, whose gradients need sum.
TEST(Cuda, Reductions) {
  REQUIRE_GPU();
  std::vector<std::vector<int64_t>> dimsets = {{},  {0},    {1},
                                               {2}, {0, 2}, {-1, 1}};
  for (ScalarType dt :
       {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kChar, kBool}) {
    Tensor a = random({13, 70, 9}, dt, 11);
    Tensor g = gpu(noncontiguous(a));
    for (const std::vector<int64_t> &d : dimsets)
      for (bool keep : {false, true}) {
        double tol = dt == kDouble ? 1e-12 : 1e-6;
        EXPECT_TRUE(close(g.sum(d, keep).cpu(), a.sum(d, keep), tol, tol))
            << dt << " sum " << IntArrayRef(d) << " " << keep;
        if (isFloatingType(dt)) {
          EXPECT_TRUE(close(g.mean(d, keep).cpu(), a.mean(d, keep), tol, tol))
              << dt << " mean " << IntArrayRef(d);
        }
        EXPECT_TRUE(same_values(g.amax(d, keep).cpu(), a.amax(d, keep)))
            << dt << " amax " << IntArrayRef(d);
        EXPECT_TRUE(same_values(g.amin(d, keep).cpu(), a.amin(d, keep)))
            << dt << " amin " << IntArrayRef(d);
      }
    EXPECT_TRUE(same_values(g.max().cpu(), a.max())) << dt;
    EXPECT_TRUE(close(g.sum().cpu(), a.sum(), 1e-6, 1e-6)) << dt;
  }
  // A NaN wins amax and amin; empty reductions.
  Tensor n = tensor({1.f, NAN, -3.f, 2.f});
  EXPECT_TRUE(std::isnan(n.cuda().amax().item<float>()));
  EXPECT_TRUE(std::isnan(n.cuda().amin().item<float>()));
  EXPECT_EQ(empty({0, 3}).cuda().sum().item<float>(), 0.f);
  EXPECT_TRUE(same_values(empty({0, 3}).cuda().sum(0).cpu(), zeros({3})));
  EXPECT_TRUE(std::isnan(empty({0}).cuda().mean().item<float>()));
  EXPECT_EMBER_ERROR(empty({0}).cuda().amax(), "");
  // A large row (many blocks' worth of threads) and many short rows.
  Tensor big = random({3, 100000}, kFloat, 12);
  EXPECT_TRUE(close(big.cuda().sum(1).cpu(), big.sum(1), 1e-6, 1e-6));
  Tensor tall = random({100000, 3}, kDouble, 13);
  EXPECT_TRUE(close(tall.cuda().mean(1).cpu(), tall.mean(1), 1e-12, 1e-12));
  // Autograd through a broadcast: b's gradient is a sum.
  Tensor x = random({5, 3}, kFloat, 14), b = random({3}, kFloat, 15);
  Tensor xg = x.cuda().requires_grad_(), bg = b.cuda().requires_grad_();
  (xg * bg).sum().backward();
  Tensor xc = x.clone().requires_grad_(), bc = b.clone().requires_grad_();
  (xc * bc).sum().backward();
  EXPECT_TRUE(xg.grad().is_cuda());
  EXPECT_TRUE(close(xg.grad().cpu(), xc.grad()));
  EXPECT_TRUE(close(bg.grad().cpu(), bc.grad()));
  // prod (prod.dim_int's kernel over the flattened tensor).
  EXPECT_TRUE(close(x.cuda().prod().cpu(), x.prod(), 1e-5, 1e-6));
}

TEST(Cuda, CachingAllocatorOnTheDevice) {
  REQUIRE_GPU();
  cuda::synchronize();
  cuda::empty_cache();
  int64_t before = cuda::memory_allocated();
  {
    Tensor t = empty({1000}, TensorOptions().device(kCUDA)); // 4000 B
    EXPECT_EQ(cuda::memory_allocated() - before, 4096);      // rounded to 512
    EXPECT_GE(cuda::memory_reserved(), 2 << 20);             // a small segment
    Tensor big = empty({16 << 20}, TensorOptions().device(kCUDA)); // 64 MiB
    EXPECT_EQ(cuda::memory_allocated() - before, 4096 + (64 << 20));
  }
  EXPECT_EQ(cuda::memory_allocated(), before);
  EXPECT_GE(cuda::memory_reserved(), 64 << 20); // cached, not released
  cuda::empty_cache();
  EXPECT_LT(cuda::memory_reserved(), 64 << 20);
  std::map<std::string, int64_t> st = cuda::memory_stats();
  EXPECT_GT(st.at("num_alloc_retries") + 1, 0);
  EXPECT_NE(cuda::memory_summary().find("CUDA"), std::string::npos);
  // A request larger than the device raises PyTorch's message.
  try {
    empty({int64_t(1) << 45}, TensorOptions().device(kCUDA));
    ADD_FAILURE() << "no out-of-memory error";
  } catch (const OutOfMemoryError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("CUDA out of memory. Tried to allocate"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("total capacity"), std::string::npos) << m;
  }
}

TEST(Cuda, StreamsAndEvents) {
  REQUIRE_GPU();
  cuda::CUDAStream def = cuda::getDefaultCUDAStream();
  EXPECT_EQ(cuda::getCurrentCUDAStream(), def);
  cuda::CUDAStream s = cuda::getStreamFromPool();
  EXPECT_NE(s, def);
  Tensor x = randn({1 << 20}).cuda();
  cuda::CUDAEvent start(true), stop(true);
  {
    cuda::CUDAStreamGuard g(s);
    EXPECT_EQ(cuda::getCurrentCUDAStream(), s);
    start.record();
    Tensor y = x;
    for (int k = 0; k < 20; ++k)
      y = y * 1.0001f + 0.5f;
    stop.record();
    stop.synchronize();
    EXPECT_TRUE(stop.query());
    EXPECT_TRUE(s.query());
    EXPECT_GT(start.elapsed_time(stop), 0.f);
    cuda::record_stream(y.data_ptr(), s);
  }
  EXPECT_EQ(cuda::getCurrentCUDAStream(), def);
  cuda::CUDAEvent untimed;
  untimed.record();
  untimed.synchronize();
  EXPECT_EMBER_ERROR(untimed.elapsed_time(stop), "enable_timing");
}

TEST(Cuda, PinnedMemoryAndNonBlockingCopies) {
  REQUIRE_GPU();
  Tensor a = random({256, 256}, kFloat, 7);
  Tensor p = a.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_FALSE(a.is_pinned());
  EXPECT_TRUE(p.pin_memory().is_same(p));
  Tensor g = p.to(Device(kCUDA), /*non_blocking=*/true);
  Tensor back = g.to(Device(kCPU), /*non_blocking=*/true);
  EXPECT_TRUE(back.is_pinned());
  cuda::synchronize();
  EXPECT_TRUE(same_values(back, a));
  EXPECT_EMBER_ERROR(g.pin_memory(), "cannot pin");
}

TEST(Cuda, KernelsAreCompiledOncePerSignature) {
  REQUIRE_GPU();
  Tensor x = randn({64}).cuda();
  (void)(x.cos() * 3.0);
  cuda::KernelCacheStats before = cuda::kernel_cache_stats();
  for (int k = 0; k < 5; ++k)
    (void)(x.cos() * 3.0);
  cuda::KernelCacheStats after = cuda::kernel_cache_stats();
  EXPECT_EQ(after.compiled, before.compiled);
  EXPECT_EQ(after.from_disk, before.from_disk);
}

// Mixed precision on CUDA: the CUDA lists (Note [Autocast] in
// eager/amp/Autocast.h) and float16 loss scaling.
TEST(Cuda, AutocastAndGradScaler) {
  REQUIRE_GPU();
  Tensor a = random({16, 32}, kFloat, 1).cuda(),
         b = random({32, 8}, kFloat, 2).cuda();
  Tensor w = (random({8, 32}, kFloat, 3) * 0.2).cuda().requires_grad_();
  Tensor p = random({4, 8}, kFloat, 4).sigmoid().cuda();
  Tensor ref = mm(a.to(kHalf), b.to(kHalf));
  {
    amp::autocast ac(kCUDA); // float16, CUDA's default
    EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kHalf);
    Tensor m = mm(a, b);
    EXPECT_EQ(m.dtype(), kHalf);
    EXPECT_TRUE(same_values(m.cpu(), ref.cpu()));
    Tensor h = m.to(kHalf);
    EXPECT_EQ(h.exp().dtype(), kFloat);     // fp32 on CUDA
    EXPECT_EQ(h.sum().dtype(), kFloat);     // fp32_set_opt_dtype
    EXPECT_EQ(h.sum(kHalf).dtype(), kHalf); // unless dtype is given
    EXPECT_EQ(h.softmax(-1).dtype(), kFloat);
    EXPECT_EQ(h.relu().dtype(), kHalf);                     // on no list
    EXPECT_EQ(addcmul(h, m.to(kFloat), h).dtype(), kFloat); // promote
    EXPECT_EMBER_ERROR(binary_cross_entropy(p, p), "unsafe to autocast");
    // A CPU op under a CUDA region is not cast.
    EXPECT_EQ(mm(a.cpu(), b.cpu()).dtype(), kFloat);
  }
  // float16 training with loss scaling: the weight's gradient is float32.
  amp::GradScaler scaler(kCUDA, 1024.0);
  EXPECT_TRUE(scaler.is_enabled());
  optim::SGD opt({w}, 0.1);
  Tensor loss;
  {
    amp::autocast ac(kCUDA, kHalf);
    loss = mse_loss(linear(a, w), zeros({16, 8}).cuda());
  }
  EXPECT_EQ(loss.dtype(), kFloat);
  scaler.scale(loss).backward();
  EXPECT_EQ(w.grad().dtype(), kFloat);
  EXPECT_TRUE(w.grad().is_cuda());
  Tensor before = w.detach().cpu();
  EXPECT_TRUE(scaler.step(opt).has_value());
  scaler.update();
  EXPECT_FALSE(same_values(w.detach().cpu(), before));
  // An inf gradient skips the step and backs the scale off.
  w.mutable_grad() = full({8, 32}, std::numeric_limits<double>::infinity(),
                          TensorOptions(kFloat).device(kCUDA));
  Tensor kept = w.detach().cpu();
  scaler.scale(loss.detach());
  EXPECT_FALSE(scaler.step(opt).has_value());
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512.0);
  EXPECT_TRUE(same_values(w.detach().cpu(), kept));
}

// Note [CUDA kernels from decompositions]: the CUDA kernels of
// native_layer_norm_backward (written with ember ops), var and logsumexp
// are device-agnostic compositions; on CPU tensors they must give what the
// CPU kernels give, on every machine. (softmax, log_softmax, their
// backwards and native_layer_norm have kernels of their own: Note [CUDA
// softmax kernels], tested in test_cuda_codegen.)
TEST(CudaNoGpu, ComposedKernelsMatchTheCpuKernels) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    const double tol = dt == kBFloat16 ? 1e-2 : dt == kFloat ? 1e-5 : 1e-12;
    for (Tensor x :
         {random({6, 9}, dt, 1), noncontiguous(random({4, 7}, dt, 2)),
          random({0, 5}, dt, 3), random({3, 4, 5}, dt, 4)}) {
      std::ostringstream trace;
      trace << toString(dt) << " " << x.sizes();
      SCOPED_TRACE(trace.str());
      const int64_t d = x.dim() - 1;
      const std::vector<int64_t> dims{d};
      if (dt != kBFloat16) {
        EXPECT_TRUE(
            close(native::var_correction_cuda_decomposed(x, IntArrayRef(dims),
                                                         Scalar(1), false),
                  x.var(IntArrayRef(dims), Scalar(1), false), tol, tol));
        EXPECT_TRUE(close(native::logsumexp_cuda_decomposed(x, dims, true),
                          x.logsumexp(dims, true), tol, tol));
      }
      // layer_norm's backward over the last dim, every mask.
      int64_t n = x.size(-1);
      Tensor w = random({n}, dt, 6), b = random({n}, dt, 7);
      auto [o2, m2, r2] = native_layer_norm(x, {n}, w, b, 1e-5);
      Tensor go = random(x.sizes(), dt, 8);
      for (std::vector<int64_t> mask :
           {std::vector<int64_t>{1, 1, 1}, {1, 0, 0}, {0, 1, 1}}) {
        auto [a1, a2, a3] = native::native_layer_norm_backward_composite(
            go, x, {n}, m2, r2, w, b, mask);
        auto [b1, b2, b3] =
            native_layer_norm_backward(go, x, {n}, m2, r2, w, b, mask);
        for (auto [u, v] : {std::pair{a1, b1}, {a2, b2}, {a3, b3}}) {
          ASSERT_EQ(u.defined(), v.defined());
          if (u.defined()) {
            EXPECT_EQ(u.dtype(), v.dtype());
            EXPECT_TRUE(close(u, v, tol * 10, tol * 10));
          }
        }
      }
      // No weight: the same without the affine.
      auto [c1, c2, c3] = native::native_layer_norm_backward_composite(
          go, x, {n}, m2, r2, std::nullopt, std::nullopt, {1, 1, 1});
      auto [e1, e2, e3] = native_layer_norm_backward(
          go, x, {n}, m2, r2, std::nullopt, std::nullopt, {1, 1, 1});
      EXPECT_TRUE(close(c1, e1, tol * 10, tol * 10));
      EXPECT_TRUE(close(c2, e2, tol * 10, tol * 10));
    }
  }
}

// The same ops on the GPU, forward and backward, against the CPU.
TEST(Cuda, ComposedKernelsOnTheDevice) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat, kDouble}) {
    const double tol = dt == kFloat ? 1e-5 : 1e-12;
    Tensor x = random({5, 33}, dt, 1), w = random({33}, dt, 2),
           b = random({33}, dt, 3), g = random({5, 33}, dt, 4);
    auto both = [&](auto &&f) {
      Tensor xc = x.clone().requires_grad_(), wc = w.clone().requires_grad_(),
             bc = b.clone().requires_grad_();
      Tensor xg = x.cuda().requires_grad_(), wg = w.cuda().requires_grad_(),
             bg = b.cuda().requires_grad_();
      Tensor yc = f(xc, wc, bc), yg = f(xg, wg, bg);
      EXPECT_TRUE(yg.is_cuda());
      EXPECT_TRUE(close(yg.cpu(), yc, tol, tol));
      if (yc.requires_grad()) {
        auto gc = autograd::grad({yc}, {xc, wc, bc}, {g.expand(yc.sizes())},
                                 std::nullopt, false, true);
        auto gg =
            autograd::grad({yg}, {xg, wg, bg}, {g.expand(yc.sizes()).cuda()},
                           std::nullopt, false, true);
        for (size_t i = 0; i < 3; ++i) {
          ASSERT_EQ(gc[i].defined(), gg[i].defined()) << i;
          if (gc[i].defined()) {
            EXPECT_TRUE(close(gg[i].cpu(), gc[i], tol * 10, tol * 10)) << i;
          }
        }
      }
    };
    both([](const Tensor &x, const Tensor &, const Tensor &) {
      return x.softmax(1);
    });
    both([](const Tensor &x, const Tensor &, const Tensor &) {
      return x.log_softmax(1);
    });
    both([](const Tensor &x, const Tensor &w, const Tensor &b) {
      return nn::functional::layer_norm(
          x, nn::functional::LayerNormFuncOptions({33}).weight(w).bias(b));
    });
    both([](const Tensor &x, const Tensor &, const Tensor &) {
      return x.var(IntArrayRef(std::vector<int64_t>{1}), Scalar(1), true)
          .expand({5, 33});
    });
    both([](const Tensor &x, const Tensor &, const Tensor &) {
      return x.logsumexp({1}, true).expand({5, 33});
    });
    // cat (with conversion and strided inputs) and constant_pad_nd.
    Tensor a = random({3, 4}, dt, 9), c = random({3, 2}, kFloat, 10);
    Tensor cc = cat({a, c.t().t(), a.t().contiguous().t()}, 1);
    Tensor cg =
        cat({a.cuda(), c.cuda().t().t(), a.cuda().t().contiguous().t()}, 1);
    EXPECT_TRUE(cg.is_cuda());
    EXPECT_TRUE(close(cg.cpu(), cc, 0, 0));
    EXPECT_TRUE(close(constant_pad_nd(a.cuda(), {1, -1, 2, 0}, 3.5).cpu(),
                      constant_pad_nd(a, {1, -1, 2, 0}, 3.5), 0, 0));
    // Empty inputs take the host path.
    Tensor e = empty({0, 4}, TensorOptions(dt).device(kCUDA));
    EXPECT_EQ(e.softmax(1).sizes(), IntArrayRef({0, 4}));
    EXPECT_TRUE(e.softmax(1).is_cuda());
  }
}

// argmax / argmin / max.dim / min.dim's CUDA kernels (eager/cuda/Reduce.cpp)
// on CPU tensors against the CPU kernels: ties pick the first, NaN is the
// extreme, every dtype, dims, keepdim, dim=None, 0-dim and empty inputs.
TEST(CudaNoGpu, ArgReductionsMatchTheCpuKernels) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor ties = tensor({3.0, 1.0, 3.0, -2.0, 1.0, -2.0}).view({2, 3});
  Tensor nans = tensor({1.0, nan, 5.0, nan, 0.0, 7.0}).view({2, 3});
  std::vector<Tensor> inputs = {ties,
                                nans,
                                ties.to(kLong),
                                ties.to(kHalf),
                                random({4, 5, 6}, kFloat, 1),
                                noncontiguous(random({3, 7}, kInt, 2)),
                                random({}, kFloat, 3),
                                empty({0, 3}),
                                random({3, 4}, kBool, 4)};
  for (const Tensor &x : inputs) {
    std::ostringstream trace;
    trace << toString(x.dtype()) << " " << x.sizes();
    SCOPED_TRACE(trace.str());
    for (bool keepdim : {false, true}) {
      auto check = [&](auto &&composite, auto &&kernel) {
        Tensor a, b;
        bool raised_a = false, raised_b = false;
        try {
          a = composite();
        } catch (const Error &) {
          raised_a = true;
        }
        try {
          b = kernel();
        } catch (const Error &) {
          raised_b = true;
        }
        ASSERT_EQ(raised_a, raised_b);
        if (!raised_a) {
          EXPECT_EQ(a.dtype(), b.dtype());
          EXPECT_TRUE(same_values(a, b));
        }
      };
      for (std::optional<int64_t> dim :
           {std::optional<int64_t>(), std::optional<int64_t>(0),
            std::optional<int64_t>(-1)}) {
        check([&] { return native::argmax_composite(x, dim, keepdim); },
              [&] { return argmax(x, dim, keepdim); });
        check([&] { return native::argmin_composite(x, dim, keepdim); },
              [&] { return argmin(x, dim, keepdim); });
      }
      for (int64_t dim : {0, -1}) {
        for (bool is_max : {true, false}) {
          auto composite = [&] {
            return is_max ? native::max_dim_composite(x, dim, keepdim)
                          : native::min_dim_composite(x, dim, keepdim);
          };
          auto kernel = [&] {
            return is_max ? x.max(dim, keepdim) : x.min(dim, keepdim);
          };
          check([&] { return std::get<0>(composite()); },
                [&] { return std::get<0>(kernel()); });
          check([&] { return std::get<1>(composite()); },
                [&] { return std::get<1>(kernel()); });
        }
      }
    }
  }
}

TEST(Cuda, ArgReductionsOnTheDevice) {
  REQUIRE_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Tensor x : {tensor({1.0, nan, 5.0, nan, 0.0, 7.0}).view({2, 3}),
                   random({8, 33}, kFloat, 1), random({5, 6}, kLong, 2)}) {
    Tensor g = x.cuda();
    EXPECT_TRUE(same_values(g.argmax(1).cpu(), x.argmax(1)));
    EXPECT_TRUE(same_values(g.argmin(0, true).cpu(), x.argmin(0, true)));
    EXPECT_TRUE(same_values(g.argmax().cpu(), x.argmax()));
    auto [v, i] = g.max(1);
    EXPECT_TRUE(same_values(v.cpu(), std::get<0>(x.max(1))));
    EXPECT_TRUE(same_values(i.cpu(), std::get<1>(x.max(1))));
  }
}

// Note [CUDA index kernels] (eager/cuda/Index.cpp): every variant of the
// index kernel compiles under NVRTC; then the launches planned for CPU
// tensors, run point by point through the device code compiled as host
// C++, equal the CPU kernels of gather, index_select, scatter_,
// scatter_add_ and index_add_ (every dtype, non-contiguous operands,
// 0-dim, duplicates: float values are integers, so sums are exact in any
// order).
TEST(CudaNoGpu, IndexKernelsCompileUnderNvrtc) {
  REQUIRE_NVRTC();
  std::vector<std::pair<int, ScalarType>> variants;
  for (int mode : {0, 1})
    for (ScalarType t : {kByte, kHalf, kFloat, kDouble})
      variants.push_back({mode, t}); // (one per element size)
  for (ScalarType t : {kFloat, kDouble, kLong, kInt, kShort, kChar, kByte,
                       kBool, kHalf, kBFloat16})
    variants.push_back({2, t});
  for (auto [mode, t] : variants) {
    SCOPED_TRACE(std::to_string(mode) + " " + toString(t));
    cuda::nvrtc::Compiled c = cuda::nvrtc::compile(cuda::index_source(mode, t),
                                                   "index.cu", 80, false);
    EXPECT_NE(c.binary.find(".entry ember_index"), std::string::npos);
  }
}

namespace {
/// Integer-valued random values of `dt` (exact sums in any order).
Tensor integers(std::vector<int64_t> sizes, ScalarType dt, uint64_t seed) {
  Tensor x = (random(sizes, kFloat, seed) * 4).round();
  return dt == kBool ? x.gt(0) : x.to(dt);
}
/// Equal dtypes and values (every value here is exact in double).
::testing::AssertionResult exact(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << toString(a.dtype()) << " != " << toString(b.dtype());
  return close(a, b, 0, 0);
}
/// Dim 2 of a 3-d tensor moved to `d`.
Tensor dim2_to(const Tensor &t, int64_t d) {
  return d == 0 ? t.permute({2, 0, 1}) : d == 1 ? t.permute({0, 2, 1}) : t;
}
Tensor indices(std::vector<int64_t> sizes, int64_t n, uint64_t seed) {
  return (random(sizes, kFloat, seed).abs() * 1000).to(kLong).remainder(n);
}
} // namespace

TEST(CudaNoGpu, IndexKernelsMatchTheCpuKernels) {
  for (ScalarType dt : {kFloat, kDouble, kLong, kInt, kShort, kChar, kByte,
                        kBool, kHalf, kBFloat16}) {
    SCOPED_TRACE(toString(dt));
    Tensor x = integers({5, 6, 7}, dt, 1);
    Tensor xt = integers({7, 6, 5}, dt, 2).transpose(0, 2); // strided
    for (const Tensor &self : {x, xt})
      for (int64_t d = 0; d < 3; ++d) {
        SCOPED_TRACE("dim " + std::to_string(d));
        // gather: an index smaller than self along the other dims.
        Tensor gi = indices({4, 3, 5}, self.size(d), 3 + uint64_t(d));
        Tensor out = empty(gi.sizes(), self.options());
        cuda::run_index_on_host(cuda::plan_gather(out, self, d, gi));
        EXPECT_TRUE(exact(out, self.gather(d, gi)));
        // index_select: an int32 index with repeats.
        Tensor si = indices({9}, self.size(d), 7 + uint64_t(d)).to(kInt);
        std::vector<int64_t> os(self.sizes().begin(), self.sizes().end());
        os[size_t(d)] = 9;
        Tensor sel = empty(os, self.options());
        cuda::run_index_on_host(cuda::plan_index_select(sel, self, d, si));
        EXPECT_TRUE(exact(sel, self.index_select(d, si)));
        // scatter_ (distinct indices along d: a permutation's prefix),
        // scatter_add_ and index_add_ (duplicates), from a strided source.
        Tensor perm = argsort(random({4, 3, self.size(d)}, kFloat, 11), 2);
        Tensor pi = dim2_to(perm.narrow(2, 0, 2), d).contiguous();
        Tensor src = dim2_to(integers({4, 3, 5}, dt, 12), d);
        Tensor want = self.contiguous().clone(), work = want.clone();
        want.scatter_(d, pi, src);
        cuda::run_index_on_host(cuda::plan_scatter(work, d, pi, src, false));
        EXPECT_TRUE(exact(work, want)) << "scatter_";
        want = self.contiguous().clone();
        work = want.clone();
        want.scatter_add_(d, gi, integers({4, 3, 5}, dt, 13));
        cuda::run_index_on_host(
            cuda::plan_scatter(work, d, gi, integers({4, 3, 5}, dt, 13), true));
        EXPECT_TRUE(exact(work, want)) << "scatter_add_";
        std::vector<int64_t> ss(self.sizes().begin(), self.sizes().end());
        ss[size_t(d)] = 9;
        Tensor source = integers(ss, dt, 14);
        Scalar alpha = dt == kBool ? Scalar(true) : Scalar(3);
        want = self.contiguous().clone();
        work = want.clone();
        want.index_add_(d, si, source, alpha);
        cuda::run_index_on_host(
            cuda::plan_index_add(work, d, si, source, alpha));
        EXPECT_TRUE(exact(work, want)) << "index_add_";
      }
    // 0-dim self and index.
    Tensor s0 = integers({}, dt, 20), i0 = zeros({}, TensorOptions(kLong));
    Tensor o0 = empty({}, s0.options());
    cuda::run_index_on_host(cuda::plan_gather(o0, s0, 0, i0));
    EXPECT_TRUE(exact(o0, s0.gather(0, i0)));
    Tensor z = zeros({1}, TensorOptions(kLong));
    Tensor o1 = empty({1}, s0.options());
    cuda::run_index_on_host(cuda::plan_index_select(o1, s0, 0, z));
    EXPECT_TRUE(exact(o1.view({}), s0.index_select(0, z)));
  }
}

// The ops on the GPU against the CPU, their errors, and the losses and
// layers that use them (nll_loss and cross_entropy gather; their backward
// scatters; embedding selects rows and adds its gradient by index).
TEST(Cuda, IndexOpsOnTheDevice) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kBool}) {
    SCOPED_TRACE(toString(dt));
    Tensor x = integers({5, 6, 7}, dt, 1).transpose(0, 2);
    Tensor xc = x.cuda();
    for (int64_t d = 0; d < 3; ++d) {
      Tensor gi = indices({4, 3, 5}, x.size(d), 3 + uint64_t(d));
      EXPECT_TRUE(exact(xc.gather(d, gi.cuda()).cpu(), x.gather(d, gi)));
      Tensor si = indices({9}, x.size(d), 7 + uint64_t(d));
      EXPECT_TRUE(
          exact(xc.index_select(d, si.cuda()).cpu(), x.index_select(d, si)));
      Tensor src = integers({4, 3, 5}, dt, 13);
      EXPECT_TRUE(exact(xc.clone().scatter_add_(d, gi.cuda(), src.cuda()).cpu(),
                        x.clone().scatter_add_(d, gi, src)));
      std::vector<int64_t> ss(x.sizes().begin(), x.sizes().end());
      ss[size_t(d)] = 9;
      Tensor source = integers(ss, dt, 14);
      EXPECT_TRUE(
          exact(xc.clone().index_add_(d, si.cuda(), source.cuda()).cpu(),
                x.clone().index_add_(d, si, source)));
    }
    EXPECT_THROW(xc.gather(0, full({1, 1, 1}, 7, TensorOptions(kLong)).cuda()),
                 IndexError);
    EXPECT_THROW(xc.index_select(1, full({1}, -1, TensorOptions(kLong)).cuda()),
                 IndexError);
  }
  // The losses, forward and backward.
  Tensor logits = random({8, 5}, kFloat, 30).requires_grad_();
  Tensor lc = logits.detach().cuda().requires_grad_();
  Tensor target = indices({8}, 5, 31);
  target[2].fill_(-100); // ignored
  Tensor l = nn::functional::cross_entropy(logits, target);
  Tensor lg = nn::functional::cross_entropy(lc, target.cuda());
  EXPECT_TRUE(close(lg.cpu(), l, 1e-5, 1e-5));
  l.backward();
  lg.backward();
  EXPECT_TRUE(close(lc.grad().cpu(), logits.grad(), 1e-5, 1e-5));
  // Embedding, forward and backward.
  nn::Embedding e(10, 4), ec(10, 4);
  {
    NoGradGuard no_grad;
    ec->weight.copy_(e->weight);
  }
  ec->to(kCUDA);
  Tensor ids = indices({3, 6}, 10, 32);
  Tensor y = e->forward(ids), yc = ec->forward(ids.cuda());
  EXPECT_TRUE(exact(yc.cpu(), y));
  Tensor gy = integers({3, 6, 4}, kFloat, 33);
  y.backward(gy);
  yc.backward(gy.cuda());
  EXPECT_TRUE(close(ec->weight.grad().cpu(), e->weight.grad(), 1e-6, 1e-6));
}

// Note [CUDA sort] (eager/cuda/Sort.cpp): every dtype variant of the sort
// kernel compiles under NVRTC; then sort_cuda and topk_cuda on CPU tensors,
// whose bitonic network runs through the device code compiled as host C++,
// equal the CPU kernels bit for bit (values and indices): NaN, -0.0 and
// 0.0, many ties, every dtype, rows of any length, every dim, both
// directions, non-contiguous, 0-dim and empty inputs.
TEST(CudaNoGpu, SortKernelCompilesUnderNvrtc) {
  REQUIRE_NVRTC();
  for (ScalarType t : {kFloat, kDouble, kLong, kInt, kShort, kChar, kByte,
                       kBool, kHalf, kBFloat16}) {
    SCOPED_TRACE(toString(t));
    cuda::nvrtc::Compiled c =
        cuda::nvrtc::compile(cuda::sort_source(t), "sort.cu", 80, false);
    EXPECT_NE(c.binary.find(".entry ember_sort"), std::string::npos);
  }
}

namespace {
/// Values of `dt` with many ties; floats also hold NaN, +-inf, -0.0 and 0.0.
Tensor sort_input(std::vector<int64_t> sizes, ScalarType dt, uint64_t seed) {
  Tensor x = (random(sizes, kFloat, seed) * 2).round(); // (-0.0 too)
  if (isFloatingType(dt))
    x = x.masked_fill(random(sizes, kFloat, seed + 1).gt(1.3), NAN)
            .masked_fill(random(sizes, kFloat, seed + 2).gt(1.8), INFINITY)
            .masked_fill(random(sizes, kFloat, seed + 3).gt(1.8), -INFINITY);
  return dt == kBool ? x.gt(0) : x.to(dt);
}
/// Same dtype, shape and bits, both contiguous (the CPU kernels' results
/// are).
::testing::AssertionResult identical(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return ::testing::AssertionFailure()
           << toString(a.dtype()) << a.sizes() << " != " << toString(b.dtype())
           << b.sizes();
  if (!a.is_contiguous() || !b.is_contiguous())
    return ::testing::AssertionFailure() << "not contiguous";
  Tensor x = a.cpu(), y = b.cpu();
  if (x.numel() > 0 &&
      std::memcmp(x.data_ptr(), y.data_ptr(),
                  size_t(x.numel()) * elementSize(x.dtype())) != 0)
    return ::testing::AssertionFailure() << close(x, y, 0, 0).message();
  return ::testing::AssertionSuccess();
}
::testing::AssertionResult same_result(const std::tuple<Tensor, Tensor> &got,
                                       const std::tuple<Tensor, Tensor> &want) {
  ::testing::AssertionResult r = identical(std::get<1>(got), std::get<1>(want));
  if (!r)
    return r << " (indices)";
  r = identical(std::get<0>(got), std::get<0>(want));
  return r ? r : r << " (values)";
}
/// `x` with dim 1 (of 3) moved to `d`.
Tensor dim1_to(const Tensor &x, int64_t d) {
  return d == 1 ? x : x.transpose(1, d);
}
} // namespace

TEST(CudaNoGpu, SortKernelsMatchTheCpuKernels) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kShort,
                        kChar, kByte, kBool}) {
    SCOPED_TRACE(toString(dt));
    for (int64_t n : {1, 2, 3, 5, 64, 1000}) {
      SCOPED_TRACE("n " + std::to_string(n));
      Tensor x = sort_input({n > 64 ? 1 : 3, n, 2}, dt, uint64_t(n));
      for (int64_t d = 0; d < 3; ++d) {
        // contiguous with n along d, and strided (every other element)
        for (const Tensor &self :
             {dim1_to(x, d).contiguous(), noncontiguous(dim1_to(x, d))}) {
          SCOPED_TRACE("dim " + std::to_string(d) +
                       (self.is_contiguous() ? "" : " strided"));
          for (bool desc : {false, true}) {
            EXPECT_TRUE(same_result(native::sort_cuda(self, d, desc, false),
                                    native::sort(self, d, desc, false)))
                << "descending " << desc;
            for (int64_t k : {int64_t(0), int64_t(1), n / 2, n})
              for (bool sorted : {true, false}) {
                if (dt == kBool) { // (PyTorch's topk takes no bool)
                  EXPECT_THROW(native::topk_cuda(self, k, d, desc, sorted),
                               NotImplementedError);
                  EXPECT_THROW(native::topk(self, k, d, desc, sorted),
                               NotImplementedError);
                  continue;
                }
                EXPECT_TRUE(
                    same_result(native::topk_cuda(self, k, d, desc, sorted),
                                native::topk(self, k, d, desc, sorted)))
                    << "k " << k << " largest " << desc << " sorted " << sorted;
              }
          }
        }
      }
      // a negative dim
      EXPECT_TRUE(same_result(native::sort_cuda(x, -2, true, true),
                              native::sort(x, -2, true, true)));
    }
    // 0-dim and empty
    Tensor s = sort_input({}, dt, 7);
    for (int64_t d : {0, -1})
      EXPECT_TRUE(same_result(native::sort_cuda(s, d, true, false),
                              native::sort(s, d, true, false)));
    for (int64_t k : {0, 1})
      if (dt != kBool) {
        EXPECT_TRUE(same_result(native::topk_cuda(s, k, 0, true, true),
                                native::topk(s, k, 0, true, true)));
      }
    Tensor e = empty({0, 3}, TensorOptions(dt));
    for (int64_t d : {0, 1}) {
      EXPECT_TRUE(same_result(native::sort_cuda(e, d, false, false),
                              native::sort(e, d, false, false)));
      if (dt != kBool) {
        EXPECT_TRUE(same_result(native::topk_cuda(e, 0, d, true, false),
                                native::topk(e, 0, d, true, false)));
      }
    }
  }
  // The CPU kernels' errors.
  Tensor x = random({2, 5});
  EXPECT_EMBER_ERROR(native::topk_cuda(x, 6, 1, true, true),
                     "selected index k out of range (k = 6, but dimension 1 "
                     "has size 5)");
  EXPECT_THROW(native::topk_cuda(x, -1, 1, true, true), IndexError);
  EXPECT_THROW(native::topk_cuda(random({}), 2, 0, true, true), IndexError);
  EXPECT_THROW(native::sort_cuda(x, 2, false, false), IndexError);
  EXPECT_THROW(native::topk_cuda(x, 1, -3, true, true), IndexError);
}

// sort, argsort and topk of CUDA tensors against the CPU, and topk's error.
TEST(Cuda, SortOnTheDevice) {
  REQUIRE_GPU();
  for (ScalarType dt :
       {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kByte, kBool}) {
    SCOPED_TRACE(toString(dt));
    for (int64_t n : {1, 5, 64, 1000}) {
      SCOPED_TRACE("n " + std::to_string(n));
      Tensor x = sort_input({3, n, 2}, dt, uint64_t(n));
      for (const Tensor &self : {x, noncontiguous(x)})
        for (int64_t d = 0; d < 3; ++d)
          for (bool desc : {false, true}) {
            SCOPED_TRACE("dim " + std::to_string(d) + " descending " +
                         std::to_string(desc));
            Tensor xc = gpu(self);
            auto got = xc.sort(d, desc);
            EXPECT_TRUE(std::get<0>(got).is_cuda());
            EXPECT_TRUE(same_result(got, self.sort(d, desc)));
            EXPECT_TRUE(
                identical(xc.argsort(d, desc, true), self.argsort(d, desc)));
            int64_t k = std::min<int64_t>(self.size(d), 3);
            for (bool sorted : {true, false}) {
              if (dt == kBool) { // (PyTorch's topk takes no bool)
                EXPECT_THROW(xc.topk(k, d, desc, sorted), NotImplementedError);
                continue;
              }
              EXPECT_TRUE(same_result(xc.topk(k, d, desc, sorted),
                                      self.topk(k, d, desc, sorted)));
            }
          }
    }
  }
  // One long row (not a power of two), 0-dim and empty.
  Tensor big = random({(1 << 16) + 3}, kFloat, 5);
  EXPECT_TRUE(same_result(big.cuda().sort(0, true), big.sort(0, true)));
  Tensor s = random({}, kFloat, 6);
  EXPECT_TRUE(same_result(s.cuda().sort(), s.sort()));
  EXPECT_TRUE(same_result(s.cuda().topk(1), s.topk(1)));
  Tensor e = empty({0, 4});
  EXPECT_TRUE(same_result(e.cuda().sort(0), e.sort(0)));
  EXPECT_TRUE(same_result(e.cuda().topk(0, 0), e.topk(0, 0)));
  EXPECT_EMBER_ERROR(random({2, 5}).cuda().topk(6),
                     "selected index k out of range (k = 6, but dimension 1 "
                     "has size 5)");
}
