//===- Passes.td - ember's passes ------------------------------------------===//
//
// Every pass of the compiler (DESIGN.md, "Compiler", the pipeline), one
// file a pass in passes/. ember-opt runs any of them by name; pipelines()
// (passes/Passes.h) strings them into the optimisation levels.
//
//===----------------------------------------------------------------------===//

#ifndef EMBER_PASSES
#define EMBER_PASSES

include "mlir/Pass/PassBase.td"

def FuseElementwise : Pass<"ember-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "groups pointwise ops into ember.fusion regions";
  let description = [{
    Groups ops with the Pointwise trait into `ember.fusion` regions, each
    of which a code generator compiles into one loop. Walking the function
    backwards, an op joins the fusion of its users when all of its users
    are in that one fusion and its result has as many elements as the
    fusion's results (so no value is computed twice: a producer whose
    result is broadcast into a larger consumer keeps its own fusion, and a
    value used by two fusions is computed once and read by both). Wrapped
    numbers (`ember.constant {wrapped_number}`) are copied into every
    fusion that uses them.

    ```mlir
    // before
    %0 = ember.mul.Tensor %x, %w : ...
    %1 = ember.relu %0 : ...
    // after
    %1 = ember.fusion (%x, %w) : ... {
    ^bb0(%a: ..., %b: ...):
      %0 = ember.mul.Tensor %a, %b : ...
      %r = ember.relu %0 : ...
      ember.yield %r : ...
    }
    ```
  }];
  let dependentDialects = ["::ember::ir::EmberDialect"];
}

#endif // EMBER_PASSES
