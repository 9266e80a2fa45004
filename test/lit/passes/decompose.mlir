// RUN: ember-opt %s --ember-decompose --split-input-file | FileCheck %s

// softmax becomes its decomposition (ops.yaml `decompose:`): a max, a shifted
// exp, a sum and a multiply by its reciprocal (as the kernel), each op
// carrying softmax's location.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: ember.softmax
// CHECK: %[[M:.*]] = ember.amax %arg0 {dim = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT: %[[S:.*]] = ember.sub.Tensor %arg0, %[[M]]
// CHECK-NEXT: %[[E:.*]] = ember.exp %[[S]]
// CHECK-NEXT: %[[T:.*]] = ember.sum.dim_IntList %[[E]] {dim = array<i64: 1>, keepdim = true}
// CHECK-NEXT: %[[R:.*]] = ember.reciprocal %[[T]]
// CHECK-NEXT: %[[Y:.*]] = ember.mul.Tensor %[[E]], %[[R]]
// CHECK-NEXT: return %[[Y]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = ember.softmax.int %x {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// log_softmax over dim 0, in float16: computed in float, converted back.
// CHECK-LABEL: func.func @log_softmax_f16
// CHECK-NOT: ember.log_softmax
// CHECK: %[[X:.*]] = ember._to_copy %arg0 {{.*}}dtype = f32
// CHECK-NEXT: ember.amax %[[X]] {dim = array<i64: 0>, keepdim = true}
// CHECK: ember.log
// CHECK: ember._to_copy {{.*}}dtype = f16
func.func @log_softmax_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = ember.log_softmax.int %x {dim = 0 : i64} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// var: mean, squared deviations summed, divided by N - correction (8 - 1),
// in double as the kernel (squares of large floats stay finite), then
// converted back.
// CHECK-LABEL: func.func @var
// CHECK-NOT: ember.var
// CHECK: %[[N:.*]] = ember.constant {wrapped_number} dense<7.000000e+00>
// CHECK: %[[X:.*]] = ember._to_copy %arg0 {{.*}}dtype = f64} : (tensor<4x8xf32>) -> tensor<4x8xf64>
// CHECK-NEXT: %[[M:.*]] = ember.mean.dim %[[X]] {dim = array<i64: 1>, keepdim = true}
// CHECK-NEXT: %[[D:.*]] = ember.sub.Tensor %[[X]], %[[M]]
// CHECK-NEXT: %[[D2:.*]] = ember.mul.Tensor %[[D]], %[[D]]
// CHECK-NEXT: %[[S:.*]] = ember.sum.dim_IntList %[[D2]] {dim = array<i64: 1>}
// CHECK-NEXT: %[[V:.*]] = ember.div.Tensor %[[S]], %[[N]]
// CHECK-NEXT: ember._to_copy %[[V]] {{.*}}dtype = f32} : (tensor<4xf64>) -> tensor<4xf32>
func.func @var(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = ember.var.correction %x {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// logsumexp: the shift is the max, or 0 where the max is infinite.
// CHECK-LABEL: func.func @logsumexp
// CHECK-NOT: ember.logsumexp
// CHECK: ember.amax
// CHECK: ember.where.self
// CHECK: ember.sum.dim_IntList
// CHECK: ember.log
func.func @logsumexp(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = ember.logsumexp %x {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A decomposition that declines its input leaves the op whole: logsumexp
// over an empty dim (-inf; amax would raise).
// CHECK-LABEL: func.func @empty
// CHECK-NEXT: ember.logsumexp
func.func @empty(%x: tensor<4x0xf32>) -> tensor<4xf32> {
  %0 = ember.logsumexp %x {dim = array<i64: 1>} : (tensor<4x0xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Ops without a decomposition are untouched.
// CHECK-LABEL: func.func @plain
// CHECK-NEXT: ember.sum.dim_IntList
// CHECK-NEXT: return
func.func @plain(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = ember.sum.dim_IntList %x {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Ops without a decomposition stay as they are, whatever their form: an
// eager_call returning a bool and an op with a data-dependent shape have no
// trace form, and the pass once tried to import them and failed on the
// whole function (found by ember-opt-fuzz).
// CHECK-LABEL: func.func @no_decomposition
// CHECK-NEXT: %[[E:.*]] = ember.eager_call "ember::equal"(%arg0, %arg0)
// CHECK-NEXT: %[[N:.*]] = ember.nonzero %arg0
// CHECK-NEXT: return %[[E]], %[[N]]
func.func @no_decomposition(%x: tensor<3xf32>) -> (i1, tensor<?x1xi64>) {
  %e = ember.eager_call "ember::equal"(%x, %x) {args = [#ember.operand<0>, #ember.operand<1>]} : (tensor<3xf32>, tensor<3xf32>) -> i1
  %n = ember.nonzero %x : (tensor<3xf32>) -> tensor<?x1xi64>
  return %e, %n : i1, tensor<?x1xi64>
}

// -----

// An op reading a wrapped number stays whole: its decomposition would promote
// the number as the ops it calls do (exp of the number 2.0 is f32), not as
// the kernel computes (f64), and the types it recorded did not verify once
// the number was back in place (found by ember-opt-fuzz).
// CHECK-LABEL: func.func @wrapped_number_operand
// CHECK-NEXT: %[[W:.*]] = ember.constant {wrapped_number}
// CHECK-NEXT: %[[R:.*]] = ember._log_softmax_backward_data %arg0, %[[W]]
// CHECK-NEXT: return %[[R]]
func.func @wrapped_number_operand(%g: tensor<f64>) -> tensor<f64> {
  %w = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %r = ember._log_softmax_backward_data %g, %w {dim = 0 : i64, input_dtype = f64} : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return %r : tensor<f64>
}
