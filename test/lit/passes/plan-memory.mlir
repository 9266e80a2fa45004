// RUN: ember-opt %s --ember-plan-memory --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline="level=2 inplace-buffers=false" --split-input-file | FileCheck %s --check-prefix=OFF

// The matmul's result dies at the fusion, which has a result of its type:
// the fusion writes into it.
// CHECK-LABEL: func.func @epilogue
// CHECK: ember.fusion(%{{.*}}, %arg2) {ember.reuse = array<i64: 0>}
// OFF-LABEL: func.func @epilogue
// OFF-NOT: ember.reuse
func.func @epilogue(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = ember.mm %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = ember.fusion(%0, %c) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> {
  ^bb0(%x: tensor<4x16xf32>, %y: tensor<16xf32>):
    %2 = ember.add.Tensor %x, %y {alpha = 1 : i64} : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    %3 = ember.relu %2 : (tensor<4x16xf32>) -> tensor<4x16xf32>
    ember.yield %3 : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}

// -----

// No reuse of: an argument (the caller's), a value read again later, an
// input of another type; each input serves one result at most.
// CHECK-LABEL: func.func @not_reused
// CHECK-NOT: ember.reuse
func.func @not_reused(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = ember.mm %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %h = ember.mm %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %hh = ember._to_copy %h {dtype = f16} : (tensor<4x4xf32>) -> tensor<4x4xf16>
  %r:2 = ember.fusion(%a, %m, %hh) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf16>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  ^bb0(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>, %z: tensor<4x4xf16>):
    %0 = ember.mul.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = ember.add.Tensor %0, %z {alpha = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf16>) -> tensor<4x4xf32>
    ember.yield %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
  }
  return %r#0, %r#1, %m : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// In a reduction kernel, a result of the kept points does not reuse an
// input of its type: that input may be a row read at every point (here
// %m, [4], broadcast along dim 1 of the [4, 4] space), which the kernel
// would overwrite while later rows still read it. The full-space result
// may reuse a full-space input.
// CHECK-LABEL: func.func @kept_points_result
// CHECK: ember.fusion(%{{.*}}, %{{.*}}) {ember.reuse = array<i64: 0, -1>}
// OFF-LABEL: func.func @kept_points_result
// OFF-NOT: ember.reuse
func.func @kept_points_result(%a: tensor<4x4xf32>, %v: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  %x = ember.mm %a, %a : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = ember.mean.dim %v {dim = array<i64: 0>} : (tensor<4x4xf32>) -> tensor<4xf32>
  %r:2 = ember.fusion(%x, %m) : (tensor<4x4xf32>, tensor<4xf32>) -> (tensor<4x4xf32>, tensor<4xf32>) {
  ^bb0(%xx: tensor<4x4xf32>, %mm: tensor<4xf32>):
    %0 = ember.sub.Tensor %xx, %mm : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
    %1 = ember.sum.dim_IntList %xx {dim = array<i64: 1>} : (tensor<4x4xf32>) -> tensor<4xf32>
    ember.yield %0, %1 : tensor<4x4xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4x4xf32>, tensor<4xf32>
}

// -----

// An optimizer's update: the graph writes its result into the argument
// (ember.mutations), so the fusion writes it there directly (argument 0
// for the parameter, 2 for the momentum buffer) instead of a new buffer
// copied in after the graph.
// CHECK-LABEL: func.func @sgd_momentum
// CHECK: ember.fusion(%arg0, %arg1, %arg2) {ember.reuse = array<i64: 0, 2>}
func.func @sgd_momentum(%p: tensor<64xf32>, %g: tensor<64xf32>, %buf: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) attributes {ember.mutations = array<i64: 0, 2>} {
  %r:2 = ember.fusion(%p, %g, %buf) : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>, %b: tensor<64xf32>):
    %m = ember.mul.Tensor %b, %y : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %b2 = ember.add.Tensor %m, %y {alpha = 1 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %x2 = ember.sub.Tensor %x, %b2 {alpha = 1 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    ember.yield %x2, %b2 : tensor<64xf32>, tensor<64xf32>
  }
  return %r#0, %r#1 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Not when the argument's old value is read after the fusion (%p), or
// through a view (%s), or when what the graph writes into it is not the
// fusion's result (%q gets the negation of one).
// CHECK-LABEL: func.func @not_overwritten
// CHECK-NOT: ember.reuse
// CHECK: return
func.func @not_overwritten(%p: tensor<64xf32>, %q: tensor<64xf32>, %s: tensor<8x8xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x8xf32>) attributes {ember.mutations = array<i64: 0, 1, 2>} {
  %v = ember.view %s {size = array<i64: 64>} : (tensor<8x8xf32>) -> tensor<64xf32>
  %r:2 = ember.fusion(%p, %q, %v) : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  ^bb0(%x: tensor<64xf32>, %y: tensor<64xf32>, %z: tensor<64xf32>):
    %a = ember.add.Tensor %x, %y {alpha = 1 : i64} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %b = ember.mul.Tensor %a, %z : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    ember.yield %a, %b : tensor<64xf32>, tensor<64xf32>
  }
  %late = ember.neg %p : (tensor<64xf32>) -> tensor<64xf32>
  %vv = ember.neg %v : (tensor<64xf32>) -> tensor<64xf32>
  %nq = ember.neg %r#1 : (tensor<64xf32>) -> tensor<64xf32>
  %s2 = ember.view %r#1 {size = array<i64: 8, 8>} : (tensor<64xf32>) -> tensor<8x8xf32>
  return %late, %vv, %r#0, %nq, %s2 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<8x8xf32>
}

// -----

// Not when an op that may raise follows (here any op that is not a fusion
// of floating values, a view or a constant): a graph that raises has
// written none of its arguments (Note [What compile() may change]).
// CHECK-LABEL: func.func @may_raise_after
// CHECK-NOT: ember.reuse
// CHECK: return
func.func @may_raise_after(%p: tensor<8x8xf32>, %g: tensor<8x8xf32>, %i: tensor<8xi64>, %d: tensor<8xi64>) -> (tensor<8xi64>, tensor<8x8xf32>) attributes {ember.mutations = array<i64: 0>} {
  %r = ember.fusion(%p, %g) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>):
    %a = ember.sub.Tensor %x, %y {alpha = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    ember.yield %a : tensor<8x8xf32>
  }
  %q = ember.fusion(%i, %d) : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64> {
  ^bb0(%x: tensor<8xi64>, %y: tensor<8xi64>):
    %b = ember.remainder.Tensor %x, %y : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
    ember.yield %b : tensor<8xi64>
  }
  return %q, %r : tensor<8xi64>, tensor<8x8xf32>
}

// -----

// Nor when a later fusion computes integers inside (an integer remainder
// raises on a zero divisor), though its inputs and results are floating.
// Found by an independent probe.
// CHECK-LABEL: func.func @int_inside
// CHECK-NOT: ember.reuse
// CHECK: return
func.func @int_inside(%p: tensor<8xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<8xf32>) attributes {ember.mutations = array<i64: 0>} {
  %r = ember.fusion(%p) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%x: tensor<8xf32>):
    %n = ember.neg %x : (tensor<8xf32>) -> tensor<8xf32>
    ember.yield %n : tensor<8xf32>
  }
  %q = ember.fusion(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %xi = ember._to_copy %x {dtype = i64} : (tensor<4xf32>) -> tensor<4xi64>
    %yi = ember._to_copy %y {dtype = i64} : (tensor<4xf32>) -> tensor<4xi64>
    %m = ember.remainder.Tensor %xi, %yi : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    %f = ember._to_copy %m {dtype = f32} : (tensor<4xi64>) -> tensor<4xf32>
    ember.yield %f : tensor<4xf32>
  }
  return %q, %r : tensor<4xf32>, tensor<8xf32>
}

// -----

// A malformed ember.mutations (more entries than results) is not planned
// from (it used to crash the pass). Found by an independent probe.
// CHECK-LABEL: func.func @too_many
// CHECK-NOT: ember.reuse
// CHECK: return
func.func @too_many(%p: tensor<8xf32>) -> tensor<8xf32> attributes {ember.mutations = array<i64: 0, 0>} {
  %r = ember.fusion(%p) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%x: tensor<8xf32>):
    %a = ember.neg %x : (tensor<8xf32>) -> tensor<8xf32>
    ember.yield %a : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
