func.func @fuzz(%arg1: tensor<f64>) -> tensor<f64> {
  %2 = ember.constant {wrapped_number} dense<0.000000e+00> : tensor<f64>
  %3 = ember.squeeze %2 : (tensor<f64>) -> tensor<f64>
  %4 = ember.atan %3 : (tensor<f64>) -> tensor<f64>
  return %4 : tensor<f64>
}
