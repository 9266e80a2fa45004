// Trace -> ember dialect module (ir/Builder.h).
#include "ir/Builder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/DebugStringHelper.h"

#include "llvm/Support/raw_ostream.h"

#include <optional>

using namespace mlir;

namespace ember::ir {

namespace {

/// "file.cpp:12:7" -> (file.cpp, 12, 7); nullopt for anything else.
std::optional<std::tuple<std::string, unsigned, unsigned>>
parse_file_line_col(const std::string &loc) {
  size_t c2 = loc.rfind(':');
  if (c2 == std::string::npos || c2 == 0)
    return std::nullopt;
  size_t c1 = loc.rfind(':', c2 - 1);
  if (c1 == std::string::npos || c1 == 0)
    return std::nullopt;
  auto number = [](const std::string &s) -> std::optional<unsigned> {
    if (s.empty() || s.size() > 9 ||
        s.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return unsigned(std::stoul(s));
  };
  auto line = number(loc.substr(c1 + 1, c2 - c1 - 1));
  auto col = number(loc.substr(c2 + 1));
  if (!line || !col)
    return std::nullopt;
  return std::make_tuple(loc.substr(0, c1), *line, *col);
}

class FuncBuilder {
public:
  FuncBuilder(MLIRContext *ctx, ModuleOp module, const Trace &t)
      : ctx_(ctx), b_(ctx), module_(module), t_(t), values_(t.types.size()) {}

  /// build_inline's builder: ops go at `b`'s insertion point, all at `loc`.
  FuncBuilder(OpBuilder &b, const Trace &t, Location loc)
      : ctx_(b.getContext()), b_(b), t_(t), values_(t.types.size()),
        inline_loc_(loc) {}

  llvm::SmallVector<Value> build_inline(ValueRange inputs) {
    check(inputs.size() == t_.inputs.size(), "build_inline: ", inputs.size(),
          " values for ", t_.inputs.size(), " inputs");
    for (size_t i = 0; i < t_.inputs.size(); ++i) {
      check(inputs[i].getType() == type_of(t_.inputs[i].value),
            "build_inline: input ", i, " has another type than the trace's");
      define(t_.inputs[i].value, inputs[i]);
    }
    return body();
  }

  /// The constants and nodes at the insertion point; the outputs' values.
  llvm::SmallVector<Value> body() {
    for (const Constant &c : t_.constants)
      constant(c);
    for (size_t i = 0; i < t_.nodes.size(); ++i)
      node(i, t_.nodes[i]);
    llvm::SmallVector<Value> results;
    for (int v : t_.outputs)
      results.push_back(use(v, "an output"));
    return results;
  }

  void build() {
    check(!t_.name.empty(), "a trace needs a name (its function's symbol)");
    Location loc = NameLoc::get(StringAttr::get(ctx_, t_.name));
    llvm::SmallVector<Type> inputs;
    for (const Input &in : t_.inputs)
      inputs.push_back(type_of(in.value));
    auto func =
        func::FuncOp::create(loc, t_.name, FunctionType::get(ctx_, inputs, {}));
    module_.push_back(func);
    Block *entry = func.addEntryBlock();
    b_.setInsertionPointToStart(entry);
    // Every argument's attributes set at once: setArgAttr rebuilds the
    // array of all of them per call, quadratic in the arguments (an
    // optimizer step over 4000 parameters has 12000).
    llvm::SmallVector<DictionaryAttr> arg_attrs;
    for (size_t i = 0; i < t_.inputs.size(); ++i) {
      const Input &in = t_.inputs[i];
      define(in.value, entry->getArgument(unsigned(i)));
      NamedAttrList attrs;
      attrs.append("ember.name", b_.getStringAttr(in.name));
      attrs.append("ember.input",
                   b_.getStringAttr(std::string(input_kind_name(in.kind)) +
                                    ":" + std::to_string(in.index)));
      if (in.kind == InputKind::Tangent)
        attrs.append("ember.tangent", b_.getUnitAttr());
      if (in.fresh)
        attrs.append("ember.fresh", b_.getUnitAttr());
      arg_attrs.push_back(attrs.getDictionary(ctx_));
    }
    func.setAllArgAttrs(arg_attrs);
    llvm::SmallVector<Value> results = body();
    llvm::SmallVector<int64_t> mutated;
    for (const Mutation &m : t_.mutations) {
      check(m.input >= 0 && size_t(m.input) < t_.inputs.size(),
            "a mutation writes to input ", m.input, " but the trace has ",
            t_.inputs.size(), " inputs");
      results.push_back(use(m.value, "a mutation"));
      mutated.push_back(m.input);
    }
    // A joint graph (ember-remat's input): the gradients after the
    // forward's results (its outputs and mutations).
    int64_t forward_results = int64_t(results.size());
    for (int v : t_.gradients)
      results.push_back(use(v, "a gradient"));
    b_.create<func::ReturnOp>(loc, results);
    func.setFunctionType(
        FunctionType::get(ctx_, inputs, ValueRange(results).getTypes()));
    if (!mutated.empty())
      func->setAttr("ember.mutations", b_.getDenseI64ArrayAttr(mutated));
    if (t_.is_joint())
      func->setAttr("ember.forward_results",
                    b_.getI64IntegerAttr(forward_results));
  }

private:
  template <class... Args> void check(bool ok, const Args &...msg) {
    if (!ok)
      throw Error(::ember::detail::str("build_module: trace '", t_.name,
                                       "': ", msg...));
  }

  Type type_of(int v) {
    check(v >= 0 && size_t(v) < t_.types.size(), "value %", v,
          " has no type (the trace has ", t_.types.size(), " values)");
    return tensor_type(ctx_, t_.types[size_t(v)]);
  }
  void define(int v, Value value) {
    check(v >= 0 && size_t(v) < values_.size(), "value %", v,
          " is out of range");
    check(!values_[size_t(v)], "value %", v, " is defined twice");
    values_[size_t(v)] = value;
  }
  Value use(int v, const char *what) {
    check(v >= 0 && size_t(v) < values_.size() && values_[size_t(v)], what,
          " uses value %", v, ", which is not defined before");
    return values_[size_t(v)];
  }

  void constant(const Constant &c) {
    auto type = llvm::cast<RankedTensorType>(type_of(c.value));
    Location loc =
        inline_loc_ ? *inline_loc_ : NameLoc::get(b_.getStringAttr("constant"));
    DenseElementsAttr value;
    bool wrapped = !c.tensor.defined();
    if (wrapped) {
      ValueType vt = t_.types[size_t(c.value)];
      check(vt.sizes.empty(), "wrapped number %", c.value,
            " must be 0-dim, its type has sizes ", IntArrayRef(vt.sizes));
      Attribute scalar =
          vt.dtype == kDouble ? scalarAttr(ctx_, c.scalar.toDouble())
          : vt.dtype == kLong ? scalarAttr(ctx_, c.scalar.toLong())
          : vt.dtype == kBool ? scalarAttr(ctx_, c.scalar.toBool())
                              : Attribute();
      check(bool(scalar), "wrapped number %", c.value, " has dtype ", vt.dtype,
            "; wrapped numbers are float64, int64 or bool");
      value = DenseElementsAttr::get(type, scalar);
    } else {
      value = dense_of_tensor(c.tensor, type);
    }
    auto op = b_.create<ConstantOp>(loc, value, wrapped);
    define(c.value, op.getResult());
  }

  Location node_loc(const Node &n) {
    if (inline_loc_)
      return *inline_loc_;
    StringAttr name = b_.getStringAttr(n.op->name());
    if (n.loc.empty())
      return NameLoc::get(name);
    if (auto flc = parse_file_line_col(n.loc))
      return NameLoc::get(name, FileLineColLoc::get(ctx_, std::get<0>(*flc),
                                                    std::get<1>(*flc),
                                                    std::get<2>(*flc)));
    // Not file:line:col: kept as a name, so that import gives it back.
    return NameLoc::get(name, NameLoc::get(b_.getStringAttr(n.loc)));
  }

  void node(size_t index, const Node &n) {
    check(n.op != nullptr, "node ", index, " has no op");
    const FunctionSchema &s = n.op->schema();
    check(n.args.size() == s.arguments.size(), "node ", index, " (",
          n.op->name(), ") has ", n.args.size(),
          " arguments but its schema has ", s.arguments.size(), ": ", s.str());
    bool with_generator = false;
    for (size_t i = 0; i < s.arguments.size(); ++i) {
      const Argument &a = s.arguments[i];
      const Arg &arg = n.args[i];
      ArgKind k = arg_kind(a);
      bool want_value = k == ArgKind::Tensor || k == ArgKind::OptionalTensor;
      check(want_value == (arg.kind == Arg::Kind::Value) &&
                (k == ArgKind::TensorList) ==
                    (arg.kind == Arg::Kind::ValueList),
            "node ", index, " (", n.op->name(), "): argument '", a.name,
            "' has type ", a.type, " but the trace gives ",
            arg.kind == Arg::Kind::Value       ? "a value"
            : arg.kind == Arg::Kind::ValueList ? "a list of values"
                                               : "an attribute");
      check(k != ArgKind::Tensor || arg.value >= 0, "node ", index, " (",
            n.op->name(), "): argument '", a.name, "' (Tensor) is missing");
      if (k == ArgKind::Generator && !arg.attr.isNone())
        with_generator = true;
    }
    Location loc = node_loc(n);
    llvm::SmallVector<Type> result_types;
    for (int r : n.results)
      result_types.push_back(type_of(r));
    Operation *op = has_dialect_op(ctx_, *n.op) && !with_generator
                        ? dialect_op(n, loc, result_types)
                        : eager_call(n, loc, result_types);
    if (n.recompute)
      op->setAttr("ember.recompute", b_.getI64IntegerAttr(n.recompute));
    for (size_t i = 0; i < n.results.size(); ++i)
      define(n.results[i], op->getResult(unsigned(i)));
  }

  /// Note [Schema to ODS]
  Operation *dialect_op(const Node &n, Location loc, TypeRange results) {
    const FunctionSchema &s = n.op->schema();
    OperationState st(loc, dialect_op_name(*n.op));
    llvm::SmallVector<int32_t> segments;
    int variable = 0;
    for (size_t i = 0; i < s.arguments.size(); ++i) {
      const Argument &a = s.arguments[i];
      const Arg &arg = n.args[i];
      switch (arg_kind(a)) {
      case ArgKind::Tensor:
        st.addOperands(use(arg.value, "an argument"));
        segments.push_back(1);
        break;
      case ArgKind::OptionalTensor:
        ++variable;
        if (arg.value >= 0)
          st.addOperands(use(arg.value, "an argument"));
        segments.push_back(arg.value >= 0 ? 1 : 0);
        break;
      case ArgKind::TensorList: {
        ++variable;
        llvm::SmallVector<int64_t> nones; // Note [Schema to ODS]
        for (size_t k = 0; k < arg.values.size(); ++k) {
          if (arg.values[k] < 0)
            nones.push_back(int64_t(k));
          else
            st.addOperands(use(arg.values[k], "an argument"));
        }
        segments.push_back(int32_t(arg.values.size() - nones.size()));
        if (!nones.empty())
          st.addAttribute(none_positions_attr(a),
                          b_.getDenseI64ArrayAttr(nones));
        break;
      }
      case ArgKind::Generator:
        break; // None: no IR form
      case ArgKind::Attribute:
        if (Attribute attr = to_attr(ctx_, arg.attr, a))
          st.addAttribute(a.name, attr);
        break;
      }
    }
    if (variable > 1)
      st.addAttribute("operandSegmentSizes", b_.getDenseI32ArrayAttr(segments));
    st.addTypes(results);
    return b_.create(st);
  }

  Operation *eager_call(const Node &n, Location loc, TypeRange results) {
    const FunctionSchema &s = n.op->schema();
    OperationState st(loc, EagerCallOp::getOperationName());
    llvm::SmallVector<Attribute> args;
    unsigned next = 0;
    auto operand = [&](int v) {
      st.addOperands(use(v, "an argument"));
      return OperandAttr::get(ctx_, next++);
    };
    for (size_t i = 0; i < s.arguments.size(); ++i) {
      const Argument &a = s.arguments[i];
      const Arg &arg = n.args[i];
      switch (arg_kind(a)) {
      case ArgKind::Tensor:
        args.push_back(operand(arg.value));
        break;
      case ArgKind::OptionalTensor:
        args.push_back(arg.value >= 0 ? Attribute(operand(arg.value))
                                      : Attribute(NoneAttr::get(ctx_)));
        break;
      case ArgKind::TensorList: {
        llvm::SmallVector<Attribute> list;
        for (int v : arg.values)
          list.push_back(v < 0 ? Attribute(NoneAttr::get(ctx_))
                               : Attribute(operand(v)));
        args.push_back(b_.getArrayAttr(list));
        break;
      }
      case ArgKind::Generator:
      case ArgKind::Attribute:
        args.push_back(eager_arg_attr(ctx_, arg.attr, a));
        break;
      }
    }
    st.addAttribute("callee", b_.getStringAttr(n.op->name()));
    st.addAttribute("args", b_.getArrayAttr(args));
    st.addTypes(results);
    return b_.create(st);
  }

  MLIRContext *ctx_;
  OpBuilder b_;
  ModuleOp module_;
  const Trace &t_;
  std::vector<Value> values_;
  std::optional<Location> inline_loc_;
};

} // namespace

OwningOpRef<ModuleOp> build_module(MLIRContext &ctx,
                                   llvm::ArrayRef<const Trace *> traces) {
  ctx.getOrLoadDialect<EmberDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&ctx));
  for (const Trace *t : traces) {
    EMBER_CHECK(t, "build_module: null trace");
    FuncBuilder(&ctx, *module, *t).build();
  }
  return module;
}

llvm::SmallVector<Value> build_inline(OpBuilder &b, const Trace &trace,
                                      ValueRange inputs, Location loc) {
  return FuncBuilder(b, trace, loc).build_inline(inputs);
}

void verify_module(ModuleOp module) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    for (const Diagnostic &note : d.getNotes())
      os << "  note: " << note.getLocation() << ": " << note << "\n";
    return success();
  });
  if (failed(mlir::verify(module)))
    throw Error("the ember module is invalid:\n" + os.str());
}

std::string print_module(ModuleOp module, bool with_locations) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (with_locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(os, flags);
  return os.str();
}

std::pair<FusionOp, mlir::OpBuilder>
create_fusion(mlir::Operation *at, llvm::ArrayRef<mlir::Location> locs,
              mlir::TypeRange types, mlir::ValueRange inputs,
              mlir::IRMapping &map) {
  mlir::OpBuilder b(at);
  auto fusion = b.create<FusionOp>(b.getFusedLoc(locs), types, inputs);
  mlir::Block *body = new mlir::Block();
  fusion.getBody().push_back(body);
  for (mlir::Value in : inputs)
    map.map(in, body->addArgument(in.getType(), in.getLoc()));
  return {fusion, mlir::OpBuilder::atBlockBegin(body)};
}

} // namespace ember::ir
