#pragma once
/// ember dialect -> Trace: the reverse of ir/Builder.h, so that the front end
/// runs what the compiler produced. build_module -> import_func ->
/// build_module gives the same module; values are numbered in order of
/// definition (arguments, then ops in order).
///
/// Every op of a function maps back to the trace: ember.constant to a
/// Constant (a wrapped number's Scalar, or Constant::tensor for a constant
/// tensor), a dialect op to a Node of its dispatcher op (attributes back to
/// IValues, absent ones to their schema defaults), ember.eager_call to a
/// Node of its callee, func.return to the outputs and, per the
/// `ember.mutations` attribute, the mutations.

#include "ir/Dialect.h"
#include "ir/Trace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace ember::ir {

/// The trace of a function of ember ops. Throws ember::Error for an op that
/// has no trace form (another dialect's, a region), for types that are not
/// ember tensors with static shapes, and for a malformed `ember.*`
/// attribute.
Trace import_func(mlir::func::FuncOp func);

/// One op of the table (or ember.eager_call) as a trace: its distinct
/// operands, in order of first use, are the trace's inputs; its results the
/// outputs. Throws ember::Error for any other op.
Trace import_op(mlir::Operation *op);

/// Parses a module from text (ember, func and arith ops; the context gets
/// them loaded). Throws ember::Error with the parser's and the verifier's
/// diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> parse_module(mlir::MLIRContext &ctx,
                                               llvm::StringRef text);

/// The node's source location as Trace::Node::loc keeps it ("file:12:7",
/// or ""), from a location made by build_module (or fused by a pass).
std::string loc_string(mlir::Location loc);

} // namespace ember::ir
