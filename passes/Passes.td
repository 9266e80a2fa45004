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

def Decompose : Pass<"ember-decompose", "mlir::func::FuncOp"> {
  let summary = "replaces ops that have a decomposition by the ops it calls";
  let description = [{
    An op whose ops.yaml entry has `decompose:` (softmax, log_softmax,
    logsumexp, var) is replaced by the ops of its decomposition, a C++
    function of ember ops (eager/ops/Decompositions.cpp) run on fake tensors
    of the op's operand types under a recording dispatch mode
    (ir/Decompose.h); ops it calls that have decompositions are decomposed in
    turn. The pass asks the op table, not a list of names. A decomposition
    that declines its input (an empty reduction) leaves the op whole. The
    new ops carry the op's location, so the kernels they fuse into still
    name the user's op.

    ```mlir
    // before
    %y = ember.softmax.int %x {dim = 1 : i64} : ...
    // after
    %m = ember.amax %x {dim = array<i64: 1>, keepdim = true} : ...
    %s = ember.sub.Tensor %x, %m ...
    %e = ember.exp %s ...
    %t = ember.sum.dim_IntList %e {dim = array<i64: 1>, keepdim = true} ...
    %y = ember.div.Tensor %e, %t ...
    ```
  }];
  let dependentDialects = ["::ember::ir::EmberDialect"];
}

def FuseElementwise : Pass<"ember-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "groups pointwise ops and the reductions they feed into ember.fusion regions";
  let description = [{
    Groups pointwise ops, conversions on one device and the reductions of
    the op table (sum, mean, amax, amin) into `ember.fusion` regions, each of
    which a code generator compiles into one kernel. Every op has a
    *domain*: its iteration space and the dims it folds (ir/Domain.h).

    Walking the function forward, an op joins the groups of its operands
    (vertical fusion) and the earlier groups that read one of its operands
    (horizontal fusion: the operand is read once) when their domains merge
    (equal; or one a reduction whose kept points are the other's space) and
    every op reads its operands as the merged kernel indexes them (Note
    [Reduction fusion]). A group that an op outside it reads is sealed:
    nothing after that op joins it, so each fusion can run where its last
    op was. Wrapped numbers (`ember.constant {wrapped_number}`) are copied
    into every fusion that uses them.

    Which ops take part is the `target` code generator's answer, per op
    (Note [Per-op capability] in passes/FusionTarget.h): an op it does not
    compute stays outside and runs eagerly, and the ops around it still
    fuse. `target=any` fuses every op that has a domain. A fusion holds at
    most `max-ops` ops, each counted by the target's weight for it (Note
    [Fusion size]).

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
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "the code generator whose per-op capability decides what fuses "
           "(cpu, any)">,
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"kMaxFusionOps",
           "the most ops one fusion holds, each counted by its weight "
           "(Note [Fusion size]); a longer chain is cut into several "
           "fusions">
  ];
  let dependentDialects = ["::ember::ir::EmberDialect"];
}

def FuseHorizontal : Pass<"ember-fuse-horizontal", "mlir::func::FuncOp"> {
  let summary = "groups independent pointwise fusions of the function's arguments into one combined kernel";
  let description = [{
    An optimizer step updates each parameter with the same chain of
    pointwise ops over its own shape: ember-fuse-elementwise makes one
    fusion per parameter, each a kernel of its own. This pass puts such
    fusions into one outer `ember.fusion` whose body holds them (a fusion of
    fusions): the code generator runs every inner fusion over its own
    iteration space within one kernel launch (Inductor's combo kernels;
    PyTorch's multi-tensor apply for its foreach optimizers), so a step
    over many parameters is one parallel region on the CPU, not one per
    parameter (Note [Combined kernels] in codegen/CpuFusion.cpp).

    A fusion joins when it is on the CPU (combined kernels are the CPU
    generator's), pointwise (no fold), never raises (no integer
    value inside: Note [What compile() may change]), reads only the
    function's arguments and constants, and only the function's return
    reads its results: then moving it to the position of the last fusion
    that joins neither reorders a dependence nor extends the life of a
    buffer the function made. A joint graph's backward (the function
    ember-remat outlines, marked `ember.recomputed`) is left alone: it
    releases its arguments, the saved tensors, at their last use. At most `max-ops` inner ops (Note [Fusion
    size]) go into one combined fusion; a group of one stays as it was.
    Inner fusions lose their `ember.reuse` plans (ember-plan-memory plans
    the combined one, after this pass).

    ```mlir
    // before
    %p1 = ember.fusion(%w1, %g1) : ... { ... sub, mul ... }
    %p2 = ember.fusion(%w2, %g2) : ... { ... sub, mul ... }
    return %p1, %p2
    // after
    %r:2 = ember.fusion(%w1, %g1, %w2, %g2) : ... {
    ^bb0(%a: ..., %b: ..., %c: ..., %d: ...):
      %p1 = ember.fusion(%a, %b) : ... { ... }
      %p2 = ember.fusion(%c, %d) : ... { ... }
      ember.yield %p1, %p2 : ...
    }
    return %r#0, %r#1
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"kMaxFusionOps",
           "the most inner ops one combined fusion holds (Note [Fusion "
           "size])">
  ];
  let dependentDialects = ["::ember::ir::EmberDialect"];
}

def PlanMemory : Pass<"ember-plan-memory", "mlir::func::FuncOp"> {
  let summary = "plans fusion results into the buffers of inputs that die";
  let description = [{
    A fusion result may be written into the buffer of one of the fusion's
    inputs when that input has the result's type (shape and dtype) and the
    fusion is its only user: a value the program made itself (not an
    argument, which is the caller's, nor a constant), dead once the fusion
    has read it. The plan is the fusion's `ember.reuse` attribute, per
    result the input's index or -1. Kernels read every input element before
    they write the output element at the same place (pointwise kernels at
    each point; reduction kernels store their full results in their last
    loop over a block), so writing in place is safe -- for a result
    indexed as the input is: in a fusion with a reduction only a result of
    the full iteration space reuses an input (an input shaped like the
    kept points may be a row that every point reads). At run time the
    executor hands the buffer over only when nothing else holds it (no
    view of it, not returned); otherwise the kernel allocates as usual.

    ```mlir
    %0 = ember.mm %a, %b : ...
    %1 = ember.fusion(%0) {ember.reuse = array<i64: 0>} : ... {
      ... relu, add ...
    }
    ```
  }];
  let dependentDialects = ["::ember::ir::EmberDialect"];
}

def Remat : Pass<"ember-remat", "mlir::ModuleOp"> {
  let summary = "partitions joint forward/backward functions: what to save for backward, what to recompute";
  let description = [{
    A joint function (one whose attribute `ember.forward_results = N` says
    its first N results are the forward's; the rest are gradients, and the
    arguments marked `{ember.tangent}` the gradients of the forward results)
    is replaced by `<name>_forward`, which takes the other arguments (the
    primals) and returns the forward results and then the saved tensors
    (each marked `{ember.saved = "<op>"}`), and `<name>_backward`, which
    takes the saved tensors and the tangents, recomputes the forward ops
    listed in its `ember.recomputed` and returns the gradients (Note
    [Partitioning the joint graph] in passes/Remat.cpp).

    Without a budget the saved set is a minimum cut over bytes in which the
    backward may recompute only what fusion keeps in registers (pointwise
    chains the forward does not write to memory). With
    `memory-budget=BYTES` it is the set with the least estimated recompute
    cost (FLOPs; `ember.recompute_flops`) whose bytes fit
    (`ember.saved_bytes`; primals are free), any op but a random one being
    recomputable. Random ops are never recomputed.

    ```mlir
    // before
    func.func @f(%x: tensor<4xf32>, %g: tensor<4xf32> {ember.tangent})
        -> (tensor<4xf32>, tensor<4xf32>) attributes {ember.forward_results = 1} {
      %y = ember.exp %x : (tensor<4xf32>) -> tensor<4xf32>
      %d = ember.mul.Tensor %g, %y : ...
      return %y, %d : ...
    }
    // after
    func.func @f_forward(%x) -> (tensor<4xf32>, tensor<4xf32> {ember.saved = "ember.exp"})
    func.func @f_backward(%y, %g) -> tensor<4xf32>
    ```
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"-1",
           "the most bytes of saved tensors (primals are free); -1: the "
           "minimum cut">
  ];
  let dependentDialects = ["::ember::ir::EmberDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // EMBER_PASSES
