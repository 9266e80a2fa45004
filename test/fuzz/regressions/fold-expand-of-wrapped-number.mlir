func.func @fuzz(%arg0: tensor<i64>) -> tensor<f64> {
  %0 = ember.constant {wrapped_number} dense<1.0> : tensor<f64>
  %1 = ember.expand %0 {implicit = true, size = array<i64>} : (tensor<f64>) -> tensor<f64>
  %3 = ember.fmod.Tensor %1, %arg0 : (tensor<f64>, tensor<i64>) -> tensor<f64>
  return %3 : tensor<f64>
}
