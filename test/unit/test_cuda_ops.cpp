// The CUDA kernels built from other ops' kernels: prod, norm, all / any,
// cumsum / cumprod, dot, equal (Note [CUDA reductions from kernels that
// exist] in eager/cuda/Reduce.cpp) and index, index_put_, nonzero,
// masked_select, flip, tril / triu, _im2col / _col2im (Note [CUDA advanced
// indexing] in eager/cuda/Index.cpp), and the random draws (Note [CUDA
// random numbers] in eager/cuda/Random.cpp).
//
// They are device-agnostic, so without a GPU (every CI machine) each runs
// on CPU tensors, the index kernel's device code on the host, against the
// op's CPU kernel. With a GPU the same ops run on CUDA tensors against the
// CPU (those tests skip without one, with the reason).
#include "CudaTestUtil.h"
#include "GradCases.h"
#include "OpCases.h"
#include "OpInfo.h"
#include "TestUtil.h"
#include "eager/cuda/Random.h"
#include "eager/generated/NativeFunctions.h"
#include "runtime/Nvrtc.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <tuple>
#include <typeinfo>

using namespace ember;
using namespace ember::test;
using ember::autograd::variable_list;

namespace {

/// Equal dtypes and shapes, values within tolerance (NaNs equal).
::testing::AssertionResult same(const Tensor &a, const Tensor &b,
                                double tol = 0) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << toString(a.dtype()) << " != " << toString(b.dtype());
  return close(a, b, tol, tol);
}

/// Integer-valued values of `dt` (exact in every dtype, sums in any order).
Tensor integers(std::vector<int64_t> sizes, ScalarType dt, uint64_t seed) {
  Tensor x = (random(sizes, kFloat, seed) * 3).round();
  return dt == kBool ? x.gt(0) : x.to(dt);
}

Tensor longs(std::vector<int64_t> sizes, int64_t lo, int64_t hi,
             uint64_t seed) {
  Generator g(seed);
  return randint(lo, hi, sizes, g);
}

/// The inputs of the reductions: contiguous, strided, 1-d, with a dim of 1.
std::vector<Tensor> inputs(ScalarType dt) {
  return {integers({4, 7}, dt, 1), noncontiguous(integers({3, 5, 6}, dt, 2)),
          integers({17}, dt, 3), integers({5, 1, 3}, dt, 4),
          integers({2, 1000}, dt, 5)};
}

std::string trace(const Tensor &x, int64_t d) {
  std::ostringstream os;
  os << toString(x.dtype()) << " " << x.sizes() << " dim " << d;
  return os.str();
}

} // namespace

// --- without a GPU -----------------------------------------------------------

TEST(CudaNoGpu, ProdNormAllAnyMatchTheCpuKernels) {
  for (ScalarType dt :
       {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt, kByte, kBool}) {
    for (const Tensor &x0 : inputs(dt)) {
      // prod of long rows of integers overflows: small values there
      Tensor x = x0.size(-1) >= 100 && dt != kBool ? x0.remainder(2) : x0;
      for (int64_t d = -1; d < x.dim(); ++d) {
        SCOPED_TRACE(trace(x, d));
        const double tol = dt == kHalf || dt == kBFloat16 ? 1e-2 : 1e-6;
        for (bool keep : {false, true}) {
          EXPECT_TRUE(same(native::prod_cuda(x, d, keep, std::nullopt),
                           x.prod(d, keep), tol));
          EXPECT_TRUE(same(native::all_dim_cuda(x, d, keep), x.all(d, keep)));
          EXPECT_TRUE(same(native::any_dim_cuda(x, d, keep), x.any(d, keep)));
        }
        EXPECT_TRUE(same(native::prod_cuda(x, d, false, kDouble),
                         x.prod(d, false, kDouble), 1e-12));
        if (!isFloatingType(dt))
          continue;
        for (std::optional<Scalar> p :
             {std::optional<Scalar>(), std::optional<Scalar>(0),
              std::optional<Scalar>(1), std::optional<Scalar>(3.5),
              std::optional<Scalar>(0.5),
              std::optional<Scalar>(std::numeric_limits<double>::infinity()),
              std::optional<Scalar>(-std::numeric_limits<double>::infinity())})
          for (bool keep : {false, true}) {
            std::vector<int64_t> dims{d};
            EXPECT_TRUE(same(native::norm_cuda(x, p, dims, keep),
                             x.norm(p, dims, keep), tol * 10));
            EXPECT_TRUE(same(native::norm_cuda(x, p, {}, keep),
                             x.norm(p, IntArrayRef{}, keep), tol * 10));
          }
      }
    }
  }
  // NaN: all / any count it as nonzero, prod and norm propagate it.
  Tensor n = tensor({1.0, std::nan(""), 0.0, 2.0}).view({2, 2});
  EXPECT_TRUE(same(native::all_dim_cuda(n, 1, false), n.all(1, false)));
  EXPECT_TRUE(same(native::any_dim_cuda(n, 0, false), n.any(0, false)));
  EXPECT_TRUE(same(native::prod_cuda(n, 0, false, std::nullopt), n.prod(0)));
  EXPECT_TRUE(same(native::norm_cuda(n, 2, {1}, false), n.norm(2, {1})));
  // Integer products wrap as the CPU's.
  Tensor big = full({2, 9}, 1000, TensorOptions(kLong));
  EXPECT_TRUE(
      same(native::prod_cuda(big, 1, false, std::nullopt), big.prod(1)));
  // Empty reductions and 0-dim inputs: the CPU kernel's identities.
  Tensor e = random({3, 0}, kFloat, 9);
  EXPECT_TRUE(same(native::prod_cuda(e, 1, false, std::nullopt), e.prod(1)));
  EXPECT_TRUE(same(native::all_dim_cuda(e, 1, true), e.all(1, true)));
  EXPECT_TRUE(same(native::any_dim_cuda(e, 1, false), e.any(1, false)));
  EXPECT_TRUE(same(native::norm_cuda(e, 1, {1}, false), e.norm(1, {1})));
  Tensor s = tensor(2.5);
  EXPECT_TRUE(same(native::prod_cuda(s, 0, false, std::nullopt), s.prod(0)));
  EXPECT_TRUE(
      same(native::norm_cuda(s, 3, {}, false), s.norm(3, IntArrayRef{})));
  // The CPU kernel's errors.
  EXPECT_THROW(native::norm_cuda(integers({3}, kLong, 1), 2, {0}, false),
               TypeError);
  EXPECT_THROW(native::prod_cuda(random({2, 3}), 2, false, std::nullopt),
               IndexError);
}

TEST(CudaNoGpu, ScansDotEqualMatchTheCpuKernels) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kInt, kByte, kBool}) {
    for (const Tensor &x0 : inputs(dt)) {
      Tensor x = x0.size(-1) >= 100 && dt != kBool ? x0.remainder(2) : x0;
      for (int64_t d = -1; d < x.dim(); ++d) {
        SCOPED_TRACE(trace(x, d));
        const double tol = dt == kHalf ? 2e-2 : 1e-5;
        EXPECT_TRUE(
            same(native::cumsum_cuda(x, d, std::nullopt), x.cumsum(d), tol));
        EXPECT_TRUE(
            same(native::cumprod_cuda(x, d, std::nullopt), x.cumprod(d), tol));
        EXPECT_TRUE(same(native::cumsum_cuda(x, d, kDouble),
                         x.cumsum(d, kDouble), 1e-12));
      }
    }
  }
  // Float sums of random values: the scan's order, within rounding.
  Tensor r = random({3, 777}, kFloat, 11);
  EXPECT_TRUE(same(native::cumsum_cuda(r, 1, std::nullopt), r.cumsum(1), 1e-4));
  EXPECT_TRUE(same(native::cumsum_cuda(tensor(3.0), 0, std::nullopt),
                   tensor(3.0).cumsum(0)));
  EXPECT_TRUE(same(native::cumprod_cuda(random({0, 4}), 1, std::nullopt),
                   random({0, 4}).cumprod(1)));
  // The result is new: the input is not written.
  Tensor keep = r.clone();
  (void)native::cumsum_cuda(r, 0, std::nullopt);
  EXPECT_TRUE(same(r, keep));

  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kInt}) {
    SCOPED_TRACE(toString(dt));
    Tensor a = integers({37}, dt, 1), b = noncontiguous(integers({37}, dt, 2));
    EXPECT_TRUE(same(native::dot_cuda(a, b), a.dot(b), 1e-3));
    Tensor z = empty({0}, TensorOptions(dt));
    EXPECT_TRUE(same(native::dot_cuda(z, z), z.dot(z)));
  }
  EXPECT_THROW(native::dot_cuda(random({3}), random({4})), Error);
  EXPECT_THROW(native::dot_cuda(random({3}), random({3}, kDouble)), Error);

  Tensor x = random({4, 5}, kFloat, 3);
  EXPECT_TRUE(native::equal_cuda(x, noncontiguous(x)));
  EXPECT_FALSE(native::equal_cuda(x, x + 1e-3));
  EXPECT_FALSE(native::equal_cuda(x, x.view({5, 4})));
  EXPECT_TRUE(native::equal_cuda(random({0, 3}), random({0, 3})));
  Tensor nan = tensor({1.0, std::nan("")});
  EXPECT_EQ(native::equal_cuda(nan, nan), nan.equal(nan));
  EXPECT_THROW(native::equal_cuda(x, x.to(kDouble)), Error);
}

TEST(CudaNoGpu, AdvancedIndexingMatchesTheCpuKernels) {
  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kByte, kBool}) {
    SCOPED_TRACE(toString(dt));
    for (Tensor x : {integers({5, 6, 7}, dt, 1),
                     integers({7, 6, 5}, dt, 2).transpose(0, 2)}) {
      Tensor i0 = longs({4}, -5, 5, 3), i1 = longs({4}, -6, 6, 4);
      Tensor i2 = longs({3, 1}, 0, 7, 5), m1 = random({6}, kBool, 6);
      Tensor mask = random({5, 6}, kBool, 7);
      std::vector<std::vector<Tensor>> cases = {
          {i0},     // one dim
          {i0, i1}, // adjacent, leading
          {Tensor(), i1.view({2, 2}),
           longs({2, 1}, 0, 7, 8)},                     // adjacent, inner
          {i0.view({4, 1}), Tensor(), i2.view({1, 3})}, // apart: B first
          {Tensor(), m1},                               // a bool mask
          {mask},                                       // a 2-d mask
          {Tensor(), m1.to(kByte)},                     // a uint8 mask
          {tensor(int64_t(-2))},                        // a 0-dim index
          {longs({0}, 0, 5, 9)},                        // no positions
      };
      for (size_t c = 0; c < cases.size(); ++c) {
        SCOPED_TRACE("case " + std::to_string(c));
        const std::vector<Tensor> &idx = cases[c];
        Tensor want = native::index(x, idx);
        EXPECT_TRUE(same(native::index_cuda(x, idx), want));
        // index_put_: values broadcast over the result's leading dims
        std::vector<int64_t> vs(want.sizes().begin(), want.sizes().end());
        if (!vs.empty())
          vs[0] = 1;
        Tensor v = integers(vs, dt, 10 + c);
        Tensor a = x.clone(), b = x.clone();
        native::index_put_(a, idx, v, true);
        native::index_put_cuda_(b, idx, v, true);
        EXPECT_TRUE(same(b, a)) << "accumulate";
        // Assignment with one value per (possibly repeated) position
        // agrees whatever write wins.
        Tensor one = integers({}, dt, 20 + c);
        a = x.clone();
        b = noncontiguous(x.clone());
        native::index_put_(a, idx, one, false);
        native::index_put_cuda_(b, idx, one, false);
        EXPECT_TRUE(same(b, a)) << "assign";
      }
    }
  }
  // Out of range (either sign) raises PyTorch's IndexError; nothing written.
  Tensor x = random({4, 3});
  Tensor keep = x.clone();
  EXPECT_THROW(native::index_cuda(x, {tensor({int64_t(4)})}), IndexError);
  EXPECT_THROW(native::index_cuda(x, {Tensor(), tensor({int64_t(-4)})}),
               IndexError);
  EXPECT_THROW(
      native::index_put_cuda_(x, {tensor({int64_t(9)})}, tensor(1.0f), false),
      IndexError);
  EXPECT_TRUE(same(x, keep));
  EXPECT_THROW(native::index_cuda(x, {tensor({0.5f})}), Error);
  EXPECT_THROW(native::index_put_cuda_(x, {tensor({int64_t(0)})},
                                       tensor(1.0).to(kDouble), false),
               Error); // dtype
  // Values that alias self are read before any write.
  Tensor y = random({6});
  Tensor y2 = y.clone();
  native::index_put_(y2, {tensor({int64_t(0), 1, 2})}, y2.narrow(0, 1, 3),
                     false);
  native::index_put_cuda_(y, {tensor({int64_t(0), 1, 2})}, y.narrow(0, 1, 3),
                          false);
  EXPECT_TRUE(same(y, y2));
}

TEST(CudaNoGpu, NonzeroMasksFlipTrianglesMatchTheCpuKernels) {
  for (ScalarType dt : {kFloat, kHalf, kLong, kByte, kBool}) {
    SCOPED_TRACE(toString(dt));
    for (Tensor x :
         {integers({5, 6}, dt, 1), noncontiguous(integers({3, 4, 5}, dt, 2)),
          integers({33}, dt, 3), zeros({2, 3}, TensorOptions(dt)),
          ones({2, 3}, TensorOptions(dt)), integers({0, 3}, dt, 4),
          integers({}, dt, 5)}) {
      SCOPED_TRACE(trace(x, 0));
      EXPECT_TRUE(same(native::nonzero_cuda(x), native::nonzero(x)));
      if (x.dim() > 0) {
        Tensor m = random({x.size(-1)}, kBool, 6); // broadcast
        EXPECT_TRUE(same(native::masked_select_cuda(x, m),
                         native::masked_select(x, m)));
      }
      for (std::vector<int64_t> dims :
           {std::vector<int64_t>{0}, {-1}, {0, -1}, {}})
        if (int64_t(dims.size()) <= x.dim()) {
          EXPECT_TRUE(same(native::flip_cuda(x, dims), native::flip(x, dims)));
        }
      if (x.dim() >= 2)
        for (int64_t k : {int64_t(-7), int64_t(-1), int64_t(0), int64_t(2),
                          int64_t(9), std::numeric_limits<int64_t>::max(),
                          std::numeric_limits<int64_t>::min()}) {
          EXPECT_TRUE(same(native::tril_cuda(x, k), native::tril(x, k)));
          EXPECT_TRUE(same(native::triu_cuda(x, k), native::triu(x, k)));
        }
    }
  }
  Tensor nan = tensor({0.0, std::nan(""), -0.0, 1.0});
  EXPECT_TRUE(same(native::nonzero_cuda(nan), native::nonzero(nan)));
  EXPECT_THROW(native::flip_cuda(random({2, 3}), {0, 0}), Error);
  EXPECT_THROW(native::tril_cuda(random({3}), 0), Error);
  EXPECT_THROW(native::masked_select_cuda(random({2, 3}), random({4}, kBool)),
               Error);
}

TEST(CudaNoGpu, Im2colCol2imMatchTheCpuKernels) {
  struct Case {
    std::vector<int64_t> in, k, d, p, s;
  };
  for (const Case &c :
       std::vector<Case>{{{2, 3, 7, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}},
                         {{1, 2, 9, 6}, {2, 3}, {2, 1}, {0, 2}, {2, 3}},
                         {{3, 5, 5}, {5, 5}, {1, 1}, {0, 0}, {1, 1}},
                         {{2, 1, 4, 4}, {1, 1}, {1, 1}, {3, 0}, {1, 2}}})
    for (ScalarType dt : {kFloat, kDouble, kHalf, kLong}) {
      SCOPED_TRACE(std::string(toString(dt)) + " input " +
                   std::to_string(c.in[0]));
      Tensor x = integers(c.in, dt, 1);
      Tensor want = native::im2col(x, c.k, c.d, c.p, c.s, 0);
      EXPECT_TRUE(same(native::im2col_cuda(x, c.k, c.d, c.p, c.s, 0), want));
      if (dt != kLong) {
        EXPECT_TRUE(same(
            native::im2col_cuda(noncontiguous(x), c.k, c.d, c.p, c.s, -1.5),
            native::im2col(x, c.k, c.d, c.p, c.s, -1.5)));
      }
      std::vector<int64_t> hw(c.in.end() - 2, c.in.end());
      Tensor cols = integers(want.sizes().vec(), dt, 2);
      EXPECT_TRUE(same(native::col2im_cuda(cols, hw, c.k, c.d, c.p, c.s),
                       native::col2im(cols, hw, c.k, c.d, c.p, c.s)));
    }
  EXPECT_THROW(native::im2col_cuda(random({1, 1, 2, 2}), {3, 3}, {1, 1}, {0, 0},
                                   {1, 1}, 0),
               Error);
}

// What an independent probe found: the CPU kernels accumulate floats in
// double, read the input in the requested dtype first, start sums from +0,
// saturate im2col's pad value, and take more than 8 dims.
TEST(CudaNoGpu, CompositionsAgreeWithTheCpuAtTheEdges) {
  auto both = [](const Tensor &got, const Tensor &want) {
    EXPECT_TRUE(same(got, want));
  };
  Tensor big = tensor({1e20f, 1e20f}), tiny = tensor({1e-25f, 1e-25f});
  for (double p : {2.0, 3.0}) {
    both(native::norm_cuda(big, p, {0}, false), big.norm(p, {0}));
    both(native::norm_cuda(tiny, p, {0}, false), tiny.norm(p, {0}));
  }
  Tensor bf = tensor({1e38, 1e38}).to(kBFloat16);
  both(native::norm_cuda(bf, 2, {0}, false), bf.norm(2, {0}));
  Tensor up_down = tensor({1e30f, 1e-30f, 1e30f, 1e-30f});
  both(native::prod_cuda(up_down, 0, false, std::nullopt), up_down.prod(0));
  Tensor ups = tensor({1e30f, 1e30f, 1e-30f, 1e-30f});
  both(native::cumprod_cuda(ups, 0, std::nullopt), ups.cumprod(0));
  Tensor wide = tensor({3e38f, 3e38f, -3e38f, -3e38f});
  both(native::cumsum_cuda(wide, 0, std::nullopt), wide.cumsum(0));
  both(native::prod_cuda(ups.to(kBFloat16), 0, false, std::nullopt),
       ups.to(kBFloat16).prod(0));
  // The input in the requested dtype first.
  Tensor ints = tensor({int64_t(2049), int64_t(1), int64_t(1)});
  both(native::cumsum_cuda(ints, 0, kHalf), ints.cumsum(0, kHalf));
  Tensor f = tensor({8.8f, 8.8f});
  both(native::prod_cuda(f, 0, false, kHalf), f.prod(0, false, kHalf));
  Tensor r = random({3, 300}, kFloat, 4);
  both(native::cumsum_cuda(r, 1, kBFloat16), r.cumsum(1, kBFloat16));
  // A sum of -0.0 is +0.0.
  for (ScalarType t : {kFloat, kDouble, kHalf}) {
    Tensor z = tensor({-0.0}).to(t);
    Tensor got = native::cumsum_cuda(z, 0, std::nullopt);
    EXPECT_FALSE(std::signbit(got.item<double>())) << toString(t);
    EXPECT_EQ(std::signbit(got.item<double>()),
              std::signbit(z.cumsum(0).item<double>()));
  }
  // More than 8 dims.
  Tensor x9 =
      arange(16, TensorOptions(kFloat)).view({2, 1, 2, 1, 2, 1, 2, 1, 1});
  both(native::index_cuda(x9, {tensor({int64_t(1)})}),
       native::index(x9, {tensor({int64_t(1)})}));
  both(native::flip_cuda(x9, {0, 4}), native::flip(x9, {0, 4}));
  // im2col's pad value saturates for integers and rounds for floats.
  Tensor im = arange(4, TensorOptions(kLong)).view({1, 1, 2, 2});
  for (auto [t, v] :
       {std::pair{kLong, Scalar(-INFINITY)},
        std::pair{kByte, Scalar(int64_t(-3))}, std::pair{kByte, Scalar(-1.5)},
        std::pair{kChar, Scalar(300.0)}, std::pair{kHalf, Scalar(1e6)}})
    for (int64_t pad : {0, 1}) {
      SCOPED_TRACE(std::string(toString(t)) + " pad " + std::to_string(pad));
      both(native::im2col_cuda(im.to(t), {2, 2}, {1, 1}, {pad, pad}, {1, 1}, v),
           native::im2col(im.to(t), {2, 2}, {1, 1}, {pad, pad}, {1, 1}, v));
    }
  // Integer max pooling pads with the lowest value (-inf saturated).
  Tensor img = integers({1, 2, 5, 5}, kLong, 5);
  both(native::im2col_cuda(img, {3, 3}, {1, 1}, {1, 1}, {2, 2}, -INFINITY),
       native::im2col(img, {3, 3}, {1, 1}, {1, 1}, {2, 2}, -INFINITY));
  // Uniform and normal draws are floating.
  Tensor i = empty({4}, TensorOptions(kLong));
  EXPECT_THROW(cuda::draw(cuda::Draw::Uniform, i, 1, 0), Error);
}

// --- with a GPU --------------------------------------------------------------

TEST(Cuda, ReductionsAndScansOnTheDevice) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat, kDouble, kHalf, kLong, kBool}) {
    SCOPED_TRACE(toString(dt));
    const double tol = dt == kHalf ? 2e-2 : 1e-5;
    Tensor x = noncontiguous(integers({3, 5, 6}, dt, 2));
    Tensor g = x.cuda();
    for (int64_t d = 0; d < 3; ++d) {
      EXPECT_TRUE(same(g.prod(d).cpu(), x.prod(d), tol));
      EXPECT_TRUE(same(g.all(d).cpu(), x.all(d)));
      EXPECT_TRUE(same(g.any(d, true).cpu(), x.any(d, true)));
      EXPECT_TRUE(same(g.cumsum(d).cpu(), x.cumsum(d), tol));
      EXPECT_TRUE(same(g.cumprod(d).cpu(), x.cumprod(d), tol));
      if (isFloatingType(dt)) {
        EXPECT_TRUE(same(g.norm(2, {d}).cpu(), x.norm(2, {d}), tol));
      }
    }
    EXPECT_TRUE(same(g.prod().cpu(), x.prod(), tol));
    EXPECT_EQ(g.equal(g.clone()), true);
    if (dt != kBool) {
      Tensor a = integers({50}, dt, 3), b = integers({50}, dt, 4);
      EXPECT_TRUE(same(a.cuda().dot(b.cuda()).cpu(), a.dot(b), tol));
    }
  }
  // Gradients through them, on the device.
  Tensor w = random({4, 5}, kDouble, 5).requires_grad_();
  Tensor wc = w.detach().cuda().requires_grad_();
  (w.cumsum(1).prod(0).sum() + w.norm(2, {1}).sum()).backward();
  (wc.cumsum(1).prod(0).sum() + wc.norm(2, {1}).sum()).backward();
  EXPECT_TRUE(same(wc.grad().cpu(), w.grad(), 1e-10));
}

TEST(Cuda, IndexingOnTheDevice) {
  REQUIRE_GPU();
  for (ScalarType dt : {kFloat, kHalf, kLong, kBool}) {
    SCOPED_TRACE(toString(dt));
    Tensor x = integers({7, 6, 5}, dt, 2).transpose(0, 2);
    Tensor g = x.cuda();
    Tensor i0 = longs({4}, -5, 5, 3), mask = random({5, 6}, kBool, 7);
    EXPECT_TRUE(same(g.index({i0.cuda()}).cpu(), x.index({i0})));
    EXPECT_TRUE(same(g.index({indexing::Slice(), i0.cuda().remainder(6)}).cpu(),
                     x.index({indexing::Slice(), i0.remainder(6)})));
    EXPECT_TRUE(same(g.index({mask.cuda()}).cpu(), x.index({mask})));
    Tensor v = integers({4, 6, 7}, dt, 8);
    Tensor a = g.clone(), b = x.clone();
    ember::index_put_(a, std::vector<Tensor>{i0.cuda()}, v.cuda(), true);
    ember::index_put_(b, std::vector<Tensor>{i0}, v, true);
    EXPECT_TRUE(same(a.cpu(), b));
    EXPECT_TRUE(same(g.nonzero().cpu(), x.nonzero()));
    Tensor last = random({7}, kBool, 11); // (broadcasts over x's last dim)
    EXPECT_TRUE(
        same(g.masked_select(last.cuda()).cpu(), x.masked_select(last)));
    EXPECT_TRUE(same(g.flip({0, 2}).cpu(), x.flip({0, 2})));
    EXPECT_TRUE(same(g.tril(1).cpu(), x.tril(1)));
    EXPECT_TRUE(same(g.triu(-1).cpu(), x.triu(-1)));
    EXPECT_THROW(g.index({tensor({int64_t(5)}).cuda()}), IndexError);
    // CPU indices and masks index a CUDA tensor, as in PyTorch.
    EXPECT_TRUE(same(g.index({i0}).cpu(), x.index({i0})));
    EXPECT_TRUE(same(g.index({mask}).cpu(), x.index({mask})));
    Tensor one = integers({}, dt, 9); // a CPU 0-dim value: a scalar
    Tensor gc = g.clone(), xc = x.clone();
    ember::index_put_(gc, std::vector<Tensor>{i0}, one, false);
    ember::index_put_(xc, std::vector<Tensor>{i0}, one, false);
    EXPECT_TRUE(same(gc.cpu(), xc));
  }
  // A convolution (im2col, mm, col2im in the backward) against the CPU.
  Tensor in = random({2, 3, 9, 9}, kDouble, 9).requires_grad_();
  Tensor w = random({4, 3, 3, 3}, kDouble, 10).requires_grad_();
  Tensor inc = in.detach().cuda().requires_grad_();
  Tensor wc = w.detach().cuda().requires_grad_();
  Tensor y = conv2d(in, w, {}, 2, 1), yc = conv2d(inc, wc, {}, 2, 1);
  EXPECT_TRUE(same(yc.cpu(), y, 1e-10));
  y.sum().backward();
  yc.sum().backward();
  EXPECT_TRUE(same(inc.grad().cpu(), in.grad(), 1e-10));
  EXPECT_TRUE(same(wc.grad().cpu(), w.grad(), 1e-10));
}

// Note [CUDA random numbers] (eager/cuda/Random.cpp): every variant of the
// random kernel compiles under NVRTC, and its device code, run on the host,
// draws exactly what the CPU ops draw for the same (seed, offset).
TEST(CudaNoGpu, RandomKernelsCompileUnderNvrtc) {
  REQUIRE_NVRTC();
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16})
    for (cuda::Draw kind : {cuda::Draw::Uniform, cuda::Draw::Normal})
      EXPECT_NE(cuda::nvrtc::compile(cuda::draw_source(kind, t), "philox.cu",
                                     80, false)
                    .binary.find(".entry ember_philox"),
                std::string::npos)
          << toString(t);
  for (ScalarType t :
       {kFloat, kDouble, kHalf, kLong, kInt, kShort, kChar, kByte, kBool})
    EXPECT_NE(cuda::nvrtc::compile(cuda::draw_source(cuda::Draw::Randint, t),
                                   "philox.cu", 80, false)
                  .binary.find(".entry ember_philox"),
              std::string::npos)
        << toString(t);
}

TEST(CudaNoGpu, RandomKernelsMatchTheCpuOps) {
  const int64_t lo64 = std::numeric_limits<int64_t>::min();
  const int64_t hi64 = std::numeric_limits<int64_t>::max();
  for (auto [seed, offset] : {std::pair<uint64_t, uint64_t>{0, 0},
                              {42, 1000},
                              {~uint64_t(0), ~uint64_t(0) - 7000}}) {
    Tensor state = empty({2}, TensorOptions(kLong));
    state.data_ptr<int64_t>()[0] = int64_t(seed);
    state.data_ptr<int64_t>()[1] = int64_t(offset);
    for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
      SCOPED_TRACE(toString(t));
      Tensor u = empty({3, 1001}, TensorOptions(t));
      cuda::draw(cuda::Draw::Uniform, u, seed, offset);
      EXPECT_TRUE(same(u, _philox_uniform(state, {3, 1001}, t)));
      Tensor n = empty({2000}, TensorOptions(t));
      cuda::draw(cuda::Draw::Normal, n, seed, offset);
      EXPECT_TRUE(same(n, _philox_normal(state, {2000}, t)));
    }
    for (auto [t, lo, hi] : {std::tuple{kLong, int64_t(-5), int64_t(17)},
                             std::tuple{kLong, lo64, hi64},
                             std::tuple{kInt, int64_t(-3), int64_t(1) << 30},
                             std::tuple{kByte, int64_t(0), int64_t(256)},
                             std::tuple{kBool, int64_t(0), int64_t(2)},
                             std::tuple{kFloat, int64_t(-100), int64_t(100)},
                             std::tuple{kHalf, int64_t(0), int64_t(2048)}}) {
      SCOPED_TRACE(toString(t));
      Tensor r = empty({1500}, TensorOptions(t));
      cuda::draw(cuda::Draw::Randint, r, seed, offset, lo,
                 uint64_t(hi) - uint64_t(lo));
      Tensor want = _philox_randint(state, lo, hi, {1500}, t);
      EXPECT_TRUE(same(r, want));
      if (t == kLong && lo == lo64) { // exact int64 comparison
        EXPECT_EQ(0, std::memcmp(r.data_ptr(), want.data_ptr(), 1500 * 8));
      }
    }
  }
}

TEST(Cuda, RandomOnTheDevice) {
  REQUIRE_GPU();
  TensorOptions dev = TensorOptions().device(kCUDA);
  for (ScalarType t : {kFloat, kDouble, kHalf}) {
    SCOPED_TRACE(toString(t));
    manual_seed(7);
    Tensor a = rand({4097}, dev.dtype(t)), an = randn({513}, dev.dtype(t));
    manual_seed(7);
    Tensor b = rand({4097}, TensorOptions(t)),
           bn = randn({513}, TensorOptions(t));
    EXPECT_TRUE(a.is_cuda());
    EXPECT_TRUE(same(a.cpu(), b));
    // (the device's double log and cos may differ in the last bit)
    EXPECT_TRUE(same(an.cpu(), bn, 1e-12));
  }
  Generator g1(3), g2(3);
  EXPECT_TRUE(
      same(randint(-7, 9, {999}, g1, dev).cpu(), randint(-7, 9, {999}, g2)));
  EXPECT_EQ(g1.get_offset(), g2.get_offset());
  // Dropout draws its mask on the device.
  Tensor x = ones({10000}, dev);
  Tensor y = nn::functional::dropout(
      x, nn::functional::DropoutFuncOptions().p(0.25).training(true));
  const double kept = y.ne(0).sum().item<double>() / 10000;
  EXPECT_NEAR(kept, 0.75, 0.03);
}

// ProfilerActivity::CUDA on the device: kernels, copies and cuBLAS calls are
// rows with device time, charged to the ops that launched them (Note [Device
// activity] in runtime/Profiler.h).
TEST(Cuda, ProfilerTimesKernels) {
  REQUIRE_GPU();
  using namespace ember::profiler;
  Tensor x = randn({512, 512}).cuda();
  (void)(x + 1).exp().mm(x); // compile the kernels first
  cuda::synchronize();
  profile prof({ProfilerActivity::CPU, ProfilerActivity::CUDA});
  {
    auto g = prof.guard();
    Tensor y = (x + 1).exp().mm(x).cpu();
  }
  EventList rows = prof.key_averages();
  EXPECT_GT(rows.find("ember::exp").device_time_total, 0.0);
  EXPECT_GT(rows.find("ember::mm").device_time_total, 0.0);
  int kernels = 0;
  for (const FunctionEvent &e : prof.events())
    if (e.device_type == kCUDA) {
      ++kernels;
      EXPECT_GE(e.device_time_total, 0.0) << e.name;
    }
  EXPECT_GE(kernels, 4); // add, exp, the gemm, the copy to the host
  std::string t = rows.table("self_cuda_time_total");
  EXPECT_NE(t.find("Self CUDA time total"), std::string::npos) << t;
  EXPECT_NE(t.find("Memcpy DtoH"), std::string::npos) << t;
}

// --- every op on the device against the CPU ----------------------------------
//
// The OpInfo-style harness of the GPU machine: every case of Note [Op cases]
// (every dispatched op of the table, on non-contiguous, broadcast, 0-dim
// and empty inputs) runs on the CPU and on a device, with the same values,
// strides and offsets; results must have the same dtypes and shapes and
// close values, and a call that raises on the CPU must raise the same error
// type there. Then every gradcheck sample of every differentiable op: the
// device's gradients must be the CPU's (which test_gradcheck checks against
// finite differences). Without a GPU the same harness runs with the CPU as the
// "device", which checks the harness itself.

namespace {

/// `t` on device `d` with its sizes, strides and storage offset: its whole
/// storage copied (so overlapping and offset views stay what they are); a
/// wrapped number (a Scalar) stays where it is.
Tensor twin_on(const Tensor &t, Device d) {
  if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number())
    return t;
  const int64_t n = int64_t(t.storage().nbytes() / t.element_size());
  Tensor all = t.as_strided({n}, {1}, 0);
  Tensor copy = empty({n}, t.options().device(d));
  copy.copy_(all);
  return copy.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

Stack stack_on(const Stack &args, Device d) {
  return map_tensors(args, [d](const Tensor &t) { return twin_on(t, d); });
}

struct Run {
  std::string error; ///< the exception's type, empty when none
  std::vector<Tensor> outs;
};

Run run_boxed(const OperatorHandle &op, Stack s) {
  Run r;
  try {
    op.callBoxed(s);
  } catch (const Error &e) {
    r.error = typeid(e).name();
    return r;
  }
  r.outs = tensors_of(s);
  return r;
}

/// Closeness for a dtype: exact for integers and bool.
double tolerance(ScalarType t) {
  switch (t) {
  case kHalf:
  case kBFloat16:
    return 2e-2;
  case kFloat:
    return 1e-4;
  case kDouble:
    return 1e-9;
  default:
    return 0;
  }
}

/// What a device result must match of the CPU's; "" when it does. A
/// result computed from less precise inputs (a float64 gradient of float32
/// tensors) is held to the tolerance of `inputs`, the least precise.
std::string compare(const Tensor &cpu, const Tensor &dev,
                    ScalarType inputs = kDouble) {
  if (cpu.defined() != dev.defined())
    return "one result is undefined";
  if (!cpu.defined())
    return "";
  if (cpu.dtype() != dev.dtype())
    return std::string("dtype ") + toString(dev.dtype()) +
           " != " + toString(cpu.dtype());
  if (cpu.sizes() != dev.sizes())
    return "shape differs";
  double tol = tolerance(cpu.dtype());
  if (isFloatingType(cpu.dtype()))
    tol = std::max(tol, tolerance(inputs));
  ::testing::AssertionResult r = close(dev.cpu(), cpu.cpu(), tol, tol);
  return r ? "" : r.message();
}

/// Ops whose values are not a function of their inputs (random draws) or
/// whose result depends on the order of writes to one element (an
/// assignment through repeated indices): shapes and dtypes only.
bool values_vary(const std::string &op) {
  for (const char *s : {"philox", "dropout", "rand", "scatter.src",
                        "scatter_.src", "scatter.value", "index_put_"})
    if (op.find(s) != std::string::npos)
      return true;
  return false;
}

/// Runs every op case on the CPU and on `d`; returns the failures.
std::vector<std::string> every_op_on(Device d, int *checked) {
  std::vector<std::string> failures;
  *checked = 0;
  for (const test::OpCase &c : test::op_cases()) {
    // (the random ops read a generator's state, a CPU tensor on any device:
    // Note [CUDA random numbers])
    if (c.op.find("philox") != std::string::npos)
      continue;
    const OperatorHandle &op = Dispatcher::singleton().findSchemaOrThrow(c.op);
    // (OP_HARNESS_TRACE=1: each case's op before it runs, to find one that
    // crashes)
    static const bool trace = std::getenv("OP_HARNESS_TRACE") != nullptr;
    if (trace)
      std::fprintf(stderr, "op harness: %s on %s\n", c.op.c_str(),
                   d.str().c_str());
    Stack args = c.args();
    Run want = run_boxed(op, stack_on(args, Device(kCPU)));
    Run got = run_boxed(op, stack_on(args, d));
    ++*checked;
    // The least precise floating dtype among the tensor arguments and the
    // dtype arguments (input_dtype), whose tolerance a result is held to.
    ScalarType least = kDouble;
    auto note = [&](ScalarType t) {
      if (isFloatingType(t) && tolerance(t) > tolerance(least))
        least = t;
    };
    for (const Tensor &t : tensors_of(args))
      if (t.defined())
        note(t.dtype());
    std::string why;
    // cuBLAS has no integer matrix products: PyTorch's CUDA raises there
    // too ("addmm_cuda" not implemented for 'Long').
    bool integer_gemm = false;
    for (const char *m : {"ember::mm", "ember::bmm", "ember::addmm",
                          "ember::baddbmm", "ember::dot"})
      integer_gemm = integer_gemm || c.op == m;
    for (const Tensor &t : tensors_of(args))
      integer_gemm = integer_gemm && t.defined() && !isFloatingType(t.dtype());
    if (integer_gemm && !d.is_cpu() && want.error.empty() &&
        got.error.find("TypeError") != std::string::npos)
      continue;
    if (want.error != got.error)
      why = "raised '" + got.error + "' where the CPU raised '" + want.error +
            "'";
    else if (want.outs.size() != got.outs.size())
      why = "a different number of results";
    else
      for (size_t k = 0; k < want.outs.size() && why.empty(); ++k) {
        if (values_vary(c.op) && want.outs[k].defined() &&
            got.outs[k].defined())
          why = want.outs[k].sizes() == got.outs[k].sizes() &&
                        want.outs[k].dtype() == got.outs[k].dtype()
                    ? ""
                    : "shape or dtype differs";
        else
          why = compare(want.outs[k], got.outs[k], least);
      }
    if (!why.empty())
      failures.push_back(c.op + ": " + why);
  }
  return failures;
}

/// The gradients of every gradcheck sample (every differentiable op:
/// test/support/GradCases.h) on `d` against the CPU's; returns the
/// failures.
std::vector<std::string> every_gradient_on(Device d, int *checked) {
  std::vector<std::string> failures;
  *checked = 0;
  for (const auto &[name, samples] : test::grad_cases())
    for (const test::samples::GradSample &g : *samples) {
      variable_list base = g.inputs();
      auto grads = [&](Device dev) {
        variable_list in;
        for (const Tensor &t : base)
          in.push_back(
              t.defined()
                  ? twin_on(t.detach(), dev).requires_grad_(t.requires_grad())
                  : t);
        variable_list outs = g.fn(in);
        Tensor loss;
        uint64_t seed = 7;
        for (const Tensor &y : outs)
          if (y.defined() && y.requires_grad()) {
            Tensor w = twin_on(random(y.sizes(), y.dtype(), seed++), dev);
            Tensor term = (y * w).sum();
            loss = loss.defined() ? loss + term : term;
          }
        variable_list wrt;
        for (const Tensor &t : in)
          if (t.defined() && t.requires_grad())
            wrt.push_back(t);
        return loss.defined()
                   ? autograd::grad({loss}, wrt, {}, std::nullopt, false, true)
                   : variable_list{};
      };
      ++*checked;
      std::string why;
      try {
        variable_list want = grads(Device(kCPU));
        // (the sample's index and mask tensors on d too)
        test::samples::sample_device() = d;
        variable_list got;
        try {
          got = grads(d);
        } catch (...) {
          test::samples::sample_device() = Device(kCPU);
          throw;
        }
        test::samples::sample_device() = Device(kCPU);
        if (want.size() != got.size())
          why = "a different number of gradients";
        for (size_t k = 0; k < want.size() && why.empty(); ++k)
          why = compare(want[k], got[k]);
      } catch (const Error &e) {
        why = std::string("raised: ") + e.what();
      }
      if (!why.empty())
        failures.push_back(name + " [" + g.label + "]: " + why);
    }
  return failures;
}

std::string listed(const std::vector<std::string> &failures) {
  std::string s;
  for (const std::string &f : failures)
    s += "\n  " + f;
  return s;
}

} // namespace

// The harness on the CPU against itself: every case runs, agrees, and a
// wrong result is caught (the comparison itself can fail).
TEST(CudaNoGpu, OpHarnessAgreesOnTheCpu) {
  int ops = 0, grads = 0;
  std::vector<std::string> f = every_op_on(Device(kCPU), &ops);
  EXPECT_TRUE(f.empty()) << f.size() << " of " << ops << listed(f);
  EXPECT_GT(ops, 500);
  f = every_gradient_on(Device(kCPU), &grads);
  EXPECT_TRUE(f.empty()) << f.size() << " of " << grads << listed(f);
  EXPECT_GT(grads, 100);
  Tensor x = random({3, 4});
  EXPECT_EQ(compare(x, x.clone()), "");
  EXPECT_NE(compare(x, x + 1e-3), "");
  EXPECT_NE(compare(x, x.to(kDouble)), "");
  EXPECT_NE(compare(x, x.view({4, 3})), "");
  Tensor v = random({4, 5}).t().narrow(0, 1, 3);
  Tensor tw = twin_on(v, Device(kCPU));
  EXPECT_EQ(tw.strides(), v.strides());
  EXPECT_EQ(tw.storage_offset(), v.storage_offset());
  EXPECT_FALSE(tw.is_alias_of(v));
  EXPECT_EQ(compare(v, tw), "");
}

TEST(Cuda, EveryOpMatchesTheCpu) {
  REQUIRE_GPU();
  int checked = 0;
  std::vector<std::string> f = every_op_on(Device(kCUDA, 0), &checked);
  EXPECT_TRUE(f.empty()) << f.size() << " of " << checked << " cases differ"
                         << listed(f);
}

TEST(Cuda, EveryGradientMatchesTheCpu) {
  REQUIRE_GPU();
  int checked = 0;
  std::vector<std::string> f = every_gradient_on(Device(kCUDA, 0), &checked);
  EXPECT_TRUE(f.empty()) << f.size() << " of " << checked
                         << " gradient samples differ" << listed(f);
}

// nn, optim, autograd and checkpoint on the device: a small CNN (conv,
// batch norm, max pooling, dropout, linear, cross entropy) trains three
// Adam steps on CUDA as on the CPU. The two models start from the same
// seed, and each step reseeds before the forward: CUDA draws dropout's
// mask from the same (seed, offset) stream as the CPU (Note [CUDA random
// numbers]), so the masks are equal and so must the losses and weights be.
TEST(Cuda, ModelsTrainAsOnTheCpu) {
  REQUIRE_GPU();
  struct Net : nn::Module {
    // (no bias: batch norm subtracts it, so its true gradient is 0 and
    // Adam would turn each device's rounding of that 0 into a step)
    nn::Conv2d conv{nn::Conv2dOptions(3, 8, 3).padding(1).bias(false)};
    nn::BatchNorm2d bn{8};
    nn::MaxPool2d pool{nn::MaxPool2dOptions(2)};
    nn::Dropout drop{0.25};
    nn::Linear fc{8 * 4 * 4, 10};
    Net() {
      register_module("conv", conv);
      register_module("bn", bn);
      register_module("drop", drop);
      register_module("fc", fc);
    }
    Tensor forward(const Tensor &x) {
      Tensor h = pool(bn(conv(x)).relu());
      // (the linear layer recomputed in the backward: checkpoint on CUDA)
      return checkpoint([&](const Tensor &t) { return fc(drop(t.flatten(1))); },
                        h);
    }
  };
  manual_seed(3);
  auto cpu = std::make_shared<Net>();
  manual_seed(3);
  auto dev = std::make_shared<Net>();
  dev->to(kCUDA);
  Tensor x = random({6, 3, 8, 8}, kFloat, 1);
  Tensor y = longs({6}, 0, 10, 2);
  optim::Adam oc(cpu->parameters(), 1e-2), od(dev->parameters(), 1e-2);
  for (int step = 0; step < 3; ++step) {
    manual_seed(100 + step);
    Tensor lc = nn::functional::cross_entropy(cpu->forward(x), y);
    manual_seed(100 + step);
    Tensor ld = nn::functional::cross_entropy(dev->forward(x.cuda()), y.cuda());
    EXPECT_NEAR(ld.item<double>(), lc.item<double>(), 1e-4) << "step " << step;
    oc.zero_grad();
    od.zero_grad();
    lc.backward();
    ld.backward();
    oc.step();
    od.step();
  }
  auto pc = cpu->named_parameters(), pd = dev->named_parameters();
  for (const auto &item : pc) {
    SCOPED_TRACE(item.key());
    EXPECT_TRUE(pd[item.key()].is_cuda());
    EXPECT_TRUE(close(pd[item.key()].cpu(), item.value(), 1e-3, 1e-4));
  }
  // The running statistics too (buffers written in the forward).
  EXPECT_TRUE(
      close(dev->bn->running_mean.cpu(), cpu->bn->running_mean, 1e-4, 1e-5));
  // Saved and loaded onto the CPU.
  std::string path = ::testing::TempDir() + "ember_cuda_model.pt";
  save(dev->fc->weight, path);
  Tensor back;
  load(back, path);
  EXPECT_FALSE(back.is_cuda());
  EXPECT_TRUE(close(back, dev->fc->weight.cpu(), 0, 0));
  std::remove(path.c_str());
}

// --- nn modules and optimizers on the device
// ----------------------------------------------------------------

namespace {

/// Every nn module, loss and optimizer on `dev` against the same on the
/// CPU (issue 14: "every op the nn modules, losses and optimizers use is
/// covered"): twin modules from one seed, one moved to `dev`; the forward
/// on the same random input, then the backward of sum(out * g) for a random
/// g; outputs, input gradients, parameter gradients and buffers compared
/// within `tol`. Then each optimizer takes three steps of a small MLP's
/// loss on both devices and the weights are compared. On the CPU (`dev`
/// CPU) every comparison must be exact: how the harness is checked without
/// a GPU.
/// A module's forward on one input, through its base class.
template <class Impl> auto forward_of() {
  return [](nn::Module &m, const Tensor &x) {
    return static_cast<Impl &>(m).forward(x);
  };
}

void nn_matches_the_cpu(Device dev, double tol) {
  namespace F = nn::functional;
  // (an undefined gradient or buffer is a failure, not an exception)
  auto near = [&](const Tensor &got, const Tensor &want) {
    if (!got.defined() || !want.defined())
      return ::testing::AssertionFailure()
             << (got.defined() ? "" : "the device's tensor is undefined ")
             << (want.defined() ? "" : "the CPU's tensor is undefined");
    return close(got.cpu().to(want.dtype()), want, tol, tol);
  };
  struct Case {
    const char *name;
    std::function<std::shared_ptr<nn::Module>()> make;
    std::function<Tensor(nn::Module &, const Tensor &)> forward;
    std::vector<int64_t> input;
    bool integer_input = false; // (Embedding's indices)
  };
  auto simple = [](auto holder_fn) {
    return [holder_fn] { return holder_fn().ptr(); };
  };
  std::vector<Case> cases = {
      {"Linear",
       simple([] { return nn::Linear(7, 5); }),
       forward_of<nn::LinearImpl>(),
       {4, 7}},
      {"Conv1d",
       simple([] {
         return nn::Conv1d(nn::Conv1dOptions(3, 4, 3).stride(2).padding(1));
       }),
       forward_of<nn::Conv1dImpl>(),
       {2, 3, 11}},
      {"Conv2d",
       simple([] { return nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding(1)); }),
       forward_of<nn::Conv2dImpl>(),
       {2, 3, 6, 5}},
      {"MaxPool2d",
       simple([] { return nn::MaxPool2d(nn::MaxPool2dOptions(2)); }),
       forward_of<nn::MaxPool2dImpl>(),
       {2, 3, 6, 6}},
      {"AvgPool1d",
       simple([] { return nn::AvgPool1d(nn::AvgPool1dOptions(3)); }),
       forward_of<nn::AvgPool1dImpl>(),
       {2, 3, 9}},
      {"BatchNorm1d",
       simple([] { return nn::BatchNorm1d(5); }),
       forward_of<nn::BatchNorm1dImpl>(),
       {8, 5}},
      {"BatchNorm2d",
       simple([] { return nn::BatchNorm2d(3); }),
       forward_of<nn::BatchNorm2dImpl>(),
       {4, 3, 5, 5}},
      {"LayerNorm",
       simple([] { return nn::LayerNorm(nn::LayerNormOptions({6})); }),
       forward_of<nn::LayerNormImpl>(),
       {4, 3, 6}},
      {"Embedding",
       simple([] { return nn::Embedding(10, 4); }),
       forward_of<nn::EmbeddingImpl>(),
       {3, 5},
       true},
      {"GELU",
       simple([] { return nn::GELU(); }),
       forward_of<nn::GELUImpl>(),
       {4, 6}},
      {"SiLU",
       simple([] { return nn::SiLU(); }),
       forward_of<nn::SiLUImpl>(),
       {4, 6}},
      {"Softmax",
       simple([] { return nn::Softmax(1); }),
       forward_of<nn::SoftmaxImpl>(),
       {4, 6}},
      {"Dropout",
       simple([] { return nn::Dropout(0.3); }),
       [](nn::Module &m, const Tensor &x) {
         manual_seed(7); // the same (seed, offset) stream on every device
         return static_cast<nn::DropoutImpl &>(m).forward(x);
       },
       {6, 8}},
      {"MultiheadAttention",
       simple([] {
         return nn::MultiheadAttention(
             nn::MultiheadAttentionOptions(8, 2).batch_first(true));
       }),
       [](nn::Module &m, const Tensor &x) {
         return std::get<0>(
             static_cast<nn::MultiheadAttentionImpl &>(m).forward(x, x, x));
       },
       {2, 5, 8}},
  };
  uint64_t seed = 40;
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    manual_seed(5);
    std::shared_ptr<nn::Module> cpu = c.make();
    manual_seed(5);
    std::shared_ptr<nn::Module> other = c.make();
    other->to(dev);
    Tensor x = c.integer_input ? longs(c.input, 0, 10, ++seed)
                               : random(c.input, kFloat, ++seed);
    Tensor xc = c.integer_input ? x : x.clone().requires_grad_();
    Tensor xd = c.integer_input ? x.to(dev) : x.to(dev).requires_grad_();
    Tensor yc = c.forward(*cpu, xc), yd = c.forward(*other, xd);
    ASSERT_EQ(yd.device(), dev);
    EXPECT_TRUE(near(yd, yc)) << "forward";
    Tensor g = random(yc.sizes().vec(), kFloat, ++seed);
    (yc * g).sum().backward();
    (yd * g.to(dev)).sum().backward();
    if (!c.integer_input) {
      EXPECT_TRUE(near(xd.grad(), xc.grad())) << "input gradient";
    }
    auto pc = cpu->named_parameters(), pd = other->named_parameters();
    for (const auto &item : pc) {
      SCOPED_TRACE(item.key());
      EXPECT_TRUE(near(pd[item.key()].grad(), item.value().grad()))
          << "parameter gradient";
    }
    auto bc = cpu->named_buffers(), bd = other->named_buffers();
    for (const auto &item : bc) {
      SCOPED_TRACE(item.key());
      EXPECT_TRUE(near(bd[item.key()], item.value())) << "buffer";
    }
  }

  // The losses, forward and backward.
  Tensor logits = random({6, 4}, kFloat, 60), target = longs({6}, 0, 4, 61);
  Tensor prob = random({6, 4}, kFloat, 62).sigmoid(),
         label = random({6, 4}, kFloat, 63).gt(0).to(kFloat);
  std::vector<
      std::pair<const char *, std::function<Tensor(const Tensor &, Device)>>>
      losses = {
          {"mse_loss", [&](const Tensor &x,
                           Device d) { return F::mse_loss(x, prob.to(d)); }},
          {"l1_loss", [&](const Tensor &x,
                          Device d) { return F::l1_loss(x, prob.to(d)); }},
          {"smooth_l1_loss",
           [&](const Tensor &x, Device d) {
             return F::smooth_l1_loss(x, prob.to(d));
           }},
          {"cross_entropy",
           [&](const Tensor &x, Device d) {
             return F::cross_entropy(x, target.to(d));
           }},
          {"nll_loss",
           [&](const Tensor &x, Device d) {
             return F::nll_loss(x.log_softmax(1), target.to(d));
           }},
          {"binary_cross_entropy",
           [&](const Tensor &x, Device d) {
             return F::binary_cross_entropy(x.sigmoid(), label.to(d));
           }},
          {"binary_cross_entropy_with_logits",
           [&](const Tensor &x, Device d) {
             return F::binary_cross_entropy_with_logits(x, label.to(d));
           }},
      };
  for (const auto &[name, loss] : losses) {
    SCOPED_TRACE(name);
    // (copies: with the CPU for the device, to() would hand back logits)
    Tensor xc = logits.clone().requires_grad_(),
           xd = logits.clone().to(dev).requires_grad_();
    Tensor lc = loss(xc, kCPU), ld = loss(xd, dev);
    EXPECT_TRUE(near(ld, lc)) << "loss";
    lc.backward();
    ld.backward();
    EXPECT_TRUE(near(xd.grad(), xc.grad())) << "gradient";
  }

  // The optimizers: three steps each.
  std::vector<std::pair<
      const char *,
      std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>>>
      optimizers = {
          {"SGD",
           [](std::vector<Tensor> p) {
             return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1));
           }},
          {"SGD nesterov",
           [](std::vector<Tensor> p) {
             return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1)
                                                        .momentum(0.9)
                                                        .nesterov(true)
                                                        .weight_decay(1e-2));
           }},
          {"Adam amsgrad",
           [](std::vector<Tensor> p) {
             return std::make_unique<optim::Adam>(
                 p, optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-3));
           }},
          {"AdamW",
           [](std::vector<Tensor> p) {
             return std::make_unique<optim::AdamW>(p,
                                                   optim::AdamWOptions(1e-2));
           }},
          {"RMSprop centered",
           [](std::vector<Tensor> p) {
             return std::make_unique<optim::RMSprop>(
                 p, optim::RMSpropOptions(1e-2).momentum(0.5).centered(true));
           }},
      };
  Tensor in = random({8, 7}, kFloat, 70), out = longs({8}, 0, 3, 71);
  for (const auto &[name, make] : optimizers) {
    SCOPED_TRACE(name);
    manual_seed(9);
    nn::Sequential mc{nn::Linear(7, 6), nn::ReLU(), nn::Linear(6, 3)};
    manual_seed(9);
    nn::Sequential md{nn::Linear(7, 6), nn::ReLU(), nn::Linear(6, 3)};
    md->to(dev);
    auto oc = make(mc->parameters()), od = make(md->parameters());
    for (int step = 0; step < 3; ++step) {
      oc->zero_grad();
      od->zero_grad();
      F::cross_entropy(mc->forward(in), out).backward();
      F::cross_entropy(md->forward(in.to(dev)), out.to(dev)).backward();
      oc->step();
      od->step();
    }
    auto pc = mc->named_parameters(), pd = md->named_parameters();
    for (const auto &item : pc) {
      SCOPED_TRACE(item.key());
      EXPECT_TRUE(pd[item.key()].device() == dev);
      EXPECT_TRUE(near(pd[item.key()], item.value()));
    }
  }
}

} // namespace

TEST(Cuda, NnModulesLossesAndOptimizersMatchTheCpu) {
  REQUIRE_GPU();
  nn_matches_the_cpu(Device(kCUDA, 0), 1e-4);
}

// The harness above with the CPU for the device: twins from one seed agree
// exactly, so a case that does not compare what it should, or a module
// whose twins differ, shows here on every machine.
TEST(CudaNoGpu, NnHarnessAgreesOnTheCpu) { nn_matches_the_cpu(kCPU, 0); }
