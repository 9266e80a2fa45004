// RUN: ember-opt %s --ember-remat --split-input-file --verify-diagnostics

// expected-error @+1 {{forward result 0 depends on a tangent}}
func.func @tangent_in_forward(%x: tensor<4xf32>, %g: tensor<4xf32> {ember.tangent})
    -> (tensor<4xf32>) attributes {ember.forward_results = 1 : i64} {
  %y = ember.mul.Tensor %x, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @fused(%x: tensor<4xf32>, %g: tensor<4xf32> {ember.tangent})
    -> (tensor<4xf32>, tensor<4xf32>) attributes {ember.forward_results = 1 : i64} {
  // expected-error @+1 {{run ember-remat before ember-fuse-elementwise}}
  %y = ember.fusion(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %e = ember.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    ember.yield %e : tensor<4xf32>
  }
  %d = ember.mul.Tensor %g, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{ember.forward_results (3) exceeds the 1 results}}
func.func @too_many(%x: tensor<4xf32>) -> (tensor<4xf32>) attributes {ember.forward_results = 3 : i64} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{a joint function needs a body}}
func.func private @declaration(%x: tensor<4xf32>) -> (tensor<4xf32>) attributes {ember.forward_results = 1 : i64}

// -----

// expected-error @+1 {{ember.forward_results (9223372036854775807) exceeds the 1 results}}
func.func @huge(%x: tensor<4xf32>) -> (tensor<4xf32>) attributes {ember.forward_results = 9223372036854775807 : i64} {
  return %x : tensor<4xf32>
}
