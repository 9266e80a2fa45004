// Note [Streaming stores]: a kernel writing a fresh output of 16 MiB or
// more stores each vector with a streaming store where its address is
// aligned (else a plain store), and ends with an sfence; a small output is
// stored as usual.

// REQUIRES: x86
// RUN: ember-opt %s --ember-pipeline | ember-translate --emit=llvm | FileCheck %s

// CHECK-LABEL: // fusion 0 of @large
// CHECK: define void @ember_kernel_{{[0-9a-f]+}}(ptr
// CHECK: and i64 {{.*}}, {{31|63}}
// CHECK: store <{{[0-9]+}} x float> {{.*}}, align {{32|64}}, !nontemporal
// CHECK: store <{{[0-9]+}} x float> {{.*}}, align 4{{$}}
// CHECK: call void @llvm.x86.sse.sfence()
// CHECK-NEXT: ret void
func.func @large(%x: tensor<4096x1025xf32>) -> tensor<4096x1025xf32> {
  %0 = ember.exp %x : (tensor<4096x1025xf32>) -> tensor<4096x1025xf32>
  return %0 : tensor<4096x1025xf32>
}

// CHECK-LABEL: // fusion {{[0-9]+}} of @small
// CHECK-NOT: !nontemporal
// CHECK-NOT: sfence
func.func @small(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = ember.exp %x : (tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
