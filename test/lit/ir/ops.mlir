// The ember dialect's syntax beyond the generated examples (examples.mlir):
// constants and wrapped numbers, defaults, Scalar kinds, operand lists,
// several results, every dtype, devices, eager_call's argument encoding.
// Each case round-trips through the custom and the generic form.

// RUN: ember-opt %s | ember-opt | FileCheck %s
// RUN: ember-opt %s --mlir-print-op-generic | ember-opt | FileCheck %s

// A C++ number in `x + 2` is a wrapped number: it does not promote x.
// CHECK-LABEL: func.func @wrapped_number
// CHECK: %[[C:.*]] = ember.constant {wrapped_number} dense<2.000000e+00> : tensor<f64>
// CHECK: ember.add.Tensor %{{.*}}, %[[C]] : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
func.func @wrapped_number(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = ember.constant {wrapped_number} dense<2.0> : tensor<f64>
  %r = ember.add.Tensor %x, %c : (tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A 0-dim tensor constant is not a wrapped number: it takes part in
// promotion as a tensor (of lower priority than dimensioned tensors).
// CHECK-LABEL: func.func @constants
// CHECK: ember.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK: ember.constant dense<true> : tensor<i1>
// CHECK: ember.constant dense<{{\[}}[1.500000e+00, 2.500000e+00]]> : tensor<1x2xbf16>
func.func @constants() -> (tensor<3xi64>, tensor<i1>, tensor<1x2xbf16>) {
  %a = ember.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = ember.constant dense<true> : tensor<i1>
  %c = ember.constant dense<[[1.5, 2.5]]> : tensor<1x2xbf16>
  return %a, %b, %c : tensor<3xi64>, tensor<i1>, tensor<1x2xbf16>
}

// A default-valued attribute is printed only when it differs from the
// schema default; a Scalar keeps its kind (i64, f64 or bool).
// CHECK-LABEL: func.func @defaults_and_scalars
// CHECK: ember.add.Tensor %{{.*}}, %{{.*}} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: ember.add.Tensor %{{.*}}, %{{.*}} {alpha = 2 : i64} :
// CHECK: ember.add.Tensor %{{.*}}, %{{.*}} {alpha = 1.000000e+00 : f64} :
// CHECK: ember.masked_fill.Scalar %{{.*}}, %{{.*}} {value = true} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
func.func @defaults_and_scalars(%x: tensor<4xf32>, %m: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>) {
  %a = ember.add.Tensor %x, %x {alpha = 1 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = ember.add.Tensor %x, %x {alpha = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = ember.add.Tensor %x, %x {alpha = 1.0 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = ember.masked_fill.Scalar %m, %m {value = true} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi1>
}

// Tensor[] arguments are bracketed lists, possibly of one; `none` is a None
// element (x[:, i] indexes with [None, i]).
// CHECK-LABEL: func.func @lists
// CHECK: ember.cat [%{{.*}}, %{{.*}}, %{{.*}}] {dim = 1 : i64} : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK: ember.index.Tensor %{{.*}}, [%{{.*}}, %{{.*}}] : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
// CHECK: ember.index_put_ %{{.*}}, [%{{.*}}], %{{.*}} {accumulate = true} : (tensor<4x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: ember.index.Tensor %{{.*}}, [none, %{{.*}}] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
// CHECK: ember.index_put_ %{{.*}}, [none, %{{.*}}], %{{.*}} : (tensor<4x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<4x3xf32>
func.func @lists(%a: tensor<2x1xf32>, %b: tensor<2x2xf32>, %t: tensor<4x3xf32>, %i: tensor<2xi64>, %v: tensor<3xf32>, %s: tensor<f32>) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<4x2xf32>, tensor<4x3xf32>) {
  %0 = ember.cat [%a, %b, %a] {dim = 1 : i64} : (tensor<2x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %1 = ember.index.Tensor %t, [%i, %i] : (tensor<4x3xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  %2 = ember.index_put_ %t, [%i], %v {accumulate = true} : (tensor<4x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<4x3xf32>
  %3 = ember.index.Tensor %t, [none, %i] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  %4 = ember.index_put_ %t, [none, %i], %s : (tensor<4x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<4x3xf32>
  return %0, %1, %2, %3, %4 : tensor<2x4xf32>, tensor<2xf32>, tensor<4x3xf32>, tensor<4x2xf32>, tensor<4x3xf32>
}

// Ops with several results; in-place ops return the updated value of self.
// CHECK-LABEL: func.func @results
// CHECK: %{{.*}}, %{{.*}} = ember.max.dim %{{.*}} {dim = 0 : i64, keepdim = true} : (tensor<2x3xf64>) -> (tensor<1x3xf64>, tensor<1x3xi64>)
// CHECK: ember.mul_.Tensor %{{.*}}, %{{.*}} : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
func.func @results(%x: tensor<2x3xf64>, %y: tensor<3xf64>) -> (tensor<1x3xf64>, tensor<1x3xi64>, tensor<2x3xf64>) {
  %v, %i = ember.max.dim %x {dim = 0 : i64, keepdim = true} : (tensor<2x3xf64>) -> (tensor<1x3xf64>, tensor<1x3xi64>)
  %m = ember.mul_.Tensor %x, %y : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  return %v, %i, %m : tensor<1x3xf64>, tensor<1x3xi64>, tensor<2x3xf64>
}

// Every ember dtype, and the promotions between them.
// CHECK-LABEL: func.func @dtypes
// CHECK: ember.add.Tensor {{.*}} : (tensor<2xf16>, tensor<2xbf16>) -> tensor<2xf32>
// CHECK: ember.add.Tensor {{.*}} : (tensor<2xui8>, tensor<2xi8>) -> tensor<2xi16>
// CHECK: ember.add.Tensor {{.*}} : (tensor<2xi16>, tensor<2xi32>) -> tensor<2xi32>
// CHECK: ember.add.Tensor {{.*}} : (tensor<2xi64>, tensor<2xi1>) -> tensor<2xi64>
// CHECK: ember.div.Tensor {{.*}} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
// CHECK: ember.eq.Tensor {{.*}} : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xi1>
func.func @dtypes(%h: tensor<2xf16>, %bf: tensor<2xbf16>, %u8: tensor<2xui8>, %i8: tensor<2xi8>, %i16: tensor<2xi16>, %i32: tensor<2xi32>, %i64: tensor<2xi64>, %b: tensor<2xi1>, %d: tensor<2xf64>) {
  %0 = ember.add.Tensor %h, %bf : (tensor<2xf16>, tensor<2xbf16>) -> tensor<2xf32>
  %1 = ember.add.Tensor %u8, %i8 : (tensor<2xui8>, tensor<2xi8>) -> tensor<2xi16>
  %2 = ember.add.Tensor %i16, %i32 : (tensor<2xi16>, tensor<2xi32>) -> tensor<2xi32>
  %3 = ember.add.Tensor %i64, %b : (tensor<2xi64>, tensor<2xi1>) -> tensor<2xi64>
  %4 = ember.div.Tensor %i64, %i64 : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  %5 = ember.eq.Tensor %d, %d : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xi1>
  return
}

// A tensor on a device other than the CPU carries it as its encoding;
// ScalarType and Device arguments are a type and #ember.device.
// CHECK-LABEL: func.func @devices
// CHECK: ember.mul.Tensor {{.*}} : (tensor<4xf32, #ember.device<"cuda:0">>, tensor<f32>) -> tensor<4xf32, #ember.device<"cuda:0">>
// CHECK: ember._to_copy %{{.*}} {device = #ember.device<"cpu">, dtype = f16} : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf16>
func.func @devices(%x: tensor<4xf32, #ember.device<"cuda:0">>, %s: tensor<f32>) -> tensor<4xf16> {
  %0 = ember.mul.Tensor %x, %s : (tensor<4xf32, #ember.device<"cuda:0">>, tensor<f32>) -> tensor<4xf32, #ember.device<"cuda:0">>
  %1 = ember._to_copy %0 {device = #ember.device<"cpu">, dtype = f16} : (tensor<4xf32, #ember.device<"cuda:0">>) -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// Data-dependent output shapes have `?` where the data decides.
// CHECK-LABEL: func.func @data_dependent
// CHECK: ember.nonzero %{{.*}} : (tensor<2x3xi1>) -> tensor<?x2xi64>
func.func @data_dependent(%x: tensor<2x3xi1>) -> tensor<?x2xi64> {
  %0 = ember.nonzero %x : (tensor<2x3xi1>) -> tensor<?x2xi64>
  return %0 : tensor<?x2xi64>
}

// ember.eager_call: one `args` entry per schema argument: operands by
// number, Tensor[] as a list of them, None, int, bool, Scalar, int[],
// ScalarType, Device (str, float, Tensor? and generators: test_ir, with
// custom ops).
// CHECK-LABEL: func.func @eager_calls
// CHECK: ember.eager_call "ember::add.Tensor"(%{{.*}}, %{{.*}}) {args = [#ember.operand<0>, #ember.operand<1>, 2.500000e+00]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: ember.eager_call "ember::sum.dim_IntList"(%{{.*}}) {args = [#ember.operand<0>, array<i64: 0>, true, f64]} : (tensor<4xf32>) -> tensor<1xf64>
// CHECK: ember.eager_call "ember::_to_copy"(%{{.*}}) {args = [#ember.operand<0>, #ember.none, #ember.device<"cpu">]} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: ember.eager_call "ember::index.Tensor"(%{{.*}}, %{{.*}}) {args = [#ember.operand<0>, [#ember.none, #ember.operand<1>]]} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
// CHECK: ember.eager_call "ember::cat"(%{{.*}}, %{{.*}}) {args = {{\[}}[#ember.operand<0>, #ember.operand<1>], -1]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
// CHECK: %{{.*}}:2 = ember.eager_call "ember::topk"(%{{.*}}) {args = [#ember.operand<0>, 2, -1, false, true]} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi64>)
func.func @eager_calls(%x: tensor<4xf32>, %y: tensor<4xf32>, %t: tensor<4x3xf32>, %i: tensor<2xi64>) {
  %0 = ember.eager_call "ember::add.Tensor"(%x, %y) {args = [#ember.operand<0>, #ember.operand<1>, 2.5 : f64]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = ember.eager_call "ember::sum.dim_IntList"(%x) {args = [#ember.operand<0>, array<i64: 0>, true, f64]} : (tensor<4xf32>) -> tensor<1xf64>
  %2 = ember.eager_call "ember::_to_copy"(%x) {args = [#ember.operand<0>, #ember.none, #ember.device<"cpu">]} : (tensor<4xf32>) -> tensor<4xf32>
  %5 = ember.eager_call "ember::index.Tensor"(%t, %i) {args = [#ember.operand<0>, [#ember.none, #ember.operand<1>]]} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  %3 = ember.eager_call "ember::cat"(%x, %y) {args = [[#ember.operand<0>, #ember.operand<1>], -1]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %4:2 = ember.eager_call "ember::topk"(%x) {args = [#ember.operand<0>, 2, -1, false, true]} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  return
}
