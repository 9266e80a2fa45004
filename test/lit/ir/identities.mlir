// RUN: ember-opt %s --canonicalize --split-input-file | FileCheck %s
// The identities of ops.yaml (`identity:`), folded by canonicalize only
// where they are exact in the result's dtype (Note [Identities]).

// CHECK-LABEL: func.func @exact
// CHECK-NEXT: %[[X:.*]] = ember.exp %arg0
// CHECK-NEXT: %[[I:.*]] = ember.neg %arg1
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[I]], %[[X]] : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>
func.func @exact(%x0: tensor<4xf32>, %i0: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>) {
  %x = ember.exp %x0 : (tensor<4xf32>) -> tensor<4xf32>
  %i = ember.neg %i0 : (tensor<4xi64>) -> tensor<4xi64>
  %one = ember.constant {wrapped_number} dense<1.000000e+00> : tensor<f64>
  %zero = ember.constant {wrapped_number} dense<0> : tensor<i64>
  %nzero = ember.constant {wrapped_number} dense<-0.000000e+00> : tensor<f64>
  %e = ember.add.Tensor %x, %nzero : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  %a = ember.mul.Tensor %x, %one : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  %b = ember.sub.Tensor %x, %zero : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %c = ember.div.Tensor %x, %one : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  %d = ember.add.Tensor %i, %zero : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  return %a, %b, %c, %d, %e : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>
}

// -----

// An argument or a view may be laid out otherwise than the new contiguous
// tensor eager makes for x * 1 (a later view() would fail on it): kept.
// CHECK-LABEL: func.func @layouts
// CHECK: %[[T:.*]] = ember.t %arg0
// CHECK-NEXT: %[[A:.*]] = ember.mul.Tensor %arg0
// CHECK-NEXT: %[[B:.*]] = ember.mul.Tensor %[[T]]
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @layouts(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>) {
  %one = ember.constant {wrapped_number} dense<1.000000e+00> : tensor<f64>
  %t = ember.t %x : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %a = ember.mul.Tensor %x, %one : (tensor<3x4xf32>, tensor<f64>) -> tensor<3x4xf32>
  %b = ember.mul.Tensor %t, %one : (tensor<4x3xf32>, tensor<f64>) -> tensor<4x3xf32>
  return %a, %b : tensor<3x4xf32>, tensor<4x3xf32>
}

// -----

// x + 0 is +0.0 for x = -0.0: kept for floats. x - 2*0 and x / 1 of an
// integer tensor (a float result) are not x either; neither is a product
// that broadcasts.
// CHECK-LABEL: func.func @inexact
// CHECK: ember.add.Tensor
// CHECK: ember.sub.Tensor {{.*}}alpha = 2
// CHECK: ember.div.Tensor
// CHECK: ember.mul.Tensor
// CHECK: return
func.func @inexact(%x: tensor<4xf32>, %i: tensor<4xi64>, %r: tensor<1x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
  %zero = ember.constant {wrapped_number} dense<0> : tensor<i64>
  %one = ember.constant {wrapped_number} dense<1.000000e+00> : tensor<f64>
  %ones = ember.constant dense<1.000000e+00> : tensor<2x1xf32>
  %a = ember.add.Tensor %x, %zero : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %b = ember.sub.Tensor %x, %zero {alpha = 2 : i64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  %c = ember.div.Tensor %i, %one : (tensor<4xi64>, tensor<f64>) -> tensor<4xf32>
  %d = ember.mul.Tensor %r, %ones : (tensor<1x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
}

// -----

// View chains that give their root back: folded to the root (replayed on the
// shape rules); a chain that moves elements is kept.
// CHECK-LABEL: func.func @views
// CHECK-NEXT: %[[T:.*]] = ember.t %arg0
// CHECK-NEXT: return %arg0, %arg0, %arg0, %[[T]]
func.func @views(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) {
  %a = ember.t %x : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %b = ember.t %a : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %c = ember.unsqueeze %x {dim = 0 : i64} : (tensor<3x4xf32>) -> tensor<1x3x4xf32>
  %d = ember.squeeze.dim %c {dim = 0 : i64} : (tensor<1x3x4xf32>) -> tensor<3x4xf32>
  %e = ember.view %x {size = array<i64: 3, 4>} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %b, %d, %e, %a : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>
}

// -----

// A view of a view is one view (ops.yaml `composes`).
// CHECK-LABEL: func.func @view_of_view
// CHECK-NEXT: %[[V:.*]] = ember.view %arg0 {size = array<i64: 2, 6>} : (tensor<3x4xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: return %[[V]]
func.func @view_of_view(%x: tensor<3x4xf32>) -> tensor<2x6xf32> {
  %a = ember.view %x {size = array<i64: 12>} : (tensor<3x4xf32>) -> tensor<12xf32>
  %b = ember.view %a {size = array<i64: 2, 6>} : (tensor<12xf32>) -> tensor<2x6xf32>
  return %b : tensor<2x6xf32>
}

// -----

// A view of a wrapped number, or one plus zero, is a tensor: the ops reading
// it promote it as a tensor (atan of a f64 tensor is f64, of the number
// 2.0 f32), so it never folds to the number itself; the constant folder
// folds it to a plain constant instead. (Found by ember-opt-fuzz: the
// module no longer verified after canonicalize.)
// CHECK-LABEL: func.func @wrapped_number_root
// CHECK-NEXT: %[[A:.*]] = ember.constant dense<1.1071487177940904> : tensor<f64>
// CHECK-NEXT: %[[E:.*]] = ember.constant dense<2.000000e+00> : tensor<f64>
// CHECK-NEXT: %[[F:.*]] = ember.fmod.Tensor %[[E]], %arg0 : (tensor<f64>, tensor<i64>) -> tensor<f64>
// CHECK-NEXT: return %[[A]], %[[F]], %[[A]]
func.func @wrapped_number_root(%i: tensor<i64>) -> (tensor<f64>, tensor<f64>, tensor<f64>) {
  %w = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %s = ember.squeeze %w : (tensor<f64>) -> tensor<f64>
  %a = ember.atan %s : (tensor<f64>) -> tensor<f64>
  %e = ember.expand %w {implicit = true, size = array<i64>} : (tensor<f64>) -> tensor<f64>
  %f = ember.fmod.Tensor %e, %i : (tensor<f64>, tensor<i64>) -> tensor<f64>
  %nz = ember.constant dense<-0.000000e+00> : tensor<f64>
  %p = ember.add.Tensor %w, %nz : (tensor<f64>, tensor<f64>) -> tensor<f64>
  %t = ember.atan %p : (tensor<f64>) -> tensor<f64>
  return %a, %f, %t : tensor<f64>, tensor<f64>, tensor<f64>
}
