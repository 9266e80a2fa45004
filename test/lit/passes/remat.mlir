// RUN: ember-opt %s --ember-remat --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-remat="memory-budget=524288" --split-input-file | FileCheck %s --check-prefix=HALF
// RUN: ember-opt %s --ember-remat --ember-fuse-elementwise --split-input-file | FileCheck %s --check-prefix=FUSED

// Note [Partitioning the joint graph]: 512x512 float32 tensors are 1 MiB.
// cos -> mm -> sum. The backward reads cos(x) (the matmul's gradient for w)
// and sin(x). By default cos(x), which the forward writes to memory for the
// matmul anyway, is saved; sin(x) is recomputed from x (a primal: free).
// Under half a MiB nothing fits: cos is recomputed too, and no matmul.
// CHECK-LABEL: func.func @cos_mm_sum_forward(
// CHECK-SAME: -> (tensor<f32>, tensor<512x512xf32> {ember.saved = "argument 0"}, tensor<512x512xf32> {ember.saved = "argument 1"}, tensor<512x512xf32> {ember.saved = "ember.cos"})
// CHECK-SAME: ember.saved_bytes = 1048576
// CHECK: %[[C:.*]] = ember.cos %arg0
// CHECK: return %{{.*}}, %arg0, %arg1, %[[C]]
// CHECK-LABEL: func.func @cos_mm_sum_backward(
// CHECK-SAME: ember.recomputed = ["ember.t", "ember.t", "ember.sin", "ember.neg"]
// CHECK-NOT: ember.cos
// CHECK: return
// HALF-LABEL: func.func @cos_mm_sum_forward(
// HALF-SAME: -> (tensor<f32>, tensor<512x512xf32> {ember.saved = "argument 0"}, tensor<512x512xf32> {ember.saved = "argument 1"})
// HALF-SAME: ember.saved_bytes = 0
// HALF-LABEL: func.func @cos_mm_sum_backward(
// HALF-SAME: ember.recompute_flops = 786432
// HALF-SAME: ember.recomputed = ["ember.cos", "ember.t", "ember.t", "ember.sin", "ember.neg"]
// HALF-NOT: ember.eager_call
func.func @cos_mm_sum(%x: tensor<512x512xf32>, %w: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %c = ember.cos %x : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %m = ember.mm %c, %w : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %m : (tensor<512x512xf32>) -> tensor<f32>
  %gm = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %wt = ember.t %w : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gc = ember.mm %gm, %wt : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %ct = ember.t %c : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw = ember.mm %ct, %gm : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %sn = ember.sin %x : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns = ember.neg %sn : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gx = ember.mul.Tensor %gc, %ns : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %gx, %gw : tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>
}

// -----

// A pointwise chain fused into a reduction: the forward never writes its
// intermediates, so the default recomputes them from x rather than saving
// them (0 bytes saved).
// CHECK-LABEL: func.func @chain_forward(
// CHECK-SAME: -> (tensor<f32>, tensor<256xf32> {ember.saved = "argument 0"})
// CHECK-SAME: ember.saved_bytes = 0
// CHECK-LABEL: func.func @chain_backward(
// CHECK-SAME: ember.recomputed = ["ember.mul.Tensor", "ember.sin", "ember.exp", "ember.cos"]
// Fusion then runs on both halves: the recomputed chain and the gradient
// are one kernel reading x and the tangent.
// FUSED-LABEL: func.func @chain_backward(
// FUSED: ember.fusion(%arg0, %{{.*}})
// FUSED: ember.sin
// FUSED: ember.exp
// FUSED: ember.cos
// FUSED: ember.yield
// FUSED-NEXT: }
// FUSED-NEXT: return
func.func @chain(%x: tensor<256xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<256xf32>) attributes {ember.forward_results = 1 : i64} {
  %two = ember.constant {wrapped_number} dense<2.0> : tensor<f64>
  %a = ember.mul.Tensor %x, %two : (tensor<256xf32>, tensor<f64>) -> tensor<256xf32>
  %b = ember.sin %a : (tensor<256xf32>) -> tensor<256xf32>
  %c = ember.exp %b : (tensor<256xf32>) -> tensor<256xf32>
  %s = ember.sum %c : (tensor<256xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 256>} : (tensor<f32>) -> tensor<256xf32>
  %gb = ember.mul.Tensor %ge, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %ca = ember.cos %a : (tensor<256xf32>) -> tensor<256xf32>
  %ga = ember.mul.Tensor %gb, %ca : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
  %gx = ember.mul.Tensor %ga, %two : (tensor<256xf32>, tensor<f64>) -> tensor<256xf32>
  return %s, %gx : tensor<f32>, tensor<256xf32>
}

// -----

// An op with effects (a random op, captured as ember.eager_call) is never
// recomputed: its result is saved by default, and saved over a budget that
// cannot hold it (the smallest working set, marked ember.over_budget).
// CHECK-LABEL: func.func @effects_forward(
// CHECK-SAME: {ember.saved = "ember.eager_call"}
// CHECK-LABEL: func.func @effects_backward(
// CHECK-NOT: ember.eager_call
// CHECK: return
// HALF-LABEL: func.func @effects_forward(
// HALF-SAME: {ember.saved = "ember.eager_call"}
// HALF-SAME: ember.over_budget
// HALF-SAME: ember.saved_bytes = 1048576
// HALF-LABEL: func.func @effects_backward(
// HALF-NOT: ember.eager_call
// HALF: return
func.func @effects(%x: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<512x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %r = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %y = ember.mul.Tensor %x, %r : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %y : (tensor<512x512xf32>) -> tensor<f32>
  %ge = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %gx = ember.mul.Tensor %ge, %r : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %gx : tensor<f32>, tensor<512x512xf32>
}

// -----

// A backward op no gradient needs is dropped, and what it read is not
// saved: %r (an op with effects) fed only a dead multiply. A tangent
// marked `= false` is a primal.
// CHECK-LABEL: func.func @dead_backward_forward(
// CHECK-SAME: -> (tensor<1024xf32>, tensor<1024xf32> {ember.saved = "argument 0"})
// CHECK-SAME: ember.saved_bytes = 0
// CHECK-LABEL: func.func @dead_backward_backward(%arg0: tensor<1024xf32>, %arg1: tensor<1024xf32>)
// CHECK-NEXT: ember.mul.Tensor %arg1, %arg0
// CHECK-NEXT: return
// HALF-LABEL: func.func @dead_backward_forward(
// HALF-NOT: ember.over_budget
// HALF-SAME: ember.saved_bytes = 0
func.func @dead_backward(%x: tensor<1024xf32>, %p: tensor<1024xf32> {ember.tangent = false}, %g: tensor<1024xf32> {ember.tangent})
    -> (tensor<1024xf32>, tensor<1024xf32>) attributes {ember.forward_results = 1 : i64} {
  %r = ember.eager_call "ember::exp"(%x) {args = [#ember.operand<0>]} : (tensor<1024xf32>) -> tensor<1024xf32>
  %y = ember.mul.Tensor %x, %p : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %dead = ember.mul.Tensor %g, %r : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %gx = ember.mul.Tensor %g, %x : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  return %y, %gx : tensor<1024xf32>, tensor<1024xf32>
}
