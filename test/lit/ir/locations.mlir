// The locations build_module gives ops (ir/Builder.h): the dispatcher op's
// name around the user's file:line:col. They survive parsing and printing,
// so an EMBER_DEBUG_DIR dump read by ember-opt points at the user's code.

// RUN: ember-opt %s --mlir-print-debuginfo | ember-opt --mlir-print-debuginfo | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK: ember.add.Tensor %arg0, %arg0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc([[ADD:#loc[0-9]*]])
// CHECK: ember.relu %{{.*}} : (tensor<4xf32>) -> tensor<4xf32> loc([[RELU:#loc[0-9]*]])
// CHECK-DAG: [[FILE:#loc[0-9]*]] = loc("model.cpp":12:7)
// CHECK-DAG: [[ADD]] = loc("ember::add.Tensor"([[FILE]]))
// CHECK-DAG: [[RELU]] = loc("ember::relu")
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ember.add.Tensor %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("ember::add.Tensor"("model.cpp":12:7))
  %1 = ember.relu %0 : (tensor<4xf32>) -> tensor<4xf32> loc("ember::relu")
  return %1 : tensor<4xf32>
}
