// The CUDA C renderer (codegen/CudaRender.h, Note [CUDA kernels from the
// kernel description]): each ember.fusion of CUDA values, fused for the
// "cuda" target, printed as the kernel NVRTC compiles (after the device
// prelude and the op functors). cuda-nvrtc.test compiles these kernels.

// RUN: ember-opt %s --ember-decompose --ember-fuse-elementwise=target=cuda | FileCheck %s --check-prefix=FUSE
// RUN: ember-opt %s --ember-decompose --ember-fuse-elementwise=target=cuda | ember-translate --emit=cuda | FileCheck %s
// RUN: ember-opt %s --ember-fuse-elementwise=target=cpu | ember-translate --emit=cuda | FileCheck %s --check-prefix=ONCPU
// RUN: ember-opt %s --ember-decompose --ember-fuse-elementwise=target=auto | ember-translate --emit=kernels | FileCheck %s --check-prefix=AUTO

// A chain with a wrapped number (a literal of the kernel, converted to the
// compute type where it is read) and a Scalar argument (add's alpha, a field
// of the functor in the compute type). Contiguous: four floats a thread,
// loaded and stored as one 16-byte vector when every pointer is aligned,
// else (and for the tail) one at a time.
// CHECK-LABEL: // fusion {{[0-9]+}} of @chain
// CHECK-NEXT: // kernel [[K:ember_cuda_[0-9a-f]+]]: block 256, blocks 1, 32-bit indices, vector 4; functors: mul_Tensor_op add_Tensor_op silu_op
// CHECK: extern "C" __global__ void __launch_bounds__(256) [[K]](float *__restrict__ out0, const float *__restrict__ in0, const float *__restrict__ in1) {
// CHECK-NEXT: typedef int index_t;
// CHECK-NEXT: const fn::mul_Tensor_op<float> f3{};
// CHECK-NEXT: const fn::add_Tensor_op<float> f4{3.0f};
// CHECK-NEXT: const fn::silu_op<float> f5{};
// CHECK-NEXT: const double v2 = 2.0;
// CHECK-NEXT: const index_t n = (index_t)32LL;
// CHECK: if (aligned && base + 4 <= n) {
// CHECK-NEXT: const Vec<float, 4> a0 = *(const Vec<float, 4> *)(in0 + base);
// CHECK-NEXT: const Vec<float, 4> a1 = *(const Vec<float, 4> *)(in1 + base);
// CHECK: const float v3 = convert<float>(f3(v0, v1));
// CHECK-NEXT: const float v4 = convert<float>(f4(v3, convert<float>(v2)));
// CHECK-NEXT: const float v5 = convert<float>(f5(v4));
// CHECK-NEXT: r0.v[j] = v5;
// CHECK: *(Vec<float, 4> *)(out0 + base) = r0;
// CHECK: out0[i] = v5;
func.func @chain(%x: tensor<4x8xf32, #ember.device<"cuda:0">>, %y: tensor<4x8xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">> {
  %c = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %0 = ember.mul.Tensor %x, %y : (tensor<4x8xf32, #ember.device<"cuda:0">>, tensor<4x8xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">>
  %1 = ember.add.Tensor %0, %c {alpha = 3 : i64} : (tensor<4x8xf32, #ember.device<"cuda:0">>, tensor<f64>) -> tensor<4x8xf32, #ember.device<"cuda:0">>
  %2 = ember.silu %1 : (tensor<4x8xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">>
  return %2 : tensor<4x8xf32, #ember.device<"cuda:0">>
}

// A row and a column broadcast over [4, 8] (Note [Vectors along the
// innermost dim]): each thread splits its first point's index once, loads x
// and the row as vectors and the column once, and stores one vector; a
// misaligned launch takes the points one by one.
// CHECK-LABEL: // fusion {{[0-9]+}} of @broadcast
// CHECK-NEXT: // kernel {{.*}}: block 256, blocks 1, 32-bit indices, vector 4;
// CHECK: const index_t c1 = cr % (index_t)8;
// CHECK-NEXT: cr /= (index_t)8;
// CHECK-NEXT: const index_t c0 = cr;
// CHECK-NEXT: if (aligned) {
// CHECK-NEXT: const Vec<float, 4> a0 = *(const Vec<float, 4> *)(in0 + c0 * (index_t)8 + c1);
// CHECK-NEXT: const Vec<float, 4> a1 = *(const Vec<float, 4> *)(in1 + c1);
// CHECK-NEXT: const float a2 = in2[c0];
// CHECK: *(Vec<float, 4> *)(out0 + base) = r0;
// CHECK: const float v0 = in0[c0 * (index_t)8 + c1 + j];
// CHECK-NEXT: const float v1 = in1[c1 + j];
// CHECK-NEXT: const float v2 = in2[c0];
// CHECK: out0[base + j] = v4;
func.func @broadcast(%x: tensor<4x8xf32, #ember.device<"cuda:0">>, %row: tensor<8xf32, #ember.device<"cuda:0">>, %col: tensor<4x1xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">> {
  %0 = ember.mul.Tensor %x, %row : (tensor<4x8xf32, #ember.device<"cuda:0">>, tensor<8xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">>
  %1 = ember.sub.Tensor %0, %col : (tensor<4x8xf32, #ember.device<"cuda:0">>, tensor<4x1xf32, #ember.device<"cuda:0">>) -> tensor<4x8xf32, #ember.device<"cuda:0">>
  return %1 : tensor<4x8xf32, #ember.device<"cuda:0">>
}

// Rows of 6, not a multiple of 4: no vectors along them, so each thread
// takes one point and splits its index into coordinates by literal sizes;
// each input is read at its own strides (the zero ones left out).
// CHECK-LABEL: // fusion {{[0-9]+}} of @rows_of_six
// CHECK-NEXT: // kernel {{.*}}: block 256, blocks 1, 32-bit indices, vector 1;
// CHECK: const index_t c1 = cr % (index_t)6;
// CHECK-NEXT: cr /= (index_t)6;
// CHECK-NEXT: const index_t c0 = cr;
// CHECK-NEXT: const float v0 = in0[c0 * (index_t)6 + c1];
// CHECK-NEXT: const float v1 = in1[c1];
// CHECK: out0[i] = v2;
func.func @rows_of_six(%x: tensor<4x6xf32, #ember.device<"cuda:0">>, %row: tensor<6xf32, #ember.device<"cuda:0">>) -> tensor<4x6xf32, #ember.device<"cuda:0">> {
  %0 = ember.mul.Tensor %x, %row : (tensor<4x6xf32, #ember.device<"cuda:0">>, tensor<6xf32, #ember.device<"cuda:0">>) -> tensor<4x6xf32, #ember.device<"cuda:0">>
  return %0 : tensor<4x6xf32, #ember.device<"cuda:0">>
}

// float16 + int32: the int32 is first rounded to float16 (eager converts
// the operands to the op's dtype), the add computes in float and rounds to
// float16 (what eager's stored intermediate holds), then a conversion to
// bfloat16. Each rounded value is defined in its 16-bit type, then in
// float; the output stores the first (rounding the float again would cost
// a conversion a point).
// CHECK-LABEL: // fusion {{[0-9]+}} of @half
// CHECK: (::ember::BFloat16 *__restrict__ out0, const ::ember::Half *__restrict__ in0, const int32_t *__restrict__ in1)
// CHECK: const ::ember::Half v2n = convert<::ember::Half>(f2(v0, convert<float>(convert<::ember::Half>(v1))));
// CHECK-NEXT: const float v2 = convert<float>(v2n);
// CHECK-NEXT: const ::ember::BFloat16 v3n = convert<::ember::BFloat16>(v2);
// CHECK-NEXT: const float v3 = convert<float>(v3n);
// CHECK-NEXT: r0.v[j] = v3n;
func.func @half(%x: tensor<16xf16, #ember.device<"cuda:0">>, %i: tensor<16xi32, #ember.device<"cuda:0">>) -> tensor<16xbf16, #ember.device<"cuda:0">> {
  %0 = ember.add.Tensor %x, %i : (tensor<16xf16, #ember.device<"cuda:0">>, tensor<16xi32, #ember.device<"cuda:0">>) -> tensor<16xf16, #ember.device<"cuda:0">>
  %1 = ember._to_copy %0 {dtype = bf16} : (tensor<16xf16, #ember.device<"cuda:0">>) -> tensor<16xbf16, #ember.device<"cuda:0">>
  return %1 : tensor<16xbf16, #ember.device<"cuda:0">>
}

// softmax over rows of 100 (Note [Persistent rows]): one block of 32
// threads a row, each holding 4 of its points in registers, loaded once.
// The max folds in float (a NaN wins), the sum in double; both folds read
// the held points, never memory; each fold ends in the block fold, whose
// result every thread reads. The sum's loop keeps each exp(x - max) in
// registers (Note [Held values]) and the output loop multiplies those by
// 1/sum: no exp there, and no read of the held x.
// CHECK-LABEL: // fusion {{[0-9]+}} of @softmax
// CHECK-NEXT: // kernel {{.*}}: block 32, blocks 4, 32-bit indices, vector 1, persistent rows (4 points a thread); functors: sub_Tensor_op exp_op reciprocal_op mul_Tensor_op
// CHECK: for (index_t row = blockIdx.x; row < (index_t)4LL; row += gridDim.x) {
// CHECK-NEXT: const index_t k0 = row;
// CHECK-NEXT: const index_t ko0 = k0 * (index_t)100;
// CHECK-NEXT: float h0[4];
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int p = 0; p < 4; ++p) {
// CHECK-NEXT: const index_t j = threadIdx.x + (index_t)p * 32;
// CHECK-NEXT: if (j >= (index_t)100LL)
// CHECK-NEXT: break;
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: h0[p] = in0[ko0 + r0];
// CHECK-NEXT: }
// CHECK-NEXT: float c3[4];
// CHECK-NEXT: float acc1 = -__int_as_float(0x7f800000);
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int p = 0; p < 4; ++p) {
// CHECK: const float v0 = h0[p];
// CHECK-NEXT: acc1 = ember_combine<1>(acc1, v0);
// CHECK: acc1 = ember_block_reduce<1>(acc1, -__int_as_float(0x7f800000));
// CHECK-NEXT: const float v1 = convert<float>(acc1);
// CHECK-NEXT: double acc4 = double(0);
// CHECK: const float v0 = h0[p];
// CHECK: const float v3 = convert<float>(f3(v2));
// CHECK-NEXT: c3[p] = v3;
// CHECK-NEXT: acc4 = ember_combine<0>(acc4, convert<double>(v3));
// CHECK: acc4 = ember_block_reduce<0>(acc4, double(0));
// CHECK-NEXT: const float v4 = convert<float>(acc4);
// CHECK-NEXT: const float v5 = convert<float>(f5(v4));
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int p = 0; p < 4; ++p) {
// CHECK-NEXT: const index_t j = threadIdx.x + (index_t)p * 32;
// CHECK-NEXT: if (j >= (index_t)100LL)
// CHECK-NEXT: break;
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: const float v3 = c3[p];
// CHECK-NEXT: const float v6 = convert<float>(f6(v3, v5));
// CHECK-NEXT: out0[k0 * (index_t)100 + r0] = v6;
// CHECK-NOT: in0[
// CHECK-LABEL: // fusion {{[0-9]+}} of @softmax_long
func.func @softmax(%x: tensor<4x100xf32, #ember.device<"cuda:0">>) -> tensor<4x100xf32, #ember.device<"cuda:0">> {
  %0 = ember.softmax.int %x {dim = 1 : i64} : (tensor<4x100xf32, #ember.device<"cuda:0">>) -> tensor<4x100xf32, #ember.device<"cuda:0">>
  return %0 : tensor<4x100xf32, #ember.device<"cuda:0">>
}

// Rows of 16384 points, more than a block of 512 threads holds in 16
// registers each: a looped row, each loop reading the row again.
// CHECK: // kernel {{.*}}: block 256, blocks 2, 32-bit indices, vector 1; functors:
// CHECK-NOT: h0[
// CHECK: for (index_t j = threadIdx.x; j < (index_t)16384LL; j += blockDim.x) {
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: const float v0 = in0[ko0 + r0];
// CHECK: for (index_t j = threadIdx.x; j < (index_t)16384LL; j += blockDim.x) {
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: const float v0 = in0[ko0 + r0];
// CHECK: for (index_t j = threadIdx.x; j < (index_t)16384LL; j += blockDim.x) {
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: const float v0 = in0[ko0 + r0];
// CHECK: out0[k0 * (index_t)16384 + r0] = v6;
func.func @softmax_long(%x: tensor<2x16384xf32, #ember.device<"cuda:0">>) -> tensor<2x16384xf32, #ember.device<"cuda:0">> {
  %0 = ember.softmax.int %x {dim = 1 : i64} : (tensor<2x16384xf32, #ember.device<"cuda:0">>) -> tensor<2x16384xf32, #ember.device<"cuda:0">>
  return %0 : tensor<2x16384xf32, #ember.device<"cuda:0">>
}

// A mean over the outer dim of a float16 [300, 5]: the innermost dim is
// kept, so a thread per column folds it alone, in order (neighbouring
// threads read neighbouring elements; no block fold); the sum in double,
// divided by the count, rounded to float16.
// CHECK-LABEL: // fusion {{[0-9]+}} of @column_mean
// CHECK-NEXT: // kernel {{.*}}: block 32, blocks 1,
// CHECK: for (index_t row = (index_t)blockIdx.x * blockDim.x + threadIdx.x;
// CHECK-NEXT: row < (index_t)5LL; row += (index_t)gridDim.x * blockDim.x) {
// CHECK: for (index_t j = 0; j < (index_t)300LL; ++j) {
// CHECK-NEXT: const index_t r0 = j;
// CHECK-NEXT: const float v0 = convert<float>(in0[ko0 + r0 * (index_t)5]);
// CHECK-NEXT: acc1 = ember_combine<0>(acc1, convert<double>(convert<::ember::Half>(v0)));
// CHECK-NEXT: }
// CHECK-NEXT: const float v1 = convert<float>(convert<::ember::Half>(acc1 / 300.0));
// CHECK-NEXT: out0[row] = convert<::ember::Half>(v1);
func.func @column_mean(%x: tensor<300x5xf16, #ember.device<"cuda:0">>) -> tensor<5xf16, #ember.device<"cuda:0">> {
  %0 = ember.mean.dim %x {dim = array<i64: 0>, keepdim = false} : (tensor<300x5xf16, #ember.device<"cuda:0">>) -> tensor<5xf16, #ember.device<"cuda:0">>
  return %0 : tensor<5xf16, #ember.device<"cuda:0">>
}

// An integer remainder must raise on a zero divisor, which only the eager
// kernel checks: it stays outside (Note [Per-op capability]), and the ops
// around it fuse.
// FUSE-LABEL: func.func @int_div
// FUSE-NEXT: ember.fusion
// FUSE-NEXT: ^bb0
// FUSE-NEXT: ember.neg
// FUSE-NEXT: ember.yield
// FUSE-NEXT: }
// FUSE-NEXT: ember.remainder.Tensor
// FUSE-NEXT: ember.fusion
// FUSE-NEXT: ^bb0
// FUSE-NEXT: ember.abs
// CHECK-LABEL: // fusion {{[0-9]+}} of @int_div
// CHECK-NEXT: // kernel {{.*}}; functors: neg_op
// CHECK-LABEL: // fusion {{[0-9]+}} of @int_div
// CHECK-NEXT: // kernel {{.*}}; functors: abs_op
func.func @int_div(%a: tensor<8xi32, #ember.device<"cuda:0">>, %b: tensor<8xi32, #ember.device<"cuda:0">>) -> tensor<8xi32, #ember.device<"cuda:0">> {
  %0 = ember.neg %a : (tensor<8xi32, #ember.device<"cuda:0">>) -> tensor<8xi32, #ember.device<"cuda:0">>
  %1 = ember.remainder.Tensor %0, %b : (tensor<8xi32, #ember.device<"cuda:0">>, tensor<8xi32, #ember.device<"cuda:0">>) -> tensor<8xi32, #ember.device<"cuda:0">>
  %2 = ember.abs %1 : (tensor<8xi32, #ember.device<"cuda:0">>) -> tensor<8xi32, #ember.device<"cuda:0">>
  return %2 : tensor<8xi32, #ember.device<"cuda:0">>
}

// A fusion of CPU values (fused for the CPU) is not the CUDA generator's.
// With target=auto (what compile() uses for a graph with CUDA values) each
// op fuses for its device's generator: the CUDA functions and this one.
// AUTO-LABEL: // fusion 0 of @chain
// AUTO-NEXT: kernel over [4, 8]
// AUTO-LABEL: of @on_cpu
// AUTO-NEXT: kernel over [8]
// AUTO-NEXT: %0 : f32 = input 0 strides [1] extent [8]
// AUTO-NEXT: %1 : f32 = ember::exp(%0) compute f32
// AUTO-NEXT: %2 : f32 = ember::neg(%1) compute f32
// ONCPU-LABEL: // fusion {{[0-9]+}} of @on_cpu
// ONCPU-NEXT: // not compiled by the CUDA generator: ember.exp reads a value on cpu, not a CUDA device
func.func @on_cpu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = ember.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = ember.neg %0 : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// A held float16 row (Note [Persistent rows]): its points converted to
// float once, as they are loaded, and held as float; the folds read them
// without converting again. The exps are kept for the output loop (Note
// [Held values]), not the conversion of the held float to float.
// CHECK-LABEL: // fusion {{[0-9]+}} of @softmax_half
// CHECK: float h0[4];
// CHECK: h0[p] = convert<float>(in0[ko0 + r0]);
// CHECK-NOT: convert<float>(h0[p])
// CHECK: float c4[4];
// CHECK-NOT: float c
// CHECK: const float v0 = h0[p];
// CHECK-NOT: convert<float>(h0[p])
// CHECK: const float v0 = h0[p];
// CHECK-NOT: convert<float>(h0[p])
// CHECK: c4[p] = v4;
// CHECK: const float v4 = c4[p];
// CHECK-NOT: h0[p]
// CHECK: out0[
func.func @softmax_half(%x: tensor<4x100xf16, #ember.device<"cuda:0">>) -> tensor<4x100xf16, #ember.device<"cuda:0">> {
  %0 = ember.softmax.int %x {dim = 1 : i64} : (tensor<4x100xf16, #ember.device<"cuda:0">>) -> tensor<4x100xf16, #ember.device<"cuda:0">>
  return %0 : tensor<4x100xf16, #ember.device<"cuda:0">>
}
