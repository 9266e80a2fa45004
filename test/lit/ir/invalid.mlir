// The verifier reports what eager would raise (ember::meta's messages) and
// malformed IR, one case a split.

// RUN: ember-opt %s --split-input-file --verify-diagnostics

// Shapes that do not broadcast.
func.func @broadcast_mismatch(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'ember.add.Tensor' op The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 0}}
  %0 = ember.add.Tensor %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A declared result type that is not the one eager produces.
func.func @wrong_result_type(%a: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{result #0 has type 'tensor<4xf64>' but ember::meta::infer gives 'tensor<4xf32>'}}
  %0 = ember.add.Tensor %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// A wrong shape too.
func.func @wrong_result_shape(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{result #0 has type 'tensor<3xf32>' but ember::meta::infer gives 'tensor<2xf32>'}}
  %0 = ember.sum.dim_IntList %a {dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A dimension out of range.
func.func @bad_dim(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{Dimension out of range (expected to be in range of [-2, 1], but got 5)}}
  %0 = ember.sum.dim_IntList %a {dim = array<i64: 5>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A dtype the op does not take.
func.func @wrong_dtype(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is not implemented for dtype float32}}
  %0 = ember.bitwise_and.Tensor %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An in-place op cannot change its input's dtype.
func.func @inplace_cast(%a: tensor<4xi64>, %b: tensor<4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{result type Float can't be cast to the desired output type Long}}
  %0 = ember.add_.Tensor %a, %b : (tensor<4xi64>, tensor<4xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// Element types outside ember's dtypes.
func.func @not_a_dtype(%a: tensor<4xi128>) -> tensor<4xi128> {
  // expected-error @+1 {{operand #0 must be ranked tensor of ember dtype values}}
  %0 = ember.relu %a : (tensor<4xi128>) -> tensor<4xi128>
  return %0 : tensor<4xi128>
}

// -----

// Operands need static shapes.
func.func @dynamic_operand(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{expected a ranked tensor type with a static shape, got tensor<?xf32>}}
  %0 = ember.relu %a : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// A required attribute is missing.
func.func @missing_attribute(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{requires attribute 'index'}}
  %0 = ember.select.int %a {dim = 0 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// An attribute of the wrong kind.
func.func @attribute_kind(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = ember.select.int %a {dim = 0.0 : f64, index = 0 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A Scalar is an i64, f64 or bool attribute.
func.func @scalar_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{attribute 'alpha' failed to satisfy constraint: a Scalar: i64, f64 or bool attribute}}
  %0 = ember.add.Tensor %a, %a {alpha = 1 : i32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A wrapped number is a 0-dim f64, i64 or i1 tensor.
func.func @wrapped_number_type() -> tensor<f32> {
  // expected-error @+1 {{a wrapped number is a 0-dim f64, i64 or i1 tensor}}
  %0 = ember.constant {wrapped_number} dense<1.0> : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Devices are ember::Device strings.
// expected-error @+1 {{invalid device 'gpu:0'}}
func.func @bad_device(%a: tensor<4xf32, #ember.device<"gpu:0">>) {
  return
}

// -----

// ember.eager_call names a registered op.
func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{calls 'nolib::nothing', which is not a registered op}}
  %0 = ember.eager_call "nolib::nothing"(%a) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// One `args` entry per schema argument.
func.func @wrong_arg_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ember::relu takes 1 arguments (ember::relu(Tensor self) -> Tensor) but `args` has 2}}
  %0 = ember.eager_call "ember::relu"(%a) {args = [#ember.operand<0>, 1 : i64]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Operands are used once each, in order.
func.func @operand_order(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{argument 'self' names operand 1 but the next unused operand is 0}}
  %0 = ember.eager_call "ember::mul.Tensor"(%a, %b) {args = [#ember.operand<1>, #ember.operand<0>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Every operand is used.
func.func @unused_operand(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{`args` uses 1 operands but the call has 2}}
  %0 = ember.eager_call "ember::relu"(%a, %b) {args = [#ember.operand<0>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A non-tensor argument of the wrong kind.
func.func @eager_arg_kind(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{argument 'dim' has type int, which attribute "0" does not hold}}
  %0 = ember.eager_call "ember::select.int"(%a) {args = [#ember.operand<0>, "0", 0 : i64]} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A tensor argument must be an operand.
func.func @eager_tensor_arg(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{argument 'self' (Tensor) expects #ember.operand<N>, got 1 : i64}}
  %0 = ember.eager_call "ember::relu"(%a) {args = [1 : i64]} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// None only for optional arguments.
func.func @eager_none(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{argument 'index' (int) is not optional but got None}}
  %0 = ember.eager_call "ember::select.int"(%a) {args = [#ember.operand<0>, 0 : i64, #ember.none]} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// The result types of an eager call are checked by the op's shape rule.
func.func @eager_result_type(%a: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{result #0 has type 'tensor<4xf64>' but ember::meta::infer gives 'tensor<4xf32>'}}
  %0 = ember.eager_call "ember::relu"(%a) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// And the number of results by the schema.
func.func @eager_result_count(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ember::relu' returns 1 values (ember::relu(Tensor self) -> Tensor) but the call has 2 results}}
  %0:2 = ember.eager_call "ember::relu"(%a) {args = [#ember.operand<0>]} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The None positions of a list are increasing and within the list.
func.func @none_positions(%t: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<4x2xf32> {
  // expected-error @+1 {{indices_none must list increasing positions in [0, 2)}}
  %0 = "ember.index.Tensor"(%t, %i) {indices_none = array<i64: 5>} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// softmax's backward takes grad_output and output on one device (the
// verifier once accepted these, and ember-decompose then failed on the
// decomposition's other result type; found by ember-opt-fuzz).
func.func @softmax_backward_devices(%g: tensor<f64>, %y: tensor<f32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">> {
  // expected-error @+1 {{'ember._log_softmax_backward_data' op _log_softmax_backward_data: expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0}}
  %0 = ember._log_softmax_backward_data %g, %y {dim = 0 : i64, input_dtype = f32} : (tensor<f64>, tensor<f32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">>
  return %0 : tensor<f32, #ember.device<"cuda:0">>
}

// -----

// layer_norm's weight and bias live on the input's device.
func.func @layer_norm_devices(%x: tensor<2x4xf32>, %w: tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ember.native_layer_norm' op layer_norm: expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0}}
  %0, %1, %2 = ember.native_layer_norm %x, %w, %w {eps = 1.000000e-05 : f64, normalized_shape = array<i64: 4>} : (tensor<2x4xf32>, tensor<4xf32, #ember.device<"cuda:0">>, tensor<4xf32, #ember.device<"cuda:0">>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0 : tensor<2x4xf32>
}
