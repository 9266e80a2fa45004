// CSE merges identical pure ops (Pure trait); eager calls are kept.
// Every line of the result is matched (CHECK-NEXT), so a second ember.exp
// fails the test (checked by hand: without --cse it fails).

// RUN: ember-opt %s --cse | FileCheck %s

// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %[[E:.*]] = ember.exp %arg0
// CHECK-NEXT:    %[[C0:.*]] = ember.eager_call "ember::exp"(%arg0)
// CHECK-NEXT:    %[[C1:.*]] = ember.eager_call "ember::exp"(%arg0)
// CHECK-NEXT:    return %[[E]], %[[E]], %[[C0]], %[[C1]] :
func.func @cse(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %2 = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
