// Reductions (sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std,
// norm, logsumexp, all/any), scans (cumsum, cumprod) and softmax /
// log_softmax, each against a float64 reference computed by naive loops.
#include "TestUtil.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

using namespace ember;
using namespace ember::test;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Fold = std::function<double(const std::vector<double> &)>;

std::vector<int64_t> shape_of(const Tensor &t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

/// Reference reduction: for each output (row-major over the kept dims), the
/// elements of `t` over the reduced dims in row-major order, folded by `f`.
/// `dims` empty means every dim.
Tensor ref_reduce(const Tensor &t, std::vector<int64_t> dims, bool keepdim,
                  const Fold &f) {
  std::vector<double> v = values(t);
  std::vector<int64_t> size = shape_of(t);
  int64_t nd = int64_t(size.size());
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims)
    if (nd > 0)
      red[size_t((d % nd + nd) % nd)] = true;
  std::vector<int64_t> out_shape, kept, reduced, stride(size_t(nd), 1);
  for (int64_t d = nd - 2; d >= 0; --d)
    stride[size_t(d)] = stride[size_t(d + 1)] * size[size_t(d + 1)];
  int64_t nred = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (red[size_t(d)]) {
      reduced.push_back(d);
      nred *= size[size_t(d)];
      if (keepdim)
        out_shape.push_back(1);
    } else {
      kept.push_back(d);
      out_shape.push_back(size[size_t(d)]);
    }
  }
  return from_fn(out_shape, [&](int64_t o) {
    int64_t base = 0;
    for (int64_t k = int64_t(kept.size()) - 1; k >= 0; --k) {
      int64_t d = kept[size_t(k)];
      base += (o % size[size_t(d)]) * stride[size_t(d)];
      o /= size[size_t(d)];
    }
    std::vector<double> xs;
    for (int64_t r = 0; r < nred; ++r) {
      int64_t off = base, rr = r;
      for (int64_t k = int64_t(reduced.size()) - 1; k >= 0; --k) {
        int64_t d = reduced[size_t(k)];
        off += (rr % size[size_t(d)]) * stride[size_t(d)];
        rr /= size[size_t(d)];
      }
      xs.push_back(v[size_t(off)]);
    }
    return f(xs);
  });
}

double f_sum(const std::vector<double> &x) {
  double s = 0;
  for (double v : x)
    s += v;
  return s;
}
double f_prod(const std::vector<double> &x) {
  double s = 1;
  for (double v : x)
    s *= v;
  return s;
}
double f_mean(const std::vector<double> &x) {
  return f_sum(x) / double(x.size());
}
double f_max(const std::vector<double> &x) {
  double m = -kInf;
  for (double v : x) {
    if (std::isnan(v))
      return v;
    m = std::max(m, v);
  }
  return m;
}
double f_min(const std::vector<double> &x) {
  double m = kInf;
  for (double v : x) {
    if (std::isnan(v))
      return v;
    m = std::min(m, v);
  }
  return m;
}
double f_argmax(const std::vector<double> &x) {
  size_t best = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]))
      return double(i);
    if (x[i] > x[best])
      best = i;
  }
  return double(best);
}
double f_argmin(const std::vector<double> &x) {
  size_t best = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]))
      return double(i);
    if (x[i] < x[best])
      best = i;
  }
  return double(best);
}
Fold f_var(double correction) {
  return [correction](const std::vector<double> &x) {
    double m = f_mean(x), s = 0;
    for (double v : x)
      s += (v - m) * (v - m);
    return s / std::max(0.0, double(x.size()) - correction);
  };
}
Fold f_norm(double p) {
  return [p](const std::vector<double> &x) {
    if (std::isinf(p)) {
      double m = p > 0 ? 0 : kInf;
      for (double v : x)
        m = p > 0 ? std::max(m, std::fabs(v)) : std::min(m, std::fabs(v));
      return m;
    }
    double s = 0;
    for (double v : x)
      s += p == 0 ? (v != 0) : std::pow(std::fabs(v), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  };
}
double f_logsumexp(const std::vector<double> &x) {
  double s = 0;
  for (double v : x)
    s += std::exp(v);
  return std::log(s);
}
double f_all(const std::vector<double> &x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return v != 0; });
}
double f_any(const std::vector<double> &x) {
  return std::any_of(x.begin(), x.end(), [](double v) { return v != 0; });
}

/// A float64 reference along `dim` for ops that keep the shape: f maps the
/// elements of one line (in order) to the outputs of that line.
Tensor ref_along(
    const Tensor &t, int64_t dim,
    const std::function<std::vector<double>(const std::vector<double> &)> &f) {
  std::vector<double> v = values(t);
  std::vector<int64_t> size = shape_of(t);
  if (size.empty())
    return from_fn({}, [&](int64_t) { return f(v)[0]; });
  int64_t nd = int64_t(size.size());
  dim = (dim % nd + nd) % nd;
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d)
    inner *= size[size_t(d)];
  int64_t n = size[size_t(dim)];
  std::vector<double> out(v.size());
  for (size_t start = 0; start < v.size(); ++start) {
    if ((int64_t(start) / inner) % n != 0)
      continue; // not the first element of its line
    std::vector<double> line;
    for (int64_t k = 0; k < n; ++k)
      line.push_back(v[start + size_t(k * inner)]);
    std::vector<double> r = f(line);
    for (int64_t k = 0; k < n; ++k)
      out[start + size_t(k * inner)] = r[size_t(k)];
  }
  return from_fn(size, [&](int64_t i) { return out[size_t(i)]; });
}

std::vector<double> f_cumsum(const std::vector<double> &x) {
  std::vector<double> r(x.size());
  std::partial_sum(x.begin(), x.end(), r.begin());
  return r;
}
std::vector<double> f_cumprod(const std::vector<double> &x) {
  std::vector<double> r(x.size());
  std::partial_sum(x.begin(), x.end(), r.begin(), std::multiplies<double>());
  return r;
}
std::vector<double> f_softmax(const std::vector<double> &x) {
  double m = -kInf, s = 0;
  for (double v : x)
    m = std::max(m, v);
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    s += (r[i] = std::exp(x[i] - m));
  for (double &v : r)
    v /= s;
  return r;
}
std::vector<double> f_log_softmax(const std::vector<double> &x) {
  double m = -kInf, s = 0;
  for (double v : x)
    m = std::max(m, v);
  for (double v : x)
    s += std::exp(v - m);
  std::vector<double> r(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    r[i] = x[i] - m - std::log(s);
  return r;
}

/// Shapes and dim lists that exercise every layout: rows, columns, a middle
/// block, several blocks (copied), all dims, 0-dim.
struct Case {
  std::vector<int64_t> shape;
  std::vector<int64_t> dims;
};
std::vector<Case> cases() {
  return {
      {{3, 4, 5}, {2}},
      {{3, 4, 5}, {-1}},
      {{3, 4, 5}, {0}},
      {{3, 4, 5}, {1}},
      {{3, 4, 5}, {0, 2}},
      {{3, 4, 5}, {2, 0}},
      {{3, 4, 5}, {1, 2}},
      {{3, 4, 5}, {}},
      {{3, 4, 5}, {0, 1, 2}},
      {{2, 1, 3, 4}, {1}},
      {{2, 1, 3, 4}, {0, 3}},
      {{7}, {0}},
      {{300, 2}, {0}},
      {{5, 600}, {1}},
      {{2, 300, 3}, {1}},
      {{}, {}},
      {{}, {0}},
      {{}, {-1}},
  };
}

/// `t` in the layouts the kernels tell apart: contiguous, non-contiguous
/// (strided), transposed.
std::vector<Tensor> layouts(const Tensor &t) {
  std::vector<Tensor> r{t, noncontiguous(t)};
  if (t.dim() >= 2)
    r.push_back(
        t.transpose(0, t.dim() - 1).contiguous().transpose(0, t.dim() - 1));
  return r;
}

std::string describe(const Case &c, bool keepdim) {
  std::ostringstream os;
  os << "shape " << IntArrayRef(c.shape) << " dims " << IntArrayRef(c.dims)
     << " keepdim " << keepdim;
  return os.str();
}

} // namespace

// --- sum, mean, prod --------------------------------------------------------

TEST(Reduce, SumFloatAllLayouts) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 1))) {
        SCOPED_TRACE(describe(c, keepdim));
        Tensor r = x.sum(c.dims, keepdim);
        EXPECT_EQ(r.dtype(), kFloat);
        EXPECT_TRUE(close(r, ref_reduce(x, c.dims, keepdim, f_sum)));
      }
}

TEST(Reduce, SumDtypes) {
  for (ScalarType t : {kDouble, kLong, kInt, kByte, kBool}) {
    Tensor x = random({4, 6}, t, 2);
    Tensor r = x.sum(1);
    EXPECT_EQ(r.dtype(), t == kDouble ? kDouble : kLong) << t;
    EXPECT_TRUE(close(r, ref_reduce(x, {1}, false, f_sum), 0, 0)) << t;
    EXPECT_TRUE(close(x.sum(), ref_reduce(x, {}, false, f_sum), 0, 0)) << t;
  }
  for (ScalarType t : {kHalf, kBFloat16}) {
    Tensor x = random({5, 70}, t, 3);
    for (int64_t d : {0, 1}) {
      Tensor r = x.sum(d);
      EXPECT_EQ(r.dtype(), t);
      EXPECT_TRUE(close(r, ref_reduce(x, {d}, false, f_sum), 1e-2, 5e-2));
    }
  }
  // dtype= converts before summing.
  Tensor i = random({3, 4}, kInt, 4);
  EXPECT_EQ(i.sum(1, false, kDouble).dtype(), kDouble);
  EXPECT_EQ(i.sum(kInt).dtype(), kInt);
  EXPECT_TRUE(close(i.sum(kInt), ref_reduce(i, {}, false, f_sum), 0, 0));
  Tensor f = random({3, 4}, kFloat, 5);
  EXPECT_EQ(ember::sum(f, kDouble).dtype(), kDouble);
  EXPECT_TRUE(close(f.sum(0, true, kDouble), ref_reduce(f, {0}, true, f_sum),
                    1e-12, 1e-12));
}

TEST(Reduce, SumLargeSplitPaths) {
  // Few outputs with many elements each: split along N (rows and columns),
  // and many outputs in parallel.
  for (auto shape : std::vector<std::vector<int64_t>>{
           {3, 100000}, {100000, 3}, {1, 70000, 2}, {400, 300}}) {
    Tensor x = random(shape, kFloat, 6);
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      EXPECT_TRUE(
          close(x.sum(d), ref_reduce(x, {d}, false, f_sum), 1e-5, 1e-3));
    EXPECT_TRUE(close(x.sum(), ref_reduce(x, {}, false, f_sum), 1e-6, 1e-2));
  }
  // Accumulation in double: 2^24 + many ones is exact.
  Tensor ones_ = ones({1 << 20}, kFloat);
  EXPECT_EQ(ones_.sum().item<double>(), double(1 << 20));
}

// Note [Float16 sums in blocks]: float16 rows converted in blocks sum as
// the float64 copy does (the same lanes, order and double accumulator),
// bitwise, over lengths around the lanes (32) and blocks (256), split
// rows, and sum/mean of a dim or of everything.
TEST(Reduce, Float16SumsMatchTheirFloat64Copies) {
  uint64_t seed = 900;
  for (int64_t n :
       {1, 63, 64, 65, 95, 255, 256, 257, 288, 1000, 40000, 70001}) {
    Tensor x = (random({3, n}, kFloat, seed++) * 4).to(kHalf);
    Tensor d = x.to(kDouble);
    std::vector<std::pair<Tensor, Tensor>> cases = {
        {x.sum(), d.sum().to(kHalf)},
        {x.sum(1), d.sum(1).to(kHalf)},
        {x.mean(1), d.mean(1).to(kHalf)},
        {x.mean(), d.mean().to(kHalf)},
        {x.sum(1, false, kFloat), d.sum(1).to(kFloat)}};
    for (size_t k = 0; k < cases.size(); ++k) {
      const Tensor a = cases[k].first.contiguous(),
                   b = cases[k].second.contiguous();
      EXPECT_TRUE(a.dtype() == b.dtype() &&
                  std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0)
          << "n " << n << ", case " << k << ": " << a << " vs " << b;
    }
  }
}

TEST(Reduce, SumDeterministicAcrossThreads) {
  Tensor x = random({5, 200000}, kFloat, 7);
  Tensor y = random({200000, 3}, kFloat, 8);
  int n = get_num_threads();
  set_num_threads(1);
  auto a = values(x.sum(1)), b = values(x.sum()), c = values(x.sum(0));
  auto d = values(y.sum(0)), e = values(y.var(0));
  set_num_threads(std::max(n, 3));
  EXPECT_EQ(a, values(x.sum(1)));
  EXPECT_EQ(b, values(x.sum()));
  EXPECT_EQ(c, values(x.sum(0)));
  EXPECT_EQ(d, values(y.sum(0)));
  EXPECT_EQ(e, values(y.var(0)));
  set_num_threads(n);
}

TEST(Reduce, SumEmptyAndIntegerWrap) {
  EXPECT_TRUE(close(zeros({0, 3}).sum(0), zeros({3})));
  EXPECT_EQ(zeros({0, 3}).sum(1).sizes(), IntArrayRef({0}));
  EXPECT_EQ(zeros({0}).sum().item<double>(), 0.0);
  EXPECT_EQ(zeros({2, 0}).sum(1, true).sizes(), IntArrayRef({2, 1}));
  // int64 sums wrap like two's complement (no UB).
  Tensor big = full({2}, std::numeric_limits<int64_t>::max(), kLong);
  EXPECT_EQ(big.sum().item<int64_t>(), -2);
}

TEST(Reduce, SumErrors) {
  Tensor x = random({2, 3});
  EXPECT_EMBER_ERROR(x.sum({0, 0}), "appears multiple times");
  EXPECT_EMBER_ERROR(x.sum({1, -1}), "appears multiple times");
  EXPECT_EMBER_ERROR(x.sum(2), "Dimension out of range");
  EXPECT_EMBER_ERROR(x.sum(-3), "Dimension out of range");
  EXPECT_EMBER_ERROR(random({}).sum(1), "Dimension out of range");
}

TEST(Reduce, Mean) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kDouble, 8))) {
        SCOPED_TRACE(describe(c, keepdim));
        EXPECT_TRUE(close(x.mean(c.dims, keepdim),
                          ref_reduce(x, c.dims, keepdim, f_mean), 1e-12,
                          1e-12));
      }
  Tensor h = random({6, 50}, kHalf, 9);
  EXPECT_EQ(h.mean(1).dtype(), kHalf);
  EXPECT_TRUE(close(h.mean(1), ref_reduce(h, {1}, false, f_mean), 1e-2, 1e-2));
  Tensor i = random({4, 5}, kLong, 10);
  EXPECT_EQ(i.mean(1, false, kFloat).dtype(), kFloat);
  EXPECT_TRUE(
      close(i.mean(1, false, kFloat), ref_reduce(i, {1}, false, f_mean)));
  EXPECT_TRUE(close(i.mean(kDouble), ref_reduce(i, {}, false, f_mean)));
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<double>()));
  EXPECT_TRUE(close(zeros({0, 2}).mean(0), full({2}, kNaN, kFloat)));
  EXPECT_EMBER_ERROR(i.mean(), "Input dtype must be either a floating point");
  EXPECT_EMBER_ERROR(i.mean(0), "Got: int64");
  EXPECT_EMBER_ERROR(random({3}, kBool).mean(), "could not infer output dtype");
  EXPECT_EMBER_ERROR(random({3}).mean(0, false, kLong),
                     "Optional dtype must be either a floating point");
}

TEST(Reduce, Prod) {
  for (const Case &c : cases()) {
    if (c.dims.size() > 1 || c.dims.empty())
      continue; // prod takes one dim
    for (bool keepdim : {false, true})
      for (const Tensor &x :
           layouts(random_positive(c.shape, kDouble, 0.5, 1.5, 11))) {
        SCOPED_TRACE(describe(c, keepdim));
        EXPECT_TRUE(close(x.prod(c.dims[0], keepdim),
                          ref_reduce(x, c.dims, keepdim, f_prod), 1e-12));
      }
  }
  Tensor i = random({3, 5}, kInt, 12);
  EXPECT_EQ(i.prod(1).dtype(), kLong);
  EXPECT_TRUE(close(i.prod(1), ref_reduce(i, {1}, false, f_prod), 0, 0));
  EXPECT_EQ(i.prod(kInt).dtype(), kInt);
  Tensor f = random_positive({4, 6}, kFloat, 0.5, 1.5, 13);
  EXPECT_TRUE(close(f.prod(), ref_reduce(f, {}, false, f_prod), 1e-5));
  EXPECT_TRUE(
      close(noncontiguous(f).prod(), ref_reduce(f, {}, false, f_prod), 1e-5));
  EXPECT_EQ(zeros({0}).prod().item<double>(), 1.0);
  EXPECT_TRUE(close(zeros({2, 0}).prod(1), ones({2})));
  EXPECT_EQ(random({}, kFloat, 3).prod().dim(), 0);
  EXPECT_EQ(random({3}, kBool, 4).prod().dtype(), kLong);
}

// --- max, min ---------------------------------------------------------------

TEST(Reduce, AmaxAmin) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 14))) {
        SCOPED_TRACE(describe(c, keepdim));
        EXPECT_TRUE(close(x.amax(c.dims, keepdim),
                          ref_reduce(x, c.dims, keepdim, f_max), 0, 0));
        EXPECT_TRUE(close(x.amin(c.dims, keepdim),
                          ref_reduce(x, c.dims, keepdim, f_min), 0, 0));
      }
  for (ScalarType t : {kLong, kInt, kByte, kBool, kHalf, kBFloat16}) {
    Tensor x = random({4, 9}, t, 15);
    EXPECT_EQ(x.amax(1).dtype(), t);
    EXPECT_TRUE(close(x.amax(1), ref_reduce(x, {1}, false, f_max), 0, 0));
    EXPECT_TRUE(close(x.amin({0}), ref_reduce(x, {0}, false, f_min), 0, 0));
    EXPECT_TRUE(close(x.max(), ref_reduce(x, {}, false, f_max), 0, 0));
    EXPECT_TRUE(close(x.min(), ref_reduce(x, {}, false, f_min), 0, 0));
  }
  // Extremes of integer types are not confused with an identity.
  Tensor lo = full({3}, std::numeric_limits<int64_t>::lowest(), kLong);
  EXPECT_EQ(lo.max().item<int64_t>(), std::numeric_limits<int64_t>::lowest());
}

TEST(Reduce, MaxMinNaNPropagates) {
  Tensor x = tensor({{1.0, kNaN, 3.0}, {-kInf, 2.0, 5.0}}, kFloat);
  EXPECT_TRUE(std::isnan(x.max().item<double>()));
  EXPECT_TRUE(std::isnan(x.min().item<double>()));
  EXPECT_TRUE(close(x.amax(1), tensor({kNaN, 5.0})));
  EXPECT_TRUE(close(x.amin(1), tensor({kNaN, -kInf})));
  EXPECT_TRUE(close(x.amax(0), tensor({1.0, kNaN, 5.0})));
  auto [v, i] = x.max(1);
  EXPECT_TRUE(close(v, tensor({kNaN, 5.0})));
  EXPECT_TRUE(close(i, tensor({1, 2}), 0, 0));
  auto [vn, in] = x.min(1);
  EXPECT_TRUE(close(vn, tensor({kNaN, -kInf})));
  EXPECT_TRUE(close(in, tensor({1, 0}), 0, 0));
  // A NaN wins even after a larger value, and in a long (vectorized) row.
  std::vector<double> rv = values(random({1, 1000}, kFloat, 16));
  rv[700] = rv[900] = kNaN;
  Tensor row =
      from_fn({1, 1000}, [&](int64_t i) { return rv[size_t(i)]; }).to(kFloat);
  EXPECT_TRUE(std::isnan(row.amax(1).item<double>()));
  EXPECT_EQ(row.argmax(1).item<int64_t>(), 700);
  EXPECT_EQ(row.argmin().item<int64_t>(), 700);
}

TEST(Reduce, MaxMinDimValuesAndIndices) {
  for (const Case &c : cases()) {
    if (c.dims.size() != 1)
      continue;
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 17))) {
        SCOPED_TRACE(describe(c, keepdim));
        auto [v, i] = x.max(c.dims[0], keepdim);
        EXPECT_EQ(i.dtype(), kLong);
        EXPECT_TRUE(close(v, ref_reduce(x, c.dims, keepdim, f_max), 0, 0));
        EXPECT_TRUE(close(i, ref_reduce(x, c.dims, keepdim, f_argmax), 0, 0));
        auto [vm, im] = ember::min(x, c.dims[0], keepdim);
        EXPECT_TRUE(close(vm, ref_reduce(x, c.dims, keepdim, f_min), 0, 0));
        EXPECT_TRUE(close(im, ref_reduce(x, c.dims, keepdim, f_argmin), 0, 0));
      }
  }
  for (ScalarType t : {kLong, kInt, kBool, kHalf, kDouble}) {
    Tensor x = random({5, 40}, t, 18);
    auto [v, i] = x.max(1);
    EXPECT_EQ(v.dtype(), t);
    EXPECT_TRUE(close(v, ref_reduce(x, {1}, false, f_max), 0, 0)) << t;
    EXPECT_TRUE(close(i, ref_reduce(x, {1}, false, f_argmax), 0, 0)) << t;
    auto [v0, i0] = x.min(0);
    EXPECT_TRUE(close(v0, ref_reduce(x, {0}, false, f_min), 0, 0)) << t;
    EXPECT_TRUE(close(i0, ref_reduce(x, {0}, false, f_argmin), 0, 0)) << t;
  }
}

TEST(Reduce, ArgmaxArgmin) {
  // Ties: the first index, in long rows (lanes) and columns.
  Tensor ties = from_fn({3, 1000}, [](int64_t i) {
                  return i == 5 || i == 13 ? 7.0 : i == 2999 ? -1.0 : 0.0;
                }).to(kInt);
  EXPECT_TRUE(close(ties.argmax(1), tensor({5, 0, 0}), 0, 0));
  EXPECT_TRUE(close(ties.argmin(1), tensor({0, 0, 999}), 0, 0));
  EXPECT_TRUE(close(ties.t().contiguous().argmax(0), tensor({5, 0, 0}), 0, 0));
  EXPECT_EQ(ties.argmax().item<int64_t>(), 5);
  EXPECT_EQ(ties.argmin().item<int64_t>(), 2999);
  // dim=None: the index into the flattened (row-major) input.
  for (const Tensor &x : layouts(random({4, 7, 3}, kFloat, 19))) {
    EXPECT_TRUE(close(x.argmax(), ref_reduce(x, {}, false, f_argmax), 0, 0));
    EXPECT_TRUE(close(x.argmin(), ref_reduce(x, {}, false, f_argmin), 0, 0));
    EXPECT_EQ(x.argmax(std::nullopt, true).sizes(), IntArrayRef({1, 1, 1}));
    for (int64_t d : {0, 1, 2, -1})
      for (bool keepdim : {false, true})
        EXPECT_TRUE(close(x.argmax(d, keepdim),
                          ref_reduce(x, {d}, keepdim, f_argmax), 0, 0));
  }
  Tensor s = random({}, kFloat, 20);
  EXPECT_EQ(s.argmax().item<int64_t>(), 0);
  EXPECT_EQ(s.argmax(0).dim(), 0);
  Tensor big = random({100000}, kFloat, 21);
  EXPECT_TRUE(close(big.argmax(), ref_reduce(big, {}, false, f_argmax), 0, 0));
  // Ties across chunks of a long column: the first index wins.
  Tensor tall = from_fn({100000, 3}, [](int64_t i) {
                  return double((i / 3) % 50000 == 7 ? 9 : i % 7);
                }).to(kFloat);
  EXPECT_TRUE(close(tall.argmax(0), tensor({7, 7, 7}), 0, 0));
  EXPECT_TRUE(close(std::get<1>(tall.min(0)),
                    ref_reduce(tall, {0}, false, f_argmin), 0, 0));
  EXPECT_EMBER_ERROR(random({3}, kBool).argmax(), "not implemented");
}

TEST(Reduce, MaxMinEmptyErrors) {
  Tensor e = zeros({0});
  EXPECT_EMBER_ERROR(e.max(),
                     "because the operation does not have an identity");
  EXPECT_EMBER_ERROR(e.min(), "Specify the reduction dim");
  EXPECT_EMBER_ERROR(e.argmax(), "input.numel() == 0");
  EXPECT_EMBER_ERROR(e.amax(), "does not have an identity");
  Tensor e2 = zeros({2, 0});
  EXPECT_EMBER_ERROR(e2.max(1),
                     "Expected reduction dim 1 to have non-zero size");
  EXPECT_EMBER_ERROR(e2.argmin(-1), "Expected reduction dim 1");
  EXPECT_EMBER_ERROR(e2.amin({0, 1}), "does not have an identity");
  try {
    e2.max(1);
  } catch (const IndexError &) {
  } catch (...) {
    ADD_FAILURE() << "expected IndexError";
  }
  // Reducing a non-empty dim of an empty tensor is fine.
  auto [v, i] = e2.max(0);
  EXPECT_EQ(v.sizes(), IntArrayRef({0}));
  EXPECT_EQ(i.sizes(), IntArrayRef({0}));
  EXPECT_EQ(e2.amax({0}, true).sizes(), IntArrayRef({1, 0}));
  EXPECT_EMBER_ERROR(random({2, 3}).max(2), "Dimension out of range");
  EXPECT_EMBER_ERROR(random({2, 3}).amax({0, -2}), "appears multiple times");
}

// --- var, std ---------------------------------------------------------------

TEST(Reduce, VarStd) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 22))) {
        SCOPED_TRACE(describe(c, keepdim));
        for (double corr : {0.0, 1.0, 2.5}) {
          Tensor ref = ref_reduce(x, c.dims, keepdim, f_var(corr));
          EXPECT_TRUE(close(x.var(c.dims, corr, keepdim), ref, 1e-5, 1e-6));
          EXPECT_TRUE(close(x.std(c.dims, corr, keepdim), ember::sqrt(ref),
                            1e-5, 1e-6));
        }
      }
  // Default correction = 1, default dims = all.
  Tensor x = random({6, 9}, kDouble, 23);
  EXPECT_TRUE(close(x.var(), ref_reduce(x, {}, false, f_var(1)), 1e-12));
  EXPECT_TRUE(
      close(x.std(1), ember::sqrt(ref_reduce(x, {1}, false, f_var(1))), 1e-12));
  // Two passes: no cancellation with a large mean.
  Tensor shifted = random({4, 1000}, kFloat, 24) + 1e4;
  EXPECT_TRUE(
      close(shifted.var(1), ref_reduce(shifted, {1}, false, f_var(1)), 1e-5));
  Tensor big = random({3, 100000}, kFloat, 25);
  EXPECT_TRUE(close(big.var(1), ref_reduce(big, {1}, false, f_var(1)), 1e-5));
  EXPECT_TRUE(close(big.var(0), ref_reduce(big, {0}, false, f_var(1)), 1e-5));
  Tensor tall = random({100000, 3}, kFloat, 46) + 10;
  EXPECT_TRUE(close(tall.var(0), ref_reduce(tall, {0}, false, f_var(1)), 1e-5));
  EXPECT_TRUE(close(tall.var(), ref_reduce(tall, {}, false, f_var(1)), 1e-5));
  Tensor h = random({4, 30}, kBFloat16, 26);
  EXPECT_EQ(h.var(1).dtype(), kBFloat16);
  EXPECT_TRUE(close(h.var(1), ref_reduce(h, {1}, false, f_var(1)), 2e-2));
}

TEST(Reduce, VarEdgeCases) {
  // correction >= N: divide by 0 (inf), or 0/0 (nan) for one element.
  Tensor x = tensor({1.0, 2.0, 4.0}, kFloat);
  EXPECT_EQ(x.var(std::nullopt, 3).item<double>(), kInf);
  EXPECT_EQ(x.var(std::nullopt, 5).item<double>(), kInf);
  EXPECT_TRUE(std::isnan(tensor({1.0}).var().item<double>()));
  EXPECT_EQ(tensor({1.0}).var(std::nullopt, 0).item<double>(), 0.0);
  EXPECT_TRUE(std::isnan(zeros({0}).var().item<double>()));
  EXPECT_TRUE(std::isnan(random({}).var().item<double>()));
  EXPECT_EQ(random({}).var(std::nullopt, 0).item<double>(), 0.0);
  EXPECT_TRUE(close(zeros({0, 3}).var(0), full({3}, kNaN, kFloat)));
  EXPECT_TRUE(std::isnan(tensor({1.0, kNaN}).var().item<double>()));
  EXPECT_EMBER_ERROR(random({3}, kLong).var(),
                     "std and var only support floating point");
  EXPECT_EMBER_ERROR(random({3}, kInt).std(), "only support floating point");
  EXPECT_EMBER_ERROR(random({2, 3}).var({1, 1}), "appears multiple times");
}

// --- norm -------------------------------------------------------------------

TEST(Reduce, Norm) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 27))) {
        SCOPED_TRACE(describe(c, keepdim));
        for (double p : {2.0, 1.0, 0.0, kInf, -kInf, 3.0, 0.5})
          EXPECT_TRUE(close(x.norm(p, c.dims, keepdim),
                            ref_reduce(x, c.dims, keepdim, f_norm(p)), 1e-5,
                            1e-6))
              << "p = " << p;
      }
  Tensor x = random({5, 8}, kDouble, 28);
  EXPECT_TRUE(close(x.norm(), ref_reduce(x, {}, false, f_norm(2)), 1e-12));
  EXPECT_TRUE(close(x.norm(1), ref_reduce(x, {}, false, f_norm(1)), 1e-12));
  EXPECT_TRUE(close(x.norm(std::nullopt, {1}),
                    ref_reduce(x, {1}, false, f_norm(2)), 1e-12));
  Tensor h = random({3, 50}, kHalf, 29);
  EXPECT_EQ(h.norm().dtype(), kHalf);
  EXPECT_TRUE(
      close(h.norm(2, {1}), ref_reduce(h, {1}, false, f_norm(2)), 1e-2));
  // Zeros count as zeros for p = 0; NaN propagates through inf norms.
  Tensor z = tensor({0.0, 1.5, 0.0, -2.0});
  EXPECT_EQ(z.norm(0).item<double>(), 2.0);
  EXPECT_TRUE(std::isnan(tensor({1.0, kNaN}).norm(kInf).item<double>()));
  EXPECT_TRUE(std::isnan(tensor({1.0, kNaN}).norm(-kInf).item<double>()));
  // Empty: p >= 0 reduces to 0; inf and negative p have no identity.
  EXPECT_EQ(zeros({0}).norm().item<double>(), 0.0);
  EXPECT_TRUE(close(zeros({0, 2}).norm(1, {0}), zeros({2})));
  EXPECT_EQ(zeros({0, 2}).norm(kInf, {1}).sizes(), IntArrayRef({0}));
  EXPECT_EMBER_ERROR(zeros({0}).norm(kInf), "does not have an identity");
  EXPECT_EMBER_ERROR(zeros({0, 2}).norm(kInf, {0}),
                     "does not have an identity");
  EXPECT_EMBER_ERROR(zeros({0}).norm(-1), "negative order");
  EXPECT_EMBER_ERROR(random({3}, kLong).norm(), "floating point");
}

// --- logsumexp --------------------------------------------------------------

TEST(Reduce, Logsumexp) {
  for (const Case &c : cases())
    for (bool keepdim : {false, true})
      for (const Tensor &x : layouts(random(c.shape, kFloat, 30))) {
        SCOPED_TRACE(describe(c, keepdim));
        EXPECT_TRUE(close(x.logsumexp(c.dims, keepdim),
                          ref_reduce(x, c.dims, keepdim, f_logsumexp), 1e-5,
                          1e-6));
      }
  // Stable for large values (naive exp overflows float).
  Tensor big = random({3, 50}, kFloat, 31) * 10 + 1000;
  Tensor ref = ref_reduce(big - 1000, {1}, false, f_logsumexp) + 1000;
  EXPECT_TRUE(close(big.logsumexp({1}), ref, 1e-6));
  // Long rows and columns (split into chunks along the reduced dim).
  Tensor wide = random({2, 100000}, kFloat, 47) * 5;
  EXPECT_TRUE(close(wide.logsumexp({1}),
                    ref_reduce(wide, {1}, false, f_logsumexp), 1e-5));
  EXPECT_TRUE(close(wide.t().contiguous().logsumexp({0}),
                    ref_reduce(wide, {1}, false, f_logsumexp), 1e-5));
  Tensor t = tensor({{-kInf, -kInf}, {kInf, 1.0}, {kNaN, 1.0}, {-kInf, 0.0}});
  EXPECT_TRUE(close(t.logsumexp({1}), tensor({-kInf, kInf, kNaN, 0.0})));
  // Integers compute in the default float dtype.
  Tensor i = random({4, 5}, kLong, 32);
  EXPECT_EQ(i.logsumexp({1}).dtype(), kFloat);
  EXPECT_TRUE(close(i.logsumexp({1}), ref_reduce(i, {1}, false, f_logsumexp)));
  EXPECT_EQ(random({3}, kBool).logsumexp({0}).dtype(), kFloat);
  Tensor h = random({2, 40}, kHalf, 33);
  EXPECT_EQ(h.logsumexp({1}).dtype(), kHalf);
  EXPECT_TRUE(
      close(h.logsumexp({1}), ref_reduce(h, {1}, false, f_logsumexp), 1e-2));
  EXPECT_EQ(zeros({0}).logsumexp({0}).item<double>(), -kInf);
  EXPECT_TRUE(close(zeros({2, 0}).logsumexp({1}), full({2}, -kInf, kFloat)));
  EXPECT_EMBER_ERROR(random({2}).logsumexp({1}), "Dimension out of range");
}

// --- all, any ---------------------------------------------------------------

TEST(Reduce, AllAny) {
  for (ScalarType t : {kBool, kFloat, kLong, kInt, kHalf, kByte}) {
    Tensor x = random({4, 5, 3}, t, 34);
    ScalarType out_t = t == kByte ? kByte : kBool;
    for (int64_t d : {0, 1, 2, -1})
      for (bool keepdim : {false, true})
        for (const Tensor &xx : layouts(x)) {
          Tensor a = xx.all(d, keepdim), o = xx.any(d, keepdim);
          EXPECT_EQ(a.dtype(), out_t);
          EXPECT_EQ(o.dtype(), out_t);
          EXPECT_TRUE(close(a, ref_reduce(xx, {d}, keepdim, f_all), 0, 0));
          EXPECT_TRUE(close(o, ref_reduce(xx, {d}, keepdim, f_any), 0, 0));
        }
    EXPECT_TRUE(close(x.all(), ref_reduce(x, {}, false, f_all), 0, 0));
    EXPECT_TRUE(close(x.any(), ref_reduce(x, {}, false, f_any), 0, 0));
  }
  EXPECT_TRUE(ones({3, 4}).all().item<bool>());
  EXPECT_FALSE(zeros({3, 4}).any().item<bool>());
  EXPECT_TRUE(tensor({0.0, kNaN}).any().item<bool>()); // NaN is nonzero
  EXPECT_TRUE(zeros({0}).all().item<bool>());
  EXPECT_FALSE(zeros({0}).any().item<bool>());
  EXPECT_TRUE(close(zeros({2, 0}).all(1), ones({2}, kBool), 0, 0));
  EXPECT_EQ(random({}, kFloat).all().dim(), 0);
  EXPECT_EMBER_ERROR(random({2}).all(1), "Dimension out of range");
}

// --- cumsum, cumprod --------------------------------------------------------

TEST(Reduce, CumsumCumprod) {
  for (auto shape : std::vector<std::vector<int64_t>>{
           {3, 4, 5}, {7}, {2, 300}, {300, 3}, {}}) {
    for (const Tensor &x : layouts(random(shape, kDouble, 35))) {
      int64_t nd = std::max<int64_t>(1, x.dim());
      for (int64_t d = -nd; d < nd; ++d) {
        EXPECT_TRUE(
            close(x.cumsum(d), ref_along(x, d, f_cumsum), 1e-12, 1e-12));
        Tensor p = random_positive(shape, kDouble, 0.5, 1.5, 36);
        EXPECT_TRUE(close(ember::cumprod(p, d), ref_along(p, d, f_cumprod),
                          1e-12, 1e-12));
      }
    }
  }
  Tensor f = random({4, 33}, kFloat, 37);
  EXPECT_EQ(f.cumsum(1).dtype(), kFloat);
  EXPECT_TRUE(close(f.cumsum(1), ref_along(f, 1, f_cumsum), 1e-5, 1e-5));
  for (ScalarType t : {kInt, kBool, kByte}) {
    Tensor i = random({3, 6}, t, 38);
    EXPECT_EQ(i.cumsum(1).dtype(), kLong);
    EXPECT_TRUE(close(i.cumsum(1), ref_along(i, 1, f_cumsum), 0, 0));
    EXPECT_EQ(ember::cumprod(i, 0).dtype(), kLong);
    EXPECT_TRUE(close(ember::cumprod(i, 0), ref_along(i, 0, f_cumprod), 0, 0));
  }
  Tensor i = random({3, 6}, kInt, 39);
  EXPECT_EQ(i.cumsum(0, kInt).dtype(), kInt);
  EXPECT_EQ(i.cumsum(0, kDouble).dtype(), kDouble);
  Tensor h = random({2, 20}, kHalf, 40);
  EXPECT_EQ(h.cumsum(1).dtype(), kHalf);
  EXPECT_TRUE(close(h.cumsum(1), ref_along(h, 1, f_cumsum), 1e-2, 1e-2));
  EXPECT_EQ(zeros({0, 3}).cumsum(0).sizes(), IntArrayRef({0, 3}));
  EXPECT_EQ(random({}).cumsum(0).dim(), 0);
  EXPECT_EMBER_ERROR(random({2, 3}).cumsum(2), "Dimension out of range");
  EXPECT_EMBER_ERROR(random({}).cumsum(1), "Dimension out of range");
}

// --- softmax, log_softmax ---------------------------------------------------

TEST(Reduce, SoftmaxLogSoftmax) {
  for (auto shape : std::vector<std::vector<int64_t>>{
           {3, 4, 5}, {7}, {2, 300}, {300, 3}, {2, 3, 600}, {}}) {
    for (const Tensor &x : layouts(random(shape, kFloat, 41) * 3)) {
      int64_t nd = std::max<int64_t>(1, x.dim());
      for (int64_t d = -nd; d < nd; ++d) {
        Tensor s = x.softmax(d);
        EXPECT_EQ(s.dtype(), kFloat);
        EXPECT_TRUE(close(s, ref_along(x, d, f_softmax), 1e-5, 1e-7));
        EXPECT_TRUE(close(x.log_softmax(d), ref_along(x, d, f_log_softmax),
                          1e-5, 1e-5));
      }
    }
  }
  Tensor x = random({5, 17}, kDouble, 42);
  EXPECT_TRUE(close(x.softmax(1), ref_along(x, 1, f_softmax), 1e-12, 1e-14));
  EXPECT_TRUE(
      close(x.log_softmax(0), ref_along(x, 0, f_log_softmax), 1e-12, 1e-12));
  // Large values are stable; -inf entries get 0 (log: -inf); a NaN or a
  // row of -inf gives NaN.
  Tensor t = tensor({{1000.0, 1001.0, -kInf},
                     {-kInf, -kInf, -kInf},
                     {1.0, kNaN, 2.0},
                     {88.0, 89.0, 90.0}});
  Tensor ref = ref_along(t, 1, f_softmax);
  EXPECT_TRUE(close(t.softmax(1), ref, 1e-6, 1e-7));
  EXPECT_TRUE(close(t.log_softmax(1), ref_along(t, 1, f_log_softmax), 1e-6));
  EXPECT_TRUE(close(t.softmax(0), ref_along(t, 0, f_softmax), 1e-6, 1e-7));
  // Half / bfloat16 compute in float and keep their dtype; dtype= converts.
  Tensor h = random({3, 40}, kHalf, 43);
  EXPECT_EQ(h.softmax(1).dtype(), kHalf);
  EXPECT_TRUE(close(h.softmax(1), ref_along(h, 1, f_softmax), 1e-2, 1e-3));
  EXPECT_TRUE(
      close(h.log_softmax(0), ref_along(h, 0, f_log_softmax), 1e-2, 1e-2));
  EXPECT_EQ(h.softmax(1, kFloat).dtype(), kFloat);
  Tensor i = random({3, 4}, kLong, 44);
  EXPECT_EQ(i.softmax(1, kDouble).dtype(), kDouble);
  EXPECT_TRUE(close(i.softmax(1, kDouble), ref_along(i, 1, f_softmax), 1e-12));
  EXPECT_EQ(random({}).softmax(0).item<double>(), 1.0);
  EXPECT_EQ(zeros({0, 4}).softmax(1).sizes(), IntArrayRef({0, 4}));
  EXPECT_EQ(zeros({2, 0}).log_softmax(1).sizes(), IntArrayRef({2, 0}));
  EXPECT_EMBER_ERROR(i.softmax(1), "expected a floating point input");
  EXPECT_EMBER_ERROR(i.log_softmax(0), "int64");
  EXPECT_EMBER_ERROR(x.softmax(2), "Dimension out of range");
}

TEST(Reduce, SoftmaxLargeRows) {
  // Rows long enough for the parallel path; rows sum to one.
  Tensor x = random({64, 4096}, kFloat, 45) * 4;
  Tensor s = x.softmax(-1);
  EXPECT_TRUE(close(s.sum(1), ones({64}), 1e-5));
  EXPECT_TRUE(close(s.narrow(0, 0, 3),
                    ref_along(x.narrow(0, 0, 3), 1, f_softmax), 1e-5, 1e-8));
}
