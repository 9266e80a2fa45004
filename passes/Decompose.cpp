// ember-decompose (passes/Passes.td): ops with a decomposition in the op
// table replaced by the ops it calls.
#include "passes/Passes.h"

#include "eager/Decompose.h"
#include "ir/Builder.h"
#include "ir/Decompose.h"
#include "ir/Import.h"

#include "llvm/ADT/SetVector.h"

namespace ember::passes {

#define GEN_PASS_DEF_DECOMPOSE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// The dispatcher op that `op` calls (a table op or ember.eager_call's
/// callee) has a decomposition, and `op` reads no wrapped number. A
/// decomposition is written for tensors: the ops it calls promote a wrapped
/// number otherwise than the op's kernel computes (exp of the number 2.0 is
/// f32, _log_softmax_backward_data computes it in f64), and ir::import_op
/// makes the number a plain input, so the types recorded would not even
/// verify once the number is back in place (Note [Not a wrapped number] in
/// ir/Fold.cpp). Such an op stays whole.
bool has_decomposition(Operation *op) {
  if (llvm::any_of(op->getOperands(), ir::is_wrapped_number))
    return false;
  const OperatorHandle *h = ir::table_op(op);
  if (auto call = llvm::dyn_cast<ir::EagerCallOp>(op))
    h = Dispatcher::singleton().findOp(call.getCallee().str());
  return h && find_decomposition(*h);
}

struct Decompose : impl::DecomposeBase<Decompose> {
  void runOnOperation() override {
    // Only the ops with a decomposition are imported: others may have no
    // trace form (an eager_call returning a bool, a data-dependent shape)
    // and must stay as they are.
    llvm::SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (op->getNumRegions() == 0 && has_decomposition(op))
        candidates.push_back(op);
    });
    for (Operation *op : candidates) {
      std::optional<Trace> body;
      try {
        ir::Trace t = ir::import_op(op);
        std::string why;
        body = ir::decompose(t, &why);
      } catch (const Error &e) {
        op->emitError() << "ember-decompose: " << e.what();
        return signalPassFailure();
      }
      if (!body)
        continue;
      llvm::SetVector<Value> inputs(op->operand_begin(), op->operand_end());
      OpBuilder b(op);
      llvm::SmallVector<Value> results;
      try {
        results =
            ir::build_inline(b, *body, inputs.getArrayRef(), op->getLoc());
      } catch (const Error &e) {
        op->emitError() << "ember-decompose: " << e.what();
        return signalPassFailure();
      }
      op->replaceAllUsesWith(results);
      op->erase();
    }
  }
  using Trace = ir::Trace;
};

} // namespace
} // namespace ember::passes
