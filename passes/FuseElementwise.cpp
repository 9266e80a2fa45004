// ember-fuse-elementwise (passes/Passes.td): pointwise ops into ember.fusion
// regions.
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace ember::passes {

#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

bool fusible(Operation *op) {
  return op->hasTrait<ir::OpTrait::Pointwise>() && op->getNumResults() == 1;
}

bool wrapped_number(Operation *op) {
  auto c = llvm::dyn_cast_or_null<ir::ConstantOp>(op);
  return c && c.getWrappedNumber();
}

int64_t numel(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getNumElements();
}

/// Replaces `ops` (a group, in program order; the last one is the only op
/// whose result is used outside the group) by one ember.fusion at the
/// position of the last.
void outline(llvm::ArrayRef<Operation *> ops) {
  Operation *root = ops.back();
  llvm::SmallPtrSet<Operation *, 8> in_group(ops.begin(), ops.end());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : ops)
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && in_group.contains(def))
        continue;
      if (wrapped_number(def))
        constants.insert(def);
      else
        inputs.insert(v);
    }
  llvm::SmallVector<Location> locs;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());

  OpBuilder b(root);
  auto fusion = b.create<ir::FusionOp>(
      b.getFusedLoc(locs), root->getResultTypes(), inputs.getArrayRef());
  Block *body = new Block();
  fusion.getBody().push_back(body);
  IRMapping map;
  for (Value in : inputs)
    map.map(in, body->addArgument(in.getType(), in.getLoc()));
  OpBuilder bb = OpBuilder::atBlockBegin(body);
  for (Operation *c : constants)
    bb.clone(*c, map);
  for (Operation *op : ops)
    bb.clone(*op, map);
  bb.create<ir::YieldOp>(root->getLoc(),
                         ValueRange{map.lookup(root->getResult(0))});
  root->getResult(0).replaceAllUsesWith(fusion.getResult(0));
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

struct FuseElementwise : impl::FuseElementwiseBase<FuseElementwise> {
  void runOnOperation() override {
    Block &block = getOperation().getBody().front();
    // Walking backwards, every user of an op has its group when the op is
    // reached: the op joins its users' group if they all are in one group
    // of its element count (see the pass description).
    llvm::DenseMap<Operation *, int> group;
    std::vector<llvm::SmallVector<Operation *>> groups; // reverse order
    std::vector<int64_t> group_numel;
    for (Operation &op : llvm::reverse(block)) {
      if (!fusible(&op))
        continue;
      Value r = op.getResult(0);
      int g = -1;
      bool join = !r.use_empty();
      for (Operation *user : r.getUsers()) {
        auto it = group.find(user);
        if (it == group.end() || (g >= 0 && it->second != g)) {
          join = false;
          break;
        }
        g = it->second;
      }
      if (!join || group_numel[size_t(g)] != numel(r)) {
        g = int(groups.size());
        groups.emplace_back();
        group_numel.push_back(numel(r));
      }
      group[&op] = g;
      groups[size_t(g)].push_back(&op);
    }
    for (auto &ops : groups) {
      std::reverse(ops.begin(), ops.end()); // program order
      outline(ops);
    }
  }
};

} // namespace
} // namespace ember::passes
