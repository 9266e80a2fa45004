func.func @no_decomposition(%x: tensor<3xf32>) -> (i1, tensor<?x1xi64>) {
  %e = ember.eager_call "ember::equal"(%x, %x) {args = [#ember.operand<0>, #ember.operand<1>]} : (tensor<3xf32>, tensor<3xf32>) -> i1
  %n = ember.nonzero %x : (tensor<3xf32>) -> tensor<?x1xi64>
  return %e, %n : i1, tensor<?x1xi64>
}
