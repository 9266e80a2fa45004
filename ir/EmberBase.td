//===- EmberBase.td - the ember dialect, its attributes and traits --------===//
//
// The `ember` dialect: ember's dispatcher ops on value-semantic tensors. Its
// ops are generated from the op table (ir/gen_dialect.py reads
// eager/ops/ops.yaml); this file holds what is written once by hand: the
// dialect, type constraints, attributes, traits, interfaces and the base
// class of the generated ops. ir/EmberOps.td adds ember.constant and
// ember.eager_call.
//
//===----------------------------------------------------------------------===//

#ifndef EMBER_BASE
#define EMBER_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Ember_Dialect : Dialect {
  let name = "ember";
  let cppNamespace = "::ember::ir";
  let summary = "ember's tensor ops with value semantics";
  let description = [{
    One op per dispatched op of ember's op table (eager/ops/ops.yaml), named
    as its schema (`ember.add.Tensor`, `ember.add_.Tensor`,
    `ember.sum.dim_IntList`), on ranked tensors with static shapes. Tensor
    arguments are operands, every other schema argument an attribute of the
    same name. In-place ops have value semantics: `ember.add_.Tensor`
    returns the updated value of `self` and mutates nothing. Result types are
    inferred by the shape rules eager uses (`ember::meta::infer`), so the
    verifier reports what eager would raise. `ember.constant` holds constant
    tensors and C++ numbers (`wrapped_number`); `ember.eager_call` calls any
    dispatcher op (custom ops included) through its eager kernel.

    Element types: f32, f64, f16, bf16, i64, i32, i16, i8, ui8, i1 (ember's
    Float, Double, Half, BFloat16, Long, Int, Short, Char, Byte, Bool). A
    tensor on a device other than the CPU carries `#ember.device<"cuda:0">`
    as its encoding.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasCanonicalizer = 1;
  // Note [Attributes in the dictionary]
  // Inference, folding and import read an op's arguments generically, by
  // schema argument name (ir/Schema.cpp): keeping attributes in the
  // attribute dictionary (not in properties) gives every hook one
  // DictionaryAttr to read, whatever the op.
  let usePropertiesForAttributes = 0;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Ember_ElementType : AnyTypeOf<[F32, F64, F16, BF16, I64, I32, I16, I8, UI8,
                                   I1], "ember dtype">;

// Ranked tensors of ember dtypes. Shapes are static, except for results of
// ops whose output shape depends on the data (nonzero, masked_select), which
// have `?` in the data-dependent dimensions.
def Ember_AnyTensor : RankedTensorOf<[Ember_ElementType]>;

// A Scalar returned by an op: i64, f64 or i1.
def Ember_ScalarType : AnyTypeOf<[I64, F64, I1]>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Ember_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Ember_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Ember_DeviceAttr : Ember_Attr<"Device", "device"> {
  let summary = "a device: \"cpu\", \"cuda\", \"cuda:1\"";
  let description = [{
    A schema argument of type Device, and the encoding of a tensor type on a
    device other than the CPU: `tensor<4xf32, #ember.device<"cuda:0">>`.
  }];
  let parameters = (ins StringRefParameter<"the device, as ember::Device "
                                           "parses it">:$device);
  let assemblyFormat = "`<` $device `>`";
  let genVerifyDecl = 1;
}

def Ember_NoneAttr : Ember_Attr<"None", "none"> {
  let summary = "None: an absent optional argument of ember.eager_call";
}

def Ember_OperandAttr : Ember_Attr<"Operand", "operand"> {
  let summary = "a tensor argument of ember.eager_call: its operand number";
  let parameters = (ins "int64_t":$index);
  let assemblyFormat = "`<` $index `>`";
}

def Ember_GeneratorAttr : Ember_Attr<"Generator", "generator"> {
  let summary = "a random number generator of ember.eager_call";
  let description = [{
    `#ember.generator<N>`: the generator numbered N in this process
    (ir/Dialect.h, generator_id). Generators are live objects with state, so
    a module that names one runs only in the process that built it.
  }];
  let parameters = (ins "int64_t":$id);
  let assemblyFormat = "`<` $id `>`";
}

// A Scalar argument: an i64 or f64 attribute, or a bool (i1). Its kind is
// part of the value (add with alpha 2 and with alpha 2.0 promote alike, but
// are different calls).
def Ember_ScalarAttr : Attr<CPred<"::ember::ir::isScalarAttr($_self)">,
                            "a Scalar: i64, f64 or bool attribute"> {
  let storageType = "::mlir::TypedAttr";
  let returnType = "::mlir::TypedAttr";
  let convertFromStorage = "$_self";
  let constBuilderCall = "::ember::ir::scalarAttr($_builder.getContext(), $0)";
}

// A ScalarType argument: the element type it stands for.
def Ember_DtypeAttr : TypeAttrBase<"::mlir::Type", "an ember dtype"> {
  let predicate = And<[TypeAttr.predicate, CPred<
      "::ember::ir::isElementType(::llvm::cast<::mlir::TypeAttr>($_self)"
      ".getValue())">]>;
  let returnType = "::mlir::Type";
  let convertFromStorage = "::llvm::cast<::mlir::Type>($_self.getValue())";
  let constBuilderCall = "::mlir::TypeAttr::get($0)";
}

//===----------------------------------------------------------------------===//
// Traits: what passes ask (DESIGN.md: passes ask traits, not op names)
//===----------------------------------------------------------------------===//

class Ember_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::ember::ir::OpTrait";
}

// Broadcasting elementwise: every result element depends only on the
// elements of the (broadcast) operands at the same index. MLIR's Elementwise
// requires equal shapes; ember's pointwise ops broadcast.
def Ember_Pointwise : Ember_Trait<"Pointwise">;
// Eager returns an alias of its input (transpose, view, select...).
def Ember_View : Ember_Trait<"View">;
// Reduces dimensions of `self` (sum, amax, argmax, var...).
def Ember_Reduction : Ember_Trait<"Reduction">;
// Converts each element to the result's dtype when the result is on the
// operand's device (_to_copy): fusible as a pointwise conversion.
def Ember_Conversion : Ember_Trait<"Conversion">;
// The functional form of an in-place op: the result is the updated value of
// the first operand.
def Ember_InPlace : Ember_Trait<"InPlace">;
// op(op(x, a), b) is op(x, b): a view of a view is one view (ops.yaml
// `composes`); the canonicalizer composes them (ir/Fold.cpp, Compose).
def Ember_Composes : Ember_Trait<"Composes">;

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

// Note [Identities] (ir/Fold.cpp): the ops of the op table with ops.yaml
// `identity:` entries implement it (ir/gen_dialect.py emits the list); the
// folder returns `self` when every listed argument holds its value.
def Ember_IdentityOpInterface : OpInterface<"IdentityOpInterface"> {
  let cppNamespace = "::ember::ir";
  let description = [{
    An op that returns its first operand (`self`) unchanged when each listed
    schema argument (a constant operand or an attribute) holds the listed
    value: x + (-0.0), x - 0, x * 1, x / 1.
  }];
  let methods = [
    StaticInterfaceMethod<
      "The argument values that make the op return `self`: all must hold.",
      "::llvm::ArrayRef<::ember::ir::Identity>", "getIdentities">,
  ];
}

//===----------------------------------------------------------------------===//
// Base classes
//===----------------------------------------------------------------------===//

class Ember_Op<string mnemonic, list<Trait> traits = []>
    : Op<Ember_Dialect, mnemonic, traits>;

// An op of the op table (generated by ir/gen_dialect.py). Result types come
// from ember::meta::infer (ir/Verify.cpp, inferReturnTypes); the verifier
// (verifyTableOp) checks the declared result types against it and reports
// eager's errors (shape mismatch, bad dim, bad dtype) as diagnostics.
//
// Note [Verifying result types]
// InferTypeOpInterface's own verification (refineReturnTypes) would report
// a mismatch twice ("inferred type(s) ... are incompatible", then "failed
// to infer returned types") and could not explain it; the op's verifier
// does the check instead, with one message saying what eager would say, and
// refineReturnTypes accepts. Data-dependent outputs (nonzero,
// masked_select) have no inferable shape: their result types are taken as
// given (`?` in the data-dependent dimensions).
class Ember_TableOp<string mnemonic, list<Trait> traits = []>
    : Ember_Op<mnemonic, traits # [InferTypeOpInterface]> {
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    static ::llvm::LogicalResult inferReturnTypes(
        ::mlir::MLIRContext *context, ::std::optional<::mlir::Location> location,
        ::mlir::ValueRange operands, ::mlir::DictionaryAttr attributes,
        ::mlir::OpaqueProperties properties, ::mlir::RegionRange regions,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return ::ember::ir::detail::inferReturnTypes(
          getOperationName(), context, location, operands, attributes,
          inferredReturnTypes);
    }
    // Note [Verifying result types]
    static ::llvm::LogicalResult refineReturnTypes(
        ::mlir::MLIRContext *, ::std::optional<::mlir::Location>,
        ::mlir::ValueRange, ::mlir::DictionaryAttr, ::mlir::OpaqueProperties,
        ::mlir::RegionRange, ::llvm::SmallVectorImpl<::mlir::Type> &) {
      return ::mlir::success();
    }
  }];
}

#endif // EMBER_BASE
