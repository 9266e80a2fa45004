// Tensor core: metadata, storage sharing, views, contiguity, factories.
#include "TestUtil.h"
#include <cstring>
#include <vector>

using namespace ember;
using namespace ember::test;

TEST(TensorCore, MetadataOfTheSeedExample) {
  // seeds: x = torch.tensor([[1, 2, 3], [4, 5, 6]])
  Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(x.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.strides(), IntArrayRef({3, 1}));
  EXPECT_EQ(x.storage_offset(), 0);
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.dim(), 2);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x.dtype(), kLong);
  EXPECT_EQ(x.device(), Device(kCPU));
  EXPECT_EQ(x.element_size(), 8u);
  EXPECT_EQ(x.nbytes(), 48u);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.stride(0), 3);
  // storage[offset + i*stride[0] + j*stride[1]]
  EXPECT_EQ(x.data_ptr<int64_t>()[1 * x.stride(0) + 2 * x.stride(1)], 6);
  EXPECT_TRUE(tensor({1.5, 2.0}).dtype() == kFloat);
  EXPECT_TRUE(tensor({true, false}).dtype() == kBool);
  EXPECT_TRUE(tensor({1, 2}, kInt).dtype() == kInt);
  EXPECT_EQ(tensor(3.5).dim(), 0);
  EXPECT_FALSE(Tensor().defined());
}

TEST(TensorCore, TransposeSharesStorageWithSwappedStrides) {
  Tensor x = arange(6).view({2, 3});
  Tensor t = x.t();
  EXPECT_EQ(t.sizes(), IntArrayRef({3, 2}));
  EXPECT_EQ(t.strides(), IntArrayRef({1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_alias_of(x));
  EXPECT_EQ(t.data_ptr(), x.data_ptr());
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_alias_of(x)); // contiguous() copied
  EXPECT_EQ(c.strides(), IntArrayRef({2, 1}));
  EXPECT_TRUE(close(c, tensor({{0, 3}, {1, 4}, {2, 5}})));
  EXPECT_TRUE(x.contiguous().is_same(x)); // no copy when already contiguous
}

TEST(TensorCore, RowViewWritesThrough) {
  Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor row = x[1];
  EXPECT_TRUE(row.is_alias_of(x));
  EXPECT_EQ(row.storage_offset(), 3);
  row.fill_(0);
  EXPECT_TRUE(close(x, tensor({{1, 2, 3}, {0, 0, 0}})));
  Tensor col = x.select(1, 2);
  col.mul_(10);
  EXPECT_TRUE(close(x, tensor({{1, 2, 30}, {0, 0, 0}})));
}

TEST(TensorCore, ViewErrorSuggestsReshape) {
  Tensor x = arange(6).view({2, 3}).t();
  EXPECT_EMBER_ERROR(x.view({6}), "Use .reshape(...) instead");
  Tensor r = x.reshape({6});
  EXPECT_FALSE(r.is_alias_of(x));
  EXPECT_TRUE(close(r, tensor({0, 3, 1, 4, 2, 5})));
  Tensor y = arange(6).view({2, 3});
  EXPECT_TRUE(y.reshape({3, 2}).is_alias_of(y)); // no copy when a view works
  EXPECT_EQ(y.view({-1}).sizes(), IntArrayRef({6}));
  EXPECT_EMBER_ERROR(y.view({4, -1}), "invalid for input of size 6");
  EXPECT_EMBER_ERROR(y.view({-1, -1}), "only one dimension can be inferred");
}

TEST(TensorCore, ViewOps) {
  Tensor x = random({2, 3, 4});
  EXPECT_EQ(x.unsqueeze(1).sizes(), IntArrayRef({2, 1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).sizes(), IntArrayRef({2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(0).squeeze().sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(x.unsqueeze(2).squeeze(2).sizes(), IntArrayRef({2, 3, 4}));
  EXPECT_EQ(x.squeeze(0).sizes(), IntArrayRef({2, 3, 4})); // size 2: kept
  EXPECT_EQ(x.permute({2, 0, 1}).sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(x.permute({2, 0, 1}).strides(), IntArrayRef({1, 12, 4}));
  EXPECT_EQ(x.flatten().sizes(), IntArrayRef({24}));
  EXPECT_EQ(x.flatten(1).sizes(), IntArrayRef({2, 12}));
  EXPECT_EQ(x.flatten(0, 1).sizes(), IntArrayRef({6, 4}));
  EXPECT_EQ(x.unflatten(2, {2, 2}).sizes(), IntArrayRef({2, 3, 2, 2}));
  EXPECT_EQ(x.transpose(0, 2).sizes(), IntArrayRef({4, 3, 2}));
  EXPECT_EQ(x.narrow(2, 1, 2).sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(x.narrow(2, 1, 2).storage_offset(), 1);
  EXPECT_EQ(x.slice(2, 0, std::nullopt, 3).sizes(), IntArrayRef({2, 3, 2}));
  EXPECT_EQ(x.slice(2, 0, std::nullopt, 3).strides(), IntArrayRef({12, 4, 3}));
  EXPECT_EQ(x.slice(1, -2).sizes(), IntArrayRef({2, 2, 4}));
  EXPECT_EQ(x.slice(1, 5, 10).sizes(), IntArrayRef({2, 0, 4})); // clamped
  Tensor e = tensor({1.0, 2.0}).view({2, 1}).expand({2, 3});
  EXPECT_EQ(e.strides(), IntArrayRef({1, 0}));
  EXPECT_TRUE(close(e, tensor({{1.0, 1.0, 1.0}, {2.0, 2.0, 2.0}})));
  EXPECT_EQ(tensor({1.0}).expand({2, 3, 1}).sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(e.expand_as(zeros({4, 2, 3})).sizes(), IntArrayRef({4, 2, 3}));
  EXPECT_EQ(broadcast_to(tensor({1, 2}), {3, 2}).sizes(), IntArrayRef({3, 2}));
  Tensor m = arange(9).view({3, 3});
  EXPECT_TRUE(close(m.diagonal(), tensor({0, 4, 8})));
  EXPECT_TRUE(close(m.diagonal(1), tensor({1, 5})));
  EXPECT_TRUE(close(m.diagonal(-1), tensor({3, 7})));
  EXPECT_TRUE(m.diagonal().is_alias_of(m));
  EXPECT_TRUE(
      close(arange(6).as_strided({2, 2}, {1, 2}, 1), tensor({{1, 3}, {2, 4}})));
  Tensor u = arange(7).unfold(0, 3, 2);
  EXPECT_TRUE(close(u, tensor({{0, 1, 2}, {2, 3, 4}, {4, 5, 6}})));
  auto parts = arange(7).split(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_TRUE(close(parts[2], tensor({6})));
  auto sized = arange(7).split(std::vector<int64_t>{2, 5});
  EXPECT_TRUE(close(sized[1], tensor({2, 3, 4, 5, 6})));
  auto ch = arange(6).chunk(4);
  ASSERT_EQ(ch.size(), 3u); // as PyTorch: ceil(6/4)=2 per chunk
  auto rows = m.unbind(1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(close(rows[1], tensor({1, 4, 7})));
  for (auto &p : rows)
    EXPECT_TRUE(p.is_alias_of(m));
}

TEST(TensorCore, ViewsOfEmptyAndZeroDim) {
  Tensor s = tensor(2.5);
  EXPECT_EQ(s.view({1}).sizes(), IntArrayRef({1}));
  EXPECT_EQ(s.unsqueeze(0).sizes(), IntArrayRef({1}));
  EXPECT_EQ(s.reshape({1, 1}).sizes(), IntArrayRef({1, 1}));
  EXPECT_EQ(s.flatten().sizes(), IntArrayRef({1}));
  EXPECT_EQ(s.t().dim(), 0);
  Tensor e = zeros({0, 3});
  EXPECT_EQ(e.view({3, 0}).sizes(), IntArrayRef({3, 0}));
  EXPECT_EQ(e.t().sizes(), IntArrayRef({3, 0}));
  EXPECT_EQ(e.flatten().sizes(), IntArrayRef({0}));
  EXPECT_TRUE(e.is_contiguous());
}

TEST(TensorCore, CloneAndCopy) {
  Tensor x = random({3, 4});
  Tensor c = x.clone();
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(close(c, x, 0, 0));
  Tensor y = zeros({3, 4});
  y.copy_(x.t().t());
  EXPECT_TRUE(close(y, x, 0, 0));
  Tensor z = zeros({2, 3, 4}, kDouble);
  z.copy_(x); // broadcast + dtype conversion
  EXPECT_TRUE(close(z[1], x));
  Tensor h = x.to(kHalf);
  EXPECT_EQ(h.dtype(), kHalf);
  EXPECT_TRUE(close(h, x, 1e-3, 1e-3));
  EXPECT_TRUE(close(x.to(kBFloat16), x, 1e-2, 1e-2));
  EXPECT_TRUE(close(tensor({-1.7, 0.2, 2.9}).to(kInt), tensor({-1, 0, 2})));
  EXPECT_TRUE(close(tensor({0.0, 0.5, -2.0}).to(kBool), tensor({0, 1, 1})));
  EXPECT_TRUE(x.to(kFloat).is_same(x)); // no-op conversion returns self
  EXPECT_FALSE(x.to(kFloat, false, /*copy=*/true).is_same(x));
  // Overlapping self-copy reads everything first.
  Tensor a = arange(5, kFloat);
  a.slice(0, 1).copy_(a.slice(0, 0, 4));
  EXPECT_TRUE(close(a, tensor({0, 0, 1, 2, 3})));
}

TEST(TensorCore, VersionCounterSharedByViews) {
  Tensor x = zeros({4});
  Tensor v = x.view({2, 2});
  uint32_t before = x._version();
  v.add_(1);
  EXPECT_GT(x._version(), before);
  EXPECT_EQ(x._version(), v._version());
}

TEST(TensorCore, ItemAndDataPtr) {
  EXPECT_EQ(tensor(7).item<int64_t>(), 7);
  EXPECT_DOUBLE_EQ(tensor(2.5, kDouble).item<double>(), 2.5);
  EXPECT_EQ(tensor(true).item<bool>(), true);
  EXPECT_FLOAT_EQ(tensor(1.5, kHalf).item<float>(), 1.5f);
  EXPECT_EMBER_ERROR(tensor({1, 2}).item<int64_t>(),
                     "a Tensor with 2 elements cannot be converted to Scalar");
  EXPECT_EMBER_ERROR(
      tensor({1, 2}).data_ptr<float>(),
      "expected scalar type ember.float32 but found ember.int64");
}

TEST(TensorCore, Factories) {
  EXPECT_TRUE(close(zeros({2, 2}), tensor({{0.0, 0.0}, {0.0, 0.0}})));
  EXPECT_TRUE(close(ones({3}, kInt), tensor({1, 1, 1})));
  EXPECT_EQ(ones({3}, kInt).dtype(), kInt);
  EXPECT_EQ(full({2}, 7).dtype(), kLong);
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_TRUE(close(arange(5), tensor({0, 1, 2, 3, 4})));
  EXPECT_EQ(arange(5).dtype(), kLong);
  EXPECT_EQ(arange(0.0, 1.0, 0.25).dtype(), kFloat);
  EXPECT_TRUE(close(arange(0.0, 1.0, 0.25), tensor({0.0, 0.25, 0.5, 0.75})));
  EXPECT_TRUE(close(arange(10, 0, -3), tensor({10, 7, 4, 1})));
  EXPECT_TRUE(close(linspace(0, 1, 5), tensor({0.0, 0.25, 0.5, 0.75, 1.0})));
  // One step is the start (PyTorch's), not the end.
  EXPECT_TRUE(close(linspace(3, 1, 1), tensor({3.0})));
  // An integer dtype steps from the truncated start by the truncated step.
  EXPECT_TRUE(close(arange(-3.5, 4, 1.5, TensorOptions(kInt)),
                    tensor({-3, -2, -1, 0, 1}, kInt)));
  EXPECT_THROW(arange(0.5, 3, 0.5, TensorOptions(kLong)), ValueError);
  // lerp's two-sided form: end exactly at weight 1, no inf - inf.
  Tensor a = tensor({0.1f, INFINITY}), b = tensor({0.7f, 3.f});
  EXPECT_EQ(lerp(a, b, 1.0)[0].item<float>(), 0.7f);
  EXPECT_EQ(lerp(a, b, 0.75)[1].item<float>(), INFINITY);
  EXPECT_EQ(lerp(a, b, full({2}, 0.75f))[1].item<float>(), INFINITY);
  EXPECT_TRUE(close(eye(2, 3), tensor({{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}})));
  EXPECT_TRUE(close(zeros_like(ones({2}, kInt)), tensor({0, 0})));
  EXPECT_EQ(zeros_like(ones({2}, kInt)).dtype(), kInt);
  EXPECT_EQ(full_like(ones({2}), 3).dtype(), kFloat);
  EXPECT_EQ(empty({0}).numel(), 0);
  EXPECT_TRUE(ones({2}, requires_grad()).requires_grad());
  EXPECT_EQ(ones({2}, dtype(kDouble).requires_grad(true)).dtype(), kDouble);
  EXPECT_EMBER_ERROR(ones({2}, dtype(kLong).requires_grad(true)),
                     "only Tensors of floating point dtype can require");
  EXPECT_EMBER_ERROR(empty({-1}), "negative dimension");
  EXPECT_EMBER_ERROR(arange(0, 5, 0), "step must be nonzero");
  EXPECT_EMBER_ERROR(arange(5, 0, 1), "inconsistent with step sign");
  EXPECT_EMBER_ERROR(zeros({2}, Device(kCUDA, 0)), "CUDA");
}

TEST(TensorCore, RandomIsDeterministicForASeed) {
  manual_seed(42);
  Tensor a = rand({100});
  Tensor b = randn({100});
  manual_seed(42);
  EXPECT_TRUE(close(rand({100}), a, 0, 0));
  EXPECT_TRUE(close(randn({100}), b, 0, 0));
  auto v = values(a);
  for (double x : v)
    EXPECT_TRUE(x >= 0 && x < 1);
  auto n = values(randn({20000}));
  double mean = 0, sq = 0;
  for (double x : n) {
    mean += x;
    sq += x * x;
  }
  mean /= double(n.size());
  EXPECT_NEAR(mean, 0, 0.05);
  EXPECT_NEAR(sq / double(n.size()), 1, 0.05);
  Generator g(7);
  Tensor r1 = randint(3, 9, {1000}, g);
  EXPECT_EQ(r1.dtype(), kLong);
  for (double x : values(r1))
    EXPECT_TRUE(x >= 3 && x < 9);
  Tensor p = randperm(50, Generator(1));
  auto pv = values(p);
  std::sort(pv.begin(), pv.end());
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(pv[size_t(i)], i);
  EXPECT_TRUE(close(randperm(50, Generator(1)), p, 0, 0));
  EXPECT_EMBER_ERROR(rand({2}, kLong), "not implemented for dtype int64");
}

TEST(TensorCore, RandomDrawsAreCounterBased) {
  // Note [Counter-based random numbers]: element i of a draw depends on the
  // seed and its counter only, so two draws are one longer draw, split.
  Generator g(11);
  Tensor a = rand({300}, g), b = rand({500}, g);
  EXPECT_EQ(g.get_offset(), 800u);
  Tensor whole = rand({800}, Generator(11));
  EXPECT_TRUE(close(cat({a, b}), whole, 0, 0));
  // Restoring the state replays a draw (checkpoint's dropout masks).
  g.set_state({11, 300});
  EXPECT_TRUE(close(rand({500}, g), b, 0, 0));
  // The same numbers whatever the thread count.
  int threads = get_num_threads();
  set_num_threads(1);
  Tensor one = randn({100000}, Generator(3));
  set_num_threads(2);
  Tensor two = randn({100000}, Generator(3));
  set_num_threads(threads);
  EXPECT_TRUE(close(one, two, 0, 0));
  // A failed draw does not move the generator.
  EXPECT_EMBER_ERROR(rand({2}, g, TensorOptions(kLong)), "int64");
  EXPECT_EMBER_ERROR(randint(5, 5, {2}, g), "from=5 >= to=5");
  EXPECT_EMBER_ERROR(rand({-2}, g), "negative dimension");
  EXPECT_EQ(g.get_offset(), 800u);
  // randint's bounds must fit the dtype (PyTorch's check_from_to_in_range),
  // instead of wrapping.
  EXPECT_EMBER_ERROR(randint(0, 1000, {2}, g, TensorOptions(kChar)),
                     "to - 1 is out of bounds for int8");
  EXPECT_EMBER_ERROR(randint(-5, 5, {2}, g, TensorOptions(kByte)),
                     "from is out of bounds for uint8");
  EXPECT_EMBER_ERROR(randint(0, 5, {2}, g, TensorOptions(kBool)),
                     "to - 1 is out of bounds for bool");
  EXPECT_EQ(g.get_offset(), 800u);
  Tensor flips = randint(0, 2, {1000}, g, TensorOptions(kBool));
  EXPECT_NEAR(flips.to(kDouble).mean().item<double>(), 0.5, 0.06);
  Tensor c = randint(-128, 128, {1000}, g, TensorOptions(kChar));
  EXPECT_EQ(c.dtype(), kChar);
  EXPECT_LT(c.min().item<int64_t>(), -100);
  EXPECT_GT(c.max().item<int64_t>(), 100);
  // The full int64 range.
  Tensor w = randint(INT64_MIN, INT64_MAX, {1000}, g);
  EXPECT_LT(w.min().item<int64_t>(), INT64_MIN / 2);
  EXPECT_GT(w.max().item<int64_t>(), INT64_MAX / 2);
  // An undefined Generator raises; a stream used up raises.
  EXPECT_EMBER_ERROR(Generator().get_offset(), "undefined");
  Generator end(1);
  end.set_offset(~uint64_t(0) - 2);
  EXPECT_EMBER_ERROR(rand({4}, end), "used up");
  EXPECT_EQ(end.get_offset(), ~uint64_t(0) - 2);
}

TEST(TensorCore, RandomNumbersHaveTheirDistributions) {
  Generator g(2024);
  // Uniform in [0, 1) in every floating dtype: never 1, even where a 53-bit
  // number would round up to it in the dtype.
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    SCOPED_TRACE(toString(dt));
    Tensor u = rand({200000}, g, TensorOptions(dt)).to(kDouble);
    EXPECT_LT(u.max().item<double>(), 1.0);
    EXPECT_GE(u.min().item<double>(), 0.0);
    EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.01);
    EXPECT_NEAR(u.var().item<double>(), 1.0 / 12, 0.01);
  }
  Tensor n = randn({200000}, g, TensorOptions(kDouble));
  EXPECT_NEAR(n.mean().item<double>(), 0, 0.01);
  EXPECT_NEAR(n.std().item<double>(), 1, 0.01);
  EXPECT_TRUE((n == n).all().item<bool>() && n.abs().max().item<double>() < 10);
  // Fraction within one standard deviation: 68.27%.
  EXPECT_NEAR((n.abs() < 1).to(kDouble).mean().item<double>(), 0.6827, 0.01);
  Tensor r = randint(-3, 4, {70000}, g);
  EXPECT_EQ(r.min().item<int64_t>(), -3);
  EXPECT_EQ(r.max().item<int64_t>(), 3);
  for (int64_t v = -3; v <= 3; ++v)
    EXPECT_NEAR(r.eq(v).to(kDouble).mean().item<double>(), 1.0 / 7, 0.01);
  // Empty and 0-dim draws.
  EXPECT_EQ(rand({0, 3}, g).numel(), 0);
  EXPECT_EQ(randn({}, g).dim(), 0);
}

TEST(TensorCore, FromBlobBorrowsAndCallsDeleter) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = from_blob(data, {2, 3});
  EXPECT_EQ(t.data_ptr<float>(), data);
  t.mul_(2);
  EXPECT_EQ(data[5], 12.0f);
  int calls = 0;
  {
    Tensor u = from_blob(data, {6}, [&](void *p) {
      EXPECT_EQ(p, data);
      ++calls;
    });
    Tensor view = u.view({3, 2});
    u.reset();
    EXPECT_EQ(calls, 0); // the view still holds the storage
  }
  EXPECT_EQ(calls, 1);
  Tensor s = from_blob(data, {3}, {2}, kFloat);
  EXPECT_TRUE(close(s, tensor({2.0, 6.0, 10.0})));
}

// Note [Transposing copies]: a copy that transposes (tiles of 32x32
// through a buffer) gives the element-wise copy's values for every element
// size, sizes off the tile, batched and permuted views, and a copy into a
// strided destination. The reference converts dtypes, which takes the
// element-wise loop.
TEST(TensorCore, TransposingCopiesMatchTheElementwiseCopy) {
  for (ScalarType t : {kByte, kHalf, kFloat, kDouble, kLong, kBool}) {
    SCOPED_TRACE(toString(t));
    ScalarType ref = t == kDouble ? kLong : kDouble;
    for (auto sizes : {std::vector<int64_t>{70, 100},
                       {1000, 33},
                       {3, 65, 129},
                       {2, 3, 40, 50}}) {
      Tensor x = randint(0, t == kBool ? 2 : 100, sizes).to(t);
      std::vector<Tensor> views = {x.transpose(-1, -2)};
      if (x.dim() >= 3)
        views.push_back(x.transpose(0, -1));
      if (x.dim() == 4)
        views.push_back(x.permute({2, 0, 3, 1}));
      for (const Tensor &v : views) {
        Tensor want = v.to(ref);
        EXPECT_TRUE(v.contiguous().to(ref).equal(want)) << v.sizes();
        EXPECT_TRUE(v.clone().to(ref).equal(want)) << v.sizes();
        Tensor into = empty(v.sizes(), TensorOptions(t));
        into.copy_(v);
        EXPECT_TRUE(into.to(ref).equal(want)) << v.sizes();
      }
      // Into a transposed destination from a contiguous source.
      Tensor dst = empty(x.transpose(-1, -2).sizes(), TensorOptions(t))
                       .transpose(-1, -2);
      dst.copy_(x);
      EXPECT_TRUE(dst.to(ref).equal(x.to(ref)));
    }
  }
}

// float <-> float16 copies of contiguous runs convert 8 at a time (with
// F16C): the same bits as the element-wise conversion a strided copy
// takes, for every float16 pattern and for floats of every exponent, NaNs,
// infinities and subnormals included, and lengths off the 8.
TEST(TensorCore, HalfConversionsOfRunsMatchTheElementwiseOnes) {
  auto bits_equal = [](const Tensor &a, const Tensor &b) {
    Tensor ca = a.contiguous(), cb = b.contiguous();
    return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
           std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
  };
  Tensor pattern = arange(65536, TensorOptions(kInt)).to(kShort);
  Tensor h = empty({65536}, TensorOptions(kHalf));
  std::memcpy(h.data_ptr(), pattern.data_ptr(), 65536 * 2);
  // (a strided view: every element of `both`'s column 0 is h's)
  Tensor both = stack({h, h}, 1), strided = both.select(1, 0);
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_TRUE(bits_equal(h.to(kFloat), strided.to(kFloat)));
  std::vector<uint32_t> words;
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0u, 1u, 0x1000u, 0x1fffu, 0x2000u, 0x2001u, 0x3fffffu,
                       0x400000u, 0x7fe000u, 0x7fffffu})
      for (uint32_t sign : {0u, 0x80000000u})
        words.push_back(sign | (e << 23) | m);
  for (int64_t n : {int64_t(words.size()), int64_t(7), int64_t(13)}) {
    Tensor f = empty({n}, TensorOptions(kFloat));
    std::memcpy(f.data_ptr(), words.data(), size_t(n) * 4);
    Tensor fs = stack({f, f}, 1).select(1, 1);
    EXPECT_TRUE(bits_equal(f.to(kHalf), fs.to(kHalf))) << n;
  }
}
