// The op cases (Note [Op cases] in OpCases.h).
#include "OpCases.h"

#include "OpInfo.h"

namespace ember::test {

namespace {

using namespace samples;
using samples::kNone; // not ember::kNone (nn options)

std::vector<OpCase> &cases() {
  static std::vector<OpCase> c;
  return c;
}
std::set<std::string> &localOps() {
  static std::set<std::string> s;
  return s;
}
void add(const std::string &op, std::function<Stack()> args,
         unsigned flags = kNone) {
  cases().push_back({"ember::" + op, std::move(args), flags});
  localOps().insert("ember::" + op);
}
/// A misuse case: eager raises, and so must infer.
void bad(const std::string &op, std::function<Stack()> args) {
  add(op, std::move(args), kThrows);
}
/// A case whose result needs the data.
void data(const std::string &op, std::function<Stack()> args) {
  add(op, std::move(args), kNeedsData);
}

/// The OpInfo table's cases (test/support/OpInfo.h: every pointwise op,
/// pow, the reductions), each on the op and on its in-place form.
void addTableCases() {
  for (const test::OpInfo &o : test::op_db()) {
    std::vector<std::string> forms{o.name};
    if (!o.inplace.empty())
      forms.push_back(o.inplace);
    for (const std::string &f : forms)
      for (const MetaSample &m : o.meta)
        cases().push_back({f, m.args, m.flags});
  }
}

void addDataCases() {
  add("copy_", [] { return Stack{R({2, 3}), R({3}, kLong), false}; });
  add("copy_", [] { return Stack{NC(R({2, 3})), R({1, 2, 3}), false}; });
  bad("copy_", [] { return Stack{R({3}), R({2, 3}), false}; });
  bad("copy_", [] { return Stack{R({1}).expand({3}), R({3}), false}; });
  add("fill_.Scalar", [] { return Stack{NC(R({2, 3})), 1.5}; });
  add("fill_.Scalar", [] { return Stack{R({1}).expand({1}), 1}; });
  bad("fill_.Scalar", [] { return Stack{R({1}).expand({3}), 1}; });
  add("_to_copy", [] { return Stack{NC(R({2, 3})), kDouble, None()}; });
  add("_to_copy", [] { return Stack{R({2, 3}, kLong), None(), Device(kCPU)}; });
  // (a device no machine has: it raises with a GPU or without one)
  bad("_to_copy", [] { return Stack{R({2}), None(), Device(kCUDA, 63)}; });
  add("clone", [] { return Stack{NC(R({3, 4}))}; });
  add("clone", [] { return Stack{R({}, kLong)}; });
  add("as_strided_scatter", [] {
    return Stack{R({4, 4}), R({2, 2}), L({2, 2}), L({4, 1}), 1};
  });
  add("as_strided_scatter", [] {
    return Stack{NC(R({3, 4})), R({3}, kDouble), L({3}), L({4}), None()};
  });
  bad("as_strided_scatter", [] {
    return Stack{R({4, 4}), R({2, 3}), L({2, 2}), L({4, 1}), 1};
  });
  bad("as_strided_scatter", [] {
    return Stack{R({2, 2}), R({3, 3}), L({3, 3}), L({3, 1}), 0};
  });
  bad("as_strided_scatter", [] {
    return Stack{R({4}), R({2}), L({2}), L({0}), 0};
  });
}

void addViewCases() {
  add("as_strided", [] { return Stack{R({4, 5}), L({2, 3}), L({5, 1}), 2}; });
  add("as_strided", [] {
    return Stack{NC(R({4, 5})), L({2, 2}), L({1, 2}), None()};
  });
  bad("as_strided", [] { return Stack{R({4}), L({5}), L({1}), 0}; });
  add("view", [] { return Stack{R({2, 6}), L({3, 4})}; });
  add("view", [] { return Stack{R({2, 6}).select(1, 2), L({1, 2})}; });
  add("view", [] { return Stack{R({2, 3, 4}), L({-1, 4})}; });
  add("view", [] { return Stack{R({0, 3}), L({3, 0})}; });
  bad("view", [] { return Stack{R({2, 3}).t(), L({6})}; });
  bad("view", [] { return Stack{R({2, 3}), L({4})}; });
  add("squeeze", [] { return Stack{NC(R({1, 3, 1}))}; });
  add("squeeze", [] { return Stack{R({}, kLong)}; });
  add("squeeze.dim", [] { return Stack{R({1, 3}), 0}; });
  add("squeeze.dim", [] { return Stack{R({3, 1}), -1}; });
  bad("squeeze.dim", [] { return Stack{R({3, 1}), 2}; });
  add("squeeze.dims", [] { return Stack{R({1, 3, 1}), L({0, -1})}; });
  bad("squeeze.dims", [] { return Stack{R({1, 3, 1}), L({0, 0})}; });
  add("unsqueeze", [] { return Stack{NC(R({2, 3})), -1}; });
  add("unsqueeze", [] { return Stack{R({}), 0}; });
  bad("unsqueeze", [] { return Stack{R({2}), 3}; });
  add("transpose.int", [] { return Stack{NC(R({2, 3, 4})), 0, -1}; });
  add("transpose.int", [] { return Stack{R({}), 0, -1}; });
  bad("transpose.int", [] { return Stack{R({2}), 0, 2}; });
  add("t", [] { return Stack{NC(R({2, 3}))}; });
  add("t", [] { return Stack{R({3})}; });
  bad("t", [] { return Stack{R({2, 3, 4})}; });
  add("permute", [] { return Stack{NC(R({2, 3, 4})), L({2, 0, 1})}; });
  bad("permute", [] { return Stack{R({2, 3}), L({1, 1})}; });
  bad("permute", [] { return Stack{R({2, 3}), L({0})}; });
  add("expand", [] { return Stack{R({3, 1}), L({2, 3, 4}), false}; });
  add("expand", [] { return Stack{NC(R({2, 1})), L({-1, 5}), false}; });
  bad("expand", [] { return Stack{R({3}), L({2, 4}), false}; });
  add("select.int", [] { return Stack{NC(R({3, 4})), 1, -1}; });
  add("select.int", [] { return Stack{R({3, 4}), 0, 2}; });
  bad("select.int", [] { return Stack{R({3, 4}), 0, 3}; });
  bad("select.int", [] { return Stack{R({}), 0, 0}; });
  add("slice.Tensor", [] { return Stack{R({5, 4}), 0, 1, None(), 2}; });
  add("slice.Tensor", [] { return Stack{NC(R({5, 4})), 1, -3, None(), 1}; });
  add("slice.Tensor", [] { return Stack{R({5, 4}), -1, 9, 20, 1}; });
  bad("slice.Tensor", [] { return Stack{R({5}), 0, 0, 3, 0}; });
  add("diagonal", [] { return Stack{R({3, 4}), 1, 0, 1}; });
  add("diagonal", [] { return Stack{NC(R({2, 3, 4})), -1, 2, 0}; });
  add("diagonal", [] { return Stack{R({3, 4}), 5, 0, 1}; });
  bad("diagonal", [] { return Stack{R({3, 4}), 0, 1, -1}; });
  add("unfold", [] { return Stack{R({7}), 0, 3, 2}; });
  add("unfold", [] { return Stack{NC(R({2, 8})), -1, 4, 4}; });
  add("unfold", [] { return Stack{R({}), 0, 1, 1}; });
  bad("unfold", [] { return Stack{R({3}), 0, 4, 1}; });
}

void addLinalgCases() {
  add("mm", [] { return Stack{R({2, 3}), R({3, 4})}; });
  add("mm", [] { return Stack{NC(R({2, 3}, kLong)), R({4, 3}, kLong).t()}; });
  add("mm", [] { return Stack{R({2, 0}), R({0, 4})}; });
  bad("mm", [] { return Stack{R({2, 3}), R({4, 4})}; });
  bad("mm", [] { return Stack{R({2, 3}), R({3, 4}, kDouble)}; });
  bad("mm", [] { return Stack{R({2, 3}, kBool), R({3, 4}, kBool)}; });
  bad("mm", [] { return Stack{R({3}), R({3, 4})}; });
  add("bmm", [] { return Stack{R({2, 3, 4}), NC(R({2, 4, 5}))}; });
  bad("bmm", [] { return Stack{R({2, 3, 4}), R({3, 4, 5})}; });
  bad("bmm", [] { return Stack{R({3, 4}), R({4, 5})}; });
  add("addmm", [] { return Stack{R({4}), R({2, 3}), R({3, 4}), 1, 1}; });
  add("addmm", [] {
    return Stack{R({2, 1}, kDouble), R({2, 3}, kDouble), R({3, 4}, kDouble), 0,
                 2};
  });
  bad("addmm", [] { return Stack{R({3}), R({2, 3}), R({3, 4}), 1, 1}; });
  bad("addmm", [] {
    return Stack{R({4}, kDouble), R({2, 3}), R({3, 4}), 1, 1};
  });
  bad("addmm", [] { return Stack{R({4}), R({2, 3, 1}), R({3, 4}), 1, 1}; });
  add("baddbmm", [] {
    return Stack{R({3, 5}), R({2, 3, 4}), R({2, 4, 5}), 1, 1};
  });
  bad("baddbmm", [] {
    return Stack{R({2, 4, 5}), R({2, 3, 4}), R({2, 4, 5}), 1, 1};
  });
  add("dot", [] { return Stack{R({5}), NC(R({5}))}; });
  add("dot", [] { return Stack{R({5}, kLong), R({5}, kLong)}; });
  bad("dot", [] { return Stack{R({5}), R({4})}; });
  bad("dot", [] { return Stack{R({5}), R({5}, kDouble)}; });
  bad("dot", [] { return Stack{R({5, 1}), R({5})}; });
}

void addShapeCases() {
  add("cat", [] { return Stack{TL({R({2, 3}), R({4, 3})}), 0}; });
  add("cat", [] { return Stack{TL({NC(R({2, 3})), R({2, 1}, kLong)}), -1}; });
  add("cat", [] { return Stack{TL({R({0}, kLong), R({2, 3})}), 1}; });
  add("cat", [] { return Stack{TL({R({0}), R({0}, kDouble)}), 0}; });
  bad("cat", [] { return Stack{TL({R({2, 3}), R({2, 4})}), 0}; });
  bad("cat", [] { return Stack{TL({R({}), R({2})}), 0}; });
  bad("cat", [] { return Stack{TL({}), 0}; });
  bad("cat", [] { return Stack{TL({R({2}), R({2, 2})}), 0}; });
  add("flip", [] { return Stack{NC(R({2, 3, 4})), L({0, -1})}; });
  bad("flip", [] { return Stack{R({2, 3}), L({0, 0})}; });
  add("tril", [] { return Stack{R({3, 4}), 1}; });
  bad("tril", [] { return Stack{R({3}), 0}; });
  add("triu", [] { return Stack{NC(R({2, 3, 4}, kLong)), -1}; });
  bad("triu", [] { return Stack{R({}), 0}; });
  add("constant_pad_nd", [] { return Stack{R({2, 3}), L({1, 2}), 0}; });
  add("constant_pad_nd", [] {
    return Stack{NC(R({2, 3, 4})), L({-1, 1, 1, 0}), 1.5};
  });
  bad("constant_pad_nd", [] { return Stack{R({2, 3}), L({1}), 0}; });
  bad("constant_pad_nd", [] { return Stack{R({2}), L({1, 1, 1, 1}), 0}; });
  bad("constant_pad_nd", [] { return Stack{R({2}), L({-2, -1}), 0}; });
  data("equal", [] { return Stack{R({3}), R({3})}; });
  data("equal", [] { return Stack{R({3}), R({2, 2})}; });
  bad("equal", [] { return Stack{R({3}), R({3}, kDouble)}; });
  add("sort", [] { return Stack{NC(R({3, 4})), -1, false, false}; });
  add("sort", [] { return Stack{R({3, 4}, kLong), 0, true, true}; });
  add("sort", [] { return Stack{R({}), 0, false, false}; });
  bad("sort", [] { return Stack{R({3}), 1, false, false}; });
  add("topk", [] { return Stack{R({3, 5}), 2, -1, true, true}; });
  add("topk", [] { return Stack{NC(R({4, 3})), 0, 0, false, false}; });
  add("topk", [] { return Stack{R({}), 1, 0, true, true}; });
  add("topk", [] { return Stack{R({}), 0, -1, true, true}; });
  bad("topk", [] { return Stack{R({3}), 4, 0, true, true}; });
  add("_im2col", [] {
    return Stack{R({1, 2, 5, 5}), L({2, 2}), L({1, 1}),
                 L({0, 0}),       L({1, 1}), 0};
  });
  add("_im2col", [] {
    return Stack{R({2, 6, 7}, kLong), L({3, 2}), L({2, 1}),
                 L({1, 0}),           L({2, 2}), 0};
  });
  bad("_im2col", [] {
    return Stack{R({2, 5, 5}), L({2}), L({1, 1}), L({0, 0}), L({1, 1}), 0};
  });
  bad("_im2col", [] {
    return Stack{R({2, 2, 2}), L({3, 3}), L({1, 1}), L({0, 0}), L({1, 1}), 0};
  });
  // A NaN pad has no integer value (unless there is nothing to pad).
  add("_im2col", [] {
    return Stack{R({1, 2, 3, 3}), L({2, 2}), L({1, 1}),
                 L({1, 1}),       L({1, 1}), -INFINITY};
  });
  add("_im2col", [] {
    return Stack{
        R({0, 2, 3, 3}, kInt), L({2, 2}), L({1, 1}), L({1, 1}), L({1, 1}),
        std::nan("")};
  });
  bad("_im2col", [] {
    return Stack{
        R({1, 2, 3, 3}, kInt), L({2, 2}), L({1, 1}), L({1, 1}), L({1, 1}),
        std::nan("")};
  });
  add("_col2im", [] {
    return Stack{R({1, 8, 16}), L({5, 5}), L({2, 2}),
                 L({1, 1}),     L({0, 0}), L({1, 1})};
  });
  add("_col2im", [] {
    return Stack{R({8, 16}, kDouble), L({5, 5}), L({2, 2}),
                 L({1, 1}),           L({0, 0}), L({1, 1})};
  });
  bad("_col2im", [] {
    return Stack{R({1, 8, 15}), L({5, 5}), L({2, 2}),
                 L({1, 1}),     L({0, 0}), L({1, 1})};
  });
  bad("_col2im", [] {
    return Stack{R({1, 8, 16}, kBool),
                 L({5, 5}),
                 L({2, 2}),
                 L({1, 1}),
                 L({0, 0}),
                 L({1, 1})};
  });
}

/// Ops outside the OpInfo table: the softmax backward kernels and
/// native_layer_norm (forward and backward).
void addNormalizationCases() {
  for (std::string f :
       {"_softmax_backward_data", "_log_softmax_backward_data"}) {
    add(f, [] { return Stack{R({3, 4}), NC(R({3, 4})), 1, kFloat}; });
    add(f, [] { return Stack{R({3, 4}, kHalf), R({3, 4}, kHalf), 0, kHalf}; });
    add(f, [] { return Stack{R({2, 3}), R({2, 3}), -1, kDouble}; });
    add(f, [] { return Stack{R({}), R({}), 0, kFloat}; });
    bad(f, [] { return Stack{R({3}), R({4}), 0, kFloat}; });
    bad(f, [] { return Stack{R({3}), R({3}), 1, kFloat}; });
    bad(f, [] { return Stack{R({3}, kLong), R({3}, kLong), 0, kLong}; });
  }
  add("native_layer_norm", [] {
    return Stack{R({2, 3, 4}), std::vector<int64_t>{3, 4}, R({3, 4}), R({3, 4}),
                 1e-5};
  });
  add("native_layer_norm", [] {
    return Stack{NC(R({2, 4}, kHalf)), std::vector<int64_t>{4}, None(), None(),
                 1e-5};
  });
  add("native_layer_norm", [] {
    return Stack{R({0, 4}, kDouble), std::vector<int64_t>{4}, R({4}, kDouble),
                 None(), 1e-5};
  });
  bad("native_layer_norm", [] {
    return Stack{R({2, 3}), std::vector<int64_t>{4}, None(), None(), 1e-5};
  });
  bad("native_layer_norm", [] {
    return Stack{R({2, 3}), std::vector<int64_t>{3}, R({2}), None(), 1e-5};
  });
  bad("native_layer_norm", [] {
    return Stack{R({2, 3}, kLong), std::vector<int64_t>{3}, None(), None(),
                 1e-5};
  });
  add("native_layer_norm_backward", [] {
    return Stack{R({2, 3}),
                 R({2, 3}),
                 std::vector<int64_t>{3},
                 R({2, 1}),
                 R({2, 1}),
                 R({3}),
                 R({3}),
                 std::vector<int64_t>{1, 1, 1}};
  });
  add("native_layer_norm_backward", [] {
    return Stack{R({2, 3}, kHalf),
                 R({2, 3}, kHalf),
                 std::vector<int64_t>{3},
                 R({2, 1}),
                 R({2, 1}),
                 None(),
                 None(),
                 std::vector<int64_t>{1, 1, 1}};
  });
  bad("native_layer_norm_backward", [] {
    return Stack{R({2, 4}),
                 R({2, 3}),
                 std::vector<int64_t>{3},
                 R({2, 1}),
                 R({2, 1}),
                 None(),
                 None(),
                 std::vector<int64_t>{1, 1, 1}};
  });
}

void addIndexingCases() {
  add("index_select", [] { return Stack{NC(R({3, 4})), 1, Idx({2}, 4)}; });
  add("index_select", [] {
    return Stack{R({3, 4}, kLong), -2, Idx({5}, 3, kInt)};
  });
  add("index_select", [] { return Stack{R({}), 0, Idx({1}, 1)}; });
  add("index_select", [] { return Stack{R({3, 4}), 0, Idx({0}, 3)}; });
  bad("index_select", [] { return Stack{R({3}), 0, R({2})}; });
  bad("index_select", [] { return Stack{R({3}), 0, Idx({2, 2}, 3)}; });
  bad("index_select", [] { return Stack{R({3}), 1, Idx({2}, 3)}; });
  add("gather", [] { return Stack{NC(R({3, 4})), 1, Idx({3, 2}, 4)}; });
  add("gather", [] { return Stack{R({3, 4}, kInt), -2, Idx({2, 4}, 3)}; });
  bad("gather", [] { return Stack{R({3}), 0, Idx({3}, 3, kInt)}; });
  bad("gather", [] { return Stack{R({3}), 0, Idx({3, 1}, 3)}; });
  bad("gather", [] { return Stack{R({3, 2}), 0, Idx({2, 3}, 2)}; });
  for (std::string f : {"scatter_.src", "scatter_add_"}) {
    add(f, [] { return Stack{R({3, 4}), 1, Idx({3, 2}, 4), R({3, 2})}; });
    add(f, [] { return Stack{NC(R({3, 4})), 0, Idx({2, 4}, 3), R({3, 4})}; });
    bad(f, [] { return Stack{R({3}), 0, Idx({2}, 3), R({2}, kDouble)}; });
    bad(f, [] { return Stack{R({3, 2}), 0, Idx({2, 3}, 2), R({3, 3})}; });
    bad(f, [] { return Stack{R({1}).expand({3}), 0, Idx({2}, 3), R({2})}; });
  }
  add("index_add_", [] {
    return Stack{R({3, 4}), 0, Idx({2}, 3), R({2, 4}), 1};
  });
  add("index_add_", [] {
    return Stack{NC(R({3, 4}, kLong)), -1, Idx({3}, 4, kInt), R({3, 3}, kLong),
                 2};
  });
  bad("index_add_", [] {
    return Stack{R({3, 4}), 0, Idx({2}, 3), R({2, 5}), 1};
  });
  bad("index_add_", [] {
    return Stack{R({3, 4}), 0, Idx({3}, 3), R({2, 4}), 1};
  });
  bad("index_add_", [] {
    return Stack{R({3, 4}), 0, Idx({2}, 3), R({2, 4}, kDouble), 1};
  });
  data("masked_select", [] { return Stack{R({3, 4}), R({4}, kBool)}; });
  bad("masked_select", [] { return Stack{R({3, 4}), R({4})}; });
  bad("masked_select", [] { return Stack{R({3, 4}), R({3}, kBool)}; });
  data("nonzero", [] { return Stack{R({3, 4})}; });
  data("nonzero", [] { return Stack{R({}, kBool)}; });

  add("index.Tensor", [] { return Stack{R({4, 5}), TL({Idx({3}, 4)})}; });
  add("index.Tensor", [] {
    return Stack{NC(R({4, 5})), TL({Tensor(), Idx({2, 1}, 5)})};
  });
  add("index.Tensor", [] {
    return Stack{R({4, 5, 6}), TL({Idx({2}, 4), Idx({2}, 5, kInt)})};
  });
  add("index.Tensor", [] {
    return Stack{R({4, 5, 6}), TL({Idx({2, 1}, 4), Tensor(), Idx({3}, 6)})};
  });
  add("index.Tensor", [] {
    return Stack{R({4, 5, 6}), TL({Tensor(), Idx({2}, 5), Idx({2}, 6)})};
  });
  add("index.Tensor", [] { return Stack{R({4, 5}), TL({})}; });
  data("index.Tensor", [] { return Stack{R({4, 5}), TL({R({4}, kBool)})}; });
  data("index.Tensor", [] { return Stack{R({4, 5}), TL({R({4, 5}, kByte)})}; });
  data("index.Tensor", [] {
    return Stack{R({4, 5}), TL({Tensor(), R({5}, kBool)})};
  });
  bad("index.Tensor", [] {
    return Stack{R({4, 5}), TL({Idx({2}, 4), Idx({3}, 5)})};
  });
  bad("index.Tensor", [] {
    return Stack{R({4}), TL({Idx({2}, 4), Idx({2}, 4)})};
  });
  bad("index.Tensor", [] { return Stack{R({4}), TL({R({2})})}; });
  bad("index.Tensor", [] { return Stack{R({4, 5}), TL({R({5}, kBool)})}; });

  add("index_put_", [] {
    return Stack{R({4, 5}), TL({Idx({3}, 4)}), R({3, 5}), false};
  });
  add("index_put_", [] {
    return Stack{NC(R({4, 5})), TL({Idx({3}, 4)}), R({5}), true};
  });
  add("index_put_", [] {
    return Stack{R({4, 5}), TL({Tensor(), Idx({2}, 5)}), R({4, 1}), false};
  });
  add("index_put_", [] {
    return Stack{R({4, 5}), TL({R({4, 5}, kBool)}), R({1}), false};
  });
  add("index_put_", [] { return Stack{R({4, 5}), TL({}), R({5}), true}; });
  bad("index_put_", [] {
    return Stack{R({4, 5}), TL({Idx({3}, 4)}), R({3, 5}, kDouble), false};
  });
  // The random ops read a (seed, offset) state.
  auto state = [] { return tensor({7, 100}, TensorOptions(kLong)); };
  add("_philox_uniform", [=] { return Stack{state(), L({2, 3}), kFloat}; });
  add("_philox_uniform", [=] { return Stack{state(), L({}), kBFloat16}; });
  add("_philox_normal", [=] { return Stack{state(), L({0, 4}), kDouble}; });
  add("_philox_randint", [=] { return Stack{state(), -2, 5, L({3}), kLong}; });
  add("_philox_randint", [=] { return Stack{state(), 0, 2, L({3}), kBool}; });
  bad("_philox_uniform", [=] { return Stack{state(), L({2}), kLong}; });
  bad("_philox_normal", [=] { return Stack{state(), L({-1}), kFloat}; });
  bad("_philox_uniform", [] {
    return Stack{tensor({7, 100, 1}, TensorOptions(kLong)), L({2}), kFloat};
  });
  bad("_philox_normal", [] { return Stack{R({2}), L({2}), kFloat}; });
  bad("_philox_randint", [=] { return Stack{state(), 3, 3, L({3}), kLong}; });
  bad("index_put_", [] {
    return Stack{R({4, 5}), TL({Idx({3}, 4)}), R({2, 5}), false};
  });
  bad("index_put_", [] {
    return Stack{R({4}), TL({Idx({3}, 4), Idx({3}, 4)}), R({3}), false};
  });
}

void buildCases() {
  addTableCases();
  addDataCases();
  addViewCases();
  addLinalgCases();
  addShapeCases();
  addIndexingCases();
  addNormalizationCases();
}

} // namespace

const std::vector<OpCase> &op_cases() {
  static const bool built = (buildCases(), true);
  (void)built;
  return cases();
}

const std::set<std::string> &op_case_local_ops() {
  op_cases();
  return localOps();
}

Stack map_tensors(const Stack &args,
                  const std::function<Tensor(const Tensor &)> &f) {
  Stack out;
  for (const IValue &v : args) {
    if (v.isTensor()) {
      out.emplace_back(f(v.toTensor()));
    } else if (v.isTensorList()) {
      std::vector<Tensor> l;
      for (const Tensor &t : v.toTensorList())
        l.push_back(f(t));
      out.emplace_back(std::move(l));
    } else {
      out.push_back(v);
    }
  }
  return out;
}

std::vector<Tensor> tensors_of(const Stack &s) {
  std::vector<Tensor> out;
  for (const IValue &v : s) {
    if (v.isTensor())
      out.push_back(v.toTensor());
    else if (v.isTensorList())
      for (const Tensor &t : v.toTensorList())
        out.push_back(t);
  }
  return out;
}

} // namespace ember::test
