// ember-fuse-horizontal (passes/Passes.td): independent pointwise fusions
// of the function's arguments into one combined fusion (a fusion of
// fusions), which the code generator runs as one kernel launch.
#include "passes/Passes.h"

#include "ir/Builder.h"
#include "ir/Queries.h"
#include "ir/Types.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace ember::passes {

#define GEN_PASS_DEF_FUSEHORIZONTAL
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// The number of ops in a fusion's body (its constants and yield aside).
int64_t inner_ops(ir::FusionOp f) {
  int64_t n = 0;
  for (Operation &op : f.getBody().front())
    n += !llvm::isa<ir::ConstantOp, ir::YieldOp>(op);
  return n;
}

/// Whether `f` may join a combined fusion (Passes.td): pointwise, never
/// raising, reading only the function's arguments and constants, read only
/// by the function's return, on the CPU (combined kernels are the CPU
/// generator's: on CUDA a fusion of fusions would run eagerly).
bool joins(ir::FusionOp f) {
  for (Type t : f->getResultTypes())
    if (!ir::value_type(t).device.is_cpu())
      return false;
  Block &body = f.getBody().front();
  if (llvm::any_of(body, [](Operation &op) {
        return llvm::isa<ir::FusionOp>(op) || ir::reduction_of(&op);
      }))
    return false;
  if (!ir::never_raises(f))
    return false;
  Block *block = f->getBlock();
  for (Value in : f.getInputs()) {
    auto arg = llvm::dyn_cast<BlockArgument>(in);
    if (arg ? arg.getOwner() != block
            : !llvm::isa<ir::ConstantOp>(in.getDefiningOp()))
      return false;
  }
  return llvm::all_of(f->getUsers(), [](Operation *u) {
    return u->hasTrait<OpTrait::IsTerminator>();
  });
}

/// Replaces `parts` (in program order) by one fusion at the position of
/// the last whose body holds them, their inputs deduplicated.
void combine(llvm::MutableArrayRef<ir::FusionOp> parts) {
  llvm::SetVector<Value> inputs;
  llvm::SmallVector<Location> locs;
  llvm::SmallVector<Type> types;
  for (ir::FusionOp f : parts) {
    inputs.insert(f.getInputs().begin(), f.getInputs().end());
    locs.push_back(f.getLoc());
    types.append(f.getResultTypes().begin(), f.getResultTypes().end());
  }
  IRMapping map;
  auto [outer, bb] =
      ir::create_fusion(parts.back(), locs, types, inputs.getArrayRef(), map);
  llvm::SmallVector<Value> yielded;
  for (ir::FusionOp f : parts) {
    Operation *copy = bb.clone(*f, map);
    copy->removeAttr(ir::kReuseAttr); // Passes.td: planned as a whole
    yielded.append(copy->getResults().begin(), copy->getResults().end());
  }
  bb.create<ir::YieldOp>(parts.back().getLoc(), yielded);
  unsigned r = 0;
  for (ir::FusionOp f : parts)
    for (Value v : f.getResults())
      v.replaceAllUsesWith(outer.getResult(r++));
  for (ir::FusionOp f : parts)
    f->erase();
}

struct FuseHorizontal : impl::FuseHorizontalBase<FuseHorizontal> {
  using FuseHorizontalBase::FuseHorizontalBase;

  void runOnOperation() override {
    if (getOperation().isExternal())
      return;
    // A joint graph's backward (ember-remat outlines it, always with
    // `ember.recomputed`) releases each argument, a saved tensor, at its
    // last use (frontend: Program::run_consuming): a fusion moved later
    // would hold the tensors it reads longer, and the step's peak with
    // them. Elsewhere the caller holds the arguments for the whole call.
    if (getOperation()->hasAttr("ember.recomputed"))
      return;
    // The candidates in program order, cut into groups of at most maxOps
    // inner ops (Note [Fusion size]).
    std::vector<std::vector<ir::FusionOp>> groups(1);
    int64_t weight = 0;
    for (Operation &op : getOperation().getBody().front()) {
      auto f = llvm::dyn_cast<ir::FusionOp>(op);
      if (!f || !joins(f))
        continue;
      int64_t w = inner_ops(f);
      if (!groups.back().empty() && weight + w > maxOps) {
        groups.emplace_back();
        weight = 0;
      }
      groups.back().push_back(f);
      weight += w;
    }
    for (std::vector<ir::FusionOp> &g : groups)
      if (g.size() > 1)
        combine(g);
  }
};

} // namespace
} // namespace ember::passes
