// Indexing ops (index_select, gather, scatter, scatter_add, index_add,
// masked_select, nonzero, index, index_put_) and the libtorch indexing API
// (x[i], x.index({...}), x.index_put_({...}, v)), against float64 references
// built with naive loops.
#include "TestUtil.h"

#include <cmath>
#include <limits>

using namespace ember;
using namespace ember::test;
using namespace ember::indexing;

namespace {

::testing::AssertionResult same(const Tensor &a, const Tensor &e) {
  return close(a, e, 0, 0);
}

const std::vector<ScalarType> kAllTypes = {kFloat, kDouble,   kLong, kInt,
                                           kHalf,  kBFloat16, kBool};

/// Random int64 indices in [0, n) of `shape`.
Tensor randIndex(const Shape &shape, int64_t n, uint64_t seed) {
  Generator g(seed);
  return randint(0, n, shape, g);
}

} // namespace

// --- the walk-through --------------------------------------------------------

TEST(IndexingApi, WalkThroughViewsShareStorage) {
  Tensor x = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor row = x[1];
  EXPECT_TRUE(row.is_alias_of(x));
  EXPECT_TRUE(same(row, tensor({4, 5, 6})));
  row.fill_(0);
  EXPECT_TRUE(same(x, tensor({{1, 2, 3}, {0, 0, 0}})));

  Tensor y = tensor({{1, 2, 3}, {4, 5, 6}});
  Tensor r = y.index({1, Slice()});
  EXPECT_TRUE(r.is_alias_of(y));
  EXPECT_TRUE(same(r, tensor({4, 5, 6})));
  r.index_put_({0}, 40); // writes through the view into y
  EXPECT_TRUE(same(y, tensor({{1, 2, 3}, {40, 5, 6}})));
  y.index_put_({0, Slice(1, None)}, tensor({7, 8}));
  EXPECT_TRUE(same(y, tensor({{1, 7, 8}, {40, 5, 6}})));
  y.index({Slice(), 2}).copy_(tensor({-1, -2}));
  EXPECT_TRUE(same(y, tensor({{1, 7, -1}, {40, 5, -2}})));
  EXPECT_EQ(y[1][0].item<int64_t>(), 40);
  EXPECT_EQ(y[-1][-1].item<int64_t>(), -2);
}

// --- basic indexing ----------------------------------------------------------

TEST(IndexingApi, BasicIndexingMatchesReference) {
  Shape s = {4, 5, 6};
  Tensor x = noncontiguous(random(s, kFloat, 3));
  auto vx = values(x);
  auto at = [&](int64_t i, int64_t j, int64_t k) {
    return vx[size_t(ravel({i, j, k}, s))];
  };
  // x[1:4:2, -1, ::3]
  Tensor a = x.index({Slice(1, 4, 2), -1, Slice(None, None, 3)});
  EXPECT_TRUE(a.is_alias_of(x));
  EXPECT_TRUE(same(a, ref({2, 2}, [&](const Shape &c) {
                     return at(1 + 2 * c[0], 4, 3 * c[1]);
                   })));
  // x[..., 2] and x["...", None, 1:]
  EXPECT_TRUE(same(x.index({Ellipsis, 2}), ref({4, 5}, [&](const Shape &c) {
                     return at(c[0], c[1], 2);
                   })));
  Tensor b = x.index({"...", None, Slice(1)});
  EXPECT_EQ(shapeOf(b), Shape({4, 5, 1, 5}));
  EXPECT_TRUE(same(b, ref({4, 5, 1, 5}, [&](const Shape &c) {
                     return at(c[0], c[1], c[3] + 1);
                   })));
  // None first and in the middle; slices past the ends clamp.
  Tensor c = x.index({None, 0, None, Slice(-2, 100)});
  EXPECT_EQ(shapeOf(c), Shape({1, 1, 2, 6}));
  EXPECT_TRUE(same(c, ref({1, 1, 2, 6}, [&](const Shape &k) {
                     return at(0, 3 + k[2], k[3]);
                   })));
  EXPECT_EQ(shapeOf(x.index({Slice(5, 2)})), Shape({0, 5, 6}));
  // Ellipsis in the middle, and one that stands for no dims.
  EXPECT_TRUE(same(x.index({1, Ellipsis, 2}),
                   ref({5}, [&](const Shape &k) { return at(1, k[0], 2); })));
  EXPECT_TRUE(same(x.index({1, 2, 3, Ellipsis}), scalar_tensor(at(1, 2, 3))));
  // x[...] is a new view of all of x.
  Tensor all = x.index({Ellipsis});
  EXPECT_FALSE(all.is_same(x));
  EXPECT_TRUE(all.is_alias_of(x));
  EXPECT_TRUE(same(all, x));
  // An index list of integers only gives a 0-dim view.
  Tensor e = x.index({3, 4, 5});
  EXPECT_EQ(e.dim(), 0);
  EXPECT_TRUE(e.is_alias_of(x));
  EXPECT_EQ(e.item<float>(), float(at(3, 4, 5)));
}

TEST(IndexingApi, BooleansAddADim) {
  Tensor x = random({2, 3}, kLong, 5);
  Tensor t = x.index({true});
  EXPECT_EQ(shapeOf(t), Shape({1, 2, 3}));
  EXPECT_TRUE(same(t.squeeze(0), x));
  EXPECT_EQ(shapeOf(x.index({false})), Shape({0, 2, 3}));
  EXPECT_EQ(shapeOf(x.index({Slice(), true})), Shape({2, 1, 3}));
  EXPECT_EQ(shapeOf(x.index({1, false})), Shape({0, 3}));
  // 0-dim tensors: an integer selects (a view), a bool adds a dim.
  Tensor sel = x.index({scalar_tensor(1, TensorOptions(kLong))});
  EXPECT_TRUE(sel.is_alias_of(x));
  EXPECT_TRUE(same(sel, x[1]));
  EXPECT_EQ(shapeOf(x.index({scalar_tensor(true, kBool)})), Shape({1, 2, 3}));
  EXPECT_EQ(shapeOf(x.index({scalar_tensor(false, kBool)})), Shape({0, 2, 3}));
  // Python's 0-dim x[True] and x[None].
  Tensor z = scalar_tensor(3.0);
  EXPECT_EQ(shapeOf(z.index({true})), Shape({1}));
  EXPECT_EQ(shapeOf(z.index({None})), Shape({1}));
  EXPECT_EQ(z.index({Ellipsis}).item<double>(), 3.0);
}

// --- advanced indexing -------------------------------------------------------

TEST(IndexingApi, IntegerTensorsAdjacentAndNot) {
  Shape s = {4, 5, 6};
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random(s, dt, 7));
    auto vx = values(x);
    auto at = [&](int64_t i, int64_t j, int64_t k) {
      return vx[size_t(ravel({i, j, k}, s))];
    };
    Tensor i0 = tensor({{0, -1}, {2, 1}}); // [2, 2], negative wraps
    Tensor i1 = tensor({4, 0}).to(kInt);   // [2], broadcasts against i0
    // Adjacent: x[:, i1, i0-ish] -> [4, 2, 2] with B in place.
    Tensor i2 = tensor({{5, 0}, {1, 2}});
    Tensor a = x.index({Slice(), i1, i2});
    EXPECT_EQ(shapeOf(a), Shape({4, 2, 2})) << dt;
    auto vi1 = values(i1), vi2 = values(i2);
    EXPECT_TRUE(same(a, ref({4, 2, 2},
                            [&](const Shape &c) {
                              int64_t j = int64_t(vi1[size_t(c[2])]);
                              int64_t k = int64_t(vi2[size_t(c[1] * 2 + c[2])]);
                              return at(c[0], j, k);
                            })))
        << dt;
    EXPECT_FALSE(a.is_alias_of(x));
    // Not adjacent: x[i0, :, i1] -> B first: [2, 2, 5].
    Tensor b = x.index({i0, Slice(), i1});
    EXPECT_EQ(shapeOf(b), Shape({2, 2, 5})) << dt;
    auto vi0 = values(i0);
    EXPECT_TRUE(same(b, ref({2, 2, 5},
                            [&](const Shape &c) {
                              int64_t i = int64_t(vi0[size_t(c[0] * 2 + c[1])]);
                              i = i < 0 ? i + 4 : i;
                              int64_t k = int64_t(vi1[size_t(c[1])]);
                              return at(i, c[2], k);
                            })))
        << dt;
    // Single index on the first dim: x[i0] -> [2, 2, 5, 6].
    Tensor c = x[i0];
    EXPECT_EQ(shapeOf(c), Shape({2, 2, 5, 6}));
    EXPECT_TRUE(same(c, ref({2, 2, 5, 6}, [&](const Shape &k) {
                       int64_t i = int64_t(vi0[size_t(k[0] * 2 + k[1])]);
                       return at(i < 0 ? i + 4 : i, k[2], k[3]);
                     })));
    // An integer with a tensor: the integer selects first (basic), so the
    // remaining tensor index is alone: x[1, :, i1] -> [5, 2].
    Tensor d = x.index({1, Slice(), i1});
    EXPECT_TRUE(same(d, ref({5, 2}, [&](const Shape &k) {
                       return at(1, k[0], int64_t(vi1[size_t(k[1])]));
                     })));
    // None between advanced indices makes them non-adjacent.
    Tensor i3 = tensor({3, 0});
    Tensor e = x.index({i3, None, i3});
    EXPECT_EQ(shapeOf(e), Shape({2, 1, 6}));
    EXPECT_TRUE(same(e, ref({2, 1, 6}, [&](const Shape &k) {
                       int64_t i = k[0] == 0 ? 3 : 0;
                       return at(i, i, k[2]);
                     })));
  }
}

TEST(IndexingApi, BoolMasks) {
  Shape s = {3, 4, 2};
  Tensor x = random(s, kDouble, 9);
  auto vx = values(x);
  // A 2-d mask over the first two dims.
  Tensor m = random({3, 4}, kBool, 10);
  auto vm = values(m);
  std::vector<double> exp;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      if (vm[size_t(i * 4 + j)] != 0)
        for (int64_t k = 0; k < 2; ++k)
          exp.push_back(vx[size_t(ravel({i, j, k}, s))]);
  int64_t n = int64_t(exp.size()) / 2;
  Tensor got = x.index({m});
  EXPECT_TRUE(
      same(got, from_fn({n, 2}, [&](int64_t i) { return exp[size_t(i)]; })));
  // Mask then an integer: x[m, 1] -> [n].
  Tensor got2 = x.index({m, 1});
  EXPECT_TRUE(same(
      got2, from_fn({n}, [&](int64_t i) { return exp[size_t(2 * i + 1)]; })));
  // A mask on the last dim after a slice, and x[x > 0].
  Tensor pos = x.index({x > 0});
  std::vector<double> pv;
  for (double v : vx)
    if (v > 0)
      pv.push_back(v);
  EXPECT_TRUE(same(pos, from_fn({int64_t(pv.size())},
                                [&](int64_t i) { return pv[size_t(i)]; })));
  Tensor lastMask = tensor({true, false});
  EXPECT_TRUE(same(x.index({Ellipsis, lastMask}), x.narrow(2, 0, 1)));
  // uint8 masks act like bool masks.
  EXPECT_TRUE(same(x.index({m.to(kByte)}), got));
  // An all-false mask selects nothing.
  EXPECT_EQ(shapeOf(x.index({zeros({3}, TensorOptions(kBool))})),
            Shape({0, 4, 2}));
}

TEST(IndexingApi, EmptyIndexAndEmptyTensor) {
  Tensor x = random({3, 4});
  Tensor none = empty({0}, TensorOptions(kLong));
  EXPECT_EQ(shapeOf(x.index({none})), Shape({0, 4}));
  EXPECT_EQ(shapeOf(x.index({Slice(), none})), Shape({3, 0}));
  Tensor e = empty({0, 4});
  EXPECT_EQ(shapeOf(e.index({Slice(), tensor({1, 3})})), Shape({0, 2}));
  EXPECT_EMBER_ERROR(e.index({tensor({0})}),
                     "index 0 is out of bounds for dimension 0 with size 0");
}

TEST(IndexingApi, Errors) {
  Tensor x = random({2, 3});
  EXPECT_EMBER_ERROR(x.index({0, 1, 2}), "too many indices for tensor of "
                                         "dimension 2");
  EXPECT_EMBER_ERROR(x.index({5}), "index 5 is out of bounds for dimension 0 "
                                   "with size 2");
  EXPECT_EMBER_ERROR(x.index({0, -4}), "index -4 is out of bounds for "
                                       "dimension 1 with size 3");
  EXPECT_EMBER_ERROR(x[2], "index 2 is out of bounds for dimension 0 with "
                           "size 2");
  EXPECT_EMBER_ERROR(x.index({tensor({0, 3})}),
                     "index 3 is out of bounds for dimension 0 with size 2");
  EXPECT_EMBER_ERROR(x.index({Slice(), tensor({-4})}),
                     "index -4 is out of bounds for dimension 1 with size 3");
  EXPECT_EMBER_ERROR(x.index({tensor({0.0})}),
                     "tensors used as indices must be long, int, byte or bool "
                     "tensors");
  EXPECT_EMBER_ERROR(x.index({tensor({0, 1}), tensor({0, 1, 2})}),
                     "shape mismatch: indexing tensors could not be broadcast "
                     "together with shapes [2], [3]");
  EXPECT_EMBER_ERROR(x.index({tensor({true, false, true})}),
                     "The shape of the mask [3] at index 0 does not match the "
                     "shape of the indexed tensor [2, 3] at index 0");
  EXPECT_EMBER_ERROR(x.index({Ellipsis, 0, Ellipsis}),
                     "an index can only have a single ellipsis");
  EXPECT_EMBER_ERROR(x.index({"..", 0}), "Expected \"...\" to represent an "
                                         "ellipsis index");
  EXPECT_EMBER_ERROR(scalar_tensor(1.0).index({0}),
                     "invalid index of a 0-dim tensor");
  EXPECT_EMBER_ERROR(x.index({Tensor()}), "undefined");
  EXPECT_EMBER_ERROR(Slice(0, 2, 0), "slice step cannot be zero");
  EXPECT_EMBER_ERROR(x.index({Slice(), Slice(), tensor({0})}),
                     "too many indices");
}

// --- index_put_ --------------------------------------------------------------

TEST(IndexPut, BasicIndicesWriteThroughViews) {
  Tensor x = zeros({3, 4});
  x.index_put_({Slice(), 1}, 2.5);
  x.index_put_({2}, tensor({1.0, 2.0, 3.0, 4.0}));
  x.index_put_({Slice(0, 2), Slice(2)}, tensor({{7.0, 8.0}}));
  EXPECT_TRUE(same(x, tensor({{0.0, 2.5, 7.0, 8.0},
                              {0.0, 2.5, 7.0, 8.0},
                              {1.0, 2.0, 3.0, 4.0}})));
  // Values convert to the destination dtype, as Python's x[...] = v.
  Tensor i = zeros({2}, TensorOptions(kLong));
  i.index_put_({Ellipsis}, 3.7);
  EXPECT_TRUE(same(i, tensor({3, 3})));
  // Writes into a non-contiguous destination.
  Tensor base = zeros({3, 4});
  Tensor t = base.t();
  t.index_put_({1}, tensor({1.0, 2.0, 3.0}));
  EXPECT_TRUE(same(base.select(1, 1), tensor({1.0, 2.0, 3.0})));
  EXPECT_EMBER_ERROR(x.index_put_({0}, tensor({1.0, 2.0})),
                     "must match the existing size");
}

TEST(IndexPut, AdvancedIndicesMatchReference) {
  for (ScalarType dt : kAllTypes) {
    Shape s = {4, 3, 5};
    Tensor x0 = random(s, dt, 31);
    Tensor x = noncontiguous(x0);
    auto vx = values(x);
    Tensor i0 = tensor({3, -4, 2});
    Tensor i2 = tensor({4, 0, 1});
    Tensor v = noncontiguous(random({3, 3}, dt, 32)); // [B=3, dim1=3]
    auto vv = values(v);
    x.index_put_({i0, Slice(), i2}, v);
    std::vector<double> e = vx;
    auto vi0 = values(i0), vi2 = values(i2);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 3; ++j) {
        int64_t i = int64_t(vi0[size_t(b)]);
        i = i < 0 ? i + 4 : i;
        e[size_t(ravel({i, j, int64_t(vi2[size_t(b)])}, s))] =
            vv[size_t(b * 3 + j)];
      }
    EXPECT_TRUE(same(x, from_fn(s, [&](int64_t k) { return e[size_t(k)]; })))
        << dt;
    // A mask with a broadcast scalar value.
    Tensor m = random(s, kBool, 33);
    Tensor y = x0.clone();
    y.index_put_({m}, 1);
    auto vm = values(m), vy0 = values(x0);
    EXPECT_TRUE(same(y, from_fn(s,
                                [&](int64_t k) {
                                  return vm[size_t(k)] != 0 ? 1.0
                                                            : vy0[size_t(k)];
                                })))
        << dt;
  }
}

TEST(IndexPut, AccumulateWithDuplicates) {
  for (ScalarType dt : {kFloat, kDouble, kLong, kInt, kHalf, kBFloat16}) {
    Tensor x = random({5, 3}, dt, 41);
    auto vx = values(x);
    Tensor idx = tensor({1, 3, 1, 1, -1});
    Tensor v = random({5, 3}, dt, 42);
    auto vv = values(v);
    Tensor y = x.clone();
    index_put_(y, {idx}, v, true);
    std::vector<double> e = vx;
    auto vi = values(idx);
    for (int64_t b = 0; b < 5; ++b) {
      int64_t r = int64_t(vi[size_t(b)]);
      r = r < 0 ? r + 5 : r;
      for (int64_t j = 0; j < 3; ++j)
        e[size_t(r * 3 + j)] += vv[size_t(b * 3 + j)];
    }
    double tol = (dt == kHalf || dt == kBFloat16) ? 3e-2 : 1e-6;
    EXPECT_TRUE(close(
        y, from_fn({5, 3}, [&](int64_t k) { return e[size_t(k)]; }), tol, tol))
        << dt;
    // Without accumulate, the last duplicate wins (serial order).
    Tensor z = x.clone();
    index_put_(z, {idx}, v, false);
    std::vector<double> f = vx;
    for (int64_t b = 0; b < 5; ++b) {
      int64_t r = int64_t(vi[size_t(b)]);
      r = r < 0 ? r + 5 : r;
      for (int64_t j = 0; j < 3; ++j)
        f[size_t(r * 3 + j)] = vv[size_t(b * 3 + j)];
    }
    EXPECT_TRUE(
        same(z, from_fn({5, 3}, [&](int64_t k) { return f[size_t(k)]; })))
        << dt;
  }
  // Undefined entries leave a dim unindexed: y[:, [0, 0]] += 1.
  Tensor y = zeros({2, 3});
  index_put_(y, {Tensor(), tensor({0, 0, 2})}, ones({1}), true);
  EXPECT_TRUE(same(y, tensor({{2.0, 0.0, 1.0}, {2.0, 0.0, 1.0}})));
}

TEST(IndexPut, Errors) {
  Tensor x = zeros({3, 4});
  Tensor before = x.clone();
  EXPECT_EMBER_ERROR(x.index_put_({tensor({0, 5})}, 1.0),
                     "index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_TRUE(same(x, before)); // nothing written
  EXPECT_EMBER_ERROR(x.index_put_({tensor({0, 1})},
                                  tensor({1.0, 2.0}, TensorOptions(kDouble))),
                     "Index put requires the source and destination dtypes "
                     "match");
  EXPECT_EMBER_ERROR(x.index_put_({tensor({0, 1})}, zeros({3})),
                     "shape mismatch: value tensor of shape [3] cannot be "
                     "broadcast to indexing result of shape [2, 4]");
  EXPECT_EMBER_ERROR(x.index_put_({tensor({0})}, Tensor()), "undefined");
  Tensor ex = zeros({1}).expand({3});
  EXPECT_EMBER_ERROR(index_put_(ex, {tensor({0})}, zeros({1}), false),
                     "more than one element of the written-to tensor");
}

// --- index_select ------------------------------------------------------------

TEST(IndexSelect, MatchesReference) {
  Shape s = {4, 5, 3};
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random(s, dt, 51));
    auto vx = values(x);
    for (int64_t dim : {0, 1, 2, -1}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      for (ScalarType it : {kLong, kInt}) {
        Tensor idx = randIndex({7}, s[size_t(d)], 52).to(it);
        auto vi = values(idx);
        Shape os = s;
        os[size_t(d)] = 7;
        Tensor out = x.index_select(dim, idx);
        EXPECT_TRUE(same(out, ref(os,
                                  [&](const Shape &c) {
                                    Shape cc = c;
                                    cc[size_t(d)] =
                                        int64_t(vi[size_t(c[size_t(d)])]);
                                    return vx[size_t(ravel(cc, s))];
                                  })))
            << dt << " dim " << dim;
      }
    }
  }
  Tensor z = scalar_tensor(2.0);
  EXPECT_EQ(index_select(z, 0, tensor({0})).dim(), 0);
  EXPECT_EQ(
      shapeOf(random({3, 2}).index_select(0, empty({0}, TensorOptions(kLong)))),
      Shape({0, 2}));
  EXPECT_TRUE(
      same(random({3}).index_select(0, scalar_tensor(1, TensorOptions(kLong))),
           random({3}).narrow(0, 1, 1)));
}

TEST(IndexSelect, Errors) {
  Tensor x = random({3, 2});
  EXPECT_EMBER_ERROR(x.index_select(0, tensor({0, 5})),
                     "index 5 is out of bounds for dimension 0 with size 3");
  EXPECT_EMBER_ERROR(x.index_select(0, tensor({-1})),
                     "index -1 is out of bounds for dimension 0 with size 3");
  EXPECT_EMBER_ERROR(x.index_select(0, tensor({{0}})), "Index is supposed to "
                                                       "be a vector");
  EXPECT_EMBER_ERROR(x.index_select(0, tensor({0.0})),
                     "Expected dtype int32 or int64 for index");
  EXPECT_EMBER_ERROR(x.index_select(2, tensor({0})), "Dimension out of range");
}

// --- gather / scatter --------------------------------------------------------

TEST(Gather, MatchesReference) {
  Shape s = {4, 5, 3};
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random(s, dt, 61));
    auto vx = values(x);
    for (int64_t dim : {0, 1, 2, -2}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      Shape is = {3, 4, 2};
      is[size_t(d)] = 6; // larger than self along dim is fine
      Tensor idx = noncontiguous(randIndex(is, s[size_t(d)], 62));
      auto vi = values(idx);
      Tensor out = x.gather(dim, idx);
      EXPECT_TRUE(same(out, ref(is,
                                [&](const Shape &c) {
                                  Shape cc = c;
                                  cc[size_t(d)] =
                                      int64_t(vi[size_t(ravel(c, is))]);
                                  return vx[size_t(ravel(cc, s))];
                                })))
          << dt << " dim " << dim;
    }
  }
  Tensor z = scalar_tensor(4.0);
  EXPECT_EQ(gather(z, 0, scalar_tensor(0, TensorOptions(kLong))).item<double>(),
            4.0);
  EXPECT_EQ(
      shapeOf(random({2, 3}).gather(1, empty({2, 0}, TensorOptions(kLong)))),
      Shape({2, 0}));
}

TEST(Gather, Errors) {
  Tensor x = random({2, 3});
  EXPECT_EMBER_ERROR(x.gather(1, tensor({{0, 3}, {1, 1}})),
                     "index 3 is out of bounds for dimension 1 with size 3");
  EXPECT_EMBER_ERROR(x.gather(1, tensor({{0, -1}})),
                     "index -1 is out of bounds for dimension 1 with size 3");
  EXPECT_EMBER_ERROR(x.gather(1, tensor({0, 1})),
                     "Index tensor must have the same number of dimensions");
  EXPECT_EMBER_ERROR(x.gather(1, tensor({{0}}).to(kInt)),
                     "gather(): Expected dtype int64 for index");
  EXPECT_EMBER_ERROR(x.gather(1, zeros({3, 1}, TensorOptions(kLong))),
                     "Size does not match at dimension 0");
}

TEST(Scatter, MatchesReference) {
  Shape s = {4, 5, 3};
  for (ScalarType dt : kAllTypes) {
    for (int64_t dim : {0, 1, -1}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor self = noncontiguous(random(s, dt, 71));
      Shape is = {3, 4, 2};
      Tensor idx = randIndex(is, s[size_t(d)], 72);
      Tensor src = noncontiguous(random({3, 5, 3}, dt, 73));
      auto vself = values(self), vi = values(idx), vs = values(src);
      std::vector<double> e = vself, eadd = vself;
      for (int64_t k = 0; k < 24; ++k) { // serial order: last write wins
        Shape c = unravel(k, is);
        Shape cc = c;
        cc[size_t(d)] = int64_t(vi[size_t(k)]);
        double sv = vs[size_t(ravel(c, {3, 5, 3}))];
        e[size_t(ravel(cc, s))] = sv;
        eadd[size_t(ravel(cc, s))] += sv;
      }
      Tensor expect = from_fn(s, [&](int64_t k) { return e[size_t(k)]; });
      EXPECT_TRUE(same(self.scatter(dim, idx, src), expect)) << dt;
      EXPECT_TRUE(same(self, from_fn(s, [&](int64_t k) {
                         return vself[size_t(k)];
                       }))); // functional form left self alone
      Tensor inplace = self.clone();
      inplace.scatter_(dim, idx, src);
      EXPECT_TRUE(same(inplace, expect)) << dt;
      if (dt != kBool) {
        Tensor expAdd = from_fn(s, [&](int64_t k) { return eadd[size_t(k)]; });
        double tol = (dt == kHalf || dt == kBFloat16) ? 3e-2 : 1e-6;
        EXPECT_TRUE(close(self.scatter_add(dim, idx, src), expAdd, tol, tol))
            << dt;
        // In place through a non-contiguous view: writes reach its base.
        Tensor view = self;
        view.scatter_add_(dim, idx, src);
        EXPECT_TRUE(close(self, expAdd, tol, tol)) << dt;
      }
    }
  }
}

TEST(Scatter, ValueFormAndEdgeCases) {
  Tensor x = zeros({2, 4});
  Tensor idx = tensor({{1, 3}, {0, 0}});
  EXPECT_TRUE(same(x.scatter(1, idx, 2.5),
                   tensor({{0.0, 2.5, 0.0, 2.5}, {2.5, 0.0, 0.0, 0.0}})));
  EXPECT_TRUE(same(scatter(x.to(kLong), 0, tensor({{1, 0}}), 7),
                   tensor({{0, 7, 0, 0}, {7, 0, 0, 0}})));
  // Empty index: nothing happens.
  Tensor y = random({2, 3});
  EXPECT_TRUE(same(y.scatter(0, empty({0, 3}, TensorOptions(kLong)), y), y));
  // 0-dim.
  Tensor z = scalar_tensor(1.0);
  EXPECT_EQ(
      z.scatter(0, scalar_tensor(0, TensorOptions(kLong)), scalar_tensor(5.0))
          .item<double>(),
      5.0);
  // An index (or src) sharing memory with self is read as it was before the
  // op: the writes never change validated indices.
  Tensor a = tensor({2, 0, 1});
  a.scatter_(0, a, tensor({10, 11, 12}));
  EXPECT_TRUE(same(a, tensor({11, 12, 10})));
  Tensor c = tensor({0, 1, 2});
  c.index_add_(0, c, c);
  EXPECT_TRUE(same(c, tensor({0, 2, 4})));
  // scatter_add_ into bool acts as a logical or.
  Tensor b = zeros({3}, TensorOptions(kBool));
  b.scatter_add_(0, tensor({2, 2}), tensor({true, false}));
  EXPECT_TRUE(same(b, tensor({0.0, 0.0, 1.0})));
}

TEST(Scatter, Errors) {
  Tensor x = zeros({2, 3});
  Tensor before = x.clone();
  EXPECT_EMBER_ERROR(x.scatter_(1, tensor({{0, 3}}), ones({1, 2})),
                     "index 3 is out of bounds for dimension 1 with size 3");
  EXPECT_TRUE(same(x, before)); // validated before writing
  EXPECT_EMBER_ERROR(x.scatter_(1, tensor({{0, -1}}), ones({1, 2})),
                     "index -1 is out of bounds");
  EXPECT_EMBER_ERROR(
      x.scatter_(1, tensor({{0}}), ones({1, 1}, TensorOptions(kDouble))),
      "Expected self.dtype to be equal to src.dtype");
  EXPECT_EMBER_ERROR(x.scatter_(1, tensor({{0, 1}}).to(kInt), ones({1, 2})),
                     "Expected dtype int64 for index");
  EXPECT_EMBER_ERROR(x.scatter_(1, tensor({{0, 1, 2}}), ones({1, 2})),
                     "to be smaller size than src");
  EXPECT_EMBER_ERROR(x.scatter_(1, tensor({0}), ones({1})),
                     "Index tensor must have the same number of dimensions");
  EXPECT_EMBER_ERROR(x.scatter_add_(1, tensor({{0, 9}}), ones({1, 2})),
                     "index 9 is out of bounds for dimension 1 with size 3");
  Tensor ex = zeros({1}).expand({3});
  EXPECT_EMBER_ERROR(ex.scatter_(0, tensor({0}), ones({1})),
                     "more than one element of the written-to tensor");
}

// --- index_add ---------------------------------------------------------------

TEST(IndexAdd, MatchesReference) {
  Shape s = {4, 5, 3};
  for (ScalarType dt : {kFloat, kDouble, kLong, kInt, kHalf, kBFloat16}) {
    for (int64_t dim : {0, 1, -1}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor self = noncontiguous(random(s, dt, 81));
      Tensor idx = randIndex({6}, s[size_t(d)], 82); // with duplicates
      Shape ss = s;
      ss[size_t(d)] = 6;
      Tensor src = noncontiguous(random(ss, dt, 83));
      auto vself = values(self), vi = values(idx), vs = values(src);
      double alpha = isFloatingType(dt) ? 0.5 : 2.0;
      std::vector<double> e = vself;
      for (int64_t k = 0; k < int64_t(vs.size()); ++k) {
        Shape c = unravel(k, ss);
        Shape cc = c;
        cc[size_t(d)] = int64_t(vi[size_t(c[size_t(d)])]);
        e[size_t(ravel(cc, s))] += alpha * vs[size_t(k)];
      }
      Tensor expect = from_fn(s, [&](int64_t k) { return e[size_t(k)]; });
      double tol = (dt == kHalf || dt == kBFloat16) ? 3e-2 : 1e-6;
      Scalar a = isFloatingType(dt) ? Scalar(0.5) : Scalar(2);
      EXPECT_TRUE(
          close(self.index_add(dim, idx.to(kInt), src, a), expect, tol, tol))
          << dt;
      self.index_add_(dim, idx, src, a);
      EXPECT_TRUE(close(self, expect, tol, tol)) << dt;
    }
  }
  Tensor z = scalar_tensor(1.0);
  EXPECT_EQ(z.index_add(0, tensor({0}), scalar_tensor(2.0)).item<double>(),
            3.0);
}

TEST(IndexAdd, Errors) {
  Tensor x = zeros({3, 2});
  EXPECT_EMBER_ERROR(x.index_add_(0, tensor({0, 3}), ones({2, 2})),
                     "index 3 is out of bounds for dimension 0 with size 3");
  EXPECT_EMBER_ERROR(
      x.index_add_(0, tensor({0}), ones({2, 2})),
      "Number of indices (1) should be equal to source.size(dim) (2)");
  EXPECT_EMBER_ERROR(x.index_add_(0, tensor({0}), ones({1, 3})),
                     "source tensor shape must match self tensor shape");
  EXPECT_EMBER_ERROR(
      x.index_add_(0, tensor({0}), ones({1, 2}, TensorOptions(kDouble))),
      "must have the same scalar type");
  EXPECT_EMBER_ERROR(x.index_add_(0, tensor({0.0}), ones({1, 2})),
                     "Expected dtype int32/int64 for index");
}

// --- masked_select / nonzero -------------------------------------------------

TEST(MaskedSelect, MatchesReferenceWithBroadcast) {
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random({3, 4}, dt, 91));
    Tensor m = random({4}, kBool, 92); // broadcasts over rows
    auto vx = values(x), vm = values(m);
    std::vector<double> e;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j)
        if (vm[size_t(j)] != 0)
          e.push_back(vx[size_t(i * 4 + j)]);
    Tensor out = x.masked_select(m);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_TRUE(same(out, from_fn({int64_t(e.size())},
                                  [&](int64_t i) { return e[size_t(i)]; })))
        << dt;
  }
  // The mask may be the larger one: self broadcasts.
  Tensor v = tensor({1.0, 2.0});
  Tensor m2 = tensor({{true, false}, {true, true}});
  EXPECT_TRUE(same(masked_select(v, m2), tensor({1.0, 1.0, 2.0})));
  EXPECT_EQ(masked_select(empty({0}), empty({0}, TensorOptions(kBool))).numel(),
            0);
  EXPECT_TRUE(
      same(masked_select(scalar_tensor(3.0), scalar_tensor(true, kBool)),
           tensor({3.0})));
}

TEST(MaskedSelect, Errors) {
  EXPECT_EMBER_ERROR(random({3}).masked_select(tensor({1, 0, 1})),
                     "masked_select: expected BoolTensor for mask");
  EXPECT_EMBER_ERROR(random({3}).masked_select(tensor({true, false})), "");
}

TEST(Nonzero, MatchesReference) {
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random({3, 4, 2}, dt, 95));
    x.select(0, 1).fill_(0); // make sure there are zeros
    auto vx = values(x);
    std::vector<double> e;
    for (int64_t k = 0; k < 24; ++k)
      if (vx[size_t(k)] != 0)
        for (int64_t c : unravel(k, {3, 4, 2}))
          e.push_back(double(c));
    Tensor out = x.nonzero();
    EXPECT_EQ(out.dtype(), kLong);
    int64_t n = int64_t(e.size()) / 3;
    EXPECT_TRUE(
        same(out, from_fn({n, 3}, [&](int64_t i) { return e[size_t(i)]; })))
        << dt;
  }
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(
      same(tensor({0.0, nan, -0.0, 2.0}).nonzero(), tensor({{1}, {3}})));
  EXPECT_EQ(shapeOf(scalar_tensor(2.0).nonzero()), Shape({1, 0}));
  EXPECT_EQ(shapeOf(scalar_tensor(0.0).nonzero()), Shape({0, 0}));
  EXPECT_EQ(shapeOf(empty({0, 3}).nonzero()), Shape({0, 2}));
}

// --- the native index op -----------------------------------------------------

TEST(NativeIndex, UndefinedEntriesAndInt32) {
  Tensor x = random({3, 4}, kDouble, 99);
  auto vx = values(x);
  Tensor out = index(x, {Tensor(), tensor({3, 0}).to(kInt)});
  EXPECT_TRUE(same(out, ref({3, 2}, [&](const Shape &c) {
                     return vx[size_t(c[0] * 4 + (c[1] == 0 ? 3 : 0))];
                   })));
  // No index at all: a copy.
  Tensor c = index(x, {Tensor()});
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(same(c, x));
  EXPECT_EMBER_ERROR(index(x, {Tensor(), Tensor(), tensor({0})}),
                     "too many indices for tensor of dimension 2");
}

// --- large inputs: parallel paths, thread-count independence -----------------

TEST(Parallel, LargeInputsMatchReferenceAndThreadCount) {
  Shape s = {300, 257};
  Tensor x = random(s, kFloat, 101);
  auto vx = values(x);
  Tensor rows = randIndex({400}, 300, 102);
  Tensor few = randIndex({300, 257}, 3, 103); // heavy duplicates
  Tensor cols = randIndex({300, 50}, 257, 104);
  Tensor big1d = randIndex({100000}, 300, 105);
  Tensor m = x > 0.3;
  auto run = [&]() {
    std::vector<Tensor> r;
    r.push_back(x.index_select(0, rows));
    r.push_back(x.index_select(1, cols.flatten()));
    r.push_back(x.gather(1, cols));
    r.push_back(zeros(s).scatter_add(0, few, x));
    r.push_back(zeros(s).index_add(0, rows.narrow(0, 0, 300), x));
    Tensor acc = zeros({300, 257});
    index_put_(acc, {few.select(1, 0)}, x, true);
    r.push_back(acc);
    r.push_back(x.masked_select(m));
    r.push_back(m.nonzero());
    r.push_back(x.index({Slice(), cols.select(0, 0)}));
    r.push_back(x.flatten().index_select(0, big1d));
    r.push_back(x.index({m}));
    return r;
  };
  expect_same_across_thread_counts(run);
  auto one = run();

  // References.
  auto vr = values(rows), vf = values(few), vc = values(cols);
  EXPECT_TRUE(same(one[0], ref({400, 257}, [&](const Shape &c) {
                     return vx[size_t(int64_t(vr[size_t(c[0])]) * 257 + c[1])];
                   })));
  EXPECT_TRUE(same(
      one[2], ref({300, 50}, [&](const Shape &c) {
        return vx[size_t(c[0] * 257 + int64_t(vc[size_t(c[0] * 50 + c[1])]))];
      })));
  std::vector<double> sa(size_t(300 * 257), 0.0);
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 257; ++j)
      sa[size_t(int64_t(vf[size_t(i * 257 + j)]) * 257 + j)] +=
          vx[size_t(i * 257 + j)];
  EXPECT_TRUE(close(one[3],
                    from_fn(s, [&](int64_t k) { return sa[size_t(k)]; }), 1e-4,
                    1e-4));
  std::vector<double> ms;
  for (double v : vx)
    if (v > 0.3)
      ms.push_back(v);
  EXPECT_TRUE(same(one[6], from_fn({int64_t(ms.size())},
                                   [&](int64_t k) { return ms[size_t(k)]; })));
  EXPECT_TRUE(same(one[10], one[6]));
  auto vb = values(big1d);
  EXPECT_TRUE(same(one[9], from_fn({100000}, [&](int64_t k) {
                     return vx[size_t(vb[size_t(k)])];
                   })));
}
