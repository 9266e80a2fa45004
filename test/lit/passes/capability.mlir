// Note [Per-op capability] (passes/FusionTarget.h): ember-fuse-elementwise
// asks its target, per op, whether the code generator computes it. The CPU
// generator does not take an integer remainder (a zero divisor must raise,
// which only the eager kernel checks): it stays outside, and the float
// chain around it is one fusion. With target=any, everything fuses.

// RUN: ember-opt %s --ember-fuse-elementwise | FileCheck %s
// RUN: ember-opt %s --ember-fuse-elementwise=target=any | FileCheck %s --check-prefix=ANY
// RUN: not ember-opt %s --ember-fuse-elementwise=target=nope 2>&1 | FileCheck %s --check-prefix=NOPE

// CHECK-LABEL: func.func @remainder_in_a_float_chain
// CHECK-NEXT: %[[R:.*]] = ember.remainder.Tensor %arg1, %arg2
// CHECK-NEXT: %[[F:.*]] = ember.fusion(%arg0, %[[R]]) : (tensor<6x9xf32>, tensor<6x9xi64>) -> tensor<6x9xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.constant {wrapped_number}
// CHECK-NEXT: ember.mul.Tensor
// CHECK-NEXT: ember.add.Tensor
// CHECK-NEXT: ember.mul.Tensor
// CHECK-NEXT: ember.exp
// CHECK-NEXT: ember.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]

// ANY-LABEL: func.func @remainder_in_a_float_chain
// ANY-NEXT: %[[F:.*]] = ember.fusion(%arg0, %arg1, %arg2)
// ANY: ember.remainder.Tensor
// ANY: ember.yield
// ANY-NEXT: }
// ANY-NEXT: return %[[F]]

// NOPE: no fusion target named 'nope' (registered: any, auto, cpu, cuda)
func.func @remainder_in_a_float_chain(%x: tensor<6x9xf32>, %i: tensor<6x9xi64>, %j: tensor<9xi64>) -> tensor<6x9xf32> {
  %h = ember.constant {wrapped_number} dense<5.000000e-01> : tensor<f64>
  %0 = ember.mul.Tensor %x, %x : (tensor<6x9xf32>, tensor<6x9xf32>) -> tensor<6x9xf32>
  %r = ember.remainder.Tensor %i, %j : (tensor<6x9xi64>, tensor<9xi64>) -> tensor<6x9xi64>
  %1 = ember.add.Tensor %0, %r : (tensor<6x9xf32>, tensor<6x9xi64>) -> tensor<6x9xf32>
  %2 = ember.mul.Tensor %1, %h : (tensor<6x9xf32>, tensor<f64>) -> tensor<6x9xf32>
  %3 = ember.exp %2 : (tensor<6x9xf32>) -> tensor<6x9xf32>
  return %3 : tensor<6x9xf32>
}
