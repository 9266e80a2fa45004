// Compiled vs eager: shape ops (cat/stack/flip/roll/tril/triu/pad), views
// (transpose/permute/expand/slice/select/unfold/diagonal/view/reshape/
// squeeze/unsqueeze/narrow/chunk/split), gather/scatter/index_select and
// advanced indexing.
#include "E2EUtil.h"

using namespace ember;
using namespace ember::indexing;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::noncontiguous;
using ember::test::random;
using ember::test::same;
namespace F = ember::nn::functional;

TEST(E2EShape, CatStackFlipRollRepeat) {
  auto fn = [](const Tensor &a, const Tensor &b) {
    return std::make_tuple(ember::cat({a, b}, 0), ember::cat({a, b.neg()}, -1),
                           ember::stack({a, b}), ember::stack({a, b}, 2),
                           a.flip({0}), a.flip({0, 1}),
                           ember::roll(a, {2}, {1}),
                           ember::roll(a, {1, -1}, {0, 1}), a.repeat({2, 1, 3}),
                           ember::tile(b, {2}));
  };
  auto e =
      expect_same(fn, {random({3, 4}, kFloat, 60), random({3, 4}, kFloat, 61)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::cat"), 2);
  EXPECT_EQ(count_in_traces(e, "ember::flip"), 2);
}

TEST(E2EShape, TrilTriuPad) {
  auto fn = [](const Tensor &x) {
    Tensor b = x.unsqueeze(0); // (1, 5, 6)
    return std::make_tuple(
        x.tril(), x.triu(1), x.tril(-1), ember::triu(x, -2),
        ember::constant_pad_nd(x, {1, 2}, 0.5),
        ember::pad(x, {0, 1, 2, 0}, "constant", -1.0),
        F::pad(x, F::PadFuncOptions({-1, 2})), // crop and pad
        F::pad(b, F::PadFuncOptions({2, 1}).mode(kReflect)),
        F::pad(b, F::PadFuncOptions({1, 1, 1, 1}).mode(kReplicate)),
        F::pad(b, F::PadFuncOptions({1, 2}).mode(kCircular)));
  };
  auto e = expect_same(fn, {random({5, 6}, kFloat, 62)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(count_in_traces(e, "ember::tril"), 2);
}

TEST(E2EShape, ViewChain) {
  auto fn = [](const Tensor &x) {
    Tensor y = x * 2; // views of an intermediate
    return std::make_tuple(
        y.transpose(0, 2), y.permute({2, 0, 1}), y.select(1, 2),
        y.slice(2, 1, 5, 2), y.narrow(0, 1, 1), y.unsqueeze(1).squeeze(1),
        y.view({6, 5}), y.reshape({-1}), y.flatten(1), y.unflatten(2, {5, 1}),
        y.select(1, 0).diagonal(), y.diagonal(1, 1, 2), y.unfold(2, 2, 1),
        y.select(0, 0).t(),
        y.index({Slice(), 0}).unsqueeze(-1).expand({2, 5, 4}), y.squeeze(),
        y.unsqueeze(0).squeeze(0).sum(1));
  };
  auto e = expect_same(fn, {random({2, 3, 5}, kFloat, 63)});
  EXPECT_EQ(e.graph_count, 1);
  auto r = compile(fn)(random({2, 3, 5}, kFloat, 63));
  // Views keep eager's geometry.
  EXPECT_EQ(std::get<0>(r).strides().vec(), std::vector<int64_t>({1, 5, 15}));
  EXPECT_EQ(std::get<12>(r).sizes().vec(), std::vector<int64_t>({2, 3, 4, 2}));
}

TEST(E2EShape, ChunkSplitUnbindReturnVector) {
  auto fn = [](const Tensor &x) {
    std::vector<Tensor> out;
    for (const Tensor &c : x.chunk(3, 1))
      out.push_back(c.exp());
    for (const Tensor &s : x.split(2, 0))
      out.push_back(s.sum(0));
    for (const Tensor &s : ember::split(x, std::vector<int64_t>{1, 4}, 1))
      out.push_back(s * 3);
    for (const Tensor &u : x.unbind(0))
      out.push_back(u + 1);
    return out;
  };
  Tensor x = random({5, 5}, kFloat, 64);
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
  auto r = compile(fn)(x);
  EXPECT_EQ(r.size(), 3u + 3u + 2u + 5u);
}

TEST(E2EShape, ViewsOfNonContiguousInput) {
  auto fn = [](const Tensor &x) {
    return std::make_tuple(x.reshape({-1}), x.view({4, 3, 2}).sum(0),
                           x.t().contiguous().view({-1}),
                           x.expand({2, 4, 6}) * 1,
                           x.narrow(1, 1, 3).reshape({2, 6}), x.flatten());
  };
  Tensor base = random({4, 6}, kFloat, 65).t(); // [6, 4] transposed
  Tensor x = base.t();                          // [4, 6] contiguous again
  Tensor nc = noncontiguous(random({4, 6}, kFloat, 66));
  auto f = compile([](const Tensor &x) {
    return std::make_tuple(x.reshape({-1}), x.t().reshape({3, 8}),
                           x.narrow(1, 1, 3) * 2, x.select(1, 5) + 1,
                           x.unsqueeze(0).expand({3, 4, 6}).sum(0));
  });
  auto r = f(nc);
  EXPECT_TRUE(same(std::get<0>(r), nc.reshape({-1})));
  EXPECT_TRUE(same(std::get<1>(r), nc.t().reshape({3, 8})));
  EXPECT_TRUE(same(std::get<2>(r), nc.narrow(1, 1, 3) * 2));
  EXPECT_TRUE(same(std::get<3>(r), nc.select(1, 5) + 1));
  EXPECT_TRUE(same(std::get<4>(r), nc.unsqueeze(0).expand({3, 4, 6}).sum(0)));
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
}

TEST(E2EShape, GatherScatterIndexSelect) {
  auto fn = [](const Tensor &x, const Tensor &idx, const Tensor &src,
               const Tensor &rows) {
    return std::make_tuple(
        x.gather(1, idx), ember::scatter(x, 1, idx, src),
        ember::scatter(x, 1, idx, 2.5), ember::scatter_add(x, 1, idx, src),
        x.index_select(0, rows), x.index_select(1, idx.select(0, 0)),
        ember::index_add(x, 0, rows, src.narrow(1, 0, 2).repeat({1, 3}), 0.5));
  };
  Tensor x = random({4, 6}, kFloat, 67);
  Tensor idx = randint(0, 6, {4, 2}, Generator(68));
  Tensor src = random({4, 2}, kFloat, 69);
  Tensor rows = tensor({3, 0, 3, 1}).to(kLong);
  auto e = expect_same(fn, {x, idx, src, rows});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::gather"), 1);
  EXPECT_GE(count_in_traces(e, "ember::index_select"), 2);
}

TEST(E2EShape, AdvancedIndexing) {
  auto fn = [](const Tensor &x, const Tensor &i, const Tensor &j) {
    return std::make_tuple(
        x.index({i}), x.index({Slice(), i}), x.index({i, j}),
        x.index({Slice(1, None, 2), 0}), x[1], x.index({None, Ellipsis, 2}),
        x.index({i.unsqueeze(1), j}), x.index({Ellipsis, Slice(None, 3)}));
  };
  Tensor x = random({5, 4, 3}, kFloat, 70);
  Tensor i = tensor({3, 0, 2}).to(kLong); // valid for dims 0 and 1
  Tensor j = tensor({1, 3, 3}).to(kLong);
  auto e = expect_same(fn, {x, i, j});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_GE(count_in_traces(e, "ember::index"), 4);
}

TEST(E2EShape, IndexPutOnIntermediate) {
  auto fn = [](const Tensor &x, const Tensor &i, const Tensor &v) {
    Tensor y = x.clone();
    // (i repeats row 5: a put that does not accumulate writes one value
    // there, as which of several would win is undefined on CUDA)
    y.index_put_({i}, v.sum(0));
    Tensor z = x * 1;
    z.index_put_({Slice(), i.remainder(3)}, 4.0); // columns 2, 1, 2
    Tensor acc = ember::zeros({6}, x.options());
    ember::index_put_(acc, {i}, v.select(1, 0), true); // accumulate, repeats
    return std::make_tuple(y, z, acc);
  };
  Tensor i = tensor({5, 1, 5}).to(kLong);
  auto e = expect_same(
      fn, {random({6, 3}, kFloat, 71), i, random({3, 3}, kFloat, 72)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  ASSERT_EQ(e.graphs.size(), 1u);
  // y and z are graph values: writing them is functional. acc comes from a
  // factory, which runs eagerly and is lifted to a graph input like any
  // other real tensor the function reaches: writing it is a mutation.
  EXPECT_EQ(e.graphs[0].mutations, 1);
}

TEST(E2EShape, OneHotMaskedFillAndIntIndices) {
  auto fn = [](const Tensor &labels, const Tensor &x) {
    Tensor oh = ember::one_hot(labels, 5);
    Tensor masked = x.masked_fill(oh.to(kBool), -1.0);
    return std::make_tuple(oh, masked, (oh * 3).sum(0),
                           x.gather(1, labels.unsqueeze(1)));
  };
  Tensor labels = randint(0, 5, {7}, Generator(73));
  auto e = expect_same(fn, {labels, random({7, 5}, kFloat, 74)});
  EXPECT_EQ(e.graph_count, 1);
}
