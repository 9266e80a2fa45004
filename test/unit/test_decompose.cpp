// Decompositions (ops.yaml `decompose:`, eager/Decompose.h) against the
// kernels of their ops: every op that has one is covered here, on random
// inputs (float32, float64, float16; inner and outer dims; NaN and inf), and
// a decomposition declines what it does not cover instead of computing it
// wrong.
#include "TestUtil.h"

#include "eager/Decompose.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>

using namespace ember;
using ember::test::close;
using ember::test::random;

namespace {

/// The op's kernel and its decomposition on the same arguments.
void expect_decomposition_matches(const std::string &name, Stack args) {
  const OperatorHandle *op = Dispatcher::singleton().findOp(name);
  ASSERT_NE(op, nullptr) << name;
  const KernelFunction *d = find_decomposition(*op);
  ASSERT_NE(d, nullptr) << name << " has no decomposition";
  Stack want = args, got = args;
  op->callBoxed(want);
  d->boxed(*op, DispatchKeySet(), got);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor &w = want[i].toTensor(), &g = got[i].toTensor();
    EXPECT_EQ(g.dtype(), w.dtype()) << name;
    bool half = w.dtype() == kHalf || w.dtype() == kBFloat16;
    EXPECT_TRUE(close(g, w, half ? 1e-3 : 1e-5, half ? 1e-3 : 1e-6))
        << name << " result " << i;
  }
}

Tensor with_specials(Tensor x) {
  x = x.clone();
  x.index_put_({0, 1}, std::numeric_limits<float>::infinity());
  x.index_put_({1, 2}, std::numeric_limits<float>::quiet_NaN());
  x.index_put_({2}, -std::numeric_limits<float>::infinity());
  return x;
}

/// Argument lists per op that has a decomposition.
const std::map<std::string, std::vector<Stack>> &cases() {
  static const std::map<std::string, std::vector<Stack>> c = [] {
    Tensor x = random({5, 37}, kFloat, 1) * 4;
    Tensor x3 = random({3, 6, 9}, kDouble, 2);
    Tensor h = random({4, 20}, kHalf, 3);
    Tensor s = with_specials(random({4, 8}, kFloat, 4));
    std::map<std::string, std::vector<Stack>> m;
    for (const char *op : {"ember::softmax.int", "ember::log_softmax.int"}) {
      m[op] = {{x, int64_t(1), IValue()},        {x, int64_t(0), IValue()},
               {x3, int64_t(1), IValue()},       {h, int64_t(-1), IValue()},
               {x, int64_t(1), IValue(kDouble)}, {s, int64_t(1), IValue()}};
    }
    // (float16 and bfloat16 computed in float, rounded once, as the kernel)
    Tensor bf = (random({33, 70}, kFloat, 13) + 0.1).to(kBFloat16);
    m["ember::logsumexp"] = {{x, std::vector<int64_t>{1}, false},
                             {x3, std::vector<int64_t>{0, 2}, true},
                             {s, std::vector<int64_t>{1}, false},
                             {h, std::vector<int64_t>{1}, false},
                             {bf, std::vector<int64_t>{1}, true}};
    m["ember::var.correction"] = {
        {x, std::vector<int64_t>{1}, IValue(), false},
        {x3, std::vector<int64_t>{0, 2}, IValue(Scalar(0)), true},
        {x, IValue(), IValue(Scalar(2)), false},
        {h, std::vector<int64_t>{0}, IValue(), false}};
    // Backward of softmax / log_softmax along the last, the first and a
    // middle dim, in float, double and float16.
    Tensor g = random({5, 37}, kFloat, 6), g3 = random({3, 6, 9}, kDouble, 7);
    Tensor gh = random({4, 20}, kHalf, 8);
    for (bool log : {false, true}) {
      auto f = [log](const Tensor &t, int64_t d) {
        return log ? t.log_softmax(d) : t.softmax(d);
      };
      m[log ? "ember::_log_softmax_backward_data"
            : "ember::_softmax_backward_data"] = {
          {g, f(x, 1), int64_t(1), IValue(kFloat)},
          {g, f(x, 0), int64_t(0), IValue(kFloat)},
          {g3, f(x3, 1), int64_t(1), IValue(kDouble)},
          {gh, f(h, -1), int64_t(-1), IValue(kHalf)},
          {g.to(kDouble), f(x.to(kDouble), 1), int64_t(1), IValue(kFloat)}};
    }
    // Note [Powers by cheaper ops]: each cheaper form, the power 1, other
    // powers (pow.Tensor_Tensor), integers, NaN and inf, float16.
    Tensor i = (random({4, 9}, kFloat, 14) * 5).to(kLong);
    std::vector<Stack> pows;
    for (double e : {0.5, -0.5, -1.0, 2.0, 3.0, -2.0, 1.0, 1.5, -3.0})
      for (const Tensor &t : {x, x3, h, s})
        pows.push_back(
            {e < 0 || e != double(int64_t(e)) ? t.abs() : t, Scalar(e)});
    pows.push_back({i, Scalar(int64_t(2))});
    pows.push_back({i, Scalar(int64_t(3))});
    pows.push_back({i, Scalar(0.5)});
    m["ember::pow.Tensor_Scalar"] = pows;
    Tensor w = random({37}, kFloat, 9), b = random({37}, kFloat, 10);
    Tensor w3 = random({6, 9}, kDouble, 11);
    m["ember::native_layer_norm"] = {
        {x + 100, std::vector<int64_t>{37}, w, b, 1e-5},
        {x3, std::vector<int64_t>{6, 9}, w3, IValue(), 1e-3},
        {x3, std::vector<int64_t>{9}, IValue(), IValue(), 1e-5},
        {h, std::vector<int64_t>{20}, IValue(), random({20}, kHalf, 12), 1e-5}};
    return m;
  }();
  return c;
}

} // namespace

TEST(Decompose, EveryDecompositionMatchesItsKernel) {
  int covered = 0;
  for (const OperatorHandle *op : Dispatcher::singleton().allOps()) {
    if (!find_decomposition(*op))
      continue;
    auto it = cases().find(op->name());
    ASSERT_NE(it, cases().end())
        << op->name() << " has a decomposition but no case in "
        << "test_decompose: add one";
    for (const Stack &args : it->second)
      expect_decomposition_matches(op->name(), args);
    ++covered;
  }
  EXPECT_EQ(covered, int(cases().size()));
}

TEST(Decompose, OpsWithoutOneHaveNone) {
  EXPECT_EQ(find_decomposition(ops::sum_dim_IntList()), nullptr);
  EXPECT_EQ(find_decomposition(ops::add_Tensor()), nullptr);
}

TEST(Decompose, DeclinesThePowerZero) {
  const KernelFunction *d = find_decomposition(ops::pow_Tensor_Scalar());
  ASSERT_NE(d, nullptr);
  Stack s{random({4, 3}, kFloat, 5), Scalar(0.0)};
  EXPECT_THROW(d->boxed(ops::pow_Tensor_Scalar(), DispatchKeySet(), s), Error);
}

TEST(Decompose, DeclinesEmptyReductions) {
  const KernelFunction *d = find_decomposition(ops::logsumexp());
  ASSERT_NE(d, nullptr);
  Stack s{random({4, 0}, kFloat, 5), std::vector<int64_t>{1}, false};
  EXPECT_THROW(d->boxed(ops::logsumexp(), DispatchKeySet(), s), Error);
}
