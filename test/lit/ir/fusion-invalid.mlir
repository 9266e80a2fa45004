// RUN: ember-opt %s --split-input-file --verify-diagnostics

func.func @arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has 1 inputs but its body takes 2 arguments}}
  %0 = ember.fusion(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    ember.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @types(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{yields 'tensor<4xf32>' but its results are 'tensor<4xf64>'}}
  %0 = ember.fusion(%x) : (tensor<4xf32>) -> tensor<4xf64> {
  ^bb0(%a: tensor<4xf32>):
    ember.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf64>
}

// -----

func.func @isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %0 = ember.fusion() : () -> tensor<4xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    %1 = ember.neg %x : (tensor<4xf32>) -> tensor<4xf32>
    ember.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @reuse_arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ember.reuse must be an array<i64> with one entry per result (1)}}
  %0 = ember.fusion(%x) {ember.reuse = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    ember.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @reuse_type(%x: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{ember.reuse: result 0 has type 'tensor<4xf32>' but input 0 has type 'tensor<4xf64>'}}
  %0 = ember.fusion(%x) {ember.reuse = array<i64: 0>} : (tensor<4xf64>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf64>):
    %1 = ember._to_copy %a {dtype = f32} : (tensor<4xf64>) -> tensor<4xf32>
    ember.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

func.func @reuse_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ember.reuse: result 0 reuses input 3 of 1}}
  %0 = ember.fusion(%x) {ember.reuse = array<i64: 3>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    ember.yield %a : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
