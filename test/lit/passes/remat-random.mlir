// RUN: ember-opt %s --ember-remat | FileCheck %s
// RUN: ember-opt %s --ember-remat="memory-budget=0" | FileCheck %s --check-prefix=ZERO

// Note [Random ops in a compiled function] (eager/Factory.cpp): dropout's
// uniform numbers are a pure op of the generator's state, a (seed, offset)
// input. By default the forward saves the mask (bool, 256 KiB), as eager
// dropout does; under a budget of 0 the backward recomputes the numbers
// from the state (saved as an argument: free), so its mask is the
// forward's, and nothing else is saved.
// CHECK-LABEL: func.func @dropout_forward(
// CHECK-SAME: -> (tensor<f32>, tensor<512x512xi1> {ember.saved = "ember.lt.Tensor"})
// CHECK-SAME: ember.saved_bytes = 262144
// CHECK-LABEL: func.func @dropout_backward(
// CHECK-SAME: ember.recomputed = ["ember._to_copy", "ember.div.Tensor"]
// CHECK-NOT: ember._philox_uniform
// CHECK: return
// ZERO-LABEL: func.func @dropout_forward(
// ZERO-SAME: %[[FS:[^:]*]]: tensor<2xi64>)
// ZERO-SAME: -> (tensor<f32>, tensor<2xi64> {ember.saved = "argument 1"})
// ZERO-SAME: ember.saved_bytes = 0
// ZERO-NOT: ember.over_budget
// ZERO: ember._philox_uniform %[[FS]]
// ZERO: return %{{.*}}, %[[FS]] :
// ZERO-LABEL: func.func @dropout_backward(
// ZERO-SAME: %[[S:[^:]*]]: tensor<2xi64>
// ZERO-SAME: ember.recomputed = ["ember._philox_uniform", "ember.lt.Tensor", "ember._to_copy", "ember.div.Tensor"]
// ZERO: %[[U:.*]] = ember._philox_uniform %[[S]] {dtype = f32, size = array<i64: 512, 512>}
// ZERO: ember.lt.Tensor %[[U]]
// ZERO: return
func.func @dropout(%x: tensor<512x512xf32>, %state: tensor<2xi64>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<512x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %u = ember._philox_uniform %state {dtype = f32, size = array<i64: 512, 512>} : (tensor<2xi64>) -> tensor<512x512xf32>
  %h = ember.constant {wrapped_number} dense<5.000000e-01> : tensor<f64>
  %k = ember.lt.Tensor %u, %h : (tensor<512x512xf32>, tensor<f64>) -> tensor<512x512xi1>
  %m = ember._to_copy %k {dtype = f32} : (tensor<512x512xi1>) -> tensor<512x512xf32>
  %d = ember.div.Tensor %m, %h : (tensor<512x512xf32>, tensor<f64>) -> tensor<512x512xf32>
  %y = ember.mul.Tensor %x, %d : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %y : (tensor<512x512xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %gx = ember.mul.Tensor %ge, %d : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %gx : tensor<f32>, tensor<512x512xf32>
}
