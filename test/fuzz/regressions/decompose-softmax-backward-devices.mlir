func.func @f(%x: tensor<f32, #ember.device<"cuda:0">>, %g: tensor<f64>) -> tensor<f32, #ember.device<"cuda:0">> {
  %2 = ember._log_softmax_backward_data %g, %x {dim = 0 : i64, input_dtype = f32} : (tensor<f64>, tensor<f32, #ember.device<"cuda:0">>) -> tensor<f32, #ember.device<"cuda:0">>
  return %2 : tensor<f32, #ember.device<"cuda:0">>
}
