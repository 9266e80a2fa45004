func.func @fuzz(%arg0: tensor<bf16>) -> tensor<f32> {
  %1 = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
  %2 = ember.eager_call "ember::_log_softmax_backward_data"(%arg0, %1) {args = [#ember.operand<0>, #ember.operand<1>, -1, f32]} : (tensor<bf16>, tensor<f64>) -> tensor<f32>
  return %2 : tensor<f32>
}
