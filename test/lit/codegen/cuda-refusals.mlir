// What the CUDA generator does not compile, and why (ember-translate prints
// the reason; compile() runs such a fusion's ops eagerly and explain()
// says why). Hand-written fusions: the fusion pass makes neither.

// RUN: ember-translate %s --emit=cuda | FileCheck %s
// RUN: not ember-translate %s --emit=cuda --nvrtc-arch=0 2>&1 | FileCheck %s --check-prefix=ARCH

// ARCH: ember-translate: --nvrtc-arch takes a compute capability such as 80 or 90, with --emit=cuda

// A kernel runs on one device.
// CHECK-LABEL: // fusion 0 of @two_devices
// CHECK-NEXT: // not compiled by the CUDA generator: its values are on cuda:0 and cuda:1; a kernel runs on one device
func.func @two_devices(%x: tensor<4xf32, #ember.device<"cuda:0">>, %y: tensor<4xf32, #ember.device<"cuda:1">>) -> (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:1">>) {
  %0:2 = ember.fusion(%x, %y) : (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:1">>) -> (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:1">>) {
  ^bb0(%a: tensor<4xf32, #ember.device<"cuda:0">>, %b: tensor<4xf32, #ember.device<"cuda:1">>):
    %1 = ember.exp %a : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf32, #ember.device<"cuda:0">>
    %2 = ember.exp %b : (tensor<4xf32, #ember.device<"cuda:1">>) -> tensor<4xf32, #ember.device<"cuda:1">>
    ember.yield %1, %2 : tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:1">>
  }
  return %0#0, %0#1 : tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:1">>
}

// A fusion of fusions (ember-fuse-horizontal, which makes them only on the
// CPU): combined kernels are the CPU generator's.
// CHECK-LABEL: // fusion 1 of @combined
// CHECK-NEXT: // not compiled by the CUDA generator: combined kernels are the CPU generator's; on CUDA the inner fusions' ops run eagerly
func.func @combined(%x: tensor<4xf32, #ember.device<"cuda:0">>, %y: tensor<4xf32, #ember.device<"cuda:0">>) -> (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>) {
  %0:2 = ember.fusion(%x, %y) : (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>) -> (tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>) {
  ^bb0(%a: tensor<4xf32, #ember.device<"cuda:0">>, %b: tensor<4xf32, #ember.device<"cuda:0">>):
    %1 = ember.fusion(%a) : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf32, #ember.device<"cuda:0">> {
    ^bb1(%c: tensor<4xf32, #ember.device<"cuda:0">>):
      %3 = ember.exp %c : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf32, #ember.device<"cuda:0">>
      ember.yield %3 : tensor<4xf32, #ember.device<"cuda:0">>
    }
    %2 = ember.fusion(%b) : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf32, #ember.device<"cuda:0">> {
    ^bb2(%d: tensor<4xf32, #ember.device<"cuda:0">>):
      %4 = ember.neg %d : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf32, #ember.device<"cuda:0">>
      ember.yield %4 : tensor<4xf32, #ember.device<"cuda:0">>
    }
    ember.yield %1, %2 : tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>
  }
  return %0#0, %0#1 : tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>
}

// A reduction with few outputs and many points folded into each is the
// two kernels compile() launches (Note [Split reductions], the GPU's
// policy): partial folds of 256 slices of 4096 points into double
// accumulators, each slice held by a block of 512 threads (Note
// [Persistent rows]), then their fold by 64 threads.
// CHECK-LABEL: // fusion 2 of @full_sum
// CHECK-NEXT: // split reduction in 256 parts: a partial kernel, then its combine
// CHECK-NEXT: // kernel {{.*}}: block 512, blocks 256, {{.*}}, persistent rows (8 points a thread);
// CHECK: double *__restrict__ out0, const float *__restrict__ in0
// CHECK: // kernel {{.*}}: block 64, blocks 1, {{.*}}, persistent rows (4 points a thread);
// CHECK: float *__restrict__ out0, const double *__restrict__ in0
func.func @full_sum(%x: tensor<1048576xf32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">> {
  %0 = ember.fusion(%x) : (tensor<1048576xf32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">> {
  ^bb0(%a: tensor<1048576xf32, #ember.device<"cuda:0">>):
    %1 = ember.sum %a : (tensor<1048576xf32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">>
    ember.yield %1 : tensor<f32, #ember.device<"cuda:0">>
  }
  return %0 : tensor<f32, #ember.device<"cuda:0">>
}
