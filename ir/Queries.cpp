#include "ir/Queries.h"

#include "eager/WrapDim.h"
#include "ir/Types.h"

#include "llvm/ADT/DenseSet.h"

namespace ember::ir {

IValue attr_arg(mlir::Operation *op, const OperatorHandle &h, size_t index) {
  const Argument &a = h.schema().arguments.at(index);
  EMBER_CHECK(arg_kind(a) == ArgKind::Attribute, h.name(), ": argument '",
              a.name, "' is a tensor, not an attribute");
  mlir::Attribute attr = op->getAttr(a.name);
  return attr ? from_attr(attr, a) : default_value(a);
}

std::optional<ReductionOp> reduction_of(mlir::Operation *op) {
  const OperatorHandle *h = table_op(op);
  const ReductionInfo *info = h ? find_reduction(*h) : nullptr;
  if (!info || op->getNumOperands() < 1)
    return std::nullopt;
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(op->getOperand(0).getType());
  if (!t)
    return std::nullopt;
  int64_t rank = t.getRank();
  ReductionOp r{info, std::vector<bool>(size_t(rank), info->dim < 0)};
  if (rank == 0) // a 0-dim reduction folds nothing: a copy
    return r;
  if (info->dim >= 0) {
    IValue dims = attr_arg(op, *h, size_t(info->dim));
    if (dims.isNone() || dims.toIntList().empty())
      r.folded.assign(size_t(rank), true);
    else
      for (int64_t d : dims.toIntList())
        r.folded[size_t(maybe_wrap_dim(d, rank))] = true;
  }
  return r;
}

std::vector<int64_t> shape_of(mlir::Value v) {
  auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
  return std::vector<int64_t>(t.getShape().begin(), t.getShape().end());
}

std::optional<Domain> fusion_domain(mlir::Operation *op) {
  if (op->getNumResults() != 1)
    return std::nullopt;
  if (op->hasTrait<OpTrait::Pointwise>())
    return Domain{shape_of(op->getResult(0)), {}};
  // A conversion on one device is elementwise too.
  if (op->hasTrait<OpTrait::Conversion>() &&
      value_type(op->getOperand(0).getType()).device ==
          value_type(op->getResult(0).getType()).device)
    return Domain{shape_of(op->getResult(0)), {}};
  std::optional<ReductionOp> r = reduction_of(op);
  if (!r || r->folded.empty()) // a 0-dim reduction is a copy
    return std::nullopt;
  return Domain{shape_of(op->getOperand(0)), r->folded};
}

namespace {
/// No integer tensor among `types` (bool is not an integer here: nothing
/// on bools raises).
bool no_integers(mlir::TypeRange types) {
  return llvm::all_of(types, [](mlir::Type t) {
    auto r = llvm::dyn_cast<mlir::RankedTensorType>(t);
    if (!r)
      return false;
    auto i = llvm::dyn_cast<mlir::IntegerType>(r.getElementType());
    return !i || i.getWidth() == 1;
  });
}
} // namespace

bool never_raises(mlir::Operation *op) {
  if (llvm::isa<ConstantOp>(op) || op->hasTrait<OpTrait::View>())
    return true;
  auto f = llvm::dyn_cast<FusionOp>(op);
  if (!f || !no_integers(op->getOperandTypes()) ||
      !no_integers(op->getResultTypes()))
    return false;
  // (integer constants inside are numbers the kernel folds in, not values)
  for (mlir::Operation &inner : f.getBody().front())
    if (!llvm::isa<ConstantOp, YieldOp>(inner) &&
        !(llvm::isa<FusionOp>(inner) ? never_raises(&inner)
                                     : no_integers(inner.getResultTypes())))
      return false;
  return true;
}

std::vector<FusionOp> inner_fusions(FusionOp f, std::string *why) {
  mlir::Block &body = f.getBody().front();
  std::vector<FusionOp> inner;
  auto fail = [&](const char *what) {
    if (why)
      *why = what;
    return std::vector<FusionOp>();
  };
  bool other = false;
  for (mlir::Operation &op : body.without_terminator()) {
    if (auto g = llvm::dyn_cast<FusionOp>(op))
      inner.push_back(g);
    else
      other = true;
  }
  if (inner.empty())
    return inner;
  if (other)
    return fail("a fusion of fusions holds only fusions");
  for (FusionOp g : inner)
    for (mlir::Value in : g.getInputs())
      if (!llvm::isa<mlir::BlockArgument>(in))
        return fail("an inner fusion reads another's result: the inner "
                    "fusions of a fusion of fusions run side by side");
  llvm::DenseSet<mlir::Value> yielded;
  size_t results = 0;
  for (FusionOp g : inner)
    results += g.getNumResults();
  for (mlir::Value v : body.getTerminator()->getOperands()) {
    auto r = llvm::dyn_cast<mlir::OpResult>(v);
    if (!r || !llvm::isa<FusionOp>(r.getOwner()) || !yielded.insert(v).second)
      return fail("a fusion of fusions yields each result of its inner "
                  "fusions once, and nothing else");
  }
  if (yielded.size() != results)
    return fail("a fusion of fusions yields each result of its inner "
                "fusions once, and nothing else");
  return inner;
}

bool part_may_write_into(FusionOp f, unsigned r, unsigned k) {
  mlir::Block &body = f.getBody().front();
  if (llvm::none_of(
          body, [](mlir::Operation &op) { return llvm::isa<FusionOp>(op); }))
    return true;
  mlir::Operation *part =
      body.getTerminator()->getOperand(r).getDefiningOp<FusionOp>();
  return part && llvm::all_of(body.getArgument(k).getUsers(),
                              [&](mlir::Operation *u) { return u == part; });
}

} // namespace ember::ir
