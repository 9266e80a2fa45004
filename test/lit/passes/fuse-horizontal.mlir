// RUN: ember-opt %s --ember-fuse-elementwise --ember-fuse-horizontal --ember-plan-memory --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline --split-input-file | FileCheck %s --check-prefix=PIPE
// RUN: ember-opt %s --ember-pipeline | ember-translate --emit=kernels | FileCheck %s --check-prefix=KERNELS
// RUN: ember-opt %s --ember-pipeline="combo-kernels=false" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: ember-opt %s --ember-fuse-elementwise=max-ops=1 --ember-fuse-horizontal --ember-plan-memory --split-input-file | FileCheck %s --check-prefix=SHARED

// An SGD step over two parameters of different shapes: one fusion per
// parameter, then one combined fusion holding both (one kernel launch),
// placed where the last was. Each update is written into its parameter
// (ember-plan-memory plans the combined fusion: its input 1, %p, for
// result 0; its input 3, %w, for result 1).
// CHECK-LABEL: func.func @sgd
// CHECK: %[[R:.*]]:2 = ember.fusion(%arg1, %arg0, %arg3, %arg2) {ember.reuse = array<i64: 1, 3>}
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[C:.*]]: tensor<8x4xf32>, %[[D:.*]]: tensor<8x4xf32>):
// CHECK-NEXT: %[[P:.*]] = ember.fusion(%[[A]], %[[B]]) : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
// CHECK-NOT: ember.reuse
// CHECK: %[[Q:.*]] = ember.fusion(%[[C]], %[[D]]) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> {
// CHECK: ember.yield %[[P]], %[[Q]] : tensor<64xf32>, tensor<8x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]#0, %[[R]]#1
// PIPE-LABEL: func.func @sgd
// PIPE-COUNT-3: ember.fusion
// PIPE-NOT: ember.fusion
// PIPE: return
// OFF-LABEL: func.func @sgd
// OFF-COUNT-2: ember.fusion(
// OFF-NOT: ember.fusion(
// OFF: return
// KERNELS-LABEL: // fusion {{[0-9]+}} of @sgd at
// KERNELS-NEXT: // part 1 of 2 of a combined kernel
// KERNELS-NEXT: kernel over [64]
// KERNELS: // part 2 of 2 of a combined kernel
// KERNELS-NEXT: kernel over [8, 4]
// KERNELS-NOT: // part 3
// KERNELS: // fusion {{[0-9]+}} of @not_joined
func.func @sgd(%p: tensor<64xf32>, %g: tensor<64xf32>, %w: tensor<8x4xf32>, %gw: tensor<8x4xf32>) -> (tensor<64xf32>, tensor<8x4xf32>) attributes {ember.mutations = array<i64: 0, 2>} {
  %lr = ember.constant {wrapped_number} dense<0.1> : tensor<f64>
  %0 = ember.mul.Tensor %g, %lr : (tensor<64xf32>, tensor<f64>) -> tensor<64xf32>
  %1 = ember.sub.Tensor %p, %0 {alpha = 1 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %2 = ember.mul.Tensor %gw, %lr : (tensor<8x4xf32>, tensor<f64>) -> tensor<8x4xf32>
  %3 = ember.sub.Tensor %w, %2 {alpha = 1 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %1, %3 : tensor<64xf32>, tensor<8x4xf32>
}

// -----

// None of these joins: a fusion another op reads (%a, read by the mm), one
// that reads a value the function made (%c, of the mm: moving it later
// would hold that buffer longer), a reduction (%d), one with integer
// values (%e: an integer op may raise, and a combined kernel's parts run
// side by side with in-place writes). What is left is one candidate (%b),
// which stays as it was.
// CHECK-LABEL: func.func @not_joined
// CHECK-COUNT-5: ember.fusion(
// CHECK-NOT: ember.fusion(
// CHECK: return
func.func @not_joined(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>, %i: tensor<4x4xi64>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xi64>) {
  %a = ember.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = ember.mm %a, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = ember.cos %y : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = ember.sin %m : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %d0 = ember.tanh %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = ember.sum.dim_IntList %d0 {dim = array<i64: 1>} : (tensor<4x4xf32>) -> tensor<4xf32>
  %e = ember.neg %i : (tensor<4x4xi64>) -> tensor<4x4xi64>
  return %b, %c, %m, %d, %e : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>, tensor<4x4xi64>
}

// -----

// The parts of a combined kernel run side by side. With one op per fusion
// (max-ops=1) the sub and the cos are two fusions, combined: the update of
// %g (the second part) is not written into %g's buffer, which the first
// part reads (apart, it could be: the first has read %g by then); the
// first part's result is written into %p. With ordinary fusion both ops
// are one kernel, which reads %g at each point before writing it there.
// SHARED-LABEL: func.func @shared_input
// SHARED: ember.fusion(%arg0, %arg1) {ember.reuse = array<i64: 0, -1>}
// SHARED-COUNT-2: ember.fusion(
// SHARED-NOT: ember.reuse
// SHARED: return
// CHECK-LABEL: func.func @shared_input
// CHECK: ember.fusion(%arg0, %arg1) {ember.reuse = array<i64: 0, 1>}
// CHECK-NOT: ember.fusion(
// CHECK: return
func.func @shared_input(%p: tensor<64xf32>, %g: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) attributes {ember.mutations = array<i64: 0, 1>} {
  %0 = ember.sub.Tensor %p, %g {alpha = 1 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %1 = ember.cos %g : (tensor<64xf32>) -> tensor<64xf32>
  return %0, %1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// A joint graph's backward (ember-remat's, marked ember.recomputed)
// releases each argument at its last use: moving the first update to the
// second would hold %s1 longer. Nothing is combined there.
// CHECK-LABEL: func.func @backward
// CHECK-COUNT-2: ember.fusion(%arg
// CHECK-NOT: ember.fusion(
// CHECK: return
func.func @backward(%s1: tensor<64xf32>, %g1: tensor<64xf32>, %s2: tensor<32xf32>, %g2: tensor<32xf32>) -> (tensor<64xf32>, tensor<32xf32>) attributes {ember.recomputed = [], ember.recompute_flops = 0 : i64} {
  %0 = ember.mul.Tensor %s1, %g1 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %1 = ember.mul.Tensor %s2, %g2 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  return %0, %1 : tensor<64xf32>, tensor<32xf32>
}
