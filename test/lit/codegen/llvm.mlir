// Each kernel's optimized LLVM IR (ember-translate --emit=llvm): one
// function per fusion, the scalar library's functions inlined (no call to
// an ember_pw_ function is left: Note [One scalar semantics]) and the inner
// loop vectorized (vector loads of float, whatever width the host has).
// Checked by hand to fail when the library is not inlined (a call left).

// RUN: ember-opt %s --ember-pipeline | ember-translate --emit=llvm | FileCheck %s

// CHECK-LABEL: // fusion 0 of @chain
// CHECK: define void @ember_kernel_{{[0-9a-f]+}}(ptr
// CHECK-NOT: call {{.*}}@ember_
// CHECK: load <{{[0-9]+}} x float>
// CHECK-NOT: call {{.*}}@ember_
// CHECK: store <{{[0-9]+}} x float>
// CHECK-NOT: call {{.*}}@ember_
// CHECK-LABEL: // fusion 1 of @row_sum
func.func @chain(%x: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<64x64xf32> {
  %0 = ember.add.Tensor %x, %b : (tensor<64x64xf32>, tensor<64xf32>) -> tensor<64x64xf32>
  %1 = ember.exp %0 : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// A row reduction: the fold sums chunks of the row in float, vectorized,
// and adds each chunk's sum in double (Note [Blocked float sums]); a row
// of 64 is one chunk, whose double sum LLVM folds away.
// CHECK: define void @ember_kernel_{{[0-9a-f]+}}(ptr
// CHECK-NOT: call {{.*}}@ember_
// CHECK: fadd reassoc <{{[0-9]+}} x float>
// CHECK-NOT: call {{.*}}@ember_
func.func @row_sum(%x: tensor<64x64xf32>) -> tensor<64xf32> {
  %0 = ember.mul.Tensor %x, %x : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = ember.sum.dim_IntList %0 {dim = array<i64: 1>} : (tensor<64x64xf32>) -> tensor<64xf32>
  return %1 : tensor<64xf32>
}
