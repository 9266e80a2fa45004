// ember-decompose (passes/Passes.td): ops with a decomposition in the op
// table replaced by the ops it calls.
#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/Decompose.h"
#include "ir/Import.h"

#include "llvm/ADT/SetVector.h"

namespace ember::passes {

#define GEN_PASS_DEF_DECOMPOSE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

struct Decompose : impl::DecomposeBase<Decompose> {
  void runOnOperation() override {
    llvm::SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
      if (op->getNumRegions() == 0 &&
          (ir::table_op(op) || llvm::isa<ir::EagerCallOp>(op)))
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
