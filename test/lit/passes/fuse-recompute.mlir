// RUN: ember-opt %s --ember-fuse-elementwise --split-input-file | FileCheck %s

// Note [Recomputing pointwise values in reductions]: layer_norm's backward.
// g * xhat is read only by the sum over the batch (the weight's gradient),
// which cannot join the rows that fold the normalized dim (the input's
// gradient): xhat and the product are recomputed in the sum's fusion, which
// reads x, mean and rstd instead of a full tensor the row fusion wrote; the
// bias's gradient (a sum of g over the same domain, reading g too) joins it.
// CHECK-LABEL: func.func @layer_norm_backward
// CHECK: %[[ROW:.*]] = ember.fusion(%arg0, %arg4, %arg1, %arg2, %arg3)
// CHECK-COUNT-2: ember.mean.dim
// CHECK: ember.yield %{{.*}} : tensor<64x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[COL:.*]]:2 = ember.fusion(%arg1, %arg2, %arg3, %arg0) : {{.*}} -> (tensor<128xf32>, tensor<128xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<64x128xf32>, %[[MEAN:.*]]: tensor<64x1xf32>, %[[RSTD:.*]]: tensor<64x1xf32>, %[[G:.*]]: tensor<64x128xf32>):
// CHECK-NEXT: %[[C:.*]] = ember.sub.Tensor %[[X]], %[[MEAN]]
// CHECK-NEXT: %[[XHAT:.*]] = ember.mul.Tensor %[[C]], %[[RSTD]]
// CHECK-NEXT: %[[P:.*]] = ember.mul.Tensor %[[G]], %[[XHAT]]
// CHECK-NEXT: %[[DW:.*]] = ember.sum.dim_IntList %[[P]] {dim = array<i64: 0>}
// CHECK-NEXT: %[[DB:.*]] = ember.sum.dim_IntList %[[G]] {dim = array<i64: 0>}
// CHECK-NEXT: ember.yield %[[DW]], %[[DB]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[ROW]], %[[COL]]#0, %[[COL]]#1
func.func @layer_norm_backward(%g: tensor<64x128xf32>, %x: tensor<64x128xf32>, %mean: tensor<64x1xf32>, %rstd: tensor<64x1xf32>, %w: tensor<128xf32>) -> (tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>) {
  %gw = ember.mul.Tensor %g, %w : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %c = ember.sub.Tensor %x, %mean : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>
  %xhat = ember.mul.Tensor %c, %rstd : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>
  %a = ember.mul.Tensor %gw, %xhat : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %ma = ember.mean.dim %a {dim = array<i64: 1>, keepdim = true} : (tensor<64x128xf32>) -> tensor<64x1xf32>
  %t = ember.mul.Tensor %xhat, %ma : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>
  %mg = ember.mean.dim %gw {dim = array<i64: 1>, keepdim = true} : (tensor<64x128xf32>) -> tensor<64x1xf32>
  %d = ember.sub.Tensor %gw, %mg : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>
  %e = ember.sub.Tensor %d, %t : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %dx = ember.mul.Tensor %rstd, %e : (tensor<64x1xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %p = ember.mul.Tensor %g, %xhat : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %dw = ember.sum.dim_IntList %p {dim = array<i64: 0>} : (tensor<64x128xf32>) -> tensor<128xf32>
  %db = ember.sum.dim_IntList %g {dim = array<i64: 0>} : (tensor<64x128xf32>) -> tensor<128xf32>
  return %dx, %dw, %db : tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>
}

// -----

// A value that something besides the reduction reads (here the function's
// result) stays where it is computed: the reduction reads it.
// CHECK-LABEL: func.func @shared
// CHECK: %[[A:.*]]:2 = ember.fusion(%arg0)
// CHECK: ember.yield
// CHECK: %[[S:.*]] = ember.fusion(%[[A]]#1)
// CHECK-NEXT: ^bb0(%[[P:.*]]: tensor<8x4xf32>):
// CHECK-NEXT: ember.sum.dim_IntList %[[P]] {dim = array<i64: 0>}
func.func @shared(%x: tensor<8x4xf32>) -> (tensor<8x1xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %e = ember.exp %x : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = ember.sum.dim_IntList %e {dim = array<i64: 1>, keepdim = true} : (tensor<8x4xf32>) -> tensor<8x1xf32>
  %n = ember.neg %e : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = ember.sum.dim_IntList %n {dim = array<i64: 0>} : (tensor<8x4xf32>) -> tensor<4xf32>
  return %r, %n, %c : tensor<8x1xf32>, tensor<8x4xf32>, tensor<4xf32>
}
