// CSE merges identical pure ops (Pure trait); eager calls are kept.

// RUN: ember-opt %s --cse | FileCheck %s

// CHECK-LABEL: func.func @cse
// CHECK-COUNT-1: ember.exp
// CHECK-COUNT-2: ember.eager_call
// CHECK-NOT: ember.exp
func.func @cse(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
