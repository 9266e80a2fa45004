#pragma once
/// Trace -> ember dialect (DESIGN.md, "Pipeline": trace -> ember MLIR).
///
/// Each trace becomes a `func.func` named after it:
/// - block arguments: the trace's inputs in order, with the argument
///   attributes `ember.name` (Input::name) and `ember.input` ("argument:N" or
///   "lifted:N");
/// - `ember.constant {wrapped_number}` per wrapped number, `ember.constant`
///   per constant tensor;
/// - one op per node: its dialect op, or `ember.eager_call` when the dialect
///   has none (custom ops) or the call passes a generator;
/// - `func.return` of the outputs, then of the values written to inputs; the
///   function attribute `ember.mutations` (absent when none) lists, for each
///   of those trailing results, the input it is written to.
/// Locations: NameLoc("ember::add.Tensor") around FileLineColLoc for a node
/// whose loc is "file:line:col", a plain NameLoc for a node without one (and
/// NameLoc around NameLoc(loc) for any other loc text, so that it comes back
/// on import). ir/Import.h reads the function back.

#include "ir/Dialect.h"
#include "ir/Trace.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <utility>

namespace ember::ir {

/// A module with one func.func per trace. Throws ember::Error for a
/// malformed trace (a value used before it is defined, arguments that do not
/// match the schema); the module is not verified (see verify_module).
mlir::OwningOpRef<mlir::ModuleOp>
build_module(mlir::MLIRContext &ctx, llvm::ArrayRef<const Trace *> traces);

/// Emits the ops of `trace` at `b`'s insertion point, with `inputs` (one
/// per trace input, of its type) for its inputs and `loc` as every op's
/// location; returns the values of its outputs. Mutations and input
/// metadata are ignored (ember-decompose inlines op bodies with it).
llvm::SmallVector<mlir::Value> build_inline(mlir::OpBuilder &b,
                                            const Trace &trace,
                                            mlir::ValueRange inputs,
                                            mlir::Location loc);

/// Verifies a module; throws ember::Error with every diagnostic.
void verify_module(mlir::ModuleOp module);

/// A new ember.fusion placed before `at`, over `inputs`, with results of
/// `types` and the fused location of `locs`: its body's arguments, one per
/// input, are mapped from the inputs in `map`. Returns the fusion and a
/// builder at the start of its (still empty) body.
std::pair<FusionOp, mlir::OpBuilder>
create_fusion(mlir::Operation *at, llvm::ArrayRef<mlir::Location> locs,
              mlir::TypeRange types, mlir::ValueRange inputs,
              mlir::IRMapping &map);

/// The module as text (the custom assembly form); with its locations
/// (`loc(...)`) when `with_locations`.
std::string print_module(mlir::ModuleOp module, bool with_locations = false);

} // namespace ember::ir
