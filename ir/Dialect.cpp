// The ember dialect: registration, element and tensor types, attributes and
// contexts. The rest of the dialect, by concern: ir/Schema.cpp (schemas <->
// IR), ir/Verify.cpp (type inference and verifiers), ir/Fold.cpp (folding
// and canonicalization); ir/TableOps*.cpp define the ops.
#include "ir/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Support/DebugStringHelper.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

#include <mutex>

using namespace mlir;

#include "ir/EmberDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/EmberAttrs.cpp.inc"

#include "ir/EmberInterfaces.cpp.inc"

namespace ember::ir {

// ---------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------

namespace {
enum class ElemKind { Float, BFloat, Signless, Unsigned };
struct ElementTypeInfo {
  ScalarType dtype;
  ElemKind kind;
  unsigned width;
};
// One entry per dtype, in ScalarType order (runtime/ScalarType.h).
constexpr ElementTypeInfo kElementTypes[] = {
    {kByte, ElemKind::Unsigned, 8},   {kChar, ElemKind::Signless, 8},
    {kShort, ElemKind::Signless, 16}, {kInt, ElemKind::Signless, 32},
    {kLong, ElemKind::Signless, 64},  {kHalf, ElemKind::Float, 16},
    {kFloat, ElemKind::Float, 32},    {kDouble, ElemKind::Float, 64},
    {kBool, ElemKind::Signless, 1},   {kBFloat16, ElemKind::BFloat, 16},
};
static_assert(std::size(kElementTypes) == kNumScalarTypes,
              "one element type per dtype of EMBER_FORALL_SCALAR_TYPES");
constexpr bool elementTypesInOrder() {
  for (int i = 0; i < kNumScalarTypes; ++i)
    if (int(kElementTypes[i].dtype) != i)
      return false;
  return true;
}
static_assert(elementTypesInOrder(), "kElementTypes follows ScalarType order");
} // namespace

Type element_type(MLIRContext *ctx, ScalarType dtype) {
  EMBER_CHECK(int(dtype) >= 0 && int(dtype) < kNumScalarTypes,
              "element_type: undefined dtype");
  const ElementTypeInfo &e = kElementTypes[int(dtype)];
  switch (e.kind) {
  case ElemKind::Float:
    return e.width == 16   ? Type(Float16Type::get(ctx))
           : e.width == 32 ? Type(Float32Type::get(ctx))
                           : Type(Float64Type::get(ctx));
  case ElemKind::BFloat:
    return BFloat16Type::get(ctx);
  case ElemKind::Signless:
    return IntegerType::get(ctx, e.width);
  case ElemKind::Unsigned:
    return IntegerType::get(ctx, e.width, IntegerType::Unsigned);
  }
  return {};
}

std::optional<ScalarType> scalar_type(Type type) {
  if (!type)
    return std::nullopt;
  for (const ElementTypeInfo &e : kElementTypes)
    if (element_type(type.getContext(), e.dtype) == type)
      return e.dtype;
  return std::nullopt;
}

bool isElementType(Type type) { return scalar_type(type).has_value(); }

RankedTensorType tensor_type(MLIRContext *ctx, const ValueType &t) {
  Attribute encoding;
  if (t.device != Device(kCPU))
    encoding = DeviceAttr::get(ctx, t.device.str());
  return RankedTensorType::get(t.sizes, element_type(ctx, t.dtype), encoding);
}

Device device_of(RankedTensorType type) {
  Attribute enc = type.getEncoding();
  if (!enc)
    return Device(kCPU);
  auto d = llvm::dyn_cast<DeviceAttr>(enc);
  EMBER_CHECK(d, "tensor type has an encoding that is not a device: ",
              debugString(type));
  return Device(d.getDevice().str());
}

ValueType value_type(Type type) {
  auto t = llvm::dyn_cast_or_null<RankedTensorType>(type);
  EMBER_CHECK(t && t.hasStaticShape(), "expected a ranked tensor type with a ",
              "static shape, got ", type ? debugString(type) : "no type");
  auto dtype = scalar_type(t.getElementType());
  EMBER_CHECK(dtype, "element type ", debugString(t.getElementType()),
              " is not an ember dtype (f32, f64, f16, bf16, i64, i32, i16, ",
              "i8, ui8, i1)");
  return ValueType{
      std::vector<int64_t>(t.getShape().begin(), t.getShape().end()), *dtype,
      device_of(t)};
}

// ---------------------------------------------------------------------------
// The dialect and its attributes
// ---------------------------------------------------------------------------

// Defined with the op table's ops (ir/TableOps0.cpp, ir/TableOps.h).
void registerEmberDialectOperations(EmberDialect *dialect);

void EmberDialect::initialize() {
  registerEmberDialectOperations(this);
  registerAttributes();
}

void EmberDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/EmberAttrs.cpp.inc"
      >();
}

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef device) {
  try {
    (void)Device(device.str());
    return success();
  } catch (const std::exception &e) {
    return emitError() << "invalid device '" << device << "': " << e.what();
  }
}

bool is_wrapped_number(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  return c && c.getWrappedNumber();
}

bool isScalarAttr(Attribute attr) {
  if (auto i = llvm::dyn_cast_or_null<IntegerAttr>(attr))
    return i.getType().isSignlessInteger(64) ||
           i.getType().isSignlessInteger(1);
  if (auto f = llvm::dyn_cast_or_null<FloatAttr>(attr))
    return f.getType().isF64();
  return false;
}
TypedAttr scalarAttr(MLIRContext *ctx, int64_t v) {
  return IntegerAttr::get(IntegerType::get(ctx, 64), v);
}
TypedAttr scalarAttr(MLIRContext *ctx, int v) {
  return scalarAttr(ctx, int64_t(v));
}
TypedAttr scalarAttr(MLIRContext *ctx, double v) {
  return FloatAttr::get(Float64Type::get(ctx), v);
}
TypedAttr scalarAttr(MLIRContext *ctx, bool v) { return BoolAttr::get(ctx, v); }

Scalar scalar_of(Attribute attr) {
  EMBER_CHECK(isScalarAttr(attr), "expected a Scalar attribute (i64, f64 or ",
              "bool), got ", attr ? debugString(attr) : "none");
  if (auto f = llvm::dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  auto i = llvm::cast<IntegerAttr>(attr);
  if (i.getType().isSignlessInteger(1))
    return bool(i.getValue().getBoolValue());
  return int64_t(i.getValue().getSExtValue());
}

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------

void register_dialects(DialectRegistry &registry) {
  registry.insert<EmberDialect, func::FuncDialect, arith::ArithDialect>();
}

std::unique_ptr<MLIRContext> make_context() {
  DialectRegistry registry;
  register_dialects(registry);
  auto ctx =
      std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
  ctx->loadAllAvailableDialects();
  return ctx;
}

void register_upstream_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
    registerInlinerPass();
    registerSCCPPass();
    registerRemoveDeadValuesPass();
    registerTopologicalSortPass();
    registerStripDebugInfoPass();
    registerViewOpGraphPass();
    registerPrintOpStatsPass();
  });
}

} // namespace ember::ir
