// RUN: ember-opt %s --ember-fuse-elementwise --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline="level=2" --split-input-file | FileCheck %s
// RUN: ember-opt %s --ember-pipeline="level=0" --split-input-file | FileCheck %s --check-prefix=O0

// A chain of pointwise ops with a broadcast operand and a wrapped number:
// one fusion, the number copied inside, nothing left outside.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[F:.*]] = ember.fusion(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<4x8xf32>):
// CHECK-NEXT: %[[C:.*]] = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
// CHECK-NEXT: %[[M:.*]] = ember.mul.Tensor %[[X]], %[[W]]
// CHECK-NEXT: %[[A:.*]] = ember.add.Tensor %[[M]], %[[B]]
// CHECK-NEXT: %[[M2:.*]] = ember.mul.Tensor %[[A]], %[[C]]
// CHECK-NEXT: %[[S:.*]] = ember.silu %[[M2]]
// CHECK-NEXT: ember.yield %[[S]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// O0-LABEL: func.func @chain
// O0-NOT: ember.fusion
func.func @chain(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %0 = ember.mul.Tensor %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = ember.add.Tensor %0, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = ember.mul.Tensor %1, %c : (tensor<4x8xf32>, tensor<f64>) -> tensor<4x8xf32>
  %3 = ember.silu %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// A value used outside its consumers' fusion (by mm, and returned) is
// computed once, by its own fusion; the ops on each side of mm fuse apart.
// CHECK-LABEL: func.func @split_by_mm
// CHECK: %[[E:.*]] = ember.fusion(%arg0)
// CHECK: ember.exp
// CHECK-NOT: ember.relu
// CHECK: ember.yield
// CHECK: %[[MM:.*]] = ember.mm %[[E]], %arg1
// CHECK: %[[R:.*]] = ember.fusion(%[[MM]], %[[E]])
// CHECK: ember.relu
// CHECK: ember.add.Tensor
// CHECK: ember.yield
// CHECK: return %[[R]], %[[E]]
func.func @split_by_mm(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = ember.exp %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %m = ember.mm %e, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = ember.relu %m : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = ember.add.Tensor %r, %e : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %s, %e : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A producer broadcast into a larger consumer is not recomputed for every
// element: exp over 8 elements stays its own fusion.
// CHECK-LABEL: func.func @no_broadcast_recompute
// CHECK: %[[E:.*]] = ember.fusion(%arg1) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK: ember.exp
// CHECK: ember.fusion(%arg0, %[[E]]) : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
// CHECK-NOT: ember.exp
// CHECK: ember.mul.Tensor
func.func @no_broadcast_recompute(%x: tensor<64x8xf32>, %w: tensor<8xf32>) -> tensor<64x8xf32> {
  %e = ember.exp %w : (tensor<8xf32>) -> tensor<8xf32>
  %m = ember.mul.Tensor %x, %e : (tensor<64x8xf32>, tensor<8xf32>) -> tensor<64x8xf32>
  return %m : tensor<64x8xf32>
}

// -----

// Diamonds fuse: both branches and their common input in one kernel.
// CHECK-LABEL: func.func @diamond
// CHECK: ember.fusion(%arg0)
// CHECK: ember.neg
// CHECK: ember.sigmoid
// CHECK: ember.tanh
// CHECK: ember.mul.Tensor
// CHECK: ember.yield
// CHECK-NEXT: }
// CHECK-NEXT: return
func.func @diamond(%x: tensor<16xf32>) -> tensor<16xf32> {
  %n = ember.neg %x : (tensor<16xf32>) -> tensor<16xf32>
  %a = ember.sigmoid %n : (tensor<16xf32>) -> tensor<16xf32>
  %b = ember.tanh %n : (tensor<16xf32>) -> tensor<16xf32>
  %m = ember.mul.Tensor %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %m : tensor<16xf32>
}

// -----

// Reductions are fusion roots: softmax (after ember-decompose) is one
// fusion holding both folds, their prologues and the epilogue.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT: %[[F:.*]] = ember.fusion(%arg0) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: ember.amax
// CHECK: ember.exp
// CHECK: ember.sum.dim_IntList
// CHECK: ember.reciprocal
// CHECK: ember.mul.Tensor
// CHECK-NEXT: ember.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// O0-LABEL: func.func @softmax
// O0-NEXT: ember.amax
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = ember.amax %x {dim = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %s = ember.sub.Tensor %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = ember.exp %s : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = ember.sum.dim_IntList %e {dim = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r = ember.reciprocal %t : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %y = ember.mul.Tensor %e, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A reduction with a pointwise prologue and an epilogue at the reduced
// shape (without keepdim): one fusion.
// CHECK-LABEL: func.func @sum_epilogue
// CHECK-NEXT: ember.fusion(%arg0, %arg1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.mul.Tensor
// CHECK-NEXT: ember.sum.dim_IntList
// CHECK-NEXT: ember.sqrt
// CHECK-NEXT: ember.yield
func.func @sum_epilogue(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = ember.mul.Tensor %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.sum.dim_IntList %0 {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = ember.sqrt %1 : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Reductions over other dims of the same tensor are separate kernels; the
// value both read is computed once: by the first, which also returns it.
// CHECK-LABEL: func.func @two_domains
// CHECK: %[[F:.*]]:2 = ember.fusion(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.exp
// CHECK-NEXT: ember.sum.dim_IntList {{.*}}dim = array<i64: 0>
// CHECK-NEXT: ember.yield
// CHECK: ember.fusion(%[[F]]#0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.sum.dim_IntList {{.*}}dim = array<i64: 1>
func.func @two_domains(%x: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4xf32>) {
  %e = ember.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = ember.sum.dim_IntList %e {dim = array<i64: 0>} : (tensor<4x8xf32>) -> tensor<8xf32>
  %1 = ember.sum.dim_IntList %e {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<8xf32>, tensor<4xf32>
}

// -----

// Horizontal: two chains reading the same input become one fusion with two
// results (the input is read once).
// CHECK-LABEL: func.func @siblings
// CHECK-NEXT: %[[F:.*]]:2 = ember.fusion(%arg0) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
// CHECK: ember.exp
// CHECK: ember.neg
// CHECK: ember.yield
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @siblings(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0 = ember.exp %x : (tensor<16xf32>) -> tensor<16xf32>
  %1 = ember.neg %x : (tensor<16xf32>) -> tensor<16xf32>
  return %0, %1 : tensor<16xf32>, tensor<16xf32>
}

// -----

// Conversions on one device (ops with the Conversion trait) fuse as
// pointwise steps.
// CHECK-LABEL: func.func @conversion
// CHECK-NEXT: ember.fusion(%arg0)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember._to_copy
// CHECK-NEXT: ember.exp
// CHECK-NEXT: ember._to_copy
// CHECK-NEXT: ember.yield
func.func @conversion(%x: tensor<8xf16>) -> tensor<8xf16> {
  %0 = ember._to_copy %x {device = #ember.device<"cpu">, dtype = f32} : (tensor<8xf16>) -> tensor<8xf32>
  %1 = ember.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = ember._to_copy %1 {device = #ember.device<"cpu">, dtype = f16} : (tensor<8xf32>) -> tensor<8xf16>
  return %2 : tensor<8xf16>
}

// -----

// Note [Reduction fusion] (ir/Domain.h): a sum over dim 1 without keepdim
// ([2, 2] from [2, 2, 2]) indexes the kept dims 0 and 2, but `x + s`
// broadcasts s along dims 1 and 2: the add reads s otherwise than a kernel
// over the sum's domain would index it, so it stays out of the sum's fusion
// (its own fusion, on the sum's result). A sum over the leading dim reads
// the same either way: it fuses.
// CHECK-LABEL: func.func @kept_form_read_along_other_dims
// CHECK: %[[S:.*]] = ember.fusion(%arg0) : (tensor<2x2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.sum.dim_IntList
// CHECK-NEXT: ember.yield
// CHECK: ember.fusion(%arg0, %[[S]]) : (tensor<2x2x2xf32>, tensor<2x2xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.add.Tensor
// CHECK-NEXT: ember.yield
func.func @kept_form_read_along_other_dims(%x: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %s = ember.sum.dim_IntList %x {dim = array<i64: 1>} : (tensor<2x2x2xf32>) -> tensor<2x2xf32>
  %r = ember.add.Tensor %x, %s : (tensor<2x2x2xf32>, tensor<2x2xf32>) -> tensor<2x2x2xf32>
  return %r : tensor<2x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @kept_form_of_leading_dim
// CHECK: ember.fusion(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.sum.dim_IntList
// CHECK-NEXT: ember.add.Tensor
// CHECK-NEXT: ember.yield
// CHECK-NOT: ember.fusion
func.func @kept_form_of_leading_dim(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = ember.sum.dim_IntList %x {dim = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  %r = ember.add.Tensor %x, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// A kernel input is read right-aligned, as broadcasting reads it: the
// weight [4] of a square [4, 4] layer_norm is a row even though it has the
// shape of the kept points (Note [Reduction fusion]), so the normalization
// and the affine are one fusion.
// CHECK-LABEL: func.func @square_affine
// CHECK: ember.fusion(%arg0, %arg1) : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.mean.dim
// CHECK-NEXT: ember.sub.Tensor
// CHECK-NEXT: ember.mul.Tensor
// CHECK-NEXT: ember.yield
// CHECK-NOT: ember.fusion
func.func @square_affine(%x: tensor<4x4xf32>, %w: tensor<4xf32>) -> tensor<4x4xf32> {
  %m = ember.mean.dim %x {dim = array<i64: 1>, keepdim = true} : (tensor<4x4xf32>) -> tensor<4x1xf32>
  %d = ember.sub.Tensor %x, %m : (tensor<4x4xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
  %y = ember.mul.Tensor %d, %w : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// Two reductions' results read by one op: they are the kernel's own values
// only when both join the group, so the group forms with both at once.
// CHECK-LABEL: func.func @two_reductions_one_reader
// CHECK: ember.fusion(%arg0, %arg1) : (tensor<6x5x3xf32>, tensor<6x5x3xf32>) -> tensor<5xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ember.mean.dim
// CHECK-NEXT: ember.amin
// CHECK-NEXT: ember.sub.Tensor
// CHECK-NEXT: ember.yield
// CHECK-NOT: ember.fusion
func.func @two_reductions_one_reader(%x: tensor<6x5x3xf32>, %y: tensor<6x5x3xf32>) -> tensor<5xf32> {
  %m = ember.mean.dim %x {dim = array<i64: 0, 2>} : (tensor<6x5x3xf32>) -> tensor<5xf32>
  %a = ember.amin %y {dim = array<i64: 0, 2>} : (tensor<6x5x3xf32>) -> tensor<5xf32>
  %s = ember.sub.Tensor %m, %a : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  return %s : tensor<5xf32>
}

// -----

// A declaration (no body) beside a definition: skipped, not a crash; the
// definition still fuses. ember-translate skips it too (codegen/kernels.mlir).
// CHECK-LABEL: func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @defined
// CHECK-NEXT: ember.fusion
// O0-LABEL: func.func private @declared
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
func.func @defined(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
