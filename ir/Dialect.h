#pragma once
/// The `ember` MLIR dialect: ember's dispatcher ops on value-semantic tensors
/// (DESIGN.md, "Compiler"). The ops of the op table are generated from
/// eager/ops/ops.yaml (ir/gen_dialect.py); ir/EmberBase.td and
/// ir/EmberOps.td define the rest. This header declares the dialect, its
/// attributes, traits and interfaces, ember.constant and ember.eager_call,
/// and the mapping between schemas and IR that inference, folding, the
/// builder and the importer share. The op table's op classes are in
/// ir/TableOps.h (large: include it only to use a class by name; passes ask
/// traits).
///
/// Internal to ember: MLIR headers never reach ember's public headers.

#include "eager/Dispatcher.h"
#include "ir/Types.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace ember::ir {

class EmberDialect;

// ---------------------------------------------------------------------------
// Traits (ir/EmberBase.td): what passes ask
// ---------------------------------------------------------------------------

namespace OpTrait {
/// Broadcasting elementwise (MLIR's Elementwise requires equal shapes).
template <class ConcreteType>
class Pointwise : public mlir::OpTrait::TraitBase<ConcreteType, Pointwise> {};
/// Eager returns an alias of its input.
template <class ConcreteType>
class View : public mlir::OpTrait::TraitBase<ConcreteType, View> {};
/// Reduces dimensions of `self`.
template <class ConcreteType>
class Reduction : public mlir::OpTrait::TraitBase<ConcreteType, Reduction> {};
/// Converts each element to the result's dtype when the result is on the
/// operand's device.
template <class ConcreteType>
class Conversion : public mlir::OpTrait::TraitBase<ConcreteType, Conversion> {};
/// The functional form of an in-place op: the result is the updated value of
/// the first operand.
template <class ConcreteType>
class InPlace : public mlir::OpTrait::TraitBase<ConcreteType, InPlace> {};
/// op(op(x, a), b) is op(x, b) (a view of a view is one view): the
/// canonicalizer composes them.
template <class ConcreteType>
class Composes : public mlir::OpTrait::TraitBase<ConcreteType, Composes> {};
} // namespace OpTrait

// ---------------------------------------------------------------------------
// Interfaces (ir/EmberBase.td)
// ---------------------------------------------------------------------------

/// An argument value that makes an op return `self` unchanged (ops.yaml
/// `identity:`, Note [Identities] in ir/Fold.cpp): the schema argument's
/// name and its value.
struct Identity {
  const char *arg;
  double value;
};

// ---------------------------------------------------------------------------
// Attribute helpers used by the ODS definitions
// ---------------------------------------------------------------------------

/// A Scalar attribute: i64 or f64 IntegerAttr/FloatAttr, or a BoolAttr.
bool isScalarAttr(mlir::Attribute attr);
mlir::TypedAttr scalarAttr(mlir::MLIRContext *ctx, int64_t v);
mlir::TypedAttr scalarAttr(mlir::MLIRContext *ctx, int v);
mlir::TypedAttr scalarAttr(mlir::MLIRContext *ctx, double v);
mlir::TypedAttr scalarAttr(mlir::MLIRContext *ctx, bool v);
/// The Scalar of a Scalar attribute.
Scalar scalar_of(mlir::Attribute attr);

/// The custom<TensorList> directive of Tensor[] operands: `[%a, none, %b]`;
/// `none` marks a None element, listed by position in `none` (the
/// `<name>_none` attribute; absent when there is none).
mlir::ParseResult parseTensorList(
    mlir::OpAsmParser &parser,
    llvm::SmallVectorImpl<mlir::OpAsmParser::UnresolvedOperand> &operands,
    mlir::DenseI64ArrayAttr &none);
void printTensorList(mlir::OpAsmPrinter &p, mlir::Operation *op,
                     mlir::OperandRange operands, mlir::DenseI64ArrayAttr none);

namespace detail {
// The hooks of the op table's ops (ir/EmberBase.td, Ember_TableOp): each
// catches every ember::Error and reports it as a diagnostic.
mlir::LogicalResult
inferReturnTypes(llvm::StringRef opName, mlir::MLIRContext *ctx,
                 std::optional<mlir::Location> loc, mlir::ValueRange operands,
                 mlir::DictionaryAttr attrs,
                 llvm::SmallVectorImpl<mlir::Type> &inferred);
mlir::LogicalResult verifyTableOp(mlir::Operation *op);
mlir::OpFoldResult foldOne(mlir::Operation *op,
                           llvm::ArrayRef<mlir::Attribute> operands);
mlir::LogicalResult
foldMany(mlir::Operation *op, llvm::ArrayRef<mlir::Attribute> operands,
         llvm::SmallVectorImpl<mlir::OpFoldResult> &results);
} // namespace detail

} // namespace ember::ir

#include "ir/EmberDialect.h.inc"

#include "ir/EmberInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/EmberAttrs.h.inc"

#define GET_OP_CLASSES
#include "ir/EmberCoreOps.h.inc"

namespace ember::ir {

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------

/// Registers the dialects ember's IR uses: ember, func, arith.
void register_dialects(mlir::DialectRegistry &registry);
/// A context with those dialects loaded. Multithreading is off: graphs are
/// small and ember runs its own thread pool.
std::unique_ptr<mlir::MLIRContext> make_context();
/// Registers the upstream passes ember-opt and pipelines use (canonicalize,
/// cse, symbol-dce, ...), once per process.
void register_upstream_passes();

// ---------------------------------------------------------------------------
// Schemas <-> IR
// ---------------------------------------------------------------------------

// Note [Schema to ODS]
// Every dispatched op of the op table has a dialect op named after its
// schema ("ember." + name + "." + overload). Its operands are the tensor
// arguments in schema order (Tensor: one; Tensor?: zero or one; Tensor[]:
// any number; several variable-length ones are split by
// operandSegmentSizes); every other argument is an attribute of the same
// name (absent: None, or the schema default); a Generator argument has no
// IR form (None: the default generator). A Tensor[] may hold None elements
// (eager's index takes `x[:, i]` as [None, i]): its operands are the
// defined ones and the attribute `<name>_none` lists the positions of the
// others. ir/gen_dialect.py emits the ODS
// by the same rules; test_ir checks the two agree for every op.

/// How a schema argument appears on a dialect op.
enum class ArgKind { Tensor, OptionalTensor, TensorList, Attribute, Generator };
ArgKind arg_kind(const Argument &a);

/// True for a value that `ember.constant {wrapped_number}` defines: a C++
/// number in an op, which promotes as a number, not as a 0-dim tensor.
bool is_wrapped_number(mlir::Value v);

/// The dispatcher op that a dialect op of the op table stands for
/// (ember.add.Tensor -> ember::add.Tensor); null for any other op.
const OperatorHandle *table_op(mlir::Operation *op);

/// An ember.fusion's buffer plan (ember-plan-memory): array<i64>, per
/// result the input whose buffer it is written into, or -1.
inline constexpr const char *kReuseAttr = "ember.reuse";
const OperatorHandle *table_op(llvm::StringRef op_name);
/// "ember.add.Tensor" for ember::add.Tensor (whether or not the dialect has
/// the op: custom and composite ops have none).
std::string dialect_op_name(const OperatorHandle &op);
/// True when `op` has a registered dialect op in `ctx`.
bool has_dialect_op(mlir::MLIRContext *ctx, const OperatorHandle &op);

/// The attribute of a non-tensor argument (None gives a null attribute).
/// Throws ember::Error when the value does not fit the argument's type.
mlir::Attribute to_attr(mlir::MLIRContext *ctx, const IValue &v,
                        const Argument &a);
/// The value of an attribute for an argument (null: None). Throws
/// ember::Error when the attribute does not fit the argument's type.
IValue from_attr(mlir::Attribute attr, const Argument &a);
/// An argument's value when its attribute is absent: its schema default, or
/// None. Throws ember::Error for an argument that has neither.
IValue default_value(const Argument &a);

/// The operands of one schema argument of a table op: [begin, begin+size).
struct OperandGroup {
  unsigned begin = 0, size = 0;
};
/// Per schema argument, its operands (empty for non-tensor arguments).
std::vector<OperandGroup> operand_groups(const FunctionSchema &schema,
                                         unsigned num_operands,
                                         mlir::DictionaryAttr attrs);

/// The attribute listing the None elements of a Tensor[] argument.
std::string none_positions_attr(const Argument &a);
/// The positions of None elements of a Tensor[] argument of a table op with
/// `num_operands` operands for it; checked (sorted, unique, in range).
std::vector<int64_t> none_positions(const Argument &a,
                                    mlir::DictionaryAttr attrs,
                                    unsigned num_operands);

/// One schema argument of an ember.eager_call, decoded from `args`.
struct EagerArg {
  ArgKind kind = ArgKind::Attribute;
  /// Tensor arguments: operand numbers (-1: a None element of a Tensor[]).
  std::vector<int> operands;
  bool present = true; ///< false: an absent Tensor?
  IValue value;        ///< non-tensor arguments
};
/// Decodes and checks the `args` of an ember.eager_call against the schema
/// (one entry per argument, the right kinds, operands used once each, in
/// order). Throws ember::Error.
std::vector<EagerArg> decode_eager_args(const FunctionSchema &schema,
                                        mlir::ArrayAttr args,
                                        unsigned num_operands);
/// The entry of `args` for a non-tensor argument value (None: #ember.none).
mlir::Attribute eager_arg_attr(mlir::MLIRContext *ctx, const IValue &v,
                               const Argument &a);

/// A CPU tensor holding a dense attribute's elements (a constant), and the
/// reverse (`type` gives the attribute's shape and element type). Throw
/// ember::Error for types that are not ember tensors on the CPU.
Tensor tensor_of_dense(mlir::DenseElementsAttr attr);
mlir::DenseElementsAttr dense_of_tensor(const Tensor &t,
                                        mlir::RankedTensorType type);

/// Generators in IR: #ember.generator<N> names the generator registered
/// under N in this process (they are live objects, not data).
int64_t generator_id(const Generator &g);
Generator generator_of(int64_t id);

} // namespace ember::ir
