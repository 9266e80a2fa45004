// The ember dialect: folding with the eager kernels (Note [Folding with
// eager]), identities, ember.constant's folder, constant materialization and
// the dialect's canonicalization patterns.
#include "ir/Dialect.h"
#include "ir/DialectImpl.h"

#include "eager/Factory.h"
#include "eager/Meta.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <cstring>

using namespace mlir;

namespace ember::ir {

namespace {
constexpr int64_t kMaxFoldElements = 64;

/// The eager tensor of a constant operand as folding sees it: a dense
/// attribute (a constant tensor) or a Scalar attribute (a wrapped number,
/// Note [Wrapped numbers fold to scalars]).
Tensor tensor_of_constant(Attribute attr) {
  if (isScalarAttr(attr))
    return wrapped_scalar_tensor(scalar_of(attr));
  return tensor_of_dense(llvm::cast<DenseElementsAttr>(attr));
}

bool small_constant(Attribute attr) {
  if (isScalarAttr(attr))
    return true;
  auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr);
  return dense && dense.getNumElements() <= kMaxFoldElements &&
         value_type(dense.getType()).device == Device(kCPU);
}

/// Flattens the results a boxed call left on the stack (Tensor[] returns
/// hold several tensors).
std::vector<Tensor> flatten_results(const Stack &stack) {
  std::vector<Tensor> out;
  for (const IValue &v : stack) {
    if (v.isTensorList())
      for (const Tensor &t : v.toTensorList())
        out.push_back(t);
    else
      out.push_back(v.toTensor());
  }
  return out;
}
} // namespace

// ---------------------------------------------------------------------------
// Folding the op table's ops
// ---------------------------------------------------------------------------

namespace detail {

// Note [Folding with eager]
// A pure op whose operands are all small constants (at most 64 elements,
// on the CPU) folds by running its eager CPU kernel on tensors made from the
// constants: the eager kernels are the one semantics, so folding can never
// disagree with running the graph. Modes, capture and autograd are excluded
// while the kernel runs. Eager errors (a bad index in a constant) leave the
// op unfolded: running it raises the error at its place.
namespace {
// Note [Identities]
// ops.yaml's `identity:` lists, per op, argument values that make the op
// return `self` unchanged (x * 1, x - 0, x + (-0.0)). The folder returns
// `self` when each listed argument (a constant operand or an attribute) is
// that value, compared bit for bit after both are converted to the result's
// dtype as eager converts (so x + 0 stays: for x = -0.0 it is +0.0), and
// the result has self's type (no broadcast, no promotion). Only a `self`
// that an op of the table computed as a new tensor folds: a graph input or
// a view may have another layout than the new contiguous tensor eager
// makes, and ops after it (view, as_strided) see layouts. The ops with
// identities (not their in-place forms) implement IdentityOpInterface
// (ir/EmberBase.td): ir/gen_dialect.py writes their getIdentities().

// Note [Not a wrapped number]
// A wrapped number promotes as a C++ number, so no op that eager computes
// as a tensor (a view of it, x + 0 of it) is that value: folding one into
// it would change how the ops reading it promote (atan(squeeze(2.0)) is
// f64, atan of the number 2.0 is f32). For the same reason ember-decompose
// leaves whole an op that reads one (passes/Decompose.cpp).

/// `a` and `b` as elements of `dtype`, bit for bit.
bool same_in(ScalarType dtype, const Scalar &a, const Scalar &b) {
  Tensor x = scalar_tensor(a, TensorOptions(dtype));
  Tensor y = scalar_tensor(b, TensorOptions(dtype));
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.element_size()) == 0;
}

OpFoldResult fold_identity(Operation *op, const OperatorHandle &h,
                           llvm::ArrayRef<Attribute> operands) {
  auto identity = llvm::dyn_cast<IdentityOpInterface>(op);
  if (!identity || identity.getIdentities().empty())
    return {};
  if (op->getNumOperands() == 0 || op->getNumResults() != 1 ||
      op->getOperand(0).getType() != op->getResult(0).getType())
    return {};
  Operation *def = op->getOperand(0).getDefiningOp();
  if (!def || def->hasTrait<OpTrait::View>() ||
      !(table_op(def) || llvm::isa<ConstantOp>(def)) ||
      is_wrapped_number(op->getOperand(0))) // Note [Not a wrapped number]
    return {};
  ScalarType dtype = value_type(op->getResult(0).getType()).dtype;
  const FunctionSchema &s = h.schema();
  std::vector<OperandGroup> groups =
      operand_groups(s, op->getNumOperands(), op->getAttrDictionary());
  for (const Identity &id : identity.getIdentities()) {
    Scalar value;
    bool found = false;
    for (size_t i = 0; i < s.arguments.size() && !found; ++i) {
      const Argument &a = s.arguments[i];
      if (a.name != id.arg)
        continue;
      found = true;
      if (arg_kind(a) == ArgKind::Tensor) {
        Attribute c = operands[groups[i].begin];
        if (isScalarAttr(c)) {
          value = scalar_of(c);
        } else if (auto d = llvm::dyn_cast_or_null<DenseElementsAttr>(c);
                   d && d.isSplat()) {
          Tensor t = tensor_of_dense(d);
          if (t.numel() == 0)
            return {};
          value = t.reshape({-1})[0].item();
        } else {
          return {};
        }
      } else {
        Attribute attr = op->getAttr(a.name);
        IValue v = attr ? from_attr(attr, a) : default_value(a);
        if (!v.isScalar())
          return {};
        value = v.toScalar();
      }
    }
    if (!found || !same_in(dtype, value, Scalar(id.value)))
      return {};
  }
  return op->getOperand(0);
}

/// A chain of view ops that gives its root's elements back in the root's
/// layout is the root: t(t(x)), x.unsqueeze(0).squeeze(0), x.view(x's
/// shape). Decided by replaying the chain on a fake contiguous root with
/// the shape rules (the geometry eager's views would have).
OpFoldResult fold_view_chain(Operation *op) {
  llvm::SmallVector<Operation *> chain;
  Value root = op->getResult(0);
  for (Operation *d = op; d && d->hasTrait<OpTrait::View>() &&
                          d->getNumOperands() == 1 && table_op(d);
       d = root.getDefiningOp()) {
    chain.push_back(d);
    root = d->getOperand(0);
  }
  if (chain.empty() || root.getType() != op->getResult(0).getType() ||
      is_wrapped_number(root)) // Note [Not a wrapped number]
    return {};
  ValueType t = value_type(root.getType());
  Tensor base = meta::fake(t.sizes, t.dtype, t.device), cur = base;
  for (Operation *v : llvm::reverse(chain)) {
    const OperatorHandle *h = table_op(v);
    Stack st = table_arguments(*h, 1, v->getAttrDictionary(),
                               [&](unsigned) { return cur; });
    meta::Result r = meta::infer(*h, st);
    if (!r.needs_data.empty() || r.outputs.size() != 1)
      return {};
    cur = r.outputs[0];
  }
  if (cur.sizes() == base.sizes() && cur.strides() == base.strides() &&
      cur.storage_offset() == base.storage_offset())
    return root;
  return {};
}
} // namespace

LogicalResult foldMany(Operation *op, llvm::ArrayRef<Attribute> operands,
                       llvm::SmallVectorImpl<OpFoldResult> &results) {
  const OperatorHandle *h = table_op(op);
  if (!h || operands.empty())
    return failure();
  try {
    OpFoldResult same = fold_view_chain(op);
    if (!same)
      same = fold_identity(op, *h, operands);
    if (same) {
      results.push_back(same);
      return success();
    }
  } catch (const std::exception &) {
    return failure();
  }
  for (Attribute a : operands)
    if (!small_constant(a))
      return failure();
  for (Type t : op->getResultTypes()) {
    auto rt = llvm::dyn_cast<RankedTensorType>(t);
    if (!rt || !rt.hasStaticShape() || rt.getNumElements() > kMaxFoldElements ||
        rt.getEncoding())
      return failure();
  }
  try {
    Stack stack = table_arguments(
        *h, op->getNumOperands(), op->getAttrDictionary(),
        [&](unsigned i) { return tensor_of_constant(operands[i]); });
    {
      ExcludeDispatchKeyGuard guard(
          DispatchKeySet(DispatchKey::Mode) | DispatchKey::Autocast |
          DispatchKey::Capture | DispatchKey::Autograd);
      h->redispatchBoxed(DispatchKeySet(DispatchKey::CPU), stack);
    }
    std::vector<Tensor> outs = flatten_results(stack);
    if (outs.size() != op->getNumResults())
      return failure();
    llvm::SmallVector<OpFoldResult> folded;
    for (unsigned i = 0; i < outs.size(); ++i) {
      auto type = llvm::cast<RankedTensorType>(op->getResult(i).getType());
      if (value_type(type) !=
          ValueType{outs[i].sizes().vec(), outs[i].dtype(), outs[i].device()})
        return failure();
      folded.push_back(dense_of_tensor(outs[i], type));
    }
    results.append(folded.begin(), folded.end());
    return success();
  } catch (const std::exception &) {
    return failure();
  }
}

OpFoldResult foldOne(Operation *op, llvm::ArrayRef<Attribute> operands) {
  llvm::SmallVector<OpFoldResult> results;
  if (failed(foldMany(op, operands, results)) || results.size() != 1)
    return {};
  return results[0];
}

} // namespace detail

// ---------------------------------------------------------------------------
// ember.constant
// ---------------------------------------------------------------------------

// Note [Wrapped numbers fold to scalars]
// A wrapped-number constant folds to its Scalar attribute (2.0 : f64), not
// to its dense value: MLIR's folder unifies constants by (folded attribute,
// type), and a wrapped number must never merge with a plain 0-dim constant
// of the same value, which promotes differently (x + 2 vs x + tensor(2)).
// materializeConstant makes a wrapped constant back from a Scalar
// attribute, and folding reads a Scalar operand as a wrapped number.
OpFoldResult ConstantOp::fold(FoldAdaptor) {
  if (getWrappedNumber()) {
    auto dense = llvm::cast<DenseElementsAttr>(getValue());
    return dense.getSplatValue<Attribute>();
  }
  return getValue();
}

Operation *EmberDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return nullptr;
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(value)) {
    if (dense.getType() != type)
      return nullptr;
    return builder.create<ConstantOp>(loc, dense, /*wrapped_number=*/false);
  }
  // Note [Wrapped numbers fold to scalars]
  if (isScalarAttr(value) && tensor.getRank() == 0 &&
      llvm::cast<TypedAttr>(value).getType() == tensor.getElementType())
    return builder.create<ConstantOp>(
        loc, DenseElementsAttr::get(tensor, value), /*wrapped_number=*/true);
  return nullptr;
}

// ---------------------------------------------------------------------------
// Canonicalization patterns of the whole dialect
// ---------------------------------------------------------------------------

namespace {
/// op(op(x, a), b) -> op(x, b) for the ops with the Composes trait (ops.yaml
/// `composes`: a view of a view is one view).
struct Compose : OpTraitRewritePattern<OpTrait::Composes> {
  using OpTraitRewritePattern::OpTraitRewritePattern;
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!op->hasTrait<OpTrait::Composes>() || op->getNumOperands() != 1)
      return failure();
    Operation *inner = op->getOperand(0).getDefiningOp();
    if (!inner || inner->getName() != op->getName() ||
        inner->getNumOperands() != 1)
      return failure();
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(inner->getOperand(0));
    state.addAttributes(op->getAttrs());
    state.addTypes(op->getResultTypes());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};
} // namespace

void EmberDialect::getCanonicalizationPatterns(
    RewritePatternSet &results) const {
  results.add<Compose>(getContext());
}

} // namespace ember::ir
