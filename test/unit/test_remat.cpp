// ember-remat keeps the joint function's meaning (Note [Partitioning the
// joint graph] in passes/Remat.cpp): on random inputs, `<name>_forward`
// gives the joint function's forward results, and `<name>_backward`, fed the
// forward's saved tensors and the tangents, gives its gradients, whatever
// the budget chooses to recompute. Each function runs through the executor
// (every op by its eager kernel).
#include "TestUtil.h"

#include "frontend/Executor.h"
#include "ir/Builder.h"
#include "ir/Dialect.h"
#include "ir/Import.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>

using namespace ember;

namespace {

std::vector<Tensor> run(mlir::func::FuncOp fn,
                        const std::vector<Tensor> &inputs) {
  frontend::Program p(ir::import_func(fn));
  return p.run(inputs);
}

mlir::func::FuncOp func(mlir::ModuleOp m, const std::string &name) {
  auto f = m.lookupSymbol<mlir::func::FuncOp>(name);
  EXPECT_TRUE(f) << name;
  return f;
}

/// Checks forward + backward against the joint `name` in `text`, with
/// ember-remat run at `budget` (-1: the minimum cut).
void check(const std::string &text, const std::string &name, int64_t budget,
           uint64_t seed) {
  SCOPED_TRACE(name + " at budget " + std::to_string(budget));
  passes::register_passes();
  auto ctx = ir::make_context();
  auto joint = ir::parse_module(*ctx, text);
  mlir::func::FuncOp j = func(*joint, name);
  ASSERT_TRUE(j);
  unsigned nfwd = unsigned(
      j->getAttrOfType<mlir::IntegerAttr>("ember.forward_results").getInt());
  std::vector<Tensor> primals, tangents, all;
  for (unsigned i = 0; i < j.getNumArguments(); ++i) {
    ir::ValueType t = ir::value_type(j.getArgument(i).getType());
    Tensor v = test::random(t.sizes, t.dtype, seed + i);
    (j.getArgAttr(i, "ember.tangent") ? tangents : primals).push_back(v);
    all.push_back(v);
  }
  std::vector<Tensor> want = run(j, all);

  auto split = ir::parse_module(*ctx, text);
  mlir::PassManager pm(ctx.get());
  passes::RematOptions o;
  o.memoryBudget = budget;
  pm.addPass(passes::createRemat(o));
  ASSERT_TRUE(mlir::succeeded(pm.run(*split)));
  ir::verify_module(*split);
  std::vector<Tensor> fwd = run(func(*split, name + "_forward"), primals);
  ASSERT_GE(fwd.size(), nfwd);
  std::vector<Tensor> bwd_in(fwd.begin() + nfwd, fwd.end());
  bwd_in.insert(bwd_in.end(), tangents.begin(), tangents.end());
  std::vector<Tensor> bwd = run(func(*split, name + "_backward"), bwd_in);
  ASSERT_EQ(nfwd + bwd.size(), want.size());
  for (unsigned i = 0; i < nfwd; ++i)
    EXPECT_TRUE(equal(fwd[i], want[i])) << "forward result " << i;
  for (size_t i = 0; i < bwd.size(); ++i)
    EXPECT_TRUE(equal(bwd[i], want[nfwd + i])) << "gradient " << i;
}

const char *kCosMmSum = R"mlir(
func.func @cos_mm_sum(%x: tensor<32x32xf32>, %w: tensor<32x32xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {ember.forward_results = 1 : i64} {
  %c = ember.cos %x : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %m = ember.mm %c, %w : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %s = ember.sum %m : (tensor<32x32xf32>) -> tensor<f32>
  %gm = ember.expand %g {size = array<i64: 32, 32>} : (tensor<f32>) -> tensor<32x32xf32>
  %wt = ember.t %w : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %gc = ember.mm %gm, %wt : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %ct = ember.t %c : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %gw = ember.mm %ct, %gm : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  %sn = ember.sin %x : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %ns = ember.neg %sn : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %gx = ember.mul.Tensor %gc, %ns : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32>
  return %s, %gx, %gw : tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>
}
)mlir";

// Two (mm, tanh) layers, a constant, a forward result the backward reads,
// a gradient that is a tangent as is, a multi-use primal.
const char *kLayers = R"mlir(
func.func @layers(%x: tensor<8x16xf32>, %w1: tensor<16x16xf32>, %w2: tensor<16x4xf32>, %g: tensor<8x4xf32> {ember.tangent}, %gh: tensor<8x16xf32> {ember.tangent})
    -> (tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>) attributes {ember.forward_results = 2 : i64} {
  %one = ember.constant {wrapped_number} dense<1.0> : tensor<f64>
  %m1 = ember.mm %x, %w1 : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %h = ember.tanh %m1 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %m2 = ember.mm %h, %w2 : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %y = ember.tanh %m2 : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %yy = ember.mul.Tensor %y, %y : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %d2 = ember.rsub.Tensor %yy, %one {alpha = 1 : i64} : (tensor<8x4xf32>, tensor<f64>) -> tensor<8x4xf32>
  %gm2 = ember.mul.Tensor %g, %d2 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %ht = ember.t %h : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %gw2 = ember.mm %ht, %gm2 : (tensor<16x8xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %w2t = ember.t %w2 : (tensor<16x4xf32>) -> tensor<4x16xf32>
  %gh1 = ember.mm %gm2, %w2t : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %gh2 = ember.add.Tensor %gh1, %gh {alpha = 1 : i64} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %hh = ember.mul.Tensor %h, %h : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %d1 = ember.rsub.Tensor %hh, %one {alpha = 1 : i64} : (tensor<8x16xf32>, tensor<f64>) -> tensor<8x16xf32>
  %gm1 = ember.mul.Tensor %gh2, %d1 : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %xt = ember.t %x : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %gw1 = ember.mm %xt, %gm1 : (tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<16x16xf32>
  return %y, %h, %gw1, %gw2, %g : tensor<8x4xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x4xf32>, tensor<8x4xf32>
}
)mlir";

} // namespace

TEST(Remat, ForwardAndBackwardEqualTheJointFunction) {
  const int64_t kib = 1024;
  for (int64_t budget : std::vector<int64_t>{-1, 0, 4 * kib, 100 * kib})
    check(kCosMmSum, "cos_mm_sum", budget, 10);
  for (int64_t budget :
       std::vector<int64_t>{-1, 0, 512, 1024, 1536, 4 * kib, 100 * kib})
    check(kLayers, "layers", budget, 20);
}
