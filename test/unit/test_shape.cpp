// Shape and data ops: cat, stack, repeat, tile, flip, roll, tril, triu,
// constant_pad_nd, one_hot, sort, argsort, topk, isclose, allclose, equal.
// Every op is checked against a float64 reference built with naive loops.
#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

using namespace ember;
using namespace ember::test;

namespace {

const std::vector<ScalarType> kAllTypes = {kFloat, kDouble,   kLong, kInt,
                                           kHalf,  kBFloat16, kBool};
const std::vector<ScalarType> kNumTypes = {kFloat, kDouble, kLong,
                                           kInt,   kHalf,   kBFloat16};

/// Exact comparison of values and shape (data movement ops copy bits).
::testing::AssertionResult same(const Tensor &a, const Tensor &e) {
  return close(a, e, 0, 0);
}

} // namespace

// --- cat / stack -------------------------------------------------------------

TEST(Cat, MatchesReferenceAllDtypes) {
  for (ScalarType dt : kAllTypes) {
    Tensor a = random({2, 3, 4}, dt, 1);
    Tensor b = noncontiguous(random({2, 5, 4}, dt, 2));
    Tensor c = random({2, 1, 4}, dt, 3).transpose(0, 2).transpose(0, 2);
    for (int64_t dim : {1, -2}) {
      Tensor out = cat({a, b, c}, dim);
      EXPECT_EQ(out.dtype(), dt);
      auto va = values(a), vb = values(b), vc = values(c);
      Tensor e = ref({2, 9, 4}, [&](const Shape &k) {
        if (k[1] < 3)
          return va[size_t(ravel({k[0], k[1], k[2]}, {2, 3, 4}))];
        if (k[1] < 8)
          return vb[size_t(ravel({k[0], k[1] - 3, k[2]}, {2, 5, 4}))];
        return vc[size_t(ravel({k[0], 0, k[2]}, {2, 1, 4}))];
      });
      EXPECT_TRUE(same(out, e)) << dt;
    }
  }
}

TEST(Cat, DimZeroAndLastDim) {
  Tensor a = random({2, 3}), b = random({1, 3}, kFloat, 4);
  Tensor out = cat({a, b});
  auto va = values(a), vb = values(b);
  EXPECT_TRUE(same(out, ref({3, 3}, [&](const Shape &k) {
                     return k[0] < 2 ? va[size_t(k[0] * 3 + k[1])]
                                     : vb[size_t(k[1])];
                   })));
  Tensor c = random({2, 2}, kFloat, 5);
  Tensor out2 = cat({a, c}, -1);
  auto vc = values(c);
  EXPECT_TRUE(same(out2, ref({2, 5}, [&](const Shape &k) {
                     return k[1] < 3 ? va[size_t(k[0] * 3 + k[1])]
                                     : vc[size_t(k[0] * 2 + k[1] - 3)];
                   })));
}

TEST(Cat, TypePromotion) {
  Tensor i = tensor({1, 2});
  Tensor f = tensor({0.5f, 1.5f});
  Tensor out = cat({i, f});
  EXPECT_EQ(out.dtype(), kFloat);
  EXPECT_TRUE(same(out, tensor({1.0, 2.0, 0.5, 1.5})));
  EXPECT_EQ(cat({i.to(kInt), i}).dtype(), kLong);
  EXPECT_EQ(cat({tensor({true}), i.to(kInt)}).dtype(), kInt);
  EXPECT_EQ(cat({f.to(kHalf), f}).dtype(), kFloat);
  EXPECT_EQ(cat({f.to(kHalf), f.to(kBFloat16)}).dtype(), kFloat);
  EXPECT_EQ(cat({f, f.to(kDouble)}).dtype(), kDouble);
  Tensor mixed = cat({tensor({true, false}), tensor({2.5})});
  EXPECT_TRUE(same(mixed, tensor({1.0, 0.0, 2.5})));
}

TEST(Cat, LegacyEmptyTensorsAreSkipped) {
  Tensor a = random({2, 3});
  Tensor e = empty({0}, TensorOptions(kDouble));
  Tensor out = cat({e, a, e}, 1);
  EXPECT_EQ(out.dtype(), kDouble); // still promotes
  EXPECT_TRUE(same(out, a));
  Tensor all = cat({empty({0}), empty({0}, TensorOptions(kLong))});
  EXPECT_EQ(shapeOf(all), Shape({0}));
  EXPECT_EQ(all.dtype(), kFloat);
  // Non-legacy empty tensors take part normally.
  Tensor z = empty({2, 0});
  EXPECT_TRUE(same(cat({z, a}, 1), a));
  EXPECT_EQ(shapeOf(cat({z, z}, 0)), Shape({4, 0}));
}

TEST(Cat, Errors) {
  EXPECT_EMBER_ERROR(cat({random({3, 2}), random({4, 2})}, 1),
                     "Sizes of tensors must match except in dimension 1. "
                     "Expected size 3 but got size 4 for tensor number 1 in "
                     "the list.");
  EXPECT_EMBER_ERROR(
      cat({random({3, 2}), random({3, 2, 1})}),
      "Tensors must have same number of dimensions: got 2 and 3");
  EXPECT_EMBER_ERROR(cat({random({2}), scalar_tensor(1.0)}),
                     "zero-dimensional tensor (at position 1) cannot be "
                     "concatenated");
  // An empty list has no tensor to dispatch on: the dispatcher says so.
  EXPECT_EMBER_ERROR(cat(std::vector<Tensor>{}),
                     "without a defined tensor argument");
  EXPECT_EMBER_ERROR(cat({random({2, 2})}, 2), "Dimension out of range");
  EXPECT_EMBER_ERROR(cat({random({2, 2}), Tensor()}), "undefined");
}

TEST(Stack, MatchesReference) {
  for (ScalarType dt : {kFloat, kLong, kBool, kHalf}) {
    Tensor a = random({2, 3}, dt, 1), b = noncontiguous(random({2, 3}, dt, 2));
    auto va = values(a), vb = values(b);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      Tensor out = stack({a, b}, dim);
      Shape s = {2, 3};
      s.insert(s.begin() + d, 2);
      EXPECT_TRUE(same(out, ref(s,
                                [&](const Shape &k) {
                                  Shape kk = k;
                                  int64_t w = kk[size_t(d)];
                                  kk.erase(kk.begin() + d);
                                  auto &v = w == 0 ? va : vb;
                                  return v[size_t(kk[0] * 3 + kk[1])];
                                })))
          << dt << " dim " << dim;
    }
  }
  // 0-dim inputs stack into a vector.
  Tensor s = stack({scalar_tensor(1.0), scalar_tensor(2.0)});
  EXPECT_TRUE(same(s, tensor({1.0, 2.0})));
}

TEST(Stack, Errors) {
  EXPECT_EMBER_ERROR(stack({random({2}), random({3})}),
                     "stack expects each tensor to be equal size, but got [2] "
                     "at entry 0 and [3] at entry 1");
  EXPECT_EMBER_ERROR(stack(std::vector<Tensor>{}),
                     "stack expects a non-empty TensorList");
  EXPECT_EMBER_ERROR(stack({random({2})}, 3), "Dimension out of range");
}

// --- repeat / tile -----------------------------------------------------------

TEST(Repeat, MatchesReference) {
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random({2, 3}, dt, 7));
    auto vx = values(x);
    Tensor out = x.repeat({2, 1, 3});
    EXPECT_TRUE(same(out, ref({2, 2, 9},
                              [&](const Shape &k) {
                                return vx[size_t((k[1] % 2) * 3 + k[2] % 3)];
                              })))
        << dt;
  }
  Tensor x = random({2, 3});
  EXPECT_EQ(shapeOf(x.repeat({0, 2})), Shape({0, 6}));
  Tensor s = scalar_tensor(3.5).repeat({2, 2});
  EXPECT_TRUE(same(s, full({2, 2}, 3.5, TensorOptions(kDouble))));
  // Repeats of 1 still make a new tensor.
  Tensor same1 = x.repeat({1, 1});
  EXPECT_FALSE(same1.is_alias_of(x));
  EXPECT_TRUE(same(same1, x));
}

TEST(Repeat, Errors) {
  EXPECT_EMBER_ERROR(random({2, 3}).repeat({2}),
                     "Number of dimensions of repeat dims can not be smaller "
                     "than number of dimensions of tensor");
  EXPECT_EMBER_ERROR(random({2}).repeat({-1}),
                     "Trying to create tensor with negative dimension -1");
}

TEST(Tile, MatchesReference) {
  Tensor x = random({2, 3}, kLong, 3);
  auto vx = values(x);
  EXPECT_TRUE(same(x.tile({2}), ref({2, 6}, [&](const Shape &k) {
                     return vx[size_t(k[0] * 3 + k[1] % 3)];
                   })));
  EXPECT_TRUE(same(tile(x, {2, 1, 1}), ref({2, 2, 3}, [&](const Shape &k) {
                     return vx[size_t(k[1] * 3 + k[2])];
                   })));
  EXPECT_TRUE(same(x.tile({}), x));
  EXPECT_FALSE(x.tile({}).is_alias_of(x));
}

// --- flip / roll -------------------------------------------------------------

TEST(Flip, MatchesReference) {
  for (ScalarType dt : kAllTypes) {
    Tensor x = noncontiguous(random({2, 3, 4}, dt, 11));
    auto vx = values(x);
    Shape s = {2, 3, 4};
    std::vector<std::vector<int64_t>> dimsList = {
        {0}, {1, 2}, {-1}, {}, {0, 1, 2}};
    for (const auto &dims : dimsList) {
      std::vector<bool> f(3, false);
      for (int64_t d : dims)
        f[size_t(d < 0 ? d + 3 : d)] = true;
      Tensor e = ref(s, [&](const Shape &k) {
        Shape kk = k;
        for (size_t d = 0; d < 3; ++d)
          if (f[d])
            kk[d] = s[d] - 1 - kk[d];
        return vx[size_t(ravel(kk, s))];
      });
      EXPECT_TRUE(same(x.flip(dims), e)) << dt;
    }
  }
  Tensor z = scalar_tensor(2.0);
  EXPECT_TRUE(same(z.flip({0}), z));
  EXPECT_EQ(shapeOf(empty({0, 3}).flip({1})), Shape({0, 3}));
  // A transposed input (non-contiguous in the other order).
  Tensor t = random({3, 5}).t();
  auto vt = values(t);
  EXPECT_TRUE(same(flip(t, {0}), ref({5, 3}, [&](const Shape &k) {
                     return vt[size_t((4 - k[0]) * 3 + k[1])];
                   })));
}

TEST(Flip, Errors) {
  EXPECT_EMBER_ERROR(random({2, 3}).flip({0, -2}), "appears multiple times");
  EXPECT_EMBER_ERROR(random({2, 3}).flip({2}), "Dimension out of range");
}

TEST(Roll, MatchesReference) {
  for (ScalarType dt : {kFloat, kLong, kBool, kBFloat16}) {
    Tensor x = noncontiguous(random({3, 4}, dt, 5));
    auto vx = values(x);
    // No dims: roll the flattened tensor.
    for (int64_t shift : {1, -2, 13, 0}) {
      Tensor e = ref({3, 4}, [&](const Shape &k) {
        int64_t i = k[0] * 4 + k[1];
        int64_t src = ((i - shift) % 12 + 12) % 12;
        return vx[size_t(src)];
      });
      EXPECT_TRUE(same(x.roll({shift}), e)) << dt << " shift " << shift;
    }
    // Several dims.
    Tensor e = ref({3, 4}, [&](const Shape &k) {
      int64_t r = ((k[0] + 2) % 3 + 3) % 3; // shift -2 on dim 0
      int64_t c = ((k[1] - 5) % 4 + 4) % 4; // shift 5 on dim 1
      return vx[size_t(r * 4 + c)];
    });
    EXPECT_TRUE(same(roll(x, {-2, 5}, {0, -1}), e)) << dt;
  }
  Tensor z = scalar_tensor(4.0);
  EXPECT_TRUE(same(z.roll({3}), z));
  EXPECT_EQ(shapeOf(empty({0, 2}).roll({1}, {0})), Shape({0, 2}));
}

TEST(Roll, Errors) {
  EXPECT_EMBER_ERROR(random({3}).roll({1, 2}),
                     "shifts and dimensions must align. shifts: 2, dims:0");
  EXPECT_EMBER_ERROR(random({3}).roll({}), "`shifts` required");
  EXPECT_EMBER_ERROR(random({3}).roll({1}, {1}), "Dimension out of range");
}

// --- tril / triu -------------------------------------------------------------

TEST(Triangle, MatchesReference) {
  for (ScalarType dt : kAllTypes) {
    for (const Shape &s : {Shape{4, 5}, Shape{2, 3, 4}, Shape{5, 2}}) {
      Tensor x = noncontiguous(random(s, dt, 13));
      auto vx = values(x);
      for (int64_t k = -3; k <= 4; ++k) {
        Tensor lo = ref(s, [&](const Shape &c) {
          int64_t i = c[c.size() - 2], j = c.back();
          return j - i <= k ? vx[size_t(ravel(c, s))] : 0.0;
        });
        Tensor up = ref(s, [&](const Shape &c) {
          int64_t i = c[c.size() - 2], j = c.back();
          return j - i >= k ? vx[size_t(ravel(c, s))] : 0.0;
        });
        EXPECT_TRUE(same(x.tril(k), lo)) << dt << " k " << k;
        EXPECT_TRUE(same(triu(x, k), up)) << dt << " k " << k;
        EXPECT_EQ(x.tril(k).dtype(), dt);
      }
    }
  }
  // A transposed matrix.
  Tensor m = random({3, 4}).t();
  auto vm = values(m);
  EXPECT_TRUE(same(m.triu(), ref({4, 3}, [&](const Shape &c) {
                     return c[1] >= c[0] ? vm[size_t(c[0] * 3 + c[1])] : 0.0;
                   })));
  EXPECT_EQ(shapeOf(empty({0, 3}).tril()), Shape({0, 3}));
}

TEST(Triangle, Errors) {
  EXPECT_EMBER_ERROR(random({3}).tril(),
                     "tril: input tensor must have at least 2 dimensions");
  EXPECT_EMBER_ERROR(scalar_tensor(1.0).triu(),
                     "triu: input tensor must have at least 2 dimensions");
}

// --- constant_pad_nd ---------------------------------------------------------

TEST(ConstantPad, MatchesReference) {
  Shape s = {2, 3, 4};
  for (ScalarType dt : {kFloat, kDouble, kLong, kHalf, kBool}) {
    Tensor x = noncontiguous(random(s, dt, 17));
    auto vx = values(x);
    std::vector<std::vector<int64_t>> pads = {
        {1, 2}, {1, 1, 2, 0}, {-1, 1, 0, -1}, {0, 0, 0, 0, 1, 1}, {-2, -1}};
    for (const auto &pad : pads) {
      Shape os = s;
      for (size_t i = 0; i < pad.size() / 2; ++i)
        os[2 - i] += pad[2 * i] + pad[2 * i + 1];
      double value = dt == kBool ? 1.0 : 3.0;
      Tensor e = ref(os, [&](const Shape &c) {
        Shape src = c;
        for (size_t i = 0; i < pad.size() / 2; ++i) {
          size_t d = 2 - i;
          src[d] = c[d] - pad[2 * i];
          if (src[d] < 0 || src[d] >= s[d])
            return value;
        }
        return vx[size_t(ravel(src, s))];
      });
      Tensor out = constant_pad_nd(x, pad, value);
      EXPECT_TRUE(same(out, e)) << dt;
      EXPECT_EQ(out.dtype(), dt);
    }
  }
  // Default value 0, empty result, 1-d input.
  Tensor v = tensor({1.0, 2.0});
  EXPECT_TRUE(same(constant_pad_nd(v, {1, 0}), tensor({0.0, 1.0, 2.0})));
  EXPECT_EQ(shapeOf(constant_pad_nd(v, {-1, -1})), Shape({0}));
  EXPECT_TRUE(
      same(constant_pad_nd(empty({0}), {1, 1}, 2.0), tensor({2.0, 2.0})));
}

TEST(ConstantPad, Errors) {
  EXPECT_EMBER_ERROR(constant_pad_nd(random({2, 3}), {1}),
                     "Length of pad must be even");
  EXPECT_EMBER_ERROR(constant_pad_nd(random({2}), {1, 1, 1, 1}),
                     "Length of pad should be no more than twice the number "
                     "of dimensions of the input");
  EXPECT_EMBER_ERROR(constant_pad_nd(random({2}), {-2, -1}),
                     "resulted in a negative output size");
}

// --- one_hot -----------------------------------------------------------------

TEST(OneHot, MatchesReference) {
  Tensor x = tensor({{0, 3, 1}, {2, 2, 0}});
  auto vx = values(x);
  for (int64_t nc : {-1, 4, 6}) {
    int64_t n = nc == -1 ? 4 : nc;
    Tensor out = one_hot(x, nc);
    EXPECT_EQ(out.dtype(), kLong);
    EXPECT_TRUE(same(out, ref({2, 3, n}, [&](const Shape &c) {
                       return vx[size_t(c[0] * 3 + c[1])] == double(c[2]) ? 1.0
                                                                          : 0.0;
                     })));
  }
  Tensor t = noncontiguous(tensor({1, 0, 2}));
  EXPECT_TRUE(same(one_hot(t), tensor({{0, 1, 0}, {1, 0, 0}, {0, 0, 1}})));
  EXPECT_TRUE(same(one_hot(scalar_tensor(2, TensorOptions(kLong)), 3),
                   tensor({0, 0, 1})));
  EXPECT_EQ(shapeOf(one_hot(empty({0, 2}, TensorOptions(kLong)), 3)),
            Shape({0, 2, 3}));
}

TEST(OneHot, Errors) {
  EXPECT_EMBER_ERROR(one_hot(tensor({1, -1})), "Class values must be "
                                               "non-negative");
  EXPECT_EMBER_ERROR(one_hot(tensor({1, 3}), 3),
                     "Class values must be smaller than num_classes");
  EXPECT_EMBER_ERROR(one_hot(tensor({1.0})), "one_hot is only applicable to "
                                             "index tensor of type LongTensor");
  EXPECT_EMBER_ERROR(one_hot(empty({0}, TensorOptions(kLong))),
                     "Can not infer total number of classes from empty tensor");
  EXPECT_EMBER_ERROR(one_hot(tensor({1}), -2), "num_classes");
}

// --- sort / argsort / topk ---------------------------------------------------

namespace {
/// Reference sort of every slice along dim: returns (values, indices) as
/// float64 tensors; stable, NaN largest.
std::pair<Tensor, Tensor> refSort(const Tensor &x, int64_t dim, bool desc) {
  Shape s = shapeOf(x);
  auto vx = values(x);
  int64_t n = s[size_t(dim)];
  std::vector<double> ov(vx.size()), oi(vx.size());
  for (int64_t i = 0; i < int64_t(vx.size()); ++i) {
    Shape c = unravel(i, s);
    if (c[size_t(dim)] != 0)
      continue;
    std::vector<std::pair<double, int64_t>> buf;
    for (int64_t j = 0; j < n; ++j) {
      Shape cj = c;
      cj[size_t(dim)] = j;
      buf.push_back({vx[size_t(ravel(cj, s))], j});
    }
    auto lt = [](double a, double b) {
      return !std::isnan(a) && (std::isnan(b) || a < b);
    };
    std::stable_sort(buf.begin(), buf.end(), [&](auto &a, auto &b) {
      return desc ? lt(b.first, a.first) : lt(a.first, b.first);
    });
    for (int64_t j = 0; j < n; ++j) {
      Shape cj = c;
      cj[size_t(dim)] = j;
      ov[size_t(ravel(cj, s))] = buf[size_t(j)].first;
      oi[size_t(ravel(cj, s))] = double(buf[size_t(j)].second);
    }
  }
  return {from_fn(s, [&](int64_t i) { return ov[size_t(i)]; }),
          from_fn(s, [&](int64_t i) { return oi[size_t(i)]; })};
}
} // namespace

TEST(Sort, MatchesReferenceAllDtypes) {
  for (ScalarType dt : kAllTypes) {
    // Small integer-valued data has many ties: checks stability too.
    Tensor x = noncontiguous(random({3, 4, 5}, dt, 19));
    for (int64_t dim : {0, 1, 2, -1}) {
      int64_t d = dim < 0 ? dim + 3 : dim;
      for (bool desc : {false, true}) {
        auto [v, i] = x.sort(dim, desc, true);
        auto [ev, ei] = refSort(x, d, desc);
        EXPECT_EQ(v.dtype(), dt);
        EXPECT_EQ(i.dtype(), kLong);
        EXPECT_TRUE(same(v, ev)) << dt << " dim " << dim << " desc " << desc;
        EXPECT_TRUE(same(i, ei)) << dt << " dim " << dim << " desc " << desc;
        EXPECT_TRUE(same(argsort(x, dim, desc, true), ei));
      }
    }
  }
}

TEST(Sort, NaNSortsAsLargest) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kFloat, kDouble, kHalf}) {
    Tensor x = tensor({3.0, nan, -inf, 1.0, nan, inf, -0.0, 0.0}).to(dt);
    auto [v, i] = sort(x);
    EXPECT_TRUE(same(v, tensor({-inf, -0.0, 0.0, 1.0, 3.0, inf, nan, nan})));
    EXPECT_TRUE(same(i, tensor({2, 6, 7, 3, 0, 5, 1, 4})));
    auto [vd, id] = sort(x, 0, true);
    EXPECT_TRUE(same(vd, tensor({nan, nan, inf, 3.0, 1.0, -0.0, 0.0, -inf})));
    EXPECT_TRUE(same(id, tensor({1, 4, 5, 0, 3, 6, 7, 2})));
  }
}

TEST(Sort, EdgeCases) {
  auto [v0, i0] = scalar_tensor(5.0).sort();
  EXPECT_EQ(v0.dim(), 0);
  EXPECT_EQ(v0.item<double>(), 5.0);
  EXPECT_EQ(i0.item<int64_t>(), 0);
  auto [ve, ie] = empty({0, 3}).sort(0);
  EXPECT_EQ(shapeOf(ve), Shape({0, 3}));
  EXPECT_EQ(shapeOf(ie), Shape({0, 3}));
  // Stable ties, descending: equal values keep their input order.
  auto [v, i] = tensor({1, 2, 1, 2, 1}).sort(0, true, true);
  EXPECT_TRUE(same(i, tensor({1, 3, 0, 2, 4})));
  EXPECT_EMBER_ERROR(random({3}).sort(1), "Dimension out of range");
}

TEST(Topk, MatchesReference) {
  // (bool raises, as PyTorch's "topk does not support bool dtypes")
  EXPECT_THROW(tensor({true, false}).topk(1), NotImplementedError);
  for (ScalarType dt : {kFloat, kDouble, kLong, kInt, kHalf, kByte}) {
    Tensor x = noncontiguous(random({4, 6}, dt, 23));
    for (int64_t dim : {0, 1, -1}) {
      int64_t d = dim < 0 ? dim + 2 : dim;
      int64_t n = x.size(d);
      for (bool largest : {true, false}) {
        auto [ev, ei] = refSort(x, d, largest);
        for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), n}) {
          auto [v, i] = x.topk(k, dim, largest, true);
          Tensor ev2 = ev.narrow(d, 0, k), ei2 = ei.narrow(d, 0, k);
          EXPECT_TRUE(same(v, ev2)) << dt << " k " << k;
          // Ties resolve to the lower index, as the stable reference.
          EXPECT_TRUE(same(i, ei2)) << dt << " k " << k;
          // Unsorted: the same elements, in input order.
          auto [vu, iu] = x.topk(k, dim, largest, false);
          auto [iu_sorted, perm] = iu.sort(d);
          auto [ei_sorted, perm2] = ei2.sort(d);
          EXPECT_TRUE(same(iu_sorted, ei_sorted)) << dt << " k " << k;
          EXPECT_TRUE(same(iu, iu_sorted));
          EXPECT_TRUE(same(vu, x.gather(d, iu)));
        }
      }
    }
  }
}

TEST(Topk, NaNAndEdgeCases) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = tensor({1.0, nan, 3.0, 2.0});
  auto [v, i] = x.topk(2);
  EXPECT_TRUE(same(v, tensor({nan, 3.0})));
  EXPECT_TRUE(same(i, tensor({1, 2})));
  auto [vs, is] = x.topk(2, -1, false);
  EXPECT_TRUE(same(vs, tensor({1.0, 2.0})));
  EXPECT_TRUE(same(is, tensor({0, 3})));
  auto [v0, i0] = scalar_tensor(7.0).topk(1);
  EXPECT_EQ(v0.dim(), 0);
  EXPECT_EQ(v0.item<double>(), 7.0);
  EXPECT_EMBER_ERROR(random({3}).topk(4), "selected index k out of range");
  EXPECT_EMBER_ERROR(random({3}).topk(-1), "selected index k out of range");
}

// --- isclose / allclose / equal ----------------------------------------------

TEST(IsClose, MatchesReference) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> a = {1.0, 1.0,  1.0, nan,  nan,  inf,
                           inf, -inf, 0.0, 1e-9, 100.0};
  std::vector<double> b = {1.0,  1.0 + 1e-6, 1.1,  nan, 1.0,    inf,
                           -inf, -inf,       1e-9, 0.0, 100.001};
  for (ScalarType dt : {kDouble, kFloat}) {
    Tensor ta = from_fn({11}, [&](int64_t i) { return a[size_t(i)]; }).to(dt);
    Tensor tb = from_fn({11}, [&](int64_t i) { return b[size_t(i)]; }).to(dt);
    for (double rtol : {1e-5, 0.0, 1e-3})
      for (double atol : {1e-8, 0.0, 1e-2})
        for (bool en : {false, true}) {
          auto va = values(ta), vb = values(tb);
          Tensor e = from_fn({11}, [&](int64_t i) {
            double x = va[size_t(i)], y = vb[size_t(i)];
            if (std::isnan(x) || std::isnan(y))
              return (en && std::isnan(x) && std::isnan(y)) ? 1.0 : 0.0;
            if (x == y)
              return 1.0;
            if (std::isinf(x) || std::isinf(y))
              return 0.0;
            return std::fabs(x - y) <= atol + rtol * std::fabs(y) ? 1.0 : 0.0;
          });
          Tensor got = isclose(ta, tb, rtol, atol, en);
          EXPECT_EQ(got.dtype(), kBool);
          EXPECT_TRUE(same(got, e)) << dt << " " << rtol << " " << atol;
        }
  }
}

TEST(IsClose, IntegersBoolAndBroadcast) {
  Tensor a = tensor({100, 101, 110});
  Tensor b = tensor({100});
  EXPECT_TRUE(
      same(isclose(a, b, 0.01, 0.0), tensor({true, true, false}).to(kDouble)));
  EXPECT_TRUE(same(isclose(a, b), tensor({true, false, false}).to(kDouble)));
  EXPECT_TRUE(same(isclose(a.to(kInt), b.to(kInt), 0.0, 1.0),
                   tensor({true, true, false}).to(kDouble)));
  EXPECT_TRUE(same(isclose(tensor({true, false}), tensor({true, true})),
                   tensor({1.0, 0.0})));
  Tensor m = noncontiguous(random({3, 4}));
  EXPECT_TRUE(allclose(m, m.clone()));
  EXPECT_TRUE(allclose(m, m + 1e-7));
  EXPECT_FALSE(allclose(m, m + 1e-3));
  EXPECT_TRUE(allclose(m, m + 1e-3, 0.0, 2e-3));
  EXPECT_TRUE(m.allclose(m.select(0, 0).expand({3, 4}) * 0 + m));
  EXPECT_TRUE(allclose(empty({0}), empty({0})));
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(allclose(tensor({nan}), tensor({nan})));
  EXPECT_TRUE(allclose(tensor({nan}), tensor({nan}), 1e-5, 1e-8, true));
}

TEST(IsClose, Errors) {
  EXPECT_EMBER_ERROR(isclose(random({2}), random({2}, kDouble)),
                     "did not match");
  EXPECT_EMBER_ERROR(isclose(random({2}), random({2}), -1.0),
                     "rtol must be greater than or equal to zero");
  EXPECT_EMBER_ERROR(allclose(random({2}), random({2}), 1e-5, -1.0),
                     "atol must be greater than or equal to zero");
  EXPECT_EMBER_ERROR(isclose(random({2}), random({3})), "");
}

TEST(Equal, Semantics) {
  for (ScalarType dt : kAllTypes) {
    Tensor x = random({3, 4}, dt, 29);
    Tensor nc = noncontiguous(x);
    EXPECT_TRUE(equal(x, nc)) << dt;
    EXPECT_TRUE(x.equal(x));
    EXPECT_FALSE(equal(x, x.reshape({4, 3}))) << dt;
    Tensor y = x.clone();
    y.select(0, 1).select(0, 2).fill_(
        dt == kBool ? Scalar(!x[1][2].item<bool>()) : Scalar(42));
    EXPECT_FALSE(equal(x, y)) << dt;
  }
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(equal(tensor({nan}), tensor({nan})));
  EXPECT_TRUE(equal(tensor({-0.0}), tensor({0.0})));
  EXPECT_TRUE(equal(empty({0, 2}), empty({0, 2})));
  EXPECT_TRUE(equal(scalar_tensor(1.0), scalar_tensor(1.0)));
  EXPECT_EMBER_ERROR(equal(random({2}), random({2}, kDouble)),
                     "Expected object of scalar type");
}

// --- large inputs: radix sort, parallel paths, thread-count independence -----

TEST(Sort, LongSlicesAllDtypes) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : kAllTypes) {
    Tensor x = random({3, 300}, dt, 37);
    if (isFloatingType(dt)) { // NaNs, signed zeros and infinities
      x.select(1, 5).fill_(nan);
      x.select(1, 77).fill_(-0.0);
      x.select(1, 78).fill_(0.0);
      x.select(1, 200).fill_(-std::numeric_limits<double>::infinity());
      x.select(1, 201).fill_(nan);
    }
    for (bool desc : {false, true}) {
      auto [v, i] = x.sort(1, desc);
      auto [ev, ei] = refSort(x, 1, desc);
      EXPECT_TRUE(same(v, ev)) << dt << " desc " << desc;
      EXPECT_TRUE(same(i, ei)) << dt << " desc " << desc;
      // Along dim 0 of the transpose: slices of 300 with stride 3.
      Tensor xt = x.t().contiguous();
      auto [vt, it] = xt.sort(0, desc);
      auto [evt, eit] = refSort(xt, 0, desc);
      EXPECT_TRUE(same(vt, evt)) << dt << " desc " << desc;
      EXPECT_TRUE(same(it, eit)) << dt << " desc " << desc;
    }
  }
}

TEST(Parallel, LargeInputsIndependentOfThreadCount) {
  Tensor x = random({300, 257}, kFloat, 43);
  auto run = [&]() {
    std::vector<Tensor> r;
    r.push_back(cat({x, x.narrow(1, 0, 100)}, 1));
    r.push_back(x.flip({0, 1}));
    r.push_back(x.tril(3));
    r.push_back(std::get<0>(x.sort(0)));
    r.push_back(std::get<1>(x.sort(1, true)));
    r.push_back(std::get<1>(x.topk(7, 0)));
    r.push_back(constant_pad_nd(x, {2, 3, -1, 4}, 1.5));
    return r;
  };
  expect_same_across_thread_counts(run);
  auto one = run();
  // And against the references.
  auto vx = values(x);
  EXPECT_TRUE(same(one[1], ref({300, 257}, [&](const Shape &c) {
                     return vx[size_t((299 - c[0]) * 257 + 256 - c[1])];
                   })));
  auto [ev, ei] = refSort(x, 0, false);
  EXPECT_TRUE(same(one[3], ev));
  auto [ev1, ei1] = refSort(x, 1, true);
  EXPECT_TRUE(same(one[4], ei1));
}

TEST(Shape, PadConstant) {
  Tensor x = arange(6, kFloat).view({2, 3});
  Tensor p = pad(x, {1, 2}, "constant", 9.0);
  EXPECT_EQ(p.sizes(), IntArrayRef({2, 6}));
  EXPECT_TRUE(close(p, tensor({{9.0, 0.0, 1.0, 2.0, 9.0, 9.0},
                               {9.0, 3.0, 4.0, 5.0, 9.0, 9.0}})));
  EXPECT_TRUE(close(pad(x, {0, 0, 1, 0}), constant_pad_nd(x, {0, 0, 1, 0})));
  // The other modes are nn::functional::pad's (test_toplevel compares them).
  EXPECT_TRUE(
      close(pad(x, {1, 1}, "reflect"),
            tensor({{1.0, 0.0, 1.0, 2.0, 1.0}, {4.0, 3.0, 4.0, 5.0, 4.0}})));
  EXPECT_EMBER_ERROR(pad(x, {1, 1}, "reflect", 0.0),
                     "Padding mode \"reflect\" doesn't take in value argument");
  EXPECT_EMBER_ERROR(pad(x, {1, 1}, "wrap"), "Unsupported padding mode: wrap");
}
