// Folding (Note [Folding with eager]): a pure op whose operands are all
// small constants is evaluated by its eager kernel into a constant.

// RUN: ember-opt %s --canonicalize --split-input-file | FileCheck %s

// Two constants fold into their sum; the op is gone.
// CHECK-LABEL: func.func @fold_add
// CHECK-NEXT: %[[C:.*]] = ember.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_add() -> tensor<2xf32> {
  %a = ember.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = ember.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %0 = ember.add.Tensor %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A wrapped number folds as eager promotes it: the result stays f32.
// CHECK-LABEL: func.func @fold_wrapped
// CHECK-NEXT: %[[C:.*]] = ember.constant dense<[2.500000e+00, 3.500000e+00]> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_wrapped() -> tensor<2xf32> {
  %a = ember.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %c = ember.constant {wrapped_number} dense<1.5> : tensor<f64>
  %0 = ember.add.Tensor %a, %c : (tensor<2xf32>, tensor<f64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A wrapped number and a 0-dim constant of the same value stay two
// constants (Note [Wrapped numbers fold to scalars]): x * 2 is float32,
// x * tensor(2.0, float64) too (a 0-dim tensor does not promote x), but
// they are different calls.
// CHECK-LABEL: func.func @wrapped_stays_wrapped
// CHECK-DAG: %[[W:.*]] = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
// CHECK-DAG: %[[T:.*]] = ember.constant dense<2.000000e+00> : tensor<f64>
// CHECK-DAG: ember.mul.Tensor %arg0, %[[W]]
// CHECK-DAG: ember.mul.Tensor %arg0, %[[T]]
func.func @wrapped_stays_wrapped(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w = ember.constant {wrapped_number} dense<2.0> : tensor<f64>
  %one = ember.constant dense<1.0> : tensor<f64>
  %t = ember.add.Tensor %one, %one : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %0 = ember.mul.Tensor %x, %w : (tensor<3xf32>, tensor<f64>) -> tensor<3xf32>
  %1 = ember.mul.Tensor %x, %t : (tensor<3xf32>, tensor<f64>) -> tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// Chains fold through views, reductions and in-place ops.
// CHECK-LABEL: func.func @fold_chain
// CHECK-DAG: %[[C:.*]] = ember.constant dense<[6.000000e+00, 1.500000e+01]> : tensor<2xf64>
// CHECK-DAG: %[[I:.*]] = ember.constant dense<2> : tensor<2xi64>
// CHECK-NOT: ember.t
// CHECK: return %[[C]], %[[I]]
func.func @fold_chain() -> (tensor<2xf64>, tensor<2xi64>) {
  %a = ember.constant dense<[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]> : tensor<3x2xf64>
  %t = ember.t %a : (tensor<3x2xf64>) -> tensor<2x3xf64>
  %s = ember.sum.dim_IntList %t {dim = array<i64: 1>} : (tensor<2x3xf64>) -> tensor<2xf64>
  %v, %i = ember.max.dim %t {dim = 1 : i64} : (tensor<2x3xf64>) -> (tensor<2xf64>, tensor<2xi64>)
  %one = ember.constant {wrapped_number} dense<1> : tensor<i64>
  %r = ember.sub_.Tensor %s, %v {alpha = 0 : i64} : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  return %r, %i : tensor<2xf64>, tensor<2xi64>
}

// -----

// Every dtype goes through constants and back.
// CHECK-LABEL: func.func @fold_dtypes
// CHECK-DAG: ember.constant dense<[2.000000e+00, -3.000000e+00]> : tensor<2xf16>
// CHECK-DAG: ember.constant dense<[2.000000e+00, -3.000000e+00]> : tensor<2xbf16>
// CHECK-DAG: ember.constant dense<[2, 254]> : tensor<2xui8>
// CHECK-DAG: ember.constant dense<[2, -2]> : tensor<2xi8>
// CHECK-DAG: ember.constant dense<[false, true]> : tensor<2xi1>
// CHECK-NOT: ember.mul.Tensor
func.func @fold_dtypes() -> (tensor<2xf16>, tensor<2xbf16>, tensor<2xui8>, tensor<2xi8>, tensor<2xi1>) {
  %h = ember.constant dense<[1.0, -1.5]> : tensor<2xf16>
  %bf = ember.constant dense<[1.0, -1.5]> : tensor<2xbf16>
  %u = ember.constant dense<[1, 255]> : tensor<2xui8>
  %i = ember.constant dense<[1, -1]> : tensor<2xi8>
  %two = ember.constant {wrapped_number} dense<2> : tensor<i64>
  %0 = ember.mul.Tensor %h, %two : (tensor<2xf16>, tensor<i64>) -> tensor<2xf16>
  %1 = ember.mul.Tensor %bf, %two : (tensor<2xbf16>, tensor<i64>) -> tensor<2xbf16>
  %2 = ember.mul.Tensor %u, %two : (tensor<2xui8>, tensor<i64>) -> tensor<2xui8>
  %3 = ember.mul.Tensor %i, %two : (tensor<2xi8>, tensor<i64>) -> tensor<2xi8>
  %4 = ember.lt.Tensor %i, %u : (tensor<2xi8>, tensor<2xui8>) -> tensor<2xi1>
  return %0, %1, %2, %3, %4 : tensor<2xf16>, tensor<2xbf16>, tensor<2xui8>, tensor<2xi8>, tensor<2xi1>
}

// -----

// Large constants (more than 64 elements) are not folded.
// CHECK-LABEL: func.func @no_fold_large
// CHECK: ember.add.Tensor
func.func @no_fold_large() -> tensor<100xf32> {
  %a = ember.constant dense<1.0> : tensor<100xf32>
  %0 = ember.add.Tensor %a, %a : (tensor<100xf32>, tensor<100xf32>) -> tensor<100xf32>
  return %0 : tensor<100xf32>
}

// -----

// An op that eager would reject stays, to raise its error when it runs.
// CHECK-LABEL: func.func @no_fold_error
// CHECK: ember.index_select
func.func @no_fold_error() -> tensor<1xf32> {
  %a = ember.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %i = ember.constant dense<[7]> : tensor<1xi64>
  %0 = ember.index_select %a, %i {dim = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// Ops on non-constant values stay; unused pure ops are removed; eager calls
// (unknown side effects) stay.
// CHECK-LABEL: func.func @dce
// CHECK-NOT: ember.relu
// CHECK: ember.eager_call "ember::relu"
// CHECK: ember.neg
func.func @dce(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.eager_call "ember::relu"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = ember.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
