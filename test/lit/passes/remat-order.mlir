// RUN: ember-opt %s --ember-remat --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-remat="memory-budget=524288" --split-input-file | FileCheck %s --check-prefix=HALF

// An argument the graph writes (ember.mutations) holds its new value by the
// time the backward runs: the op that read its old value (x * 2) is never
// recomputed from it, its result is saved (1 MiB, over a budget of half a
// MiB: the least that works), where recomputing it would apply the
// mul twice. Found by an independent probe (a wrong gradient).
// CHECK-LABEL: func.func @written_forward(
// CHECK-SAME: {ember.saved = "ember.mul.Tensor"}
// CHECK-LABEL: func.func @written_backward(
// CHECK-NOT: ember.mul.Tensor %arg
// CHECK: return
// HALF-LABEL: func.func @written_forward(
// HALF-SAME: {ember.saved = "ember.mul.Tensor"}
// HALF-SAME: ember.over_budget
// HALF-SAME: ember.saved_bytes = 1048576
// HALF-LABEL: func.func @written_backward(
// HALF-SAME: ember.recomputed = []
func.func @written(%x: tensor<512x512xf32>, %w: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>) attributes {ember.forward_results = 2 : i64, ember.mutations = array<i64: 0>} {
  %two = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %x2 = ember.mul.Tensor %x, %two : (tensor<512x512xf32>, tensor<f64>) -> tensor<512x512xf32>
  %p = ember.mul.Tensor %x2, %w : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %p : (tensor<512x512xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %gw = ember.mul.Tensor %ge, %x2 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %x2, %gw : tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>
}

// -----

// An op with effects runs in the forward even when nothing reads its
// result, as eagerly (a custom op's side effect).
// CHECK-LABEL: func.func @dead_effect_forward(
// CHECK: ember.eager_call "ember::exp"
// CHECK: return
// CHECK-LABEL: func.func @dead_effect_backward(
// CHECK-NOT: ember.eager_call
// CHECK: return

func.func @dead_effect(%x: tensor<4xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<4xf32>) attributes {ember.forward_results = 1 : i64} {
  %e = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  %c = ember.cos %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = ember.sum %c : (tensor<4xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 4>} : (tensor<f32>) -> tensor<4xf32>
  %sn = ember.sin %x : (tensor<4xf32>) -> tensor<4xf32>
  %n = ember.neg %sn : (tensor<4xf32>) -> tensor<4xf32>
  %gx = ember.mul.Tensor %ge, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s, %gx : tensor<f32>, tensor<4xf32>
}

// -----

// Ops that only the backward needs run in the forward when that ends the
// life of what they read: relu's mask right after the exp, relu's last
// other reader (so relu's output is freed before the matmuls). A formula
// whose operand the forward still reads later (log of the sin, which the
// final multiply reads) waits until then, not to hold its result across
// the matmuls.
// CHECK-LABEL: func.func @order_forward(
// CHECK: %[[R:.*]] = ember.relu
// CHECK-NEXT: ember.exp %[[R]]
// CHECK-NEXT: ember.le.Tensor %[[R]]
// CHECK-NOT: ember.log
// CHECK: ember.mm
// CHECK-NOT: ember.log
// CHECK: ember.mm
// CHECK: ember.mul.Tensor
// CHECK-NEXT: ember.log

func.func @order(%x: tensor<64x64xf32>, %w: tensor<64x64xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<64x64xf32>) attributes {ember.forward_results = 1 : i64} {
  %a = ember.mm %x, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = ember.relu %a : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = ember.exp %r : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %t = ember.sin %h : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b1 = ember.mm %h, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %b2 = ember.mm %b1, %w : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = ember.mul.Tensor %t, %b2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = ember.sum %m : (tensor<64x64xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 64, 64>} : (tensor<f32>) -> tensor<64x64xf32>
  %z = ember.constant {wrapped_number} dense<0> : tensor<i64>
  %mask = ember.le.Tensor %r, %z : (tensor<64x64xf32>, tensor<i64>) -> tensor<64x64xi1>
  %mf = ember._to_copy %mask {dtype = f32} : (tensor<64x64xi1>) -> tensor<64x64xf32>
  %lt = ember.log %t : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %q = ember.mul.Tensor %lt, %b2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %q2 = ember.mul.Tensor %q, %mf : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %gx = ember.mul.Tensor %ge, %q2 : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %s, %gx : tensor<f32>, tensor<64x64xf32>
}
