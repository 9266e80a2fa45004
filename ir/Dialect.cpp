// The ember dialect: registration, types, attributes, ember.constant and
// ember.eager_call, and the hooks of the op table's ops (result types from
// ember::meta, verification, folding with the eager kernels).
#include "ir/Dialect.h"

#include "eager/Factory.h"
#include "eager/Meta.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/DebugStringHelper.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cctype>
#include <cstring>
#include <mutex>

using namespace mlir;

#include "ir/EmberDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/EmberAttrs.cpp.inc"

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

// ---------------------------------------------------------------------------
// Schemas <-> IR
// ---------------------------------------------------------------------------

namespace {
std::string base_type(const std::string &t) {
  return t.back() == '?' ? t.substr(0, t.size() - 1) : t;
}
bool is_optional(const Argument &a) {
  return a.type.back() == '?' ||
         (a.default_value && *a.default_value == "None");
}
std::string strip_quotes(const std::string &s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') &&
      s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}
bool looks_integral(const std::string &s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size())
    return false;
  for (; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i])))
      return false;
  return true;
}
} // namespace

ArgKind arg_kind(const Argument &a) {
  if (a.type == "Tensor")
    return ArgKind::Tensor;
  if (a.type == "Tensor?")
    return ArgKind::OptionalTensor;
  if (a.type == "Tensor[]")
    return ArgKind::TensorList;
  if (base_type(a.type) == "Generator")
    return ArgKind::Generator;
  EMBER_CHECK(a.type.rfind("Tensor", 0) != 0, "argument '", a.name,
              "' has type ", a.type, ", which the ember dialect cannot hold");
  return ArgKind::Attribute;
}

std::string dialect_op_name(const OperatorHandle &op) {
  const FunctionSchema &s = op.schema();
  return "ember." + s.name + (s.overload.empty() ? "" : "." + s.overload);
}

const OperatorHandle *table_op(StringRef op_name) {
  if (!op_name.starts_with("ember.") || op_name == "ember.constant" ||
      op_name == "ember.eager_call")
    return nullptr;
  return Dispatcher::singleton().findOp("ember::" +
                                        op_name.drop_front(6).str());
}

const OperatorHandle *table_op(Operation *op) {
  if (!llvm::isa_and_nonnull<EmberDialect>(op->getDialect()))
    return nullptr;
  return table_op(op->getName().getStringRef());
}

bool has_dialect_op(MLIRContext *ctx, const OperatorHandle &op) {
  return op.schema().ns == "ember" &&
         RegisteredOperationName::lookup(dialect_op_name(op), ctx).has_value();
}

Attribute to_attr(MLIRContext *ctx, const IValue &v, const Argument &a) {
  Builder b(ctx);
  if (v.isNone()) {
    EMBER_CHECK(is_optional(a), "argument '", a.name, "' (", a.type,
                ") is not optional but got None");
    return {};
  }
  const std::string t = base_type(a.type);
  auto bad = [&]() -> Attribute {
    throw Error("argument '" + a.name + "' has type " + a.type +
                " but got a value of type " + v.tagName());
  };
  if (t == "int")
    return v.isInt() ? b.getI64IntegerAttr(v.toInt()) : bad();
  if (t == "float")
    return v.isDouble() || v.isInt() ? b.getF64FloatAttr(v.toDouble()) : bad();
  if (t == "bool")
    return v.isBool() ? b.getBoolAttr(v.toBool()) : bad();
  if (t == "Scalar") {
    if (v.isDouble())
      return scalarAttr(ctx, v.toDouble());
    if (v.isBool())
      return scalarAttr(ctx, v.toBool());
    return v.isInt() ? scalarAttr(ctx, v.toInt()) : bad();
  }
  if (t == "int[]")
    return v.isIntList() ? b.getDenseI64ArrayAttr(v.toIntList().vec()) : bad();
  if (t == "float[]")
    return v.isDoubleList() ? b.getDenseF64ArrayAttr(v.toDoubleList()) : bad();
  if (t == "str")
    return v.isString() ? b.getStringAttr(v.toStringRef()) : bad();
  if (t == "ScalarType")
    return v.isScalarType() ? TypeAttr::get(element_type(ctx, v.toScalarType()))
                            : bad();
  if (t == "Device")
    return v.isDevice() ? DeviceAttr::get(ctx, v.toDevice().str()) : bad();
  if (t == "Generator")
    return v.isGenerator()
               ? GeneratorAttr::get(ctx, generator_id(v.toGenerator()))
               : bad();
  throw Error("argument '" + a.name + "' has type " + a.type +
              ", which the ember dialect cannot hold");
}

IValue from_attr(Attribute attr, const Argument &a) {
  if (!attr || llvm::isa<NoneAttr>(attr)) {
    EMBER_CHECK(is_optional(a), "argument '", a.name, "' (", a.type,
                ") is not optional but got None");
    return IValue();
  }
  const std::string t = base_type(a.type);
  auto bad = [&]() -> IValue {
    throw Error("argument '" + a.name + "' has type " + a.type +
                ", which attribute " + debugString(attr) + " does not hold");
  };
  if (t == "int") {
    auto i = llvm::dyn_cast<IntegerAttr>(attr);
    return i && i.getType().isSignlessInteger(64)
               ? IValue(int64_t(i.getValue().getSExtValue()))
               : bad();
  }
  if (t == "float") {
    auto f = llvm::dyn_cast<FloatAttr>(attr);
    return f && f.getType().isF64() ? IValue(f.getValueAsDouble()) : bad();
  }
  if (t == "bool") {
    auto bl = llvm::dyn_cast<BoolAttr>(attr);
    return bl ? IValue(bl.getValue()) : bad();
  }
  if (t == "Scalar")
    return isScalarAttr(attr) ? IValue(scalar_of(attr)) : bad();
  if (t == "int[]") {
    auto l = llvm::dyn_cast<DenseI64ArrayAttr>(attr);
    return l ? IValue(std::vector<int64_t>(l.asArrayRef().begin(),
                                           l.asArrayRef().end()))
             : bad();
  }
  if (t == "float[]") {
    auto l = llvm::dyn_cast<DenseF64ArrayAttr>(attr);
    return l ? IValue(std::vector<double>(l.asArrayRef().begin(),
                                          l.asArrayRef().end()))
             : bad();
  }
  if (t == "str") {
    auto s = llvm::dyn_cast<StringAttr>(attr);
    return s ? IValue(s.getValue().str()) : bad();
  }
  if (t == "ScalarType") {
    auto ty = llvm::dyn_cast<TypeAttr>(attr);
    auto dtype = ty ? scalar_type(ty.getValue()) : std::nullopt;
    return dtype ? IValue(*dtype) : bad();
  }
  if (t == "Device") {
    auto d = llvm::dyn_cast<DeviceAttr>(attr);
    return d ? IValue(Device(d.getDevice().str())) : bad();
  }
  if (t == "Generator") {
    auto g = llvm::dyn_cast<GeneratorAttr>(attr);
    return g ? IValue(generator_of(g.getId())) : bad();
  }
  return bad();
}

IValue default_value(const Argument &a) {
  if (!a.default_value) {
    EMBER_CHECK(is_optional(a), "argument '", a.name, "' (", a.type,
                ") has no value and no default");
    return IValue();
  }
  const std::string &d = *a.default_value;
  if (d == "None")
    return IValue();
  const std::string t = base_type(a.type);
  try {
    if (t == "bool" || (t == "Scalar" && (d == "True" || d == "False"))) {
      EMBER_CHECK(d == "True" || d == "False", "not a bool");
      return IValue(d == "True");
    }
    if (t == "int" || (t == "Scalar" && looks_integral(d)))
      return IValue(int64_t(std::stoll(d)));
    if (t == "float" || t == "Scalar")
      return IValue(std::stod(d));
    if (t == "int[]" || t == "float[]") {
      EMBER_CHECK(d.size() >= 2 && d.front() == '[' && d.back() == ']',
                  "not a list");
      std::vector<int64_t> ints;
      std::vector<double> floats;
      std::string body = d.substr(1, d.size() - 2);
      size_t pos = 0;
      while (pos < body.size()) {
        size_t comma = body.find(',', pos);
        std::string item = body.substr(
            pos, comma == std::string::npos ? std::string::npos : comma - pos);
        if (item.find_first_not_of(' ') != std::string::npos) {
          if (t == "int[]")
            ints.push_back(std::stoll(item));
          else
            floats.push_back(std::stod(item));
        }
        if (comma == std::string::npos)
          break;
        pos = comma + 1;
      }
      return t == "int[]" ? IValue(std::move(ints)) : IValue(std::move(floats));
    }
    if (t == "str")
      return IValue(strip_quotes(d));
    if (t == "Device")
      return IValue(Device(strip_quotes(d)));
  } catch (const Error &) {
    throw;
  } catch (const std::exception &) {
  }
  throw Error("argument '" + a.name + "' (" + a.type + "): cannot read its " +
              "schema default '" + d + "'");
}

std::vector<OperandGroup> operand_groups(const FunctionSchema &schema,
                                         unsigned num_operands,
                                         DictionaryAttr attrs) {
  std::vector<OperandGroup> groups(schema.arguments.size());
  unsigned fixed = 0, variable = 0;
  for (const Argument &a : schema.arguments) {
    ArgKind k = arg_kind(a);
    fixed += k == ArgKind::Tensor;
    variable += k == ArgKind::OptionalTensor || k == ArgKind::TensorList;
  }
  std::vector<int32_t> sizes; // of the variable-length operands, in order
  if (variable > 1) {
    auto seg = attrs ? llvm::dyn_cast_or_null<DenseI32ArrayAttr>(
                           attrs.get("operandSegmentSizes"))
                     : DenseI32ArrayAttr();
    EMBER_CHECK(seg && seg.size() == int64_t(fixed + variable),
                "expected operandSegmentSizes with ", fixed + variable,
                " entries");
    unsigned i = 0;
    for (const Argument &a : schema.arguments) {
      ArgKind k = arg_kind(a);
      if (k == ArgKind::OptionalTensor || k == ArgKind::TensorList)
        sizes.push_back(seg[i]);
      if (k == ArgKind::Tensor) {
        EMBER_CHECK(seg[i] == 1, "operandSegmentSizes: argument '", a.name,
                    "' takes one operand");
      }
      if (k == ArgKind::Tensor || k == ArgKind::OptionalTensor ||
          k == ArgKind::TensorList)
        ++i;
    }
  } else if (variable == 1) {
    EMBER_CHECK(num_operands >= fixed, "expected at least ", fixed,
                " operands, got ", num_operands);
    sizes.push_back(int32_t(num_operands - fixed));
  }
  unsigned next = 0, v = 0;
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    const Argument &a = schema.arguments[i];
    switch (arg_kind(a)) {
    case ArgKind::Tensor:
      groups[i] = {next, 1};
      break;
    case ArgKind::OptionalTensor:
    case ArgKind::TensorList:
      EMBER_CHECK(sizes[v] >= 0, "negative operand count");
      EMBER_CHECK(arg_kind(a) == ArgKind::TensorList || sizes[v] <= 1,
                  "argument '", a.name, "' (Tensor?) takes at most one ",
                  "operand, got ", sizes[v]);
      groups[i] = {next, unsigned(sizes[v++])};
      break;
    default:
      groups[i] = {next, 0};
    }
    next += groups[i].size;
  }
  EMBER_CHECK(next == num_operands, "expected ", next, " operands, got ",
              num_operands);
  return groups;
}

std::string none_positions_attr(const Argument &a) { return a.name + "_none"; }

std::vector<int64_t> none_positions(const Argument &a, DictionaryAttr attrs,
                                    unsigned num_operands) {
  auto attr = attrs ? llvm::dyn_cast_or_null<DenseI64ArrayAttr>(
                          attrs.get(none_positions_attr(a)))
                    : DenseI64ArrayAttr();
  if (!attr)
    return {};
  std::vector<int64_t> p(attr.asArrayRef().begin(), attr.asArrayRef().end());
  int64_t size = int64_t(num_operands + p.size());
  for (size_t i = 0; i < p.size(); ++i)
    EMBER_CHECK(p[i] >= 0 && p[i] < size && (i == 0 || p[i] > p[i - 1]),
                none_positions_attr(a), " must list increasing positions in ",
                "[0, ", size, ") (the list has ", size, " elements), got ",
                debugString(attr));
  return p;
}

ParseResult
parseTensorList(OpAsmParser &parser,
                llvm::SmallVectorImpl<OpAsmParser::UnresolvedOperand> &operands,
                DenseI64ArrayAttr &none) {
  if (parser.parseLSquare())
    return failure();
  llvm::SmallVector<int64_t> nones;
  if (failed(parser.parseOptionalRSquare())) {
    int64_t i = 0;
    do {
      if (succeeded(parser.parseOptionalKeyword("none"))) {
        nones.push_back(i);
      } else {
        OpAsmParser::UnresolvedOperand operand;
        if (parser.parseOperand(operand))
          return failure();
        operands.push_back(operand);
      }
      ++i;
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRSquare())
      return failure();
  }
  if (!nones.empty())
    none = parser.getBuilder().getDenseI64ArrayAttr(nones);
  return success();
}

void printTensorList(OpAsmPrinter &p, Operation *, OperandRange operands,
                     DenseI64ArrayAttr none) {
  llvm::ArrayRef<int64_t> nones =
      none ? none.asArrayRef() : llvm::ArrayRef<int64_t>();
  size_t size = operands.size() + nones.size(), k = 0, n = 0;
  p << '[';
  for (size_t pos = 0; pos < size; ++pos) {
    if (pos)
      p << ", ";
    if (n < nones.size() && nones[n] == int64_t(pos)) {
      p << "none";
      ++n;
    } else if (k < operands.size()) {
      p << operands[k++];
    } else { // malformed positions (the verifier reports them)
      p << "none";
    }
  }
  p << ']';
}

// ---------------------------------------------------------------------------
// ember.eager_call arguments
// ---------------------------------------------------------------------------

Attribute eager_arg_attr(MLIRContext *ctx, const IValue &v, const Argument &a) {
  if (v.isNone()) {
    EMBER_CHECK(is_optional(a), "argument '", a.name, "' (", a.type,
                ") is not optional but got None");
    return NoneAttr::get(ctx);
  }
  return to_attr(ctx, v, a);
}

std::vector<EagerArg> decode_eager_args(const FunctionSchema &schema,
                                        ArrayAttr args, unsigned num_operands) {
  EMBER_CHECK(args.size() == schema.arguments.size(), schema.qualified_name(),
              " takes ", schema.arguments.size(), " arguments (", schema.str(),
              ") but `args` has ", args.size());
  std::vector<EagerArg> out(args.size());
  unsigned next = 0;
  auto operand = [&](Attribute attr, const Argument &a) {
    auto o = llvm::dyn_cast<OperandAttr>(attr);
    EMBER_CHECK(o, "argument '", a.name, "' (", a.type, ") expects ",
                "#ember.operand<N>, got ", debugString(attr));
    EMBER_CHECK(o.getIndex() == int64_t(next) && next < num_operands,
                "argument '", a.name, "' names operand ", o.getIndex(),
                " but the next unused operand is ", next, " (of ", num_operands,
                "); operands are used once each, in order");
    return next++;
  };
  for (size_t i = 0; i < out.size(); ++i) {
    const Argument &a = schema.arguments[i];
    Attribute attr = args[i];
    EagerArg &e = out[i];
    e.kind = arg_kind(a);
    switch (e.kind) {
    case ArgKind::Tensor:
      e.operands.push_back(int(operand(attr, a)));
      break;
    case ArgKind::OptionalTensor:
      if (llvm::isa<NoneAttr>(attr))
        e.present = false;
      else
        e.operands.push_back(int(operand(attr, a)));
      break;
    case ArgKind::TensorList: {
      auto list = llvm::dyn_cast<ArrayAttr>(attr);
      EMBER_CHECK(list, "argument '", a.name, "' (Tensor[]) expects an ",
                  "array of #ember.operand<N>, got ", debugString(attr));
      for (Attribute x : list)
        e.operands.push_back(llvm::isa<NoneAttr>(x) ? -1 : int(operand(x, a)));
      break;
    }
    case ArgKind::Generator:
    case ArgKind::Attribute:
      e.value = from_attr(attr, a);
      break;
    }
  }
  EMBER_CHECK(next == num_operands, "`args` uses ", next, " operands but the ",
              "call has ", num_operands);
  return out;
}

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

namespace {
struct GeneratorTable {
  std::mutex mu;
  std::vector<Generator> generators;
};
GeneratorTable &generator_table() {
  static auto *t = new GeneratorTable();
  return *t;
}
} // namespace

int64_t generator_id(const Generator &g) {
  GeneratorTable &t = generator_table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (size_t i = 0; i < t.generators.size(); ++i)
    if (t.generators[i].get() == g.get())
      return int64_t(i);
  t.generators.push_back(g);
  return int64_t(t.generators.size() - 1);
}

Generator generator_of(int64_t id) {
  GeneratorTable &t = generator_table();
  std::lock_guard<std::mutex> lock(t.mu);
  EMBER_CHECK(id >= 0 && id < int64_t(t.generators.size()), "#ember.generator<",
              id, "> names no generator of this ",
              "process: a module that calls an op with a generator runs only ",
              "in the process that captured it");
  return t.generators[size_t(id)];
}

// ---------------------------------------------------------------------------
// Tensors <-> dense attributes (constants, folding)
// ---------------------------------------------------------------------------

namespace {
constexpr int64_t kMaxFoldElements = 64;
} // namespace

Tensor tensor_of_dense(DenseElementsAttr attr) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  ValueType vt = value_type(type);
  EMBER_CHECK(vt.device == Device(kCPU), "constants live on the CPU");
  Tensor t = empty(vt.sizes, TensorOptions().dtype(vt.dtype));
  int64_t n = t.numel();
  dispatch_dtype(vt.dtype, "constant", [&]<class T>() {
    T *out = t.data_ptr<T>();
    if constexpr (std::is_same_v<T, bool>) {
      auto values = attr.getValues<bool>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = values[i];
    } else if constexpr (std::is_same_v<T, Half> ||
                         std::is_same_v<T, BFloat16>) {
      auto values = attr.getValues<llvm::APFloat>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = T(uint16_t(values[i].bitcastToAPInt().getZExtValue()),
                   typename T::from_bits_t{});
    } else if constexpr (std::is_floating_point_v<T>) {
      auto values = attr.getValues<llvm::APFloat>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = std::is_same_v<T, float> ? T(values[i].convertToFloat())
                                          : T(values[i].convertToDouble());
    } else {
      auto values = attr.getValues<llvm::APInt>();
      for (int64_t i = 0; i < n; ++i)
        out[i] = std::is_signed_v<T> ? T(values[i].getSExtValue())
                                     : T(values[i].getZExtValue());
    }
  });
  return t;
}

DenseElementsAttr dense_of_tensor(const Tensor &tensor, RankedTensorType type) {
  EMBER_CHECK(tensor.device().is_cpu(), "a constant must be a CPU tensor, got ",
              "one on ", tensor.device());
  ValueType want = value_type(type);
  EMBER_CHECK(want.device == Device(kCPU) && want.dtype == tensor.dtype() &&
                  want.sizes == tensor.sizes().vec(),
              "constant of type ", debugString(type), " made from a tensor of ",
              "sizes ", tensor.sizes(), " and dtype ", tensor.dtype());
  Tensor t = tensor.contiguous();
  int64_t n = t.numel();
  DenseElementsAttr out;
  dispatch_dtype(t.dtype(), "constant", [&]<class T>() {
    const T *in = t.data_ptr<T>();
    if constexpr (std::is_same_v<T, bool>) {
      llvm::SmallVector<bool> values(in, in + n);
      out = DenseElementsAttr::get(type, llvm::ArrayRef<bool>(values));
    } else if constexpr (std::is_same_v<T, Half> ||
                         std::is_same_v<T, BFloat16>) {
      const llvm::fltSemantics &sem = std::is_same_v<T, Half>
                                          ? llvm::APFloat::IEEEhalf()
                                          : llvm::APFloat::BFloat();
      llvm::SmallVector<llvm::APFloat> values;
      for (int64_t i = 0; i < n; ++i)
        values.emplace_back(sem, llvm::APInt(16, in[i].x));
      out = DenseElementsAttr::get(type, values);
    } else if constexpr (std::is_floating_point_v<T>) {
      llvm::SmallVector<llvm::APFloat> values;
      for (int64_t i = 0; i < n; ++i)
        values.emplace_back(in[i]);
      out = DenseElementsAttr::get(type, values);
    } else {
      llvm::SmallVector<llvm::APInt> values;
      for (int64_t i = 0; i < n; ++i)
        values.emplace_back(sizeof(T) * 8, uint64_t(int64_t(in[i])),
                            std::is_signed_v<T>);
      out = DenseElementsAttr::get(type, values);
    }
  });
  return out;
}

namespace {
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

/// A tensor for ember::meta standing for an operand: a fake tensor of its
/// type, or a fake wrapped number for a wrapped-number constant.
Tensor fake_of(Value v) {
  ValueType t = value_type(v.getType());
  if (auto c = v.getDefiningOp<ConstantOp>(); c && c.getWrappedNumber())
    return meta::fake_wrapped_number(t.dtype);
  return meta::fake(t.sizes, t.dtype, t.device);
}
} // namespace

// ---------------------------------------------------------------------------
// Hooks of the op table's ops
// ---------------------------------------------------------------------------

namespace {
/// The arguments of a table op in schema order, as eager takes them;
/// `tensor(i)` gives operand i's tensor.
Stack table_arguments(const OperatorHandle &op, unsigned num_operands,
                      DictionaryAttr attrs,
                      llvm::function_ref<Tensor(unsigned)> tensor) {
  const FunctionSchema &s = op.schema();
  std::vector<OperandGroup> groups = operand_groups(s, num_operands, attrs);
  Stack stack;
  stack.reserve(s.arguments.size());
  for (size_t i = 0; i < s.arguments.size(); ++i) {
    const Argument &a = s.arguments[i];
    const OperandGroup &g = groups[i];
    switch (arg_kind(a)) {
    case ArgKind::Tensor:
      stack.emplace_back(tensor(g.begin));
      break;
    case ArgKind::OptionalTensor:
      stack.push_back(g.size ? IValue(tensor(g.begin)) : IValue());
      break;
    case ArgKind::TensorList: {
      std::vector<int64_t> nones = none_positions(a, attrs, g.size);
      std::vector<Tensor> list(g.size + nones.size());
      unsigned k = 0;
      size_t n = 0;
      for (size_t pos = 0; pos < list.size(); ++pos) {
        if (n < nones.size() && nones[n] == int64_t(pos))
          ++n; // None: an undefined tensor, as eager takes it
        else
          list[pos] = tensor(g.begin + k++);
      }
      stack.emplace_back(std::move(list));
      break;
    }
    case ArgKind::Generator:
      stack.emplace_back();
      break;
    case ArgKind::Attribute: {
      Attribute attr = attrs ? attrs.get(a.name) : Attribute();
      stack.push_back(attr ? from_attr(attr, a) : default_value(a));
      break;
    }
    }
  }
  return stack;
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
           << op->getName().getStringRef().drop_front(6);
  MLIRContext *ctx = op->getContext();
  try {
    if (returns_only_non_tensors(ctx, h->schema()))
      return success(); // the ODS result constraints check them
    Stack args =
        table_arguments(*h, op->getNumOperands(), op->getAttrDictionary(),
                        [&](unsigned i) { return fake_of(op->getOperand(i)); });
    meta::Result r = meta::infer(*h, args);
    if (!r.needs_data.empty())
      return success(); // Note [Verifying result types]
    std::vector<Type> expected = types_of(ctx, r.outputs);
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
  } catch (const std::exception &e) {
    return op->emitOpError() << e.what();
  }
}

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
// makes, and ops after it (view, as_strided) see layouts.

struct IdentityArg {
  const char *op, *arg;
  double value;
};
constexpr IdentityArg kIdentities[] = {
#define EMBER_IDENTITY(op, arg, value) {op, arg, value},
#define EMBER_COMPOSES(op)
#include "ir/EmberIdentities.inc"
#undef EMBER_IDENTITY
#undef EMBER_COMPOSES
};

/// `a` and `b` as elements of `dtype`, bit for bit.
bool same_in(ScalarType dtype, const Scalar &a, const Scalar &b) {
  Tensor x = scalar_tensor(a, TensorOptions(dtype));
  Tensor y = scalar_tensor(b, TensorOptions(dtype));
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.element_size()) == 0;
}

OpFoldResult fold_identity(Operation *op, const OperatorHandle &h,
                           llvm::ArrayRef<Attribute> operands) {
  llvm::StringRef name = op->getName().getStringRef();
  bool listed = false;
  if (op->getNumOperands() == 0 || op->getNumResults() != 1 ||
      op->getOperand(0).getType() != op->getResult(0).getType())
    return {};
  Operation *def = op->getOperand(0).getDefiningOp();
  if (!def || def->hasTrait<OpTrait::View>() ||
      !(table_op(def) || llvm::isa<ConstantOp>(def)))
    return {};
  ScalarType dtype = value_type(op->getResult(0).getType()).dtype;
  const FunctionSchema &s = h.schema();
  std::vector<OperandGroup> groups =
      operand_groups(s, op->getNumOperands(), op->getAttrDictionary());
  for (const IdentityArg &id : kIdentities) {
    if (name != id.op)
      continue;
    listed = true;
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
  return listed ? OpFoldResult(op->getOperand(0)) : OpFoldResult();
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
  if (chain.empty() || root.getType() != op->getResult(0).getType())
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
      ExcludeDispatchKeyGuard guard(DispatchKeySet(DispatchKey::Mode) |
                                    DispatchKey::Capture |
                                    DispatchKey::Autograd);
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
constexpr const char *kComposing[] = {
#define EMBER_IDENTITY(op, arg, value)
#define EMBER_COMPOSES(op) op,
#include "ir/EmberIdentities.inc"
#undef EMBER_IDENTITY
#undef EMBER_COMPOSES
    nullptr};

/// op(op(x, a), b) -> op(x, b) for the ops ops.yaml marks `composes` (a view
/// of a view is one view).
struct Compose : RewritePattern {
  explicit Compose(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    llvm::StringRef name = op->getName().getStringRef();
    bool composes = false;
    for (const char *const *c = kComposing; *c; ++c)
      composes = composes || name == *c;
    if (!composes || op->getNumOperands() != 1)
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
    meta::Result r = meta::infer(*op, stack);
    if (!r.needs_data.empty())
      return success();
    std::vector<Type> expected = types_of(ctx, r.outputs);
    if (expected.size() != getNumResults())
      return emitOpError() << "has " << getNumResults()
                           << " results but ember::meta::infer gives "
                           << expected.size();
    for (unsigned i = 0; i < expected.size(); ++i)
      if (expected[i] != getResult(i).getType())
        return emitOpError()
               << "result #" << i << " has type " << getResult(i).getType()
               << " but ember::meta::infer gives " << expected[i];
    return success();
  } catch (const std::exception &e) {
    return emitOpError() << e.what();
  }
}

} // namespace ember::ir
