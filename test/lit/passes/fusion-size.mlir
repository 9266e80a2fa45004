// RUN: ember-opt %s --ember-fuse-elementwise="max-ops=2 target=any" | FileCheck %s
// RUN: ember-opt %s --ember-fuse-elementwise | FileCheck %s --check-prefix=ONE

// Note [Fusion size]: a fusion holds at most max-ops ops, so a 5-op chain
// with max-ops=2 becomes fusions of 2, 2 and 1 ops, each reading the last
// (target=any weighs every op 1; the CPU target's weights, from its scalar
// library, are tested in test_codegen).
// CHECK-LABEL: func.func @chain
// CHECK: %[[F0:.*]] = ember.fusion(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.neg
// CHECK-NEXT: ember.exp
// CHECK-NEXT: ember.yield
// CHECK: %[[F1:.*]] = ember.fusion(%[[F0]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.neg
// CHECK-NEXT: ember.exp
// CHECK-NEXT: ember.yield
// CHECK: %[[F2:.*]] = ember.fusion(%[[F1]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.neg
// CHECK-NEXT: ember.yield
// CHECK-NOT: ember.fusion
// CHECK: return %[[F2]]
// ONE-LABEL: func.func @chain
// ONE-COUNT-1: ember.fusion
// ONE-NOT: ember.fusion
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ember.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = ember.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = ember.neg %1 : (tensor<8xf32>) -> tensor<8xf32>
  %3 = ember.exp %2 : (tensor<8xf32>) -> tensor<8xf32>
  %4 = ember.neg %3 : (tensor<8xf32>) -> tensor<8xf32>
  return %4 : tensor<8xf32>
}
