// ember-plan-memory (passes/Passes.td): which fusion results may be
// written into the buffer of an input that dies at the fusion, or into an
// argument the graph writes with that result.
#include "passes/Passes.h"

#include "ir/Queries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace ember::passes {

#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// `v` is a buffer of the program's own that `fusion` alone reads: a
/// result of an op (not an argument: the caller's; not a constant: kept
/// across calls) whose every use is `fusion`.
bool dies_at(Value v, Operation *fusion) {
  Operation *def = v.getDefiningOp();
  if (!def || llvm::isa<ir::ConstantOp>(def))
    return false;
  return llvm::all_of(v.getUsers(), [&](Operation *u) { return u == fusion; });
}

/// What overwritten_by asks of the function, computed once per function
/// (asked per result and input, it made a combined fusion of thousands of
/// parameters cubic).
struct Writes {
  /// Per value the function returns as an argument's new value
  /// (`ember.mutations`): the arguments it is written into.
  llvm::DenseMap<Value, llvm::SmallVector<unsigned, 1>> into;
  /// The ops from which on nothing raises (Note [What compile() may
  /// change]: a graph that raises has written none of its arguments).
  llvm::DenseSet<Operation *> quiet_from;

  explicit Writes(func::FuncOp fn) {
    if (fn.isExternal() || fn->hasAttr("ember.forward_results"))
      return;
    Operation *ret = fn.getBody().front().getTerminator();
    if (auto muts = fn->getAttrOfType<DenseI64ArrayAttr>("ember.mutations");
        muts && muts.size() <= ret->getNumOperands()) {
      // (a malformed attribute is the verifier's to report)
      unsigned first = ret->getNumOperands() - unsigned(muts.size());
      for (auto [j, input] : llvm::enumerate(muts.asArrayRef()))
        if (input >= 0 && input < int64_t(fn.getNumArguments()))
          into[ret->getOperand(first + unsigned(j))].push_back(unsigned(input));
    }
    for (Operation *op = ret->getPrevNode(); op && ir::never_raises(op);
         op = op->getPrevNode())
      quiet_from.insert(op);
  }

  /// `v` is an argument the graph writes (`ember.mutations`) with `result`
  /// of `fusion`, and that only ops before `fusion` read otherwise, none of
  /// them a view (whose result could be read later): the kernel may write
  /// `result` into the argument's own buffer, which the graph overwrites
  /// anyway (an optimizer's update of a parameter), instead of a new buffer
  /// copied into it after the graph. Neither the fusion nor anything after
  /// it may raise: fusions without integer values (whose kernels never
  /// raise), views and constants.
  bool overwritten_by(Value v, Operation *fusion, Value result) const {
    auto a = llvm::dyn_cast<BlockArgument>(v);
    if (!a || !llvm::isa<func::FuncOp>(a.getOwner()->getParentOp()))
      return false;
    auto it = into.find(result);
    if (it == into.end() || !llvm::is_contained(it->second, a.getArgNumber()))
      return false;
    if (!quiet_from.contains(fusion))
      return false;
    return llvm::all_of(a.getUsers(), [&](Operation *u) {
      return u == fusion ||
             (u->getBlock() == fusion->getBlock() &&
              u->isBeforeInBlock(fusion) && !u->hasTrait<ir::OpTrait::View>());
    });
  }
};

/// The shape of the space a fusion with a reduction iterates over (its
/// first fold's operand), or none for a pointwise fusion.
std::optional<llvm::ArrayRef<int64_t>> reduction_space(ir::FusionOp f) {
  for (Operation &op : f.getBody().front())
    if (ir::reduction_of(&op))
      return llvm::cast<RankedTensorType>(op.getOperand(0).getType())
          .getShape();
  return std::nullopt;
}

struct PlanMemory : impl::PlanMemoryBase<PlanMemory> {
  void runOnOperation() override {
    const Writes writes(getOperation());
    getOperation().walk([&](ir::FusionOp f) {
      // (inner fusions of a combined one: their inputs are the outer
      // body's arguments, never planned; the outer fusion is)
      if (f->getParentOfType<ir::FusionOp>())
        return;
      // (per input value its places among the inputs; the inputs an op
      // made: asked per result, a scan of every input made a combined
      // fusion of thousands of parameters quadratic)
      llvm::DenseMap<Value, llvm::SmallVector<unsigned, 1>> slots;
      llvm::SmallVector<unsigned> made;
      for (auto [k, in] : llvm::enumerate(f.getInputs())) {
        slots[in].push_back(unsigned(k));
        if (in.getDefiningOp())
          made.push_back(unsigned(k));
      }
      llvm::SmallVector<int64_t> reuse(f.getNumResults(), -1);
      llvm::SmallVector<bool> taken(f.getInputs().size(), false);
      bool any = false;
      auto yield = llvm::cast<ir::YieldOp>(f.getBody().front().getTerminator());
      for (unsigned r = 0; r < f.getNumResults(); ++r) {
        // (in a fusion of fusions, Note [Combined kernels]: the part that
        // yields the result, which indexes it as its own kernel does)
        ir::FusionOp inner = yield.getValues()[r].getDefiningOp<ir::FusionOp>();
        // A kernel writes each result element after it has read every
        // input element at the same point. In a reduction kernel, only a
        // result of the full space is indexed as an input of its type is:
        // an input of the kept points' shape may be a broadcast row read at
        // every point (Note [Reduction fusion]), so a result of kept points
        // never reuses one.
        std::optional<llvm::ArrayRef<int64_t>> space =
            reduction_space(inner ? inner : f);
        // The candidates, in input order: the inputs the program made
        // (they may die here) and the arguments written with this result.
        llvm::SmallVector<unsigned, 4> candidates(made.begin(), made.end());
        if (auto it = writes.into.find(f.getResult(r)); it != writes.into.end())
          for (unsigned a : it->second)
            for (unsigned k : slots.lookup(getOperation().getArgument(a)))
              candidates.push_back(k);
        llvm::sort(candidates);
        for (unsigned k : candidates) {
          Value in = f.getInputs()[k];
          if (taken[k] || in.getType() != f.getResult(r).getType() ||
              !(dies_at(in, f) || writes.overwritten_by(in, f, f.getResult(r))))
            continue;
          if (space &&
              llvm::cast<RankedTensorType>(in.getType()).getShape() != *space)
            continue;
          // (a combined kernel's parts run side by side)
          if (!ir::part_may_write_into(f, r, k))
            continue;
          reuse[r] = int64_t(k);
          taken[k] = true;
          any = true;
          break;
        }
      }
      if (any)
        f->setAttr(ir::kReuseAttr, OpBuilder(f).getDenseI64ArrayAttr(reuse));
    });
  }
};

} // namespace
} // namespace ember::passes
