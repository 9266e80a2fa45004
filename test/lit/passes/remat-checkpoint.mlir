// RUN: ember-opt %s --ember-remat | FileCheck %s
// RUN: ember-opt %s --ember-remat=memory-budget=4194304 | FileCheck %s --check-prefix=BUDGET

// Ops recorded in a checkpoint() region carry `ember.recompute = N`: the
// values inside the region are never saved, even a matmul's (Note
// [Checkpoint regions in a compiled function] in
// eager/autograd/Checkpoint.cpp). 512x512 float32 tensors are 1 MiB each.
// The region is mm and cos; the sum outside reads its output, cos's.
// Unmarked, the minimum cut saves the mm's result (the cos reads it);
// marked, the backward recomputes the mm from the saved argument.

// CHECK-LABEL: func.func @joint_forward
// CHECK-SAME: -> (tensor<f32>, tensor<512x512xf32> {ember.saved = "argument 0"})
// CHECK-SAME: ember.saved_bytes = 0
// CHECK-LABEL: func.func @joint_backward
// CHECK-SAME: ember.recomputed = ["ember.mm", "ember.sin", "ember.neg"]
// CHECK: ember.mm
// CHECK: ember.sin

// Under a budget that fits 4 MiB the knapsack may save what follows the
// region (neg's result, outside it), never the mm's.
// BUDGET-NOT: ember.saved = "ember.mm"
// BUDGET-LABEL: func.func @joint_forward
// BUDGET-SAME: -> (tensor<f32>, tensor<512x512xf32> {ember.saved = "ember.neg"})
// BUDGET-NOT: ember.saved = "ember.mm"
// BUDGET-LABEL: func.func @joint_backward

func.func @joint(%x: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent}) -> (tensor<f32>, tensor<512x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %m = ember.mm %x, %x {ember.recompute = 1 : i64} : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %c = ember.cos %m {ember.recompute = 1 : i64} : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %c : (tensor<512x512xf32>) -> tensor<f32>
  %e = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %sn = ember.sin %m : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %n = ember.neg %sn : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm = ember.mul.Tensor %e, %n : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %gm : tensor<f32>, tensor<512x512xf32>
}
