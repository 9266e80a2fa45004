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

// -----

// A fusion of fusions (ember-fuse-horizontal) runs its inner fusions side
// by side: one may not read another's result.
func.func @combined_dependent(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{an inner fusion reads another's result}}
  %0:2 = ember.fusion(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = ember.fusion(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %n = ember.neg %b : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %n : tensor<4xf32>
    }
    %2 = ember.fusion(%1) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%c: tensor<4xf32>):
      %e = ember.exp %c : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %e : tensor<4xf32>
    }
    ember.yield %1, %2 : tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// It holds fusions only, and yields each of their results once.
func.func @combined_mixed(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{a fusion of fusions holds only fusions}}
  %0:2 = ember.fusion(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %1 = ember.fusion(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %n = ember.neg %b : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %n : tensor<4xf32>
    }
    %2 = ember.neg %a : (tensor<4xf32>) -> tensor<4xf32>
    ember.yield %1, %2 : tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}

// -----

func.func @combined_unyielded(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields each result of its inner fusions once, and nothing else}}
  %0 = ember.fusion(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %1 = ember.fusion(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%b: tensor<4xf32>):
      %n = ember.neg %b : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %n : tensor<4xf32>
    }
    %2 = ember.fusion(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%c: tensor<4xf32>):
      %e = ember.exp %c : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %e : tensor<4xf32>
    }
    ember.yield %1 : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A result is written only into an input that its own part alone reads.
func.func @combined_reuse(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  // expected-error @+1 {{result 1 is written into input 0, which another part of the fusion of fusions reads}}
  %0:2 = ember.fusion(%x, %y) {ember.reuse = array<i64: 1, 0>} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %1 = ember.fusion(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%c: tensor<4xf32>, %d: tensor<4xf32>):
      %s = ember.sub.Tensor %c, %d {alpha = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      ember.yield %s : tensor<4xf32>
    }
    %2 = ember.fusion(%a) : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%e: tensor<4xf32>):
      %n = ember.cos %e : (tensor<4xf32>) -> tensor<4xf32>
      ember.yield %n : tensor<4xf32>
    }
    ember.yield %1, %2 : tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xf32>
}
