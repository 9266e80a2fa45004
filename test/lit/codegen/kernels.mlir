// Codegen reads the dialect: each ember.fusion becomes a typed kernel
// description (codegen/Kernel.h, KernelSpec) -- steps with op handles,
// folds and conversions, inputs with strides and extents over the
// iteration space. Every line of each kernel is matched (CHECK-NEXT), so
// any change to what a kernel computes fails the test (checked by hand: an
// edited stride or step fails it).

// RUN: ember-opt %s --ember-pipeline | ember-translate --emit=kernels | FileCheck %s

// A chain with a wrapped number (a constant of the kernel) and a Scalar
// argument (add's alpha): one step per op, each with its op handle.
// CHECK-LABEL: // fusion {{[0-9]+}} of @pointwise at
// CHECK-NEXT: kernel over [4, 8]
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = input 1 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %2 : f64 = constant 2
// CHECK-NEXT: %3 : f32 = ember::mul.Tensor(%0, %1) compute f32
// CHECK-NEXT: %4 : f32 = ember::add.Tensor(%3, %2, 3) compute f32
// CHECK-NEXT: %5 : f32 = ember::silu(%4) compute f32
// CHECK-NEXT: outputs %5
func.func @pointwise(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %0 = ember.mul.Tensor %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.add.Tensor %0, %c {alpha = 3 : i64} : (tensor<4x8xf32>, tensor<f64>) -> tensor<4x8xf32>
  %2 = ember.silu %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// Broadcast inputs are read with stride 0 along the dims they do not span:
// a row (strides [0, 1], extent [1, 8]) and a column ([1, 0], [4, 1]).
// CHECK-LABEL: // fusion {{[0-9]+}} of @broadcast at
// CHECK-NEXT: kernel over [4, 8]
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = input 1 strides [0, 1] extent [1, 8]
// CHECK-NEXT: %2 : f32 = input 2 strides [1, 0] extent [4, 1]
// CHECK-NEXT: %3 : f32 = ember::mul.Tensor(%0, %1) compute f32
// CHECK-NEXT: %4 : f32 = ember::sub.Tensor(%3, %2, 1) compute f32
// CHECK-NEXT: outputs %4
func.func @broadcast(%x: tensor<4x8xf32>, %row: tensor<8xf32>, %col: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = ember.mul.Tensor %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = ember.sub.Tensor %0, %col : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// Mixed dtypes: add promotes int32 into float16 (computed in float,
// Note [Reduced precision compute]), then a conversion step to bfloat16.
// CHECK-LABEL: // fusion {{[0-9]+}} of @conversion at
// CHECK-NEXT: kernel over [16]
// CHECK-NEXT: %0 : f16 = input 0 strides [1] extent [16]
// CHECK-NEXT: %1 : i32 = input 1 strides [1] extent [16]
// CHECK-NEXT: %2 : f16 = ember::add.Tensor(%0, %1, 1) compute f16
// CHECK-NEXT: %3 : bf16 = convert(%2) compute bf16
// CHECK-NEXT: outputs %3
func.func @conversion(%x: tensor<16xf16>, %i: tensor<16xi32>) -> tensor<16xbf16> {
  %0 = ember.add.Tensor %x, %i : (tensor<16xf16>, tensor<16xi32>) -> tensor<16xf16>
  %1 = ember._to_copy %0 {dtype = bf16} : (tensor<16xf16>) -> tensor<16xbf16>
  return %1 : tensor<16xbf16>
}

// Two results of one kernel: exp (also used by neg) and neg.
// CHECK-LABEL: // fusion {{[0-9]+}} of @multi_output at
// CHECK-NEXT: kernel over [4, 8]
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = ember::exp(%0) compute f32
// CHECK-NEXT: %2 : f32 = ember::neg(%1) compute f32
// CHECK-NEXT: outputs %1 %2
func.func @multi_output(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = ember.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.neg %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// The functional form of an in-place op (mul_) is a step like any other;
// the kernel writes a new result (the buffer plan decides reuse at run time).
// CHECK-LABEL: // fusion {{[0-9]+}} of @in_place at
// CHECK-NEXT: kernel over [4, 8]
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = input 1 strides [0, 1] extent [1, 8]
// CHECK-NEXT: %2 : f32 = ember::exp(%0) compute f32
// CHECK-NEXT: %3 : f32 = ember::mul_.Tensor(%2, %1) compute f32
// CHECK-NEXT: outputs %3
func.func @in_place(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = ember.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.mul_.Tensor %0, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// A reduction over the inner dim with a prologue (x * x) and an epilogue
// (sqrt over the kept points): sums accumulate in f64.
// CHECK-LABEL: // fusion {{[0-9]+}} of @inner_reduction at
// CHECK-NEXT: kernel over [4, 8] reducing dims 1
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = ember::mul.Tensor(%0, %0) compute f32
// CHECK-NEXT: %2 : f32 = sum(%1) acc f64 in f32
// CHECK-NEXT: %3 : f32 = ember::sqrt(%2) compute f32
// CHECK-NEXT: outputs %3
func.func @inner_reduction(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = ember.mul.Tensor %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.sum.dim_IntList %0 {dim = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = ember.sqrt %1 : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// A reduction over the outer dim, kept (keepdim): amax accumulates in the
// compute type of its dtype.
// CHECK-LABEL: // fusion {{[0-9]+}} of @outer_reduction at
// CHECK-NEXT: kernel over [4, 8] reducing dims 0
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = ember::abs(%0) compute f32
// CHECK-NEXT: %2 : f32 = amax(%1) acc f32 in f32
// CHECK-NEXT: outputs %2
func.func @outer_reduction(%x: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %0 = ember.abs %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = ember.amax %0 {dim = array<i64: 0>, keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  return %1 : tensor<1x8xf32>
}

// softmax decomposes (ember-decompose) into amax, sub, exp, sum and a
// division (canonicalized to a multiplication by the reciprocal): one kernel.
// CHECK-LABEL: // fusion {{[0-9]+}} of @softmax at
// CHECK-NEXT: kernel over [4, 8] reducing dims 1
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = amax(%0) acc f32 in f32
// CHECK-NEXT: %2 : f32 = ember::sub.Tensor(%0, %1, 1) compute f32
// CHECK-NEXT: %3 : f32 = ember::exp(%2) compute f32
// CHECK-NEXT: %4 : f32 = sum(%3) acc f64 in f32
// CHECK-NEXT: %5 : f32 = ember::reciprocal(%4) compute f32
// CHECK-NEXT: %6 : f32 = ember::mul.Tensor(%3, %5) compute f32
// CHECK-NEXT: outputs %6
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = ember.softmax.int %x {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// layer_norm as its ops: two means, the rest pointwise, weight and bias
// broadcast rows: one kernel.
// CHECK-LABEL: // fusion {{[0-9]+}} of @layer_norm at
// CHECK-NEXT: kernel over [4, 8] reducing dims 1
// CHECK-NEXT: %0 : f32 = input 0 strides [8, 1] extent [4, 8]
// CHECK-NEXT: %1 : f32 = input 1 strides [0, 1] extent [1, 8]
// CHECK-NEXT: %2 : f32 = input 2 strides [0, 1] extent [1, 8]
// CHECK-NEXT: %3 : f64 = constant 1.0000000000000001e-05
// CHECK-NEXT: %4 : f32 = mean(%0) acc f64 in f32
// CHECK-NEXT: %5 : f32 = ember::sub.Tensor(%0, %4, 1) compute f32
// CHECK-NEXT: %6 : f32 = ember::mul.Tensor(%5, %5) compute f32
// CHECK-NEXT: %7 : f32 = mean(%6) acc f64 in f32
// CHECK-NEXT: %8 : f32 = ember::add.Tensor(%7, %3, 1) compute f32
// CHECK-NEXT: %9 : f32 = ember::rsqrt(%8) compute f32
// CHECK-NEXT: %10 : f32 = ember::mul.Tensor(%5, %9) compute f32
// CHECK-NEXT: %11 : f32 = ember::mul.Tensor(%10, %1) compute f32
// CHECK-NEXT: %12 : f32 = ember::add.Tensor(%11, %2, 1) compute f32
// CHECK-NEXT: outputs %12
func.func @layer_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %eps = ember.constant {wrapped_number} dense<1.000000e-05> : tensor<f64>
  %m = ember.mean.dim %x {dim = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = ember.sub.Tensor %x, %m : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %d2 = ember.mul.Tensor %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %v = ember.mean.dim %d2 {dim = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = ember.add.Tensor %v, %eps : (tensor<4x1xf32>, tensor<f64>) -> tensor<4x1xf32>
  %r = ember.rsqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = ember.mul.Tensor %d, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %nw = ember.mul.Tensor %n, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y = ember.add.Tensor %nw, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// Note [Per-op capability]: the integer remainder (which must raise on a
// zero divisor) stays outside; the float chain around it is one kernel.
// CHECK-LABEL: // fusion {{[0-9]+}} of @capability at
// CHECK-NEXT: kernel over [6, 9]
// CHECK-NEXT: %0 : f32 = input 0 strides [9, 1] extent [6, 9]
// CHECK-NEXT: %1 : i64 = input 1 strides [9, 1] extent [6, 9]
// CHECK-NEXT: %2 : f64 = constant 0.5
// CHECK-NEXT: %3 : f32 = ember::mul.Tensor(%0, %0) compute f32
// CHECK-NEXT: %4 : f32 = ember::add.Tensor(%3, %1, 1) compute f32
// CHECK-NEXT: %5 : f32 = ember::mul.Tensor(%4, %2) compute f32
// CHECK-NEXT: %6 : f32 = ember::exp(%5) compute f32
// CHECK-NEXT: outputs %6
func.func @capability(%x: tensor<6x9xf32>, %i: tensor<6x9xi64>, %j: tensor<9xi64>) -> tensor<6x9xf32> {
  %h = ember.constant {wrapped_number} dense<5.000000e-01> : tensor<f64>
  %0 = ember.mul.Tensor %x, %x : (tensor<6x9xf32>, tensor<6x9xf32>) -> tensor<6x9xf32>
  %r = ember.remainder.Tensor %i, %j : (tensor<6x9xi64>, tensor<9xi64>) -> tensor<6x9xi64>
  %1 = ember.add.Tensor %0, %r : (tensor<6x9xf32>, tensor<6x9xi64>) -> tensor<6x9xf32>
  %2 = ember.mul.Tensor %1, %h : (tensor<6x9xf32>, tensor<f64>) -> tensor<6x9xf32>
  %3 = ember.exp %2 : (tensor<6x9xf32>) -> tensor<6x9xf32>
  return %3 : tensor<6x9xf32>
}

// A declaration has no fusions and is skipped.
// CHECK-LABEL: // fusion {{[0-9]+}} of @after_declaration at
// CHECK-NEXT: kernel over [4]
func.func private @declared(tensor<4xf32>) -> tensor<4xf32>
func.func @after_declaration(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
