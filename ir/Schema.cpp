// The ember dialect: schemas <-> IR (Note [Schema to ODS] in ir/Dialect.h):
// the dispatcher op of a dialect op, argument kinds, operand groups,
// attributes <-> IValues, the arguments of ember.eager_call, generators and
// tensors <-> dense attributes.
#include "ir/Dialect.h"
#include "ir/DialectImpl.h"

#include "eager/Dtype.h"
#include "eager/Factory.h"

#include "mlir/IR/Builders.h"
#include "mlir/Support/DebugStringHelper.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cctype>
#include <mutex>
#include <shared_mutex>

using namespace mlir;

namespace ember::ir {

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

// Note [Finding an op's dispatcher op]
// table_op is the one place that maps a dialect op to its dispatcher op by
// name. Passes call it for every op they visit, so each answer is kept:
// per registered op by its TypeID (the op class's, the same in every
// context; an OperationName is per context and dies with it), and per name
// for the ops that have one. The dispatcher's ember:: ops are all
// registered when the library loads and never removed (Library reserves the
// namespace), so a kept answer, null included, stays right.
namespace {
struct TableOpCache {
  std::shared_mutex mu;
  llvm::DenseMap<TypeID, const OperatorHandle *> by_type;
  llvm::StringMap<const OperatorHandle *> by_name; // found ones only
};
TableOpCache &table_op_cache() {
  static auto *c = new TableOpCache();
  return *c;
}

const OperatorHandle *find_table_op(StringRef op_name) {
  if (!op_name.starts_with("ember.") || op_name == "ember.constant" ||
      op_name == "ember.eager_call")
    return nullptr;
  return Dispatcher::singleton().findOp("ember::" +
                                        op_name.drop_front(6).str());
}
} // namespace

const OperatorHandle *table_op(StringRef op_name) {
  TableOpCache &c = table_op_cache();
  {
    std::shared_lock<std::shared_mutex> lock(c.mu);
    auto it = c.by_name.find(op_name);
    if (it != c.by_name.end())
      return it->second;
  }
  const OperatorHandle *h = find_table_op(op_name);
  if (h) {
    std::unique_lock<std::shared_mutex> lock(c.mu);
    c.by_name.try_emplace(op_name, h);
  }
  return h;
}

const OperatorHandle *table_op(Operation *op) {
  if (!llvm::isa_and_nonnull<EmberDialect>(op->getDialect()))
    return nullptr;
  std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
  if (!info) // an unregistered ember.* op (--allow-unregistered-dialect)
    return find_table_op(op->getName().getStringRef());
  TableOpCache &c = table_op_cache();
  TypeID id = info->getTypeID();
  {
    std::shared_lock<std::shared_mutex> lock(c.mu);
    auto it = c.by_type.find(id);
    if (it != c.by_type.end())
      return it->second;
  }
  const OperatorHandle *h = find_table_op(info->getStringRef());
  std::unique_lock<std::shared_mutex> lock(c.mu);
  c.by_type.try_emplace(id, h);
  return h;
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

// ---------------------------------------------------------------------------
// A table op's arguments as eager takes them (inference, folding)
// ---------------------------------------------------------------------------

namespace detail {

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

} // namespace detail

} // namespace ember::ir
