// Compiled vs eager: reductions (dims, keepdim, dtypes), statistics,
// softmax family, scans, sort/topk/argmax, and the matmul family.
#include "E2EUtil.h"

using namespace ember;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::noncontiguous;
using ember::test::random;

TEST(E2EReductions, SumMeanProdDimsKeepdim) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(x.sum(), x.sum({0, 2}), x.sum({-1}, true),
                           x.mean({1}), x.mean({0, 1, 2}, true), x.prod(1),
                           x.prod(-1, true),
                           x.sum(std::nullopt, false, kDouble), x.mean(kDouble),
                           ember::sum(x.to(kLong), {1}), x.to(kInt).sum());
  };
  Tensor x = random({3, 4, 5}, kFloat, 30);
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
  auto r = compile(fn)(x);
  EXPECT_EQ(std::get<2>(r).sizes().vec(), std::vector<int64_t>({3, 4, 1}));
  EXPECT_EQ(std::get<4>(r).sizes().vec(), std::vector<int64_t>({1, 1, 1}));
  EXPECT_EQ(std::get<7>(r).dtype(), kDouble);
  EXPECT_EQ(std::get<10>(r).dtype(), kLong); // int sums widen to int64
}

TEST(E2EReductions, MaxMinAmaxArgmax) {
  auto fn = [](const Tensor &x) {
    auto [mv, mi] = x.max(1);
    auto [nv, ni] = ember::min(x, 0, true);
    return std::make_tuple(x.max(), x.min(), mv, mi, nv, ni, x.amax({0, 2}),
                           x.amin({-1}, true), x.argmax(), x.argmax(2),
                           x.argmin(1, true));
  };
  auto e = expect_same(fn, {random({4, 3, 6}, kFloat, 31)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graphs.at(0).outputs, 11);
}

TEST(E2EReductions, VarStdNormCorrection) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(
        x.var(), x.var({1}), x.var({0}, 0, true), x.std({1}, 2),
        x.std(std::nullopt, 0), ember::norm(x), ember::norm(x, 1, {1}),
        ember::norm(x, std::optional<Scalar>(3.0), {0}, true));
  };
  auto e = expect_same(fn, {random({6, 5}, kDouble, 32)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::var"), 3);
}

TEST(E2EReductions, SoftmaxLogSoftmaxLogsumexp) {
  auto fn = [](const Tensor &x) {
    Tensor s = x.softmax(-1), ls = x.log_softmax(1);
    Tensor l = x.logsumexp({1}), lk = x.logsumexp({0, 2}, true);
    Tensor sd = x.softmax(0, kDouble);
    return std::make_tuple(s, ls, l, lk, sd, (s.log() - ls).abs().amax());
  };
  auto e = expect_same(fn, {random({3, 5, 7}, kFloat, 33) * 4});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(count_in_traces(e, "ember::softmax"), 2);
}

TEST(E2EReductions, CumsumCumprod) {
  auto fn = [](const Tensor &x, const Tensor &i) {
    return std::make_tuple(x.cumsum(0), x.cumsum(-1), x.cumprod(1), i.cumsum(1),
                           i.cumsum(0, kDouble), x.cumsum(1, kDouble));
  };
  Tensor i = random({4, 6}, kInt, 35);
  auto e = expect_same(fn, {random({4, 6}, kFloat, 34), i});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(std::get<3>(fn(i.to(kFloat), i)).dtype(), kLong);
}

TEST(E2EReductions, SortTopkArgsort) {
  auto fn = [](const Tensor &x) {
    auto [sv, si] = x.sort();
    auto [dv, di] = x.sort(0, true, true);
    auto [tv, ti] = x.topk(3);
    auto [bv, bi] = x.topk(2, 0, false, true);
    return std::make_tuple(sv, si, dv, di, tv, ti, bv, bi, x.argsort(1, true));
  };
  auto e = expect_same(fn, {random({5, 8}, kFloat, 36)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(count_in_traces(e, "ember::topk"), 2);
  // integer input with ties, stable sort
  auto e2 = expect_same([](const Tensor &x) { return x.sort(-1, false, true); },
                        {random({3, 10}, kLong, 37)});
  EXPECT_EQ(e2.graph_count, 1);
}

TEST(E2EReductions, AllAnyBoolReductions) {
  auto fn = [](const Tensor &x, const Tensor &b) {
    return std::make_tuple((x > 0).all(), (x > 0).any(1), b.all(0, true),
                           b.any(), b.sum(1), (x > -5).all(-1));
  };
  auto e =
      expect_same(fn, {random({4, 5}, kFloat, 38), random({4, 5}, kBool, 39)});
  EXPECT_EQ(e.graph_count, 1);
}

TEST(E2EReductions, MatmulFamily) {
  auto fn = [](const Tensor &a, const Tensor &b, const Tensor &bias,
               const Tensor &ba, const Tensor &bb) {
    Tensor mm = ember::mm(a, b);
    Tensor am = ember::addmm(bias, a, b, 0.5, 2.0);
    Tensor bm = ember::bmm(ba, bb);
    Tensor bd = ember::baddbmm(bm, ba, bb, 1.0, -1.0);
    Tensor mt = ember::matmul(ba, b); // batched @ 2-d
    Tensor mv = ember::mv(a, b.select(1, 0));
    Tensor dt = ember::dot(a.select(0, 0), a.select(0, 1));
    Tensor ou = ember::outer(a.select(1, 0), b.select(0, 1));
    Tensor m1 = ember::matmul(a.select(0, 2), b); // 1-d @ 2-d
    return std::make_tuple(mm, am, bm, bd, mt, mv, dt, ou, m1);
  };
  Tensor a = random({3, 4}, kFloat, 40), b = random({4, 5}, kFloat, 41);
  auto e = expect_same(fn, {a, b, random({5}, kFloat, 42),
                            random({2, 3, 4}, kFloat, 43),
                            random({2, 4, 5}, kFloat, 44)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::mm"), 1);
  EXPECT_GE(count_in_traces(e, "ember::bmm"), 1);
  EXPECT_EQ(count_in_traces(e, "ember::addmm"), 1);
  EXPECT_EQ(count_in_traces(e, "ember::baddbmm"), 1);
}

TEST(E2EReductions, MatmulNonContiguousAndDouble) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    return std::make_tuple(a.matmul(b), a.t().matmul(a), b.t().matmul(a.t()));
  };
  Tensor a = random({6, 4}, kDouble, 45).t(); // [4, 6], transposed
  Tensor b = noncontiguous(random({6, 3}, kDouble, 46));
  auto f = compile(fn);
  auto r = f(a, b);
  auto x = fn(a, b);
  EXPECT_TRUE(ember::test::same(std::get<0>(r), std::get<0>(x)));
  EXPECT_TRUE(ember::test::same(std::get<1>(r), std::get<1>(x)));
  EXPECT_TRUE(ember::test::same(std::get<2>(r), std::get<2>(x)));
  EXPECT_EQ(f.explain().graph_count, 1);
}

TEST(E2EReductions, EinsumAndLinear) {
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b,
               const Tensor &q, const Tensor &k) {
    Tensor l1 = ember::linear(x, w, b);
    Tensor l2 = ember::linear(x, w);
    Tensor att = ember::einsum("bhqd,bhkd->bhqk", {q, k});
    Tensor tr = ember::einsum("ii->", {w.narrow(1, 0, 3)});
    Tensor red = ember::einsum("ij,kj->ik", {x, w});
    return std::make_tuple(l1, l2, att, tr, red);
  };
  auto e = expect_same(fn, {random({5, 4}, kFloat, 47),
                            random({3, 4}, kFloat, 48), random({3}, kFloat, 49),
                            random({2, 2, 3, 4}, kFloat, 50),
                            random({2, 2, 6, 4}, kFloat, 51)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
}
