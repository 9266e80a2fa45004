// Note [Partitioning the joint graph]: the backward reads four matmul
// results of 11, 3, 4 and 2 MiB, each costing FLOPs in proportion to its
// size to recompute. Every budget equal to a sum of a subset is met
// exactly; a budget between sums gets the largest sum below it.
// RUN: ember-opt %s --ember-remat="memory-budget=0" | FileCheck %s --check-prefix=M0 -DBYTES=0
// RUN: ember-opt %s --ember-remat="memory-budget=5242880" | FileCheck %s --check-prefix=M5 -DBYTES=5242880
// RUN: ember-opt %s --ember-remat="memory-budget=9437184" | FileCheck %s --check-prefix=M9 -DBYTES=9437184
// RUN: ember-opt %s --ember-remat="memory-budget=10485760" | FileCheck %s --check-prefix=M10 -DBYTES=9437184
// RUN: ember-opt %s --ember-remat="memory-budget=11534336" | FileCheck %s --check-prefix=M11 -DBYTES=11534336
// RUN: ember-opt %s --ember-remat="memory-budget=14680064" | FileCheck %s --check-prefix=M14 -DBYTES=14680064
// RUN: ember-opt %s --ember-remat="memory-budget=18874368" | FileCheck %s --check-prefix=M18 -DBYTES=18874368
// RUN: ember-opt %s --ember-remat="memory-budget=20971520" | FileCheck %s --check-prefix=M20 -DBYTES=20971520
// RUN: ember-opt %s --ember-remat="memory-budget=104857600" | FileCheck %s --check-prefix=M100 -DBYTES=20971520

// M0: ember.saved_bytes = [[BYTES]] : i64
// M5: ember.saved_bytes = [[BYTES]] : i64
// M9: ember.saved_bytes = [[BYTES]] : i64
// M10: ember.saved_bytes = [[BYTES]] : i64
// M11: ember.saved_bytes = [[BYTES]] : i64
// M14: ember.saved_bytes = [[BYTES]] : i64
// M18: ember.saved_bytes = [[BYTES]] : i64
// M20: ember.saved_bytes = [[BYTES]] : i64
// M100: ember.saved_bytes = [[BYTES]] : i64

func.func @subsets(%a0: tensor<5632x512xf32>, %a1: tensor<1536x512xf32>, %a2: tensor<2048x512xf32>, %a3: tensor<1024x512xf32>, %b: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<5632x512xf32>, tensor<1536x512xf32>, tensor<2048x512xf32>, tensor<1024x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %m0 = ember.mm %a0, %b : (tensor<5632x512xf32>, tensor<512x512xf32>) -> tensor<5632x512xf32>
  %q0 = ember.mul.Tensor %m0, %m0 : (tensor<5632x512xf32>, tensor<5632x512xf32>) -> tensor<5632x512xf32>
  %s0 = ember.sum %q0 : (tensor<5632x512xf32>) -> tensor<f32>
  %m1 = ember.mm %a1, %b : (tensor<1536x512xf32>, tensor<512x512xf32>) -> tensor<1536x512xf32>
  %q1 = ember.mul.Tensor %m1, %m1 : (tensor<1536x512xf32>, tensor<1536x512xf32>) -> tensor<1536x512xf32>
  %s1 = ember.sum %q1 : (tensor<1536x512xf32>) -> tensor<f32>
  %m2 = ember.mm %a2, %b : (tensor<2048x512xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
  %q2 = ember.mul.Tensor %m2, %m2 : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %s2 = ember.sum %q2 : (tensor<2048x512xf32>) -> tensor<f32>
  %m3 = ember.mm %a3, %b : (tensor<1024x512xf32>, tensor<512x512xf32>) -> tensor<1024x512xf32>
  %q3 = ember.mul.Tensor %m3, %m3 : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %s3 = ember.sum %q3 : (tensor<1024x512xf32>) -> tensor<f32>
  %t01 = ember.add.Tensor %s0, %s1 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %t23 = ember.add.Tensor %s2, %s3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %s = ember.add.Tensor %t01, %t23 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %two = ember.constant {wrapped_number} dense<2.0> : tensor<f64>
  %bt = ember.t %b : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ge0 = ember.expand %g {size = array<i64: 5632, 512>} : (tensor<f32>) -> tensor<5632x512xf32>
  %d0 = ember.mul.Tensor %ge0, %m0 : (tensor<5632x512xf32>, tensor<5632x512xf32>) -> tensor<5632x512xf32>
  %dd0 = ember.mul.Tensor %d0, %two : (tensor<5632x512xf32>, tensor<f64>) -> tensor<5632x512xf32>
  %ga0 = ember.mm %dd0, %bt : (tensor<5632x512xf32>, tensor<512x512xf32>) -> tensor<5632x512xf32>
  %ge1 = ember.expand %g {size = array<i64: 1536, 512>} : (tensor<f32>) -> tensor<1536x512xf32>
  %d1 = ember.mul.Tensor %ge1, %m1 : (tensor<1536x512xf32>, tensor<1536x512xf32>) -> tensor<1536x512xf32>
  %dd1 = ember.mul.Tensor %d1, %two : (tensor<1536x512xf32>, tensor<f64>) -> tensor<1536x512xf32>
  %ga1 = ember.mm %dd1, %bt : (tensor<1536x512xf32>, tensor<512x512xf32>) -> tensor<1536x512xf32>
  %ge2 = ember.expand %g {size = array<i64: 2048, 512>} : (tensor<f32>) -> tensor<2048x512xf32>
  %d2 = ember.mul.Tensor %ge2, %m2 : (tensor<2048x512xf32>, tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %dd2 = ember.mul.Tensor %d2, %two : (tensor<2048x512xf32>, tensor<f64>) -> tensor<2048x512xf32>
  %ga2 = ember.mm %dd2, %bt : (tensor<2048x512xf32>, tensor<512x512xf32>) -> tensor<2048x512xf32>
  %ge3 = ember.expand %g {size = array<i64: 1024, 512>} : (tensor<f32>) -> tensor<1024x512xf32>
  %d3 = ember.mul.Tensor %ge3, %m3 : (tensor<1024x512xf32>, tensor<1024x512xf32>) -> tensor<1024x512xf32>
  %dd3 = ember.mul.Tensor %d3, %two : (tensor<1024x512xf32>, tensor<f64>) -> tensor<1024x512xf32>
  %ga3 = ember.mm %dd3, %bt : (tensor<1024x512xf32>, tensor<512x512xf32>) -> tensor<1024x512xf32>
  return %s, %ga0, %ga1, %ga2, %ga3 : tensor<f32>, tensor<5632x512xf32>, tensor<1536x512xf32>, tensor<2048x512xf32>, tensor<1024x512xf32>
}
