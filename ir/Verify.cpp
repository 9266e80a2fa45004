// The ember dialect: result types by ember::meta (the shape rules eager
// uses) and the verifiers of the op table's ops, ember.constant,
// ember.fusion and ember.eager_call.
#include "ir/Dialect.h"
#include "ir/DialectImpl.h"
#include "ir/Queries.h"

#include "eager/Meta.h"

using namespace mlir;

namespace ember::ir {

namespace {
/// A tensor for ember::meta standing for an operand: a fake tensor of its
/// type, or a fake wrapped number for a wrapped-number constant.
Tensor fake_of(Value v) {
  ValueType t = value_type(v.getType());
  if (auto c = v.getDefiningOp<ConstantOp>(); c && c.getWrappedNumber())
    return meta::fake_wrapped_number(t.dtype);
  return meta::fake(t.sizes, t.dtype, t.device);
}

/// The fixed type of a non-tensor return (bool -> i1); null for tensors.
Type non_tensor_return_type(MLIRContext *ctx, const Argument &r) {
  if (r.type == "bool")
    return IntegerType::get(ctx, 1);
  if (r.type == "int")
    return IntegerType::get(ctx, 64);
  if (r.type == "float")
    return Float64Type::get(ctx);
  return {};
}

std::vector<Type> types_of(MLIRContext *ctx, const std::vector<Tensor> &ts) {
  std::vector<Type> out;
  for (const Tensor &t : ts)
    out.push_back(
        tensor_type(ctx, ValueType{t.sizes().vec(), t.dtype(), t.device()}));
  return out;
}

bool returns_only_non_tensors(MLIRContext *ctx, const FunctionSchema &s) {
  for (const Argument &r : s.returns)
    if (!non_tensor_return_type(ctx, r))
      return false;
  return !s.returns.empty();
}

/// Checks `op`'s result types against those ember::meta::infer gives for
/// `args` (the call of `h` that `op` stands for): the one check of table ops
/// and ember.eager_call. An op whose output shapes depend on the data has
/// no inferable types: its result types are taken as given (Note [Verifying
/// result types] in ir/EmberBase.td). Throws eager's errors.
LogicalResult verify_result_types(Operation *op, const OperatorHandle &h,
                                  const Stack &args) {
  meta::Result r = meta::infer(h, args);
  if (!r.needs_data.empty())
    return success();
  std::vector<Type> expected = types_of(op->getContext(), r.outputs);
  if (expected.size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults()
           << " results but ember::meta::infer gives " << expected.size();
  for (unsigned i = 0; i < expected.size(); ++i)
    if (expected[i] != op->getResult(i).getType())
      return op->emitOpError()
             << "result #" << i << " has type " << op->getResult(i).getType()
             << " but ember::meta::infer gives " << expected[i];
  return success();
}
} // namespace

// ---------------------------------------------------------------------------
// Hooks of the op table's ops: result types, verification
// ---------------------------------------------------------------------------

namespace detail {

LogicalResult inferReturnTypes(StringRef opName, MLIRContext *ctx,
                               std::optional<Location> loc, ValueRange operands,
                               DictionaryAttr attrs,
                               llvm::SmallVectorImpl<Type> &inferred) {
  const OperatorHandle *op = table_op(opName);
  if (!op)
    return emitOptionalError(loc, "'", opName,
                             "' op has no dispatcher op to infer types with");
  try {
    if (returns_only_non_tensors(ctx, op->schema())) {
      for (const Argument &r : op->schema().returns)
        inferred.push_back(non_tensor_return_type(ctx, r));
      return success();
    }
    Stack args = table_arguments(*op, operands.size(), attrs, [&](unsigned i) {
      return fake_of(operands[i]);
    });
    meta::Result r = meta::infer(*op, args);
    if (!r.needs_data.empty())
      return emitOptionalError(loc, "'", opName, "' op ", r.needs_data,
                               ": give its result types explicitly");
    for (Type t : types_of(ctx, r.outputs))
      inferred.push_back(t);
    return success();
  } catch (const std::exception &e) {
    return emitOptionalError(loc, "'", opName, "' op ", e.what());
  }
}

LogicalResult verifyTableOp(Operation *op) {
  const OperatorHandle *h = table_op(op);
  if (!h)
    return op->emitOpError("has no dispatcher op ember::")
           << op->getName().stripDialect();
  MLIRContext *ctx = op->getContext();
  try {
    if (returns_only_non_tensors(ctx, h->schema()))
      return success(); // the ODS result constraints check them
    Stack args =
        table_arguments(*h, op->getNumOperands(), op->getAttrDictionary(),
                        [&](unsigned i) { return fake_of(op->getOperand(i)); });
    return verify_result_types(op, *h, args);
  } catch (const std::exception &e) {
    return op->emitOpError() << e.what();
  }
}

} // namespace detail

// ---------------------------------------------------------------------------
// ember.constant
// ---------------------------------------------------------------------------

LogicalResult ConstantOp::verify() {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(getValue());
  if (!dense)
    return emitOpError("value must be a dense elements attribute (dense<...>)");
  auto type = llvm::cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("type must have a static shape, got ") << type;
  try {
    ValueType vt = value_type(type);
    if (getWrappedNumber()) {
      if (!vt.sizes.empty() ||
          (vt.dtype != kDouble && vt.dtype != kLong && vt.dtype != kBool))
        return emitOpError("a wrapped number is a 0-dim f64, i64 or i1 ")
               << "tensor (a C++ double, integer or bool), got " << type;
      if (vt.device != Device(kCPU))
        return emitOpError("a wrapped number lives on the CPU, got ") << type;
    }
  } catch (const std::exception &e) {
    return emitOpError() << e.what();
  }
  return success();
}

// ---------------------------------------------------------------------------
// ember.fusion
// ---------------------------------------------------------------------------

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("has ")
           << getInputs().size() << " inputs but its body takes "
           << body.getNumArguments() << " arguments";
  for (auto [i, in, arg] :
       llvm::enumerate(getInputs().getTypes(), body.getArgumentTypes()))
    if (in != arg)
      return emitOpError("input ")
             << i << " has type " << in << " but body argument " << i
             << " has type " << arg;
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with ember.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ")
           << yield.getValues().getTypes() << " but its results are "
           << getResultTypes();
  if (Attribute a = (*this)->getAttr(kReuseAttr)) {
    auto reuse = llvm::dyn_cast<DenseI64ArrayAttr>(a);
    if (!reuse || reuse.size() != int64_t(getNumResults()))
      return emitOpError(kReuseAttr)
             << " must be an array<i64> with one entry per result ("
             << getNumResults() << ")";
    llvm::SmallVector<int64_t> taken;
    for (auto [i, k] : llvm::enumerate(reuse.asArrayRef())) {
      if (k == -1)
        continue;
      if (k < 0 || k >= int64_t(getInputs().size()))
        return emitOpError(kReuseAttr) << ": result " << i << " reuses input "
                                       << k << " of " << getInputs().size();
      if (getInputs()[k].getType() != getResult(unsigned(i)).getType())
        return emitOpError(kReuseAttr)
               << ": result " << i << " has type "
               << getResult(unsigned(i)).getType() << " but input " << k
               << " has type " << getInputs()[k].getType();
      if (llvm::is_contained(taken, k))
        return emitOpError(kReuseAttr) << ": input " << k << " is reused twice";
      taken.push_back(k);
    }
  }
  std::string why;
  inner_fusions(*this, &why);
  if (!why.empty())
    return emitOpError(why);
  // A combined fusion's parts run side by side: a result is written only
  // into an input that the part yielding it alone reads.
  if (auto reuse = (*this)->getAttrOfType<DenseI64ArrayAttr>(kReuseAttr))
    for (auto [i, k] : llvm::enumerate(reuse.asArrayRef()))
      if (k >= 0 && !part_may_write_into(*this, unsigned(i), unsigned(k)))
        return emitOpError(kReuseAttr)
               << ": result " << i << " is written into input " << k
               << ", which another part of the fusion of fusions reads";
  return success();
}

// ---------------------------------------------------------------------------
// ember.eager_call
// ---------------------------------------------------------------------------

LogicalResult EagerCallOp::verify() {
  OperatorHandle *op = Dispatcher::singleton().findOp(getCallee().str());
  if (!op)
    return emitOpError("calls '")
           << getCallee()
           << "', which is not a registered op (a custom op must be defined "
              "with ember::Library before the module is parsed or verified)";
  MLIRContext *ctx = getContext();
  try {
    std::vector<EagerArg> args =
        decode_eager_args(op->schema(), getArgs(), getInputs().size());
    // Results: one per returned tensor (lists flattened), fixed types for
    // non-tensor returns.
    const FunctionSchema &s = op->schema();
    bool has_list = false;
    for (const Argument &r : s.returns)
      has_list |= r.type == "Tensor[]";
    if (!has_list && s.returns.size() != getNumResults())
      return emitOpError() << "'" << getCallee() << "' returns "
                           << s.returns.size() << " values (" << s.str()
                           << ") but the call has " << getNumResults()
                           << " results";
    if (!has_list)
      for (unsigned i = 0; i < s.returns.size(); ++i) {
        Type want = non_tensor_return_type(ctx, s.returns[i]);
        Type got = getResult(i).getType();
        if (want ? want != got : !llvm::isa<RankedTensorType>(got))
          return emitOpError()
                 << "result #" << i << " has type " << got << " but '"
                 << getCallee() << "' returns " << s.returns[i].type;
      }
    if (!meta::has_rule(*op) || returns_only_non_tensors(ctx, s))
      return success();
    // The result types by the op's shape rule.
    Stack stack;
    for (const EagerArg &a : args) {
      auto fake = [&](unsigned i) { return fake_of(getInputs()[i]); };
      switch (a.kind) {
      case ArgKind::Tensor:
        stack.emplace_back(fake(a.operands[0]));
        break;
      case ArgKind::OptionalTensor:
        stack.push_back(a.present ? IValue(fake(a.operands[0])) : IValue());
        break;
      case ArgKind::TensorList: {
        std::vector<Tensor> list;
        for (int i : a.operands)
          list.push_back(i < 0 ? Tensor() : fake(unsigned(i)));
        stack.emplace_back(std::move(list));
        break;
      }
      default:
        stack.push_back(a.value);
      }
    }
    return verify_result_types(*this, *op, stack);
  } catch (const std::exception &e) {
    return emitOpError() << e.what();
  }
}

} // namespace ember::ir
