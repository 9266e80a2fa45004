// RUN: ember-opt %s --ember-fuse-elementwise --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline="level=2" --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline="level=0" --split-input-file | FileCheck %s --check-prefix=O0

// A chain of pointwise ops with a broadcast operand and a wrapped number:
// one fusion, the number copied inside, nothing left outside.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[F:.*]] = ember.fusion(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[C:.*]] = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
// CHECK-NEXT: %[[M:.*]] = ember.mul.Tensor %[[X]], %[[W]]
// CHECK-NEXT: %[[A:.*]] = ember.add.Tensor %[[M]], %[[B]]
// CHECK-NEXT: %[[M2:.*]] = ember.mul.Tensor %[[A]], %[[C]]
// CHECK-NEXT: %[[S:.*]] = ember.silu %[[M2]]
// CHECK-NEXT: ember.yield %[[S]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// O0-LABEL: func.func @chain
// O0-NOT: ember.fusion
func.func @chain(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %0 = ember.mul.Tensor %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = ember.add.Tensor %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = ember.mul.Tensor %1, %c : (tensor<4x8xf32>, tensor<f64>) -> tensor<4x8xf32>
  %3 = ember.silu %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// A value used outside its consumers' fusion (by mm, and returned) is
// computed once, by its own fusion; the ops on each side of mm fuse apart.
// CHECK-LABEL: func.func @split_by_mm
// CHECK: %[[E:.*]] = ember.fusion(%arg0)
// CHECK: ember.exp
// CHECK-NOT: ember.relu
// CHECK: ember.yield
// CHECK: %[[MM:.*]] = ember.mm %[[E]], %arg1
// CHECK: %[[R:.*]] = ember.fusion(%[[MM]], %[[E]])
// CHECK: ember.relu
// CHECK: ember.add.Tensor
// CHECK: ember.yield
// CHECK: return %[[R]], %[[E]]
func.func @split_by_mm(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = ember.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = ember.mm %e, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = ember.relu %m : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = ember.add.Tensor %r, %e : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %s, %e : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A producer broadcast into a larger consumer is not recomputed for every
// element: exp over 8 elements stays its own fusion.
// CHECK-LABEL: func.func @no_broadcast_recompute
// CHECK: %[[E:.*]] = ember.fusion(%arg1) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: ember.exp
// CHECK: ember.fusion(%arg0, %[[E]]) : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
// CHECK-NOT: ember.exp
// CHECK: ember.mul.Tensor
func.func @no_broadcast_recompute(%x: tensor<64x8xf32>, %w: tensor<8xf32>) -> tensor<64x8xf32> {
  %e = ember.exp %w : (tensor<8xf32>) -> tensor<8xf32>
  %m = ember.mul.Tensor %x, %e : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
  return %m : tensor<64x8xf32>
}

// -----

// Diamonds fuse: both branches and their common input in one kernel.
// CHECK-LABEL: func.func @diamond
// CHECK: ember.fusion(%arg0)
// CHECK: ember.neg
// CHECK: ember.sigmoid
// CHECK: ember.tanh
// CHECK: ember.mul.Tensor
// CHECK: ember.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @diamond(%x: tensor<16xf32>) -> tensor<16xf32> {
  %n = ember.neg %x : (tensor<16xf32>) -> tensor<16xf32>
  %a = ember.sigmoid %n : (tensor<16xf32>) -> tensor<16xf32>
  %b = ember.tanh %n : (tensor<16xf32>) -> tensor<16xf32>
  %m = ember.mul.Tensor %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %m : tensor<16xf32>
}
