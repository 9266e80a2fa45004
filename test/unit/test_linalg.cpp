// Linear algebra: mm, bmm, addmm, baddbmm, dot, mv, outer, matmul, linear and
// einsum against float64 references computed by naive loops.
#include "TestUtil.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace ember;
using ember::test::close;
using ember::test::from_fn;
using ember::test::noncontiguous;
using ember::test::random;
using ember::test::values;

namespace {

/// a (M x K) @ b (K x N) in float64 by the triple loop.
Tensor refMm(const Tensor &a, const Tensor &b) {
  int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  auto va = values(a), vb = values(b);
  return from_fn({M, N}, [&](int64_t idx) {
    int64_t i = idx / N, j = idx % N;
    double s = 0;
    for (int64_t k = 0; k < K; ++k)
      s += va[size_t(i * K + k)] * vb[size_t(k * N + j)];
    return s;
  });
}

/// a (B x M x K) @ b (B x K x N) in float64.
Tensor refBmm(const Tensor &a, const Tensor &b) {
  int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  auto va = values(a), vb = values(b);
  return from_fn({B, M, N}, [&](int64_t idx) {
    int64_t bi = idx / (M * N), i = idx / N % M, j = idx % N;
    double s = 0;
    for (int64_t k = 0; k < K; ++k)
      s += va[size_t((bi * M + i) * K + k)] * vb[size_t((bi * K + k) * N + j)];
    return s;
  });
}

/// Element-wise alpha * p + beta * c, in float64 (c broadcast to p's shape).
Tensor refAxpby(const Tensor &p, const Tensor &c, double alpha, double beta) {
  auto vp = values(p), vc = values(c.expand(p.sizes()));
  return from_fn(p.sizes(), [&](int64_t i) {
    return alpha * vp[size_t(i)] + beta * vc[size_t(i)];
  });
}

/// Brute-force einsum for equations with explicit output and no ellipsis:
/// sums the product of the operands over every assignment of the labels.
Tensor refEinsum(const std::string &eq, const std::vector<Tensor> &ops) {
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs = eq.substr(arrow + 2);
  std::vector<std::string> opLabels(1);
  for (char c : lhs)
    if (c == ',')
      opLabels.emplace_back();
    else
      opLabels.back() += c;
  std::map<char, int64_t> size;
  std::vector<std::vector<double>> vals;
  for (size_t k = 0; k < ops.size(); ++k) {
    vals.push_back(values(ops[k]));
    for (size_t d = 0; d < opLabels[k].size(); ++d)
      size[opLabels[k][d]] = ops[k].size(int64_t(d));
  }
  std::vector<char> labels;
  for (auto &kv : size)
    labels.push_back(kv.first);
  std::vector<int64_t> outShape;
  for (char c : rhs)
    outShape.push_back(size[c]);
  Tensor out = zeros(outShape, TensorOptions(kDouble));
  double *po = out.data_ptr<double>();
  std::map<char, int64_t> at;
  for (char c : labels)
    at[c] = 0;
  auto flat = [&](const std::string &ls) {
    int64_t f = 0;
    for (char c : ls)
      f = f * size[c] + at[c];
    return f;
  };
  for (auto &kv : size)
    if (kv.second == 0)
      return out;
  for (;;) {
    double p = 1;
    for (size_t k = 0; k < ops.size(); ++k)
      p *= vals[k][size_t(flat(opLabels[k]))];
    po[flat(rhs)] += p;
    size_t l = 0;
    for (; l < labels.size(); ++l) {
      if (++at[labels[l]] < size[labels[l]])
        break;
      at[labels[l]] = 0;
    }
    if (l == labels.size())
      break;
  }
  return out;
}

/// An exact float64 integer reference wrapped around to integer dtype t (as
/// integer products overflow); unchanged for floating dtypes.
Tensor wrapped(const Tensor &ref, ScalarType t) {
  if (isFloatingType(t))
    return ref;
  auto v = values(ref);
  std::vector<double> w(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    auto u = uint64_t(int64_t(v[i]));
    switch (t) {
    case kByte:
      w[i] = double(uint8_t(u));
      break;
    case kChar:
      w[i] = double(int8_t(u));
      break;
    case kShort:
      w[i] = double(int16_t(u));
      break;
    case kInt:
      w[i] = double(int32_t(u));
      break;
    default:
      w[i] = double(int64_t(u));
    }
  }
  return from_fn(ref.sizes(), [&](int64_t i) { return w[size_t(i)]; });
}

/// Tolerances for a product over K terms in `dtype`.
double rtolFor(ScalarType t) {
  if (!isFloatingType(t))
    return 0; // integers are exact
  return t == kDouble ? 1e-10 : t == kFloat ? 1e-4 : t == kHalf ? 3e-3 : 2e-2;
}
double atolFor(ScalarType t, int64_t K) {
  return rtolFor(t) * std::sqrt(double(std::max<int64_t>(K, 1)));
}

const ScalarType kAllProductTypes[] = {kFloat, kDouble, kHalf, kBFloat16, kLong,
                                       kInt,   kShort,  kChar, kByte};

} // namespace

// --- mm ---------------------------------------------------------------------

TEST(Mm, MatchesReferenceForEveryDtype) {
  for (ScalarType t : kAllProductTypes) {
    // Sizes over the portable kernel's blocks (64 rows, 256 cols, 128 k).
    for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{
             {3, 4, 5}, {70, 130, 260}, {1, 7, 9}, {9, 7, 1}, {1, 1, 1}}) {
      Tensor a = random({M, K}, t, 1), b = random({K, N}, t, 2);
      Tensor c = mm(a, b);
      EXPECT_EQ(c.dtype(), t);
      EXPECT_TRUE(close(c, wrapped(refMm(a, b), t), rtolFor(t), atolFor(t, K)))
          << toString(t) << " " << M << "x" << K << "x" << N;
    }
  }
}

TEST(Mm, TransposedAndStridedOperands) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kLong}) {
    Tensor a = random({6, 5}, t, 3), b = random({5, 7}, t, 4);
    Tensor ref = refMm(a, b);
    double rt = rtolFor(t), at = atolFor(t, 5);
    // Column-major operands (transposed views): passed to BLAS as Trans.
    Tensor at_ = a.t().contiguous().t(), bt = b.t().contiguous().t();
    EXPECT_FALSE(at_.is_contiguous());
    EXPECT_TRUE(close(mm(at_, b), ref, rt, at));
    EXPECT_TRUE(close(mm(a, bt), ref, rt, at));
    EXPECT_TRUE(close(mm(at_, bt), ref, rt, at));
    // Every other column: neither layout, copied.
    EXPECT_TRUE(close(mm(noncontiguous(a), noncontiguous(b)), ref, rt, at));
    // A row-major block of a larger matrix (leading dimension > cols).
    Tensor big = random({10, 12}, t, 5);
    Tensor block = big.slice(0, 2, 8).slice(1, 3, 8);
    EXPECT_TRUE(close(mm(block, b), refMm(block, b), rt, at));
    // Expanded (stride 0) operands.
    Tensor row = random({1, 5}, t, 6).expand({6, 5});
    EXPECT_TRUE(close(mm(row, b), refMm(row, b), rt, at));
    Tensor col = random({5, 1}, t, 7).expand({5, 7});
    EXPECT_TRUE(close(mm(a, col), refMm(a, col), rt, at));
  }
}

TEST(Mm, VectorShapedProductsUseAnyLayout) {
  // M == 1 or N == 1 take the gemv forms; check every operand layout.
  for (ScalarType t : {kFloat, kDouble}) {
    Tensor a = random({8, 6}, t, 8), x = random({6, 1}, t, 9);
    Tensor y = random({1, 8}, t, 10);
    double rt = rtolFor(t), at = atolFor(t, 8);
    EXPECT_TRUE(close(mm(a, x), refMm(a, x), rt, at));
    EXPECT_TRUE(close(mm(a.t().contiguous().t(), x), refMm(a, x), rt, at));
    Tensor xs = random({6, 3}, t, 11).slice(1, 1, 2); // column of a matrix
    EXPECT_TRUE(close(mm(a, xs), refMm(a, xs), rt, at));
    EXPECT_TRUE(close(mm(y, a), refMm(y, a), rt, at));
    EXPECT_TRUE(close(mm(y, a.t().contiguous().t()), refMm(y, a), rt, at));
    Tensor ys = random({3, 8}, t, 12).t().slice(1, 2, 3).t(); // strided row
    EXPECT_TRUE(close(mm(ys, a), refMm(ys, a), rt, at));
  }
}

TEST(Mm, LargeFloat) {
  Tensor a = random({150, 300}, kFloat, 13), b = random({300, 170}, kFloat, 14);
  EXPECT_TRUE(close(mm(a, b), refMm(a, b), 1e-4, 1e-3));
  EXPECT_TRUE(close(mm(b.t(), a.t()), refMm(b.t(), a.t()), 1e-4, 1e-3));
}

// Note [Threading matrix products]: with 2 or 3 threads these products are
// cut into blocks of rows (M >= N) or of columns, each block's operands
// offset by its first row or column in every layout (row-major, a
// transposed view, a block of a larger matrix), and the gemv forms run
// whole. The results match the float64 product, and repeat to the bit at
// the same thread count (between counts the last bits may differ).
TEST(Mm, ProductsCutIntoBlocksForThePool) {
  int saved = get_num_threads();
  for (auto [M, K, N] : std::vector<std::array<int64_t, 3>>{
           {1000, 300, 200},  // row blocks, not on a multiple of 16
           {40, 2048, 700},   // column blocks
           {33, 8192, 8},     // two row blocks of at least 16
           {5000, 300, 1},    // gemv: whole
           {1, 300, 5000}}) { // gemv: whole
    for (ScalarType t : {kFloat, kDouble}) {
      // a is a block of a larger matrix (leading dimension > K).
      Tensor a =
          random({M + 3, K + 5}, t, 17).slice(0, 2, M + 2).slice(1, 1, K + 1);
      Tensor b = random({K, N}, t, 18), self = random({N}, t, 19);
      Tensor ref = refMm(a, b);
      std::vector<std::pair<Tensor, Tensor>> operands{
          {a.contiguous(), b},
          {a.t().contiguous().t(), b},
          {a, b.t().contiguous().t()}};
      for (int threads : {2, 3}) {
        std::string what = std::string(toString(t)) + " " + std::to_string(M) +
                           "x" + std::to_string(K) + "x" + std::to_string(N) +
                           " on " + std::to_string(threads) + " threads";
        set_num_threads(threads);
        for (auto &[x, y] : operands) {
          Tensor cut = mm(x, y);
          EXPECT_TRUE(close(cut, ref, rtolFor(t), atolFor(t, K))) << what;
          EXPECT_TRUE(close(mm(x, y), cut, 0, 0)) << what;
        }
        EXPECT_TRUE(close(addmm(self, a, b, 0.5, 2),
                          refAxpby(ref, self, 2, 0.5), rtolFor(t),
                          atolFor(t, K)))
            << what;
      }
    }
  }
  // Three products on two or three threads: each is cut (2 or 1 blocks).
  Tensor a = random({3, 300, 100}, kFloat, 21);
  Tensor b = random({3, 100, 200}, kFloat, 22);
  Tensor ref = refBmm(a, b);
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    EXPECT_TRUE(close(bmm(a, b), ref, 1e-4, 1e-3));
    EXPECT_TRUE(close(bmm(a.transpose(1, 2).contiguous().transpose(1, 2), b),
                      ref, 1e-4, 1e-3));
  }
  set_num_threads(saved);
}

TEST(Mm, IntegerResultsAreExact) {
  Tensor a = random({33, 45}, kInt, 15), b = random({45, 21}, kInt, 16);
  Tensor c = mm(a, b);
  EXPECT_EQ(c.dtype(), kInt);
  EXPECT_TRUE(close(c, refMm(a, b), 0, 0));
  // int8 products wrap around as the dtype does.
  Tensor x = full({1, 2}, 100, TensorOptions(kChar));
  Tensor y = full({2, 1}, 2, TensorOptions(kChar));
  EXPECT_EQ(mm(x, y).item<int64_t>(), int64_t(int8_t(400)));
}

TEST(Mm, EmptyMatrices) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kLong}) {
    Tensor c = mm(random({0, 3}, t), random({3, 4}, t));
    EXPECT_EQ(c.sizes(), IntArrayRef({0, 4}));
    Tensor z =
        mm(empty({3, 0}, TensorOptions(t)), empty({0, 4}, TensorOptions(t)));
    EXPECT_EQ(z.sizes(), IntArrayRef({3, 4}));
    EXPECT_TRUE(close(z, zeros({3, 4}, TensorOptions(kDouble)), 0, 0));
    Tensor n = mm(random({3, 2}, t), empty({2, 0}, TensorOptions(t)));
    EXPECT_EQ(n.sizes(), IntArrayRef({3, 0}));
  }
}

TEST(Mm, Errors) {
  Tensor a = random({2, 3}), b = random({4, 5});
  EXPECT_EMBER_ERROR(mm(a, b),
                     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  EXPECT_EMBER_ERROR(mm(a, random({3, 2}, kDouble)),
                     "expected m1 and m2 to have the same dtype, but got: "
                     "float != double");
  EXPECT_EMBER_ERROR(mm(random({3}), a), "self must be a matrix");
  EXPECT_EMBER_ERROR(mm(a, random({3})), "mat2 must be a matrix");
  EXPECT_EMBER_ERROR(mm(random({2, 2}, kBool), random({2, 2}, kBool)), "bool");
  EXPECT_EMBER_ERROR(a.mm(random({2, 3, 4})), "mat2 must be a matrix");
}

// --- addmm ------------------------------------------------------------------

TEST(Addmm, AlphaBetaAndBroadcastSelf) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor m1 = random({5, 6}, t, 20), m2 = random({6, 4}, t, 21);
    Tensor p = refMm(m1, m2);
    double rt = rtolFor(t), at = atolFor(t, 6) * 4;
    for (const auto &shape :
         std::vector<std::vector<int64_t>>{{5, 4}, {4}, {1, 4}, {5, 1}, {}}) {
      Tensor self = random(shape, t, 22);
      EXPECT_TRUE(close(addmm(self, m1, m2), refAxpby(p, self, 1, 1), rt, at));
      EXPECT_TRUE(close(addmm(self, m1, m2, 0.5, -2),
                        refAxpby(p, self, -2, 0.5), rt, at));
      EXPECT_TRUE(
          close(self.addmm(m1.t().contiguous().t(), noncontiguous(m2), 2, 3),
                refAxpby(p, self, 3, 2), rt, at));
    }
  }
}

TEST(Addmm, BetaZeroIgnoresSelf) {
  for (ScalarType t : {kFloat, kDouble, kHalf}) {
    Tensor m1 = random({7, 3}, t, 23), m2 = random({3, 9}, t, 24);
    Tensor self = full({7, 9}, std::numeric_limits<double>::quiet_NaN(),
                       TensorOptions(t));
    Tensor out = addmm(self, m1, m2, 0, 1);
    EXPECT_TRUE(close(out, refMm(m1, m2), rtolFor(t), atolFor(t, 3)));
    // Vector-shaped (gemv) and empty-k products ignore it too.
    Tensor col = addmm(self.slice(1, 0, 1), m1, m2.slice(1, 0, 1), 0, 2);
    EXPECT_TRUE(close(col,
                      refAxpby(refMm(m1, m2.slice(1, 0, 1)),
                               zeros({1}, TensorOptions(kDouble)), 2, 0),
                      rtolFor(t), atolFor(t, 3) * 2));
    Tensor k0 = addmm(self, empty({7, 0}, TensorOptions(t)),
                      empty({0, 9}, TensorOptions(t)), 0, 1);
    EXPECT_TRUE(close(k0, zeros({7, 9}, TensorOptions(kDouble)), 0, 0));
  }
}

TEST(Addmm, EmptyKGivesBetaSelf) {
  for (ScalarType t : {kFloat, kLong, kHalf}) {
    Tensor self = random({3, 4}, t, 25);
    Tensor out = addmm(self, empty({3, 0}, TensorOptions(t)),
                       empty({0, 4}, TensorOptions(t)), 2, 5);
    EXPECT_TRUE(close(out, refAxpby(self.to(kDouble), self, 0, 2), 1e-3, 1e-3));
  }
}

TEST(Addmm, Integers) {
  Tensor self = random({4, 3}, kLong, 26);
  Tensor m1 = random({4, 5}, kLong, 27), m2 = random({5, 3}, kLong, 28);
  EXPECT_TRUE(close(addmm(self, m1, m2, 3, -2),
                    refAxpby(refMm(m1, m2), self, -2, 3), 0, 0));
  Tensor s16 = random({3}, kShort, 29);
  Tensor a16 = random({4, 5}, kShort, 30), b16 = random({5, 3}, kShort, 31);
  Tensor r16 = addmm(s16, a16, b16);
  EXPECT_EQ(r16.dtype(), kShort);
  EXPECT_TRUE(close(r16, refAxpby(refMm(a16, b16), s16, 1, 1), 0, 0));
}

TEST(Addmm, Errors) {
  Tensor m1 = random({2, 3}), m2 = random({3, 4});
  EXPECT_EMBER_ERROR(addmm(random({2, 4}), random({3}), m2),
                     "mat1 must be a matrix, got 1-D tensor");
  EXPECT_EMBER_ERROR(addmm(random({2, 4}), m1, random({2, 3, 4})),
                     "mat2 must be a matrix, got 3-D tensor");
  EXPECT_EMBER_ERROR(addmm(random({2, 4}), m1, random({4, 4})),
                     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x4)");
  EXPECT_EMBER_ERROR(addmm(random({3}), m1, m2), "expanded size");
  EXPECT_EMBER_ERROR(addmm(random({2, 4}, kDouble), m1, m2),
                     "self and mat2 must have the same dtype, but got double "
                     "and float");
}

// --- bmm / baddbmm ----------------------------------------------------------

TEST(Bmm, ManySmallAndFewLargeBatches) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kInt}) {
    // Small products run one batch per thread; large ones let BLAS thread.
    for (auto [B, M, K, N] : std::vector<std::array<int64_t, 4>>{
             {64, 5, 7, 3}, {2, 90, 80, 70}, {3, 1, 6, 5}, {3, 6, 5, 1}}) {
      Tensor a = random({B, M, K}, t, 40), b = random({B, K, N}, t, 41);
      Tensor c = bmm(a, b);
      EXPECT_EQ(c.dtype(), t);
      EXPECT_TRUE(close(c, refBmm(a, b), rtolFor(t), atolFor(t, K)))
          << toString(t) << " " << B << "x" << M << "x" << K << "x" << N;
    }
  }
}

TEST(Bmm, TransposedExpandedAndStridedBatches) {
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kLong}) {
    Tensor a = random({4, 3, 5}, t, 42), b = random({4, 5, 2}, t, 43);
    Tensor ref = refBmm(a, b);
    double rt = rtolFor(t), at = atolFor(t, 5);
    Tensor aT = a.transpose(1, 2).contiguous().transpose(1, 2);
    Tensor bT = b.transpose(1, 2).contiguous().transpose(1, 2);
    EXPECT_TRUE(close(bmm(aT, bT), ref, rt, at));
    EXPECT_TRUE(close(bmm(noncontiguous(a), noncontiguous(b)), ref, rt, at));
    // Batch-major layout (batch dim innermost in memory).
    Tensor aP = a.permute({1, 2, 0}).contiguous().permute({2, 0, 1});
    EXPECT_TRUE(close(bmm(aP, b), ref, rt, at));
    // One matrix broadcast over the batch (batch stride 0).
    Tensor one = random({1, 5, 2}, t, 44).expand({4, 5, 2});
    EXPECT_TRUE(close(bmm(a, one), refBmm(a, one), rt, at));
  }
}

TEST(Bmm, Empty) {
  EXPECT_EQ(bmm(random({0, 2, 3}), random({0, 3, 4})).sizes(),
            IntArrayRef({0, 2, 4}));
  Tensor z = bmm(empty({2, 3, 0}), empty({2, 0, 4}));
  EXPECT_TRUE(close(z, zeros({2, 3, 4}, TensorOptions(kDouble)), 0, 0));
}

TEST(Bmm, Errors) {
  EXPECT_EMBER_ERROR(bmm(random({2, 3}), random({2, 3, 4})),
                     "batch1 must be a 3D tensor");
  EXPECT_EMBER_ERROR(bmm(random({2, 2, 3}), random({3, 4})),
                     "batch2 must be a 3D tensor");
  EXPECT_EMBER_ERROR(bmm(random({2, 2, 3}), random({3, 3, 4})),
                     "Expected size for first two dimensions of batch2 tensor "
                     "to be: [2, 3] but got: [3, 3].");
  EXPECT_EMBER_ERROR(bmm(random({2, 2, 3}), random({2, 4, 4})),
                     "Expected size for first two dimensions of batch2 tensor "
                     "to be: [2, 3] but got: [2, 4].");
  EXPECT_EMBER_ERROR(bmm(random({2, 2, 3}), random({2, 3, 4}, kDouble)),
                     "same dtype");
  EXPECT_EMBER_ERROR(bmm(random({1, 2, 2}, kBool), random({1, 2, 2}, kBool)),
                     "bool");
}

TEST(Baddbmm, AlphaBetaBroadcastAndBetaZero) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kLong}) {
    Tensor b1 = random({3, 4, 5}, t, 50), b2 = random({3, 5, 6}, t, 51);
    Tensor p = refBmm(b1, b2);
    double rt = rtolFor(t), at = atolFor(t, 5) * 4;
    for (auto shape :
         std::vector<std::vector<int64_t>>{{3, 4, 6}, {6}, {4, 1}}) {
      Tensor self = random(shape, t, 52);
      EXPECT_TRUE(
          close(baddbmm(self, b1, b2), refAxpby(p, self, 1, 1), rt, at));
      EXPECT_TRUE(
          close(baddbmm(self, b1, b2, 2, 3), refAxpby(p, self, 3, 2), rt, at));
    }
    if (isFloatingType(t)) {
      Tensor nan = full({3, 4, 6}, std::numeric_limits<double>::quiet_NaN(),
                        TensorOptions(t));
      EXPECT_TRUE(close(baddbmm(nan, b1, b2, 0, 1), p, rt, at));
    }
  }
  EXPECT_EMBER_ERROR(baddbmm(random({5}), random({3, 4, 5}), random({3, 5, 6})),
                     "expanded size");
}

// --- dot / mv / outer -------------------------------------------------------

TEST(Dot, DtypesStridesAndEmpty) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16, kLong, kInt}) {
    for (int64_t n : {0, 1, 7, 100000}) {
      Tensor x = random({n}, t, 60), y = random({n}, t, 61);
      auto vx = values(x), vy = values(y);
      double ref = 0;
      for (int64_t i = 0; i < n; ++i)
        ref += vx[size_t(i)] * vy[size_t(i)];
      Tensor r = dot(x, y);
      EXPECT_EQ(r.dim(), 0);
      EXPECT_EQ(r.dtype(), t);
      Tensor e = scalar_tensor(ref, TensorOptions(kDouble));
      double at = atolFor(t, n) * (t == kHalf || t == kBFloat16 ? 4 : 1);
      EXPECT_TRUE(close(r, e, rtolFor(t), at)) << toString(t) << " n=" << n;
      EXPECT_TRUE(
          close(dot(noncontiguous(x), noncontiguous(y)), e, rtolFor(t), at));
    }
    Tensor x = random({5}, t, 62);
    Tensor ones1 = random({1}, t, 63).expand({5});
    auto vx = values(x);
    double ref = 0;
    for (double v : vx)
      ref += v * values(ones1)[0];
    EXPECT_TRUE(close(dot(x, ones1), scalar_tensor(ref, TensorOptions(kDouble)),
                      rtolFor(t), atolFor(t, 5)));
  }
}

TEST(Dot, Errors) {
  EXPECT_EMBER_ERROR(dot(random({2, 2}), random({4})),
                     "1D tensors expected, but got 2D and 1D tensors");
  EXPECT_EMBER_ERROR(dot(random({3}), random({4})),
                     "inconsistent tensor size, expected tensor [3] and src "
                     "[4] to have the same number of elements, but got 3 and "
                     "4 elements respectively");
  EXPECT_EMBER_ERROR(dot(random({3}), random({3}, kDouble)),
                     "dot : expected both vectors to have same dtype, but "
                     "found Float and Double");
  EXPECT_EMBER_ERROR(dot(random({3}, kBool), random({3}, kBool)), "bool");
}

TEST(Mv, MatchesReference) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kLong}) {
    Tensor a = random({6, 4}, t, 70), v = random({4}, t, 71);
    Tensor ref = refMm(a, v.unsqueeze(1)).squeeze(1);
    EXPECT_TRUE(close(mv(a, v), ref, rtolFor(t), atolFor(t, 4)));
    EXPECT_TRUE(close(a.t().contiguous().t().mv(noncontiguous(v)), ref,
                      rtolFor(t), atolFor(t, 4)));
  }
  EXPECT_EQ(mv(random({0, 3}), random({3})).sizes(), IntArrayRef({0}));
  EXPECT_TRUE(close(mv(empty({3, 0}), empty({0})),
                    zeros({3}, TensorOptions(kDouble)), 0, 0));
  EXPECT_EMBER_ERROR(mv(random({2, 3}), random({4})),
                     "size mismatch, got input (2), mat (2x3), vec (4)");
  EXPECT_EMBER_ERROR(mv(random({2, 3, 1}), random({1})),
                     "vector + matrix @ vector expected, got 1, 3, 1");
}

TEST(Outer, MatchesReferenceAndPromotes) {
  Tensor x = random({4}, kFloat, 72), y = random({3}, kFloat, 73);
  auto vx = values(x), vy = values(y);
  Tensor ref = from_fn(
      {4, 3}, [&](int64_t i) { return vx[size_t(i / 3)] * vy[size_t(i % 3)]; });
  EXPECT_TRUE(close(outer(x, y), ref));
  EXPECT_TRUE(close(x.outer(noncontiguous(y)), ref));
  Tensor yi = random({3}, kLong, 74);
  Tensor mixed = outer(x, yi);
  EXPECT_EQ(mixed.dtype(), kFloat);
  EXPECT_EQ(outer(yi, yi).dtype(), kLong);
  EXPECT_EQ(outer(random({0}), y).sizes(), IntArrayRef({0, 3}));
  EXPECT_EMBER_ERROR(outer(random({2, 2}), y),
                     "outer: Expected 1-D argument self, but got 2-D");
}

// --- matmul -----------------------------------------------------------------

namespace {
/// Reference matmul by torch.matmul's definition: promote 1-D operands to
/// matrices, broadcast the batch dims, multiply, drop the added dims.
Tensor refMatmul(const Tensor &a, const Tensor &b) {
  Tensor A = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor B = b.dim() == 1 ? b.unsqueeze(1) : b;
  std::vector<int64_t> ba(A.sizes().begin(), A.sizes().end() - 2);
  std::vector<int64_t> bb(B.sizes().begin(), B.sizes().end() - 2);
  DimVector batch = infer_size(ba, bb);
  int64_t nb = 1;
  for (int64_t s : batch)
    nb *= s;
  DimVector sa(batch), sb(batch);
  sa.push_back(A.size(-2));
  sa.push_back(A.size(-1));
  sb.push_back(B.size(-2));
  sb.push_back(B.size(-1));
  Tensor r = refBmm(A.expand(sa).reshape({nb, A.size(-2), A.size(-1)}),
                    B.expand(sb).reshape({nb, B.size(-2), B.size(-1)}));
  DimVector out(batch);
  if (a.dim() > 1)
    out.push_back(A.size(-2));
  if (b.dim() > 1)
    out.push_back(B.size(-1));
  return r.reshape(out);
}
} // namespace

TEST(Matmul, AllBroadcastingCases) {
  using Shapes = std::pair<std::vector<int64_t>, std::vector<int64_t>>;
  const std::vector<Shapes> cases = {
      {{5}, {5}},                   // dot
      {{3, 5}, {5}},                // mv
      {{5}, {5, 4}},                // 1-D @ 2-D
      {{3, 5}, {5, 4}},             // mm
      {{2, 3, 5}, {5}},             // folded mv
      {{2, 3, 5}, {5, 4}},          // folded mm
      {{5}, {2, 5, 4}},             // 1-D @ batched
      {{3, 5}, {2, 5, 4}},          // 2-D @ batched
      {{2, 3, 5}, {2, 5, 4}},       // bmm
      {{2, 1, 3, 5}, {4, 5, 6}},    // broadcast batch dims
      {{1, 3, 5}, {2, 2, 5, 4}},    // broadcast a size-1 batch
      {{2, 2, 3, 5}, {5}},          // 4-D @ 1-D
      {{6, 2, 3, 5}, {1, 2, 5, 2}}, // 4-D @ 4-D
      {{0, 3, 5}, {5, 4}},          // empty batch
      {{2, 3, 0}, {0, 4}},          // empty contraction
  };
  for (ScalarType t : {kFloat, kDouble, kLong}) {
    for (const auto &[sa, sb] : cases) {
      Tensor a = random(sa, t, 80), b = random(sb, t, 81);
      Tensor ref = refMatmul(a, b);
      Tensor r = matmul(a, b);
      EXPECT_EQ(r.dtype(), t);
      EXPECT_TRUE(close(r, ref, rtolFor(t), atolFor(t, 5)))
          << IntArrayRef(sa) << " @ " << IntArrayRef(sb);
      // Non-contiguous operands take the unfolded path where they must.
      EXPECT_TRUE(close(noncontiguous(a).matmul(noncontiguous(b)), ref,
                        rtolFor(t), atolFor(t, 5)))
          << IntArrayRef(sa) << " @ " << IntArrayRef(sb) << " (strided)";
      if (a.dim() >= 3) {
        Tensor at = a.transpose(0, 1).contiguous().transpose(0, 1);
        EXPECT_TRUE(close(matmul(at, b), ref, rtolFor(t), atolFor(t, 5)));
      }
    }
  }
}

TEST(Matmul, HalfPrecision) {
  Tensor a = random({2, 3, 40}, kHalf, 82), b = random({40, 7}, kHalf, 83);
  Tensor r = matmul(a, b);
  EXPECT_EQ(r.dtype(), kHalf);
  EXPECT_TRUE(close(r, refMatmul(a, b), rtolFor(kHalf), atolFor(kHalf, 40)));
}

TEST(Matmul, Errors) {
  EXPECT_EMBER_ERROR(matmul(scalar_tensor(1.0), random({2})),
                     "both arguments to matmul need to be at least 1D, but "
                     "they are 0D and 1D");
  EXPECT_EMBER_ERROR(matmul(random({3}), random({4})),
                     "inconsistent tensor size");
  EXPECT_EMBER_ERROR(matmul(random({2, 3}), random({4})), "size mismatch");
  EXPECT_EMBER_ERROR(matmul(random({3}), random({4, 2})),
                     "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)");
  EXPECT_EMBER_ERROR(matmul(random({2, 2, 3}), random({4, 2})),
                     "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)");
  EXPECT_EMBER_ERROR(matmul(random({2, 2, 3}), random({2, 4, 2})),
                     "Expected size for first two dimensions of batch2 tensor "
                     "to be: [2, 3] but got: [2, 4].");
  EXPECT_EMBER_ERROR(matmul(random({2, 2, 3}), random({3, 3, 2})),
                     "The size of tensor a (2) must match the size of tensor "
                     "b (3) at non-singleton dimension 0");
}

// --- linear -----------------------------------------------------------------

TEST(Linear, WithAndWithoutBias) {
  Tensor w = random({4, 6}, kFloat, 90), bias = random({4}, kFloat, 91);
  for (const auto &shape : std::vector<std::vector<int64_t>>{
           {6}, {3, 6}, {2, 3, 6}, {2, 2, 3, 6}}) {
    Tensor x = random(shape, kFloat, 92);
    Tensor ref = refMatmul(x, w.t());
    EXPECT_TRUE(close(linear(x, w), ref, 1e-5, 1e-5)) << IntArrayRef(shape);
    Tensor refB = refAxpby(ref, bias, 1, 1);
    EXPECT_TRUE(close(linear(x, w, bias), refB, 1e-5, 1e-5))
        << IntArrayRef(shape);
    EXPECT_TRUE(close(linear(noncontiguous(x), w, bias), refB, 1e-5, 1e-5));
  }
  // A 1-D weight maps the last dim to a scalar.
  Tensor x = random({3, 6}, kFloat, 93), w1 = random({6}, kFloat, 94);
  EXPECT_TRUE(close(linear(x, w1), refMatmul(x, w1), 1e-5, 1e-5));
  EXPECT_EMBER_ERROR(linear(x, random({4, 5})),
                     "mat1 and mat2 shapes cannot be multiplied (3x6 and 5x4)");
}

// --- einsum -----------------------------------------------------------------

TEST(Einsum, ClassicEquations) {
  Tensor sq = random({4, 4}, kFloat, 100);
  Tensor a = random({3, 4}, kFloat, 101), b = random({4, 5}, kFloat, 102);
  Tensor ba = random({2, 3, 4}, kFloat, 103),
         bb = random({2, 4, 5}, kFloat, 104);
  Tensor u = random({3}, kFloat, 105), v = random({5}, kFloat, 106);
  struct Case {
    std::string eq;
    std::vector<Tensor> ops;
  };
  const std::vector<Case> cases = {
      {"ii->", {sq}},                                        // trace
      {"ii->i", {sq}},                                       // diagonal
      {"ij->ji", {a}},                                       // transpose
      {"ij->", {a}},                                         // sum
      {"ij->j", {a}},                                        // column sums
      {"ij,jk->ik", {a, b}},                                 // mm
      {"bij,bjk->bik", {ba, bb}},                            // bmm
      {"i,j->ij", {u, v}},                                   // outer
      {"i,i->", {u, u}},                                     // dot
      {"ij,ij->ij", {a, a}},                                 // elementwise
      {"ij,j->i", {a, random({4}, kFloat, 107)}},            // mv
      {"ij,jk,kl->il", {a, b, random({5, 2}, kFloat, 108)}}, // three operands
      {"bij,bjk,bkl->bl", {ba, bb, random({2, 5, 3}, kFloat, 109)}},
      {"ij,kl->ijkl", {a, random({2, 2}, kFloat, 110)}},
      {"iij->j", {random({3, 3, 2}, kFloat, 111)}}, // repeated label
      {"iji->j", {random({3, 2, 3}, kFloat, 112)}},
      {"bii->bi", {random({2, 3, 3}, kFloat, 113)}},
      {"iii->i", {random({3, 3, 3}, kFloat, 114)}},
      {"ij,ik->jk", {a, random({3, 6}, kFloat, 115)}},
      {"ijk,ikj->i",
       {random({2, 3, 4}, kFloat, 116), random({2, 4, 3}, kFloat, 117)}},
      {"abc,cd,ae->bde",
       {random({2, 3, 4}, kFloat, 118), random({4, 2}, kFloat, 119),
        random({2, 3}, kFloat, 120)}},
      {"Ab,bC->AC", {a, b}}, // uppercase
  };
  for (const auto &c : cases) {
    Tensor r = einsum(c.eq, c.ops);
    EXPECT_TRUE(close(r, refEinsum(c.eq, c.ops), 1e-4, 1e-4)) << c.eq;
  }
}

TEST(Einsum, ImplicitOutput) {
  Tensor a = random({3, 4}, kFloat, 130), b = random({4, 5}, kFloat, 131);
  // Output: labels appearing once, alphabetically.
  EXPECT_TRUE(close(einsum("ij,jk", {a, b}), refEinsum("ij,jk->ik", {a, b}),
                    1e-5, 1e-5));
  EXPECT_TRUE(close(einsum("ba", {a}), refEinsum("ba->ab", {a})));
  EXPECT_TRUE(close(einsum("ii", {random({3, 3}, kFloat, 132)}),
                    refEinsum("ii->", {random({3, 3}, kFloat, 132)})));
  EXPECT_TRUE(close(einsum("kj,ji", {b.t(), a.t()}),
                    refEinsum("kj,ji->ik", {b.t(), a.t()}), 1e-5, 1e-5));
  EXPECT_TRUE(close(einsum("Ba,aB", {a, a.t()}),
                    refEinsum("Ba,aB->", {a, a.t()}), 1e-5, 1e-5));
  // Spaces are ignored.
  EXPECT_TRUE(close(einsum(" ij , jk -> ik ", {a, b}),
                    refEinsum("ij,jk->ik", {a, b}), 1e-5, 1e-5));
}

TEST(Einsum, Ellipsis) {
  Tensor a = random({2, 3, 4, 5}, kFloat, 140),
         b = random({3, 5, 6}, kFloat, 141);
  // '...ij,...jk->...ik' with broadcasting batch dims (2, 3) and (3,).
  Tensor r = einsum("...ij,...jk->...ik", {a, b});
  EXPECT_TRUE(close(r, refMatmul(a, b), 1e-5, 1e-5));
  // Implicit output puts the ellipsis first.
  EXPECT_TRUE(
      close(einsum("...ij,...jk", {a, b}), refMatmul(a, b), 1e-5, 1e-5));
  // Ellipsis in the middle and at the end.
  Tensor c = random({2, 3, 4}, kFloat, 142);
  EXPECT_TRUE(close(einsum("i...->...i", {c}), c.permute({1, 2, 0})));
  EXPECT_TRUE(close(einsum("...i->i...", {c}), c.permute({2, 0, 1})));
  EXPECT_TRUE(close(einsum("a...c->ac", {c}), refEinsum("abc->ac", {c})));
  // An ellipsis not in the explicit output is summed.
  EXPECT_TRUE(
      close(einsum("...i->i", {c}), refEinsum("abi->i", {c}), 1e-5, 1e-5));
  // An ellipsis covering no dims.
  Tensor m = random({3, 4}, kFloat, 143);
  EXPECT_TRUE(close(einsum("...ij->...ji", {m}), m.t()));
  // Diagonal with an ellipsis.
  Tensor d = random({2, 3, 3}, kFloat, 144);
  EXPECT_TRUE(close(einsum("...ii->...i", {d}), refEinsum("bii->bi", {d})));
}

TEST(Einsum, BroadcastSizeOneLabels) {
  Tensor a = random({3, 1}, kFloat, 150), b = random({1, 4}, kFloat, 151);
  Tensor r = einsum("ij,ij->ij", {a, b});
  EXPECT_TRUE(close(r, refEinsum("ij,jk->ik", {a, b})));
}

TEST(Einsum, DtypesAndEmpty) {
  Tensor a = random({3, 4}, kLong, 160), b = random({4, 2}, kLong, 161);
  Tensor r = einsum("ij,jk->ik", {a, b});
  EXPECT_EQ(r.dtype(), kLong);
  EXPECT_TRUE(close(r, refMm(a, b), 0, 0));
  Tensor ai = random({2, 3, 4}, kInt, 162), bi = random({4, 2}, kInt, 163);
  Tensor ri = einsum("bij,jk->k", {ai, bi});
  EXPECT_EQ(ri.dtype(), kInt);
  EXPECT_TRUE(close(ri, refEinsum("bij,jk->k", {ai, bi}), 0, 0));
  // The sum of one operand promotes integers as sum() does.
  EXPECT_EQ(einsum("ij->", {ai[0]}).dtype(), kLong);
  EXPECT_EQ(einsum("ij->", {ai[0]}).item<int64_t>(),
            int64_t(refEinsum("ij->", {ai[0]}).item<double>()));
  Tensor h = random({3, 5}, kHalf, 164), hb = random({5, 2}, kHalf, 165);
  Tensor rh = einsum("ij,jk->ik", {h, hb});
  EXPECT_EQ(rh.dtype(), kHalf);
  EXPECT_TRUE(close(rh, refMm(h, hb), 3e-3, 1e-2));
  // A zero-sized dim anywhere gives zeros of the output shape.
  Tensor e = einsum("ij,jk->ik", {random({3, 0}), random({0, 4})});
  EXPECT_TRUE(close(e, zeros({3, 4}, TensorOptions(kDouble))));
  EXPECT_EQ(einsum("ij,jk->ik", {random({0, 2}), random({2, 4})}).sizes(),
            IntArrayRef({0, 4}));
  EXPECT_EQ(einsum("i,j->ij", {random({0}), random({5})}).sizes(),
            IntArrayRef({0, 5}));
}

TEST(Einsum, Errors) {
  Tensor a = random({2, 3}), b = random({3, 4});
  EXPECT_EMBER_ERROR(einsum("ij", {}), "must provide at least one operand");
  EXPECT_EMBER_ERROR(einsum("ij,jk->ik", {a}),
                     "fewer operands were provided than specified in the "
                     "equation");
  EXPECT_EMBER_ERROR(einsum("ij->ij", {a, b}),
                     "more operands were provided than specified in the "
                     "equation");
  EXPECT_EMBER_ERROR(einsum("ijk->i", {a}),
                     "the number of subscripts in the equation (3) does not "
                     "match the number of dimensions (2) for operand 0 and no "
                     "ellipsis was given");
  EXPECT_EMBER_ERROR(einsum("ijk...->i", {a}),
                     "the number of subscripts in the equation (3) is more "
                     "than the number of dimensions (2) for operand 0");
  EXPECT_EMBER_ERROR(einsum("i1->i", {random({2, 2})}),
                     "invalid subscript given at index 1 in the equation "
                     "string, subscripts must be in [a-zA-Z]");
  EXPECT_EMBER_ERROR(einsum("ij->i#", {a}),
                     "invalid subscript given at index 5");
  EXPECT_EMBER_ERROR(einsum("ij->ii", {a}),
                     "output subscript i appears more than once in the output");
  EXPECT_EMBER_ERROR(einsum("ij->k", {a}),
                     "output subscript k does not appear in the equation for "
                     "any input operand");
  EXPECT_EMBER_ERROR(
      einsum("i.j->ij", {a}),
      "found '.' for operand 0 that is not part of any ellipsis");
  EXPECT_EMBER_ERROR(einsum("...i...->i", {a}),
                     "found '.' for operand 0 for which an ellipsis was "
                     "already found");
  EXPECT_EMBER_ERROR(einsum("...i->...i...", {a}),
                     "found '.' for output but an ellipsis (...) was already "
                     "found");
  EXPECT_EMBER_ERROR(einsum("ij->.i", {a}),
                     "found '.' for output that is not part of any ellipsis");
  EXPECT_EMBER_ERROR(einsum("ii->i", {a}),
                     "subscript i is repeated for operand 0 but the sizes "
                     "don't match, 3 != 2");
  EXPECT_EMBER_ERROR(einsum("ij,ij->ij", {a, b}),
                     "einsum(): operands do not broadcast with remapped "
                     "shapes (original->remapped): [2, 3]->[2, 3] [3, 4]->[3, "
                     "4]");
}
