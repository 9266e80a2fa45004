// ember dialect -> Trace (ir/Import.h), and parsing modules from text.
#include "ir/Import.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/DebugStringHelper.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace ember::ir {

std::string loc_string(Location loc) {
  if (auto flc = llvm::dyn_cast<FileLineColLoc>(loc))
    return flc.getFilename().str() + ":" + std::to_string(flc.getLine()) + ":" +
           std::to_string(flc.getColumn());
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    // build_module: NameLoc(op name, file:line:col | NameLoc(loc) | unknown).
    Location child = name.getChildLoc();
    if (auto inner = llvm::dyn_cast<NameLoc>(child))
      return inner.getName().str();
    return loc_string(child);
  }
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location l : fused.getLocations())
      if (std::string s = loc_string(l); !s.empty())
        return s;
    return "";
  }
  if (auto call = llvm::dyn_cast<CallSiteLoc>(loc))
    return loc_string(call.getCallee());
  return "";
}

namespace {

/// A function's body, or a fusion's (its inputs are its block's arguments,
/// its outputs what ember.yield yields).
class FuncImporter {
public:
  explicit FuncImporter(func::FuncOp func) : func_(func) {}
  explicit FuncImporter(FusionOp fusion) : fusion_(fusion) {}
  FuncImporter() = default;

  /// One op as a trace: its distinct operands (in order of first use) are
  /// the inputs, its results the outputs.
  Trace run_op(Operation &op) {
    t_.name = op.getName().getStringRef().str();
    for (Value v : op.getOperands()) {
      if (ids_.count(v))
        continue;
      Input in;
      in.value = define(v);
      in.index = int(t_.inputs.size());
      in.name = "in" + std::to_string(in.index);
      t_.inputs.push_back(std::move(in));
    }
    if (auto call = llvm::dyn_cast<EagerCallOp>(op))
      eager_call(call);
    else if (const OperatorHandle *h = table_op(&op))
      table(op, *h);
    else
      check(false, "op '", op.getName().getStringRef().str(),
            "' is not an op of the table");
    for (Value r : op.getResults())
      t_.outputs.push_back(id(r));
    return std::move(t_);
  }

  Trace run() {
    Region &region = func_ ? func_.getBody() : fusion_.getBody();
    t_.name = func_ ? func_.getSymName().str() : "fusion";
    check(region.hasOneBlock(), "the function must have one block (got ",
          region.getBlocks().size(), ")");
    Block &entry = region.front();
    for (BlockArgument arg : entry.getArguments())
      input(arg);
    for (Operation &op : entry.getOperations()) {
      if (auto c = llvm::dyn_cast<ConstantOp>(op))
        constant(c);
      else if (auto call = llvm::dyn_cast<EagerCallOp>(op))
        eager_call(call);
      else if (auto ret = llvm::dyn_cast<func::ReturnOp>(op))
        returns(ret);
      else if (auto yield = llvm::dyn_cast<YieldOp>(op))
        for (Value v : yield.getValues())
          t_.outputs.push_back(id(v));
      else if (auto f = llvm::dyn_cast<FusionOp>(op))
        fusion(f);
      else if (const OperatorHandle *h = table_op(&op))
        table(op, *h);
      else
        check(false, "op '", op.getName().getStringRef().str(),
              "' is not part of an ember program (", loc_string(op.getLoc()),
              ")");
    }
    return std::move(t_);
  }

private:
  template <class... Args> void check(bool ok, const Args &...msg) {
    if (!ok)
      throw Error(::ember::detail::str("import_func: function '", t_.name,
                                       "': ", msg...));
  }

  int define(Value v) {
    ValueType type;
    try {
      type = value_type(v.getType());
    } catch (const Error &e) {
      check(false, e.what());
    }
    int id = t_.add_value(std::move(type));
    ids_[v] = id;
    return id;
  }
  int id(Value v) {
    auto it = ids_.find(v);
    check(it != ids_.end(), "a value is used before it is defined");
    return it->second;
  }

  void input(BlockArgument arg) {
    unsigned i = arg.getArgNumber();
    Input in;
    in.value = define(arg);
    in.index = int(i);
    in.name = (func_ ? "arg" : "in") + std::to_string(i);
    if (!func_) {
      t_.inputs.push_back(std::move(in));
      return;
    }
    if (auto name = func_.getArgAttrOfType<StringAttr>(i, "ember.name"))
      in.name = name.getValue().str();
    if (auto kind = func_.getArgAttrOfType<StringAttr>(i, "ember.input")) {
      StringRef s = kind.getValue();
      auto [k, index] = s.split(':');
      check(parse_input_kind(std::string_view(k.data(), k.size()), in.kind) &&
                !index.getAsInteger(10, in.index) && in.index >= 0,
            "argument ", i, ": ember.input is '", s.str(),
            "', expected \"argument:N\", \"lifted:N\", \"storage:N\" or "
            "\"tangent:N\"");
    }
    t_.inputs.push_back(std::move(in));
  }

  void constant(ConstantOp c) {
    Constant k;
    auto dense = llvm::cast<DenseElementsAttr>(c.getValue());
    try {
      if (c.getWrappedNumber())
        k.scalar = scalar_of(dense.getSplatValue<Attribute>());
      else
        k.tensor = tensor_of_dense(dense);
    } catch (const Error &e) {
      check(false, e.what());
    }
    k.value = define(c.getResult());
    t_.constants.push_back(std::move(k));
  }

  void table(Operation &op, const OperatorHandle &h) {
    const FunctionSchema &s = h.schema();
    Node n;
    n.op = &h;
    n.loc = loc_string(op.getLoc());
    DictionaryAttr attrs = op.getAttrDictionary();
    try {
      std::vector<OperandGroup> groups =
          operand_groups(s, op.getNumOperands(), attrs);
      for (size_t i = 0; i < s.arguments.size(); ++i) {
        const Argument &a = s.arguments[i];
        const OperandGroup &g = groups[i];
        switch (arg_kind(a)) {
        case ArgKind::Tensor:
          n.args.push_back(Arg::of_value(id(op.getOperand(g.begin))));
          break;
        case ArgKind::OptionalTensor:
          n.args.push_back(
              Arg::of_value(g.size ? id(op.getOperand(g.begin)) : -1));
          break;
        case ArgKind::TensorList: {
          // None elements (-1) at the positions `<name>_none` lists.
          std::vector<int64_t> nones = none_positions(a, attrs, g.size);
          std::vector<int> vs(g.size + nones.size(), -1);
          unsigned k = 0;
          size_t none = 0;
          for (size_t pos = 0; pos < vs.size(); ++pos) {
            if (none < nones.size() && nones[none] == int64_t(pos))
              ++none;
            else
              vs[pos] = id(op.getOperand(g.begin + k++));
          }
          n.args.push_back(Arg::of_values(std::move(vs)));
          break;
        }
        case ArgKind::Generator:
          n.args.push_back(Arg::of_attr(IValue()));
          break;
        case ArgKind::Attribute: {
          Attribute attr = attrs.get(a.name);
          n.args.push_back(
              Arg::of_attr(attr ? from_attr(attr, a) : default_value(a)));
          break;
        }
        }
      }
    } catch (const Error &e) {
      check(false, op.getName().getStringRef().str(), ": ", e.what());
    }
    results(op, n);
  }

  void fusion(FusionOp f) {
    Node n;
    n.loc = loc_string(f.getLoc());
    n.body = std::make_shared<Trace>(FuncImporter(f).run());
    for (Value in : f.getInputs())
      n.args.push_back(Arg::of_value(id(in)));
    if (auto reuse = f->getAttrOfType<DenseI64ArrayAttr>(kReuseAttr))
      for (int64_t k : reuse.asArrayRef())
        n.reuse.push_back(int(k));
    results(*f.getOperation(), n);
  }

  void eager_call(EagerCallOp call) {
    const OperatorHandle *h =
        Dispatcher::singleton().findOp(call.getCallee().str());
    check(h, "ember.eager_call names '", call.getCallee().str(),
          "', which is not a registered op");
    Node n;
    n.op = h;
    n.loc = loc_string(call.getLoc());
    try {
      std::vector<EagerArg> args = decode_eager_args(
          h->schema(), call.getArgs(), call.getInputs().size());
      for (const EagerArg &a : args) {
        switch (a.kind) {
        case ArgKind::Tensor:
        case ArgKind::OptionalTensor:
          n.args.push_back(Arg::of_value(
              a.present ? id(call.getInputs()[unsigned(a.operands[0])]) : -1));
          break;
        case ArgKind::TensorList: {
          std::vector<int> vs;
          for (int i : a.operands)
            vs.push_back(i < 0 ? -1 : id(call.getInputs()[unsigned(i)]));
          n.args.push_back(Arg::of_values(std::move(vs)));
          break;
        }
        default:
          n.args.push_back(Arg::of_attr(a.value));
        }
      }
    } catch (const Error &e) {
      check(false, "ember.eager_call \"", call.getCallee().str(),
            "\": ", e.what());
    }
    results(*call.getOperation(), n);
  }

  void results(Operation &op, Node &n) {
    for (Value r : op.getResults())
      n.results.push_back(define(r));
    t_.nodes.push_back(std::move(n));
  }

  void returns(func::ReturnOp ret) {
    std::vector<int64_t> mutated;
    if (auto attr = func_->getAttrOfType<DenseI64ArrayAttr>("ember.mutations"))
      mutated.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
    else
      check(!func_->hasAttr("ember.mutations"),
            "ember.mutations must be an array<i64: ...> of input numbers");
    unsigned n = ret.getNumOperands();
    check(mutated.size() <= n, "ember.mutations lists ", mutated.size(),
          " writes but the function returns ", n, " values");
    unsigned outputs = n - unsigned(mutated.size());
    for (unsigned i = 0; i < outputs; ++i)
      t_.outputs.push_back(id(ret.getOperand(i)));
    for (size_t k = 0; k < mutated.size(); ++k) {
      check(mutated[k] >= 0 && size_t(mutated[k]) < t_.inputs.size(),
            "ember.mutations writes to input ", mutated[k], " of ",
            t_.inputs.size());
      t_.mutations.push_back(
          Mutation{int(mutated[k]), id(ret.getOperand(outputs + unsigned(k)))});
    }
  }

  func::FuncOp func_;
  FusionOp fusion_;
  Trace t_;
  llvm::DenseMap<Value, int> ids_;
};

} // namespace

Trace import_func(func::FuncOp func) { return FuncImporter(func).run(); }

Trace import_op(Operation *op) { return FuncImporter().run_op(*op); }

OwningOpRef<ModuleOp> parse_module(MLIRContext &ctx, llvm::StringRef text) {
  DialectRegistry registry;
  register_dialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    throw Error("could not parse the module:\n" + os.str());
  return module;
}

} // namespace ember::ir
