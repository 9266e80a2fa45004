// gradcheck (and, for a representative subset, gradgradcheck) of every op
// with a derivative formula in ops.yaml: the analytical Jacobians autograd
// computes against central finite differences, in float64.
//
// Note [One gradcheck case per differentiable op]
// The generator lists every op with a `derivative:` formula in the X-macro
// EMBER_FORALL_DIFFERENTIABLE_OPS. Each of those ops has its gradcheck
// samples in one place: the OpInfo table (test/support/OpInfo.h: the
// pointwise ops, pow and the reductions) or, for the other ops, cases()
// here. Gradcheck.EveryDifferentiableOpHasACase fails when a formula has no
// sample (and when a sample names an op without a formula, or an op has
// samples in both places), so a new formula cannot land untested. Inputs
// are chosen inside each op's differentiable domain (positive for
// log/sqrt, away from kinks and integer jumps, no ties for max/min/sort):
// finite differences are meaningless at a kink, and a failure here must
// mean a wrong formula, not a bad input.
#include "GradCases.h"
#include "OpInfo.h"
#include "TestUtil.h"
#include "eager/generated/AutogradNodes.h"
#include "ember/autograd.h"
#include "ember/ember.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace ember;
using namespace ember::test::samples;
using ember::test::find_op_info;
using ember::test::op_db;
using ember::test::OpInfo;

namespace {

using Case = GradSample;

// --- the cases (test/support/GradCases.h) ----------------------------------

using ember::test::grad_cases;
using ember::test::local_grad_cases;
const std::map<std::string, std::vector<Case>> &local_cases() {
  return local_grad_cases();
}
const std::map<std::string, const std::vector<Case> *> &cases() {
  return grad_cases();
}

#define EMBER_GRADCHECK_OP_NAME(cname, node) #cname,
const std::vector<std::string> kDifferentiableOps = {
    EMBER_FORALL_DIFFERENTIABLE_OPS(EMBER_GRADCHECK_OP_NAME)};
#undef EMBER_GRADCHECK_OP_NAME

} // namespace

// See Note [One gradcheck case per differentiable op].
TEST(Gradcheck, EveryDifferentiableOpHasACase) {
  std::set<std::string> ops(kDifferentiableOps.begin(),
                            kDifferentiableOps.end());
  std::string missing, stale, twice, flags;
  for (const std::string &op : kDifferentiableOps)
    if (!cases().count(op) || cases().at(op)->empty())
      missing += " " + op;
  for (const auto &[name, list] : cases())
    if (!ops.count(name))
      stale += " " + name;
  // The table's entries: samples exactly for the ops with a formula, no op
  // with samples here too, differentiable arguments named for each.
  for (const OpInfo &o : op_db()) {
    std::string n = o.cname();
    if (o.differentiable() != bool(ops.count(n)))
      stale += " " + n + "(OpInfo)";
    if (local_cases().count(n))
      twice += " " + n;
    if (o.differentiable() == o.grad_args.empty())
      flags += " " + n;
  }
  EXPECT_TRUE(missing.empty())
      << "ops with a derivative formula but no gradcheck case in "
         "test/support/OpInfo.cpp or test_gradcheck.cpp:"
      << missing;
  EXPECT_TRUE(stale.empty())
      << "gradcheck cases for ops that have no derivative formula (renamed?):"
      << stale;
  EXPECT_TRUE(twice.empty())
      << "ops with gradcheck cases both in the OpInfo table and here:" << twice;
  EXPECT_TRUE(flags.empty())
      << "OpInfo entries whose grad_args disagree with their samples:" << flags;
}

// An output requires grad exactly when one of the table's differentiable
// arguments does (float64 pointwise ops, each argument alone).
TEST(Gradcheck, DifferentiableArgumentsOfTheTable) {
  int checked = 0;
  for (const OpInfo &o : op_db()) {
    if (o.kind != test::Kind::Pointwise ||
        std::find(o.dtypes.begin(), o.dtypes.end(), kDouble) == o.dtypes.end())
      continue;
    for (int i = 0; i < o.arity; ++i) {
      std::vector<Tensor> in;
      for (int k = 0; k < o.arity; ++k)
        in.push_back(test::sample_input({2, 3}, kDouble, o.domain, k + 1));
      in[size_t(i)].requires_grad_();
      bool want = std::count(o.grad_args.begin(), o.grad_args.end(), i) > 0;
      EXPECT_EQ(o.op(in).requires_grad(), want) << o.name << " argument " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

class GradcheckOp : public ::testing::TestWithParam<std::string> {};

TEST_P(GradcheckOp, MatchesFiniteDifferences) {
  const std::string &op = GetParam();
  auto it = cases().find(op);
  ASSERT_NE(it, cases().end()) << "no gradcheck case for " << op;
  for (const Case &k : *it->second) {
    SCOPED_TRACE(op + " [" + k.label + "]");
    variable_list inputs = k.inputs();
    if (k.label.find("transposed") != std::string::npos) {
      EXPECT_TRUE(
          std::any_of(inputs.begin(), inputs.end(),
                      [](const Tensor &t) { return !t.is_contiguous(); }))
          << "a 'transposed' case needs a non-contiguous input";
    }
    try {
      EXPECT_TRUE(autograd::gradcheck(k.fn, inputs));
    } catch (const std::exception &e) {
      ADD_FAILURE() << "gradcheck: " << e.what();
    }
    if (!k.gradgrad)
      continue;
    // Deterministic grad_outputs (gradgradcheck would draw its own).
    variable_list gos;
    uint64_t seed = 50;
    for (const Tensor &o : k.fn(inputs))
      if (o.defined() && o.is_floating_point())
        gos.push_back(leaf(test::random(o.sizes(), kDouble, seed++)));
    try {
      EXPECT_TRUE(autograd::gradgradcheck(k.fn, inputs, gos));
    } catch (const std::exception &e) {
      ADD_FAILURE() << "gradgradcheck: " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDifferentiableOps, GradcheckOp,
                         ::testing::ValuesIn(kDifferentiableOps),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

TEST(Gradcheck, DetectsAWrongFormula) {
  // The harness itself must fail on a wrong gradient: d/dx (x * stop(x))
  // computed as if both factors were x (2x), numerically 2x too, would pass;
  // x * x.detach() gives analytical x but numerical 2x.
  Tensor x = rnd({3}, 1);
  GradcheckFn f = [](const variable_list &v) {
    return variable_list{v[0] * v[0].detach()};
  };
  EXPECT_FALSE(autograd::gradcheck(f, {x}, 1e-6, 1e-5, 1e-3, false));
}
