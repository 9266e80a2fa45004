// Note [Partitioning the joint graph]: five (mm, cos) pairs of 512x512
// float32 (1 MiB each). Under a budget of b MiB the saved bytes are exactly
// b MiB and the backward recomputes 5 - b matmuls (each saved tensor spares
// one; the cosines are recomputed from what is saved).
// RUN: ember-opt %s --ember-remat="memory-budget=0" | FileCheck %s --check-prefix=B0
// RUN: ember-opt %s --ember-remat="memory-budget=1048576" | FileCheck %s --check-prefix=B1
// RUN: ember-opt %s --ember-remat="memory-budget=2097152" | FileCheck %s --check-prefix=B2
// RUN: ember-opt %s --ember-remat="memory-budget=3145728" | FileCheck %s --check-prefix=B3
// RUN: ember-opt %s --ember-remat="memory-budget=4194304" | FileCheck %s --check-prefix=B4
// RUN: ember-opt %s --ember-remat="memory-budget=5242880" | FileCheck %s --check-prefix=B5

// B0-LABEL: func.func @pairs_forward(
// B0-SAME: ember.saved_bytes = 0 : i64
// B0-NOT: ember.over_budget
// B0-LABEL: func.func @pairs_backward(
// B0-SAME: ember.recomputed = [
// B0-COUNT-5: "ember.mm"
// B0-NOT: "ember.mm"
// B0: return
// B1-LABEL: func.func @pairs_forward(
// B1-SAME: ember.saved_bytes = 1048576 : i64
// B1-NOT: ember.over_budget
// B1-LABEL: func.func @pairs_backward(
// B1-SAME: ember.recomputed = [
// B1-COUNT-4: "ember.mm"
// B1-NOT: "ember.mm"
// B1: return
// B2-LABEL: func.func @pairs_forward(
// B2-SAME: ember.saved_bytes = 2097152 : i64
// B2-NOT: ember.over_budget
// B2-LABEL: func.func @pairs_backward(
// B2-SAME: ember.recomputed = [
// B2-COUNT-3: "ember.mm"
// B2-NOT: "ember.mm"
// B2: return
// B3-LABEL: func.func @pairs_forward(
// B3-SAME: ember.saved_bytes = 3145728 : i64
// B3-NOT: ember.over_budget
// B3-LABEL: func.func @pairs_backward(
// B3-SAME: ember.recomputed = [
// B3-COUNT-2: "ember.mm"
// B3-NOT: "ember.mm"
// B3: return
// B4-LABEL: func.func @pairs_forward(
// B4-SAME: ember.saved_bytes = 4194304 : i64
// B4-NOT: ember.over_budget
// B4-LABEL: func.func @pairs_backward(
// B4-SAME: ember.recomputed = [
// B4-COUNT-1: "ember.mm"
// B4-NOT: "ember.mm"
// B4: return
// B5-LABEL: func.func @pairs_forward(
// B5-SAME: ember.saved_bytes = 5242880 : i64
// B5-NOT: ember.over_budget
// B5-LABEL: func.func @pairs_backward(
// B5-SAME: ember.recomputed = [
// B5-NOT: "ember.mm"
// B5: return

func.func @pairs(%x: tensor<512x512xf32>, %w1: tensor<512x512xf32>, %w2: tensor<512x512xf32>, %w3: tensor<512x512xf32>, %w4: tensor<512x512xf32>, %w5: tensor<512x512xf32>, %g: tensor<f32> {ember.tangent})
    -> (tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>) attributes {ember.forward_results = 1 : i64} {
  %m1 = ember.mm %x, %w1 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %h1 = ember.cos %m1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %m2 = ember.mm %h1, %w2 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %h2 = ember.cos %m2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %m3 = ember.mm %h2, %w3 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %h3 = ember.cos %m3 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %m4 = ember.mm %h3, %w4 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %h4 = ember.cos %m4 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %m5 = ember.mm %h4, %w5 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %h5 = ember.cos %m5 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %s = ember.sum %h5 : (tensor<512x512xf32>) -> tensor<f32>
  %gh5 = ember.expand %g {size = array<i64: 512, 512>} : (tensor<f32>) -> tensor<512x512xf32>
  %sn5 = ember.sin %m5 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns5 = ember.neg %sn5 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm5 = ember.mul.Tensor %gh5, %ns5 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %it5 = ember.t %h4 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw5 = ember.mm %it5, %gm5 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %wt5 = ember.t %w5 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gh4 = ember.mm %gm5, %wt5 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %sn4 = ember.sin %m4 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns4 = ember.neg %sn4 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm4 = ember.mul.Tensor %gh4, %ns4 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %it4 = ember.t %h3 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw4 = ember.mm %it4, %gm4 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %wt4 = ember.t %w4 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gh3 = ember.mm %gm4, %wt4 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %sn3 = ember.sin %m3 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns3 = ember.neg %sn3 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm3 = ember.mul.Tensor %gh3, %ns3 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %it3 = ember.t %h2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw3 = ember.mm %it3, %gm3 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %wt3 = ember.t %w3 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gh2 = ember.mm %gm3, %wt3 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %sn2 = ember.sin %m2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns2 = ember.neg %sn2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm2 = ember.mul.Tensor %gh2, %ns2 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %it2 = ember.t %h1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw2 = ember.mm %it2, %gm2 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %wt2 = ember.t %w2 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gh1 = ember.mm %gm2, %wt2 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %sn1 = ember.sin %m1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %ns1 = ember.neg %sn1 : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gm1 = ember.mul.Tensor %gh1, %ns1 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  %it1 = ember.t %x : (tensor<512x512xf32>) -> tensor<512x512xf32>
  %gw1 = ember.mm %it1, %gm1 : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %s, %gw1, %gw2, %gw3, %gw4, %gw5 : tensor<f32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>, tensor<512x512xf32>
}
