// RUN: not ember-opt %s --ember-remat="memory-budget=-100" 2>&1 | FileCheck %s
// CHECK: memory-budget must be a number of bytes, or -1 for the minimum cut; got -100
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
