// ember-opt-fuzz: a libFuzzer target over ember's verifiers, folders and
// passes (Note [Fuzzing ember-opt] in cmake/Fuzz.cmake). Each input is the
// text of a module, taken as `ember-opt --ember-pipeline=level=2` takes a
// file:
//
//   parse (the dialects registered as ember-opt registers them) and verify
//   -> the level-2 pipeline (canonicalize, CSE, ember-decompose,
//      canonicalize, CSE, ember-fuse-elementwise, ember-fuse-horizontal,
//      ember-plan-memory), with
//      the verifier after every pass
//   -> every ember.fusion lowered to its kernel description (codegen/
//      Lower.h; no LLVM compile: that is upstream's code and slow)
//   -> the result printed.
//
// An input that starts with a NUL byte is no text: the bytes after it choose
// a module (Note [Generated modules]), which is printed and then goes the
// way of a text input. With EMBER_FUZZ_PRINT=1 in the environment the
// target prints each generated module to stderr: what a crash found that
// way is, as text (test/fuzz/regressions keeps it so).
//
// Invalid input must end in a diagnostic, which is swallowed; any crash,
// sanitizer report or exception that escapes is a bug. So is a pipeline
// that fails on a module that verified: a pass gave an error, or a pass
// (the canonicalizer's folders and patterns included) left invalid IR; the
// target aborts naming the last pass that ran. (compile() runs the same
// pipeline on every graph it captures: a verified module must come
// through it.)
// Inputs share a context, a fresh one every few hundred (Note [One context
// for many inputs]).
//
//   scripts/ember.sh fuzz-opt [RUNS]   builds it (build-fuzz/) and runs it
#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "ir/Dialect.h"
#include "ir/Types.h"
#include "passes/Passes.h"

#include <fuzzer/FuzzedDataProvider.h>

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace {
using namespace ember;

const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry;
    ember::ir::register_dialects(*reg);
    return reg;
  }();
  return *r;
}
/// Remembers the last pass that started, to name it when the module ends up
/// invalid.
struct LastPass : mlir::PassInstrumentation {
  std::string *name;
  explicit LastPass(std::string *n) : name(n) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
    *name = pass->getArgument().str();
  }
};

// Note [Generated modules]
// Random bytes rarely make a module that parses and verifies, and the
// passes see only those. So the target also builds modules from the bytes
// (FuzzedDataProvider): a func.func with a few tensor arguments (ranks 0-4,
// small dims with 0 and 1 often, rarely huge ones, most broadcasting
// against one base shape; every dtype; rarely on cuda), constants (wrapped
// numbers and small dense tensors of edge values: 0, -1, the extremes, NaN,
// inf) and a few ops of the op table, each with operands picked among the
// values so far and attributes of its schema's types chosen from edge values
// (or left at their defaults); the result types are those ember::meta infers,
// and an op it rejects is not added; sometimes a run of those ops is wrapped in
// an ember.fusion. The text of that module then goes the way of any input; a
// module that does not parse back from its own text is a bug of its printer or
// parser (the target aborts).
class ModuleGenerator {
public:
  ModuleGenerator(mlir::MLIRContext &ctx, FuzzedDataProvider &in)
      : ctx_(ctx), in_(in), b_(&ctx) {}

  /// The module's text; empty when the bytes made none that verifies.
  std::string text() {
    mlir::Location loc = b_.getUnknownLoc();
    mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
    for (int i = in_.ConsumeIntegralInRange(0, 4); i > 0; --i)
      base_.push_back(dim());
    llvm::SmallVector<mlir::Type> args;
    int nargs = in_.ConsumeIntegralInRange(1, 3);
    for (int i = 0; i < nargs; ++i)
      args.push_back(tensor_type());
    b_.setInsertionPointToEnd(module->getBody());
    auto func = b_.create<mlir::func::FuncOp>(loc, "fuzz",
                                              b_.getFunctionType(args, {}));
    mlir::Block *body = func.addEntryBlock();
    b_.setInsertionPointToEnd(body);
    for (mlir::Value v : body->getArguments())
      values_.push_back(v);
    int steps = in_.ConsumeIntegralInRange(1, 8);
    for (int i = 0; i < steps && in_.remaining_bytes(); ++i) {
      switch (in_.ConsumeIntegralInRange(0, 5)) {
      case 0:
        constant();
        break;
      default:
        op();
      }
    }
    llvm::SmallVector<mlir::Value> results{values_.back()};
    if (values_.size() > 1 && in_.ConsumeBool())
      results.push_back(pick());
    b_.create<mlir::func::ReturnOp>(loc, results);
    func.setFunctionType(
        b_.getFunctionType(args, mlir::ValueRange(results).getTypes()));
    if (in_.ConsumeIntegralInRange(0, 3) == 0)
      fuse_some(*body);
    if (mlir::failed(mlir::verify(*module)))
      return "";
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return text;
  }

private:
  /// Wraps a run of the body's ops in an ember.fusion, as the fusion pass
  /// outlines a group but whatever the ops, sometimes with an ember.reuse
  /// plan: fusions written by hand, for the fusion verifier, the passes
  /// (which leave fusions in place) and lowering.
  void fuse_some(mlir::Block &body) {
    std::vector<mlir::Operation *> ops;
    for (mlir::Operation &op : body.without_terminator())
      ops.push_back(&op);
    if (ops.empty())
      return;
    size_t first = in_.ConsumeIntegralInRange<size_t>(0, ops.size() - 1);
    size_t last = in_.ConsumeIntegralInRange<size_t>(first, ops.size() - 1);
    llvm::SmallPtrSet<mlir::Operation *, 8> run(ops.begin() + first,
                                                ops.begin() + last + 1);
    llvm::SetVector<mlir::Value> inputs;
    llvm::SmallVector<mlir::Value> outputs;
    for (size_t i = first; i <= last; ++i) {
      for (mlir::Value v : ops[i]->getOperands())
        if (!run.contains(v.getDefiningOp()))
          inputs.insert(v);
      for (mlir::Value r : ops[i]->getResults())
        if (llvm::any_of(r.getUsers(),
                         [&](mlir::Operation *u) { return !run.contains(u); }))
          outputs.push_back(r);
    }
    b_.setInsertionPointAfter(ops[last]);
    auto fusion = b_.create<ir::FusionOp>(b_.getUnknownLoc(),
                                          mlir::ValueRange(outputs).getTypes(),
                                          inputs.getArrayRef());
    mlir::Block *inner = new mlir::Block();
    fusion.getBody().push_back(inner);
    mlir::IRMapping map;
    for (mlir::Value v : inputs)
      map.map(v, inner->addArgument(v.getType(), v.getLoc()));
    mlir::OpBuilder ib = mlir::OpBuilder::atBlockBegin(inner);
    for (size_t i = first; i <= last; ++i)
      ib.clone(*ops[i], map);
    llvm::SmallVector<mlir::Value> yielded;
    for (mlir::Value r : outputs)
      yielded.push_back(map.lookup(r));
    ib.create<ir::YieldOp>(b_.getUnknownLoc(), yielded);
    for (auto [i, r] : llvm::enumerate(outputs))
      r.replaceUsesWithIf(
          fusion.getResult(unsigned(i)),
          [&](mlir::OpOperand &use) { return !run.contains(use.getOwner()); });
    for (size_t i = last + 1; i-- > first;)
      ops[i]->erase();
    if (!outputs.empty() && in_.ConsumeBool()) {
      int64_t n = int64_t(inputs.size());
      llvm::SmallVector<int64_t> reuse;
      for (size_t i = 0; i < outputs.size(); ++i)
        reuse.push_back(in_.ConsumeIntegralInRange<int64_t>(-1, n));
      fusion->setAttr(ir::kReuseAttr, b_.getDenseI64ArrayAttr(reuse));
      if (mlir::failed(mlir::verify(fusion)))
        fusion->removeAttr(ir::kReuseAttr);
    }
  }

  template <class T> T choose(std::initializer_list<T> options) {
    return options
        .begin()[in_.ConsumeIntegralInRange<size_t>(0, options.size() - 1)];
  }
  int64_t dim() {
    if (in_.ConsumeIntegralInRange(0, 63) == 0)
      return choose<int64_t>({int64_t(1) << 31, int64_t(1) << 40,
                              std::numeric_limits<int64_t>::max() / 2});
    return choose<int64_t>({0, 1, 1, 2, 2, 3, 4, 5, 8});
  }
  ScalarType dtype() {
    return choose({kFloat, kFloat, kDouble, kHalf, kBFloat16, kLong, kInt,
                   kShort, kChar, kByte, kBool});
  }
  /// Most shapes broadcast against the function's base shape (a suffix of
  /// it, some dims 1), so that ops mostly accept their operands.
  std::vector<int64_t> shape(int max_rank) {
    std::vector<int64_t> out;
    if (in_.ConsumeIntegralInRange(0, 3) != 0) {
      size_t rank = in_.ConsumeIntegralInRange<size_t>(0, base_.size());
      for (size_t i = base_.size() - rank; i < base_.size(); ++i)
        out.push_back(in_.ConsumeIntegralInRange(0, 3) == 0 ? 1 : base_[i]);
      return out;
    }
    for (int i = in_.ConsumeIntegralInRange(0, max_rank); i > 0; --i)
      out.push_back(dim());
    return out;
  }
  mlir::RankedTensorType tensor_type() {
    ir::ValueType t;
    t.sizes = shape(4);
    t.dtype = dtype();
    if (in_.ConsumeIntegralInRange(0, 31) == 0)
      t.device = Device("cuda:0");
    return ir::tensor_type(&ctx_, t);
  }
  int64_t integer() {
    return choose<int64_t>({-3, -2, -1, 0, 0, 1, 1, 2, 3, 4, 7, 64, 255,
                            std::numeric_limits<int32_t>::max(),
                            std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max()});
  }
  double real() {
    return choose<double>({0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.5, 1e30, 1e-40,
                           65504.0, std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest()});
  }
  mlir::Value pick() {
    return values_[in_.ConsumeIntegralInRange<size_t>(0, values_.size() - 1)];
  }
  /// An element of a dense constant of element type `t`.
  mlir::Attribute element(mlir::Type t) {
    if (t.isInteger(1))
      return b_.getBoolAttr(in_.ConsumeBool());
    if (auto i = llvm::dyn_cast<mlir::IntegerType>(t))
      return b_.getIntegerAttr(
          t, llvm::APInt(64, uint64_t(integer()), true).trunc(i.getWidth()));
    return b_.getFloatAttr(t, real());
  }
  void constant() {
    mlir::Location loc = b_.getUnknownLoc();
    if (in_.ConsumeBool()) { // a wrapped number
      ScalarType d = choose({kDouble, kLong, kBool});
      auto type = mlir::RankedTensorType::get({}, ir::element_type(&ctx_, d));
      auto value =
          mlir::DenseElementsAttr::get(type, element(type.getElementType()));
      values_.push_back(b_.create<ir::ConstantOp>(loc, value, true));
      return;
    }
    ir::ValueType t;
    t.sizes = shape(2);
    int64_t numel = 1; // dims may be huge: stop past 16, never overflow
    for (int64_t d : t.sizes)
      numel = d > 16 || numel * d > 16 ? 17 : numel * d;
    if (numel > 16)
      t.sizes = {choose<int64_t>({0, 1, 2, 3, 4})};
    t.dtype = dtype();
    auto type = ir::tensor_type(&ctx_, t);
    llvm::SmallVector<mlir::Attribute> elements;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      elements.push_back(element(type.getElementType()));
    values_.push_back(b_.create<ir::ConstantOp>(
        loc, mlir::DenseElementsAttr::get(type, elements), false));
  }
  /// Up to `most` elements made by `element`.
  template <class T, class F> llvm::SmallVector<T> list(int most, F element) {
    llvm::SmallVector<T> v;
    for (int i = in_.ConsumeIntegralInRange(0, most); i > 0; --i)
      v.push_back(element());
    return v;
  }
  /// An attribute for a schema argument of type `type` (no `?`); null
  /// leaves the attribute out (its default, or None).
  mlir::Attribute attribute(const std::string &type) {
    if (type == "int")
      return b_.getI64IntegerAttr(integer());
    if (type == "int[]")
      return b_.getDenseI64ArrayAttr(
          list<int64_t>(4, [&] { return integer(); }));
    if (type == "float")
      return b_.getF64FloatAttr(real());
    if (type == "float[]")
      return b_.getDenseF64ArrayAttr(list<double>(3, [&] { return real(); }));
    if (type == "bool")
      return b_.getBoolAttr(in_.ConsumeBool());
    if (type == "Scalar") {
      switch (in_.ConsumeIntegralInRange(0, 2)) {
      case 0:
        return ir::scalarAttr(&ctx_, integer());
      case 1:
        return ir::scalarAttr(&ctx_, real());
      default:
        return ir::scalarAttr(&ctx_, in_.ConsumeBool());
      }
    }
    if (type == "str") {
      if (in_.ConsumeBool())
        return b_.getStringAttr(in_.ConsumeRandomLengthString(12));
      return b_.getStringAttr(choose<const char *>(
          {"none", "tanh", "trunc", "floor", "constant", "reflect", "ij,jk->ik",
           "ii->i", "i,i->", "...ij->...ji", "ab->ba", "->", ""}));
    }
    if (type == "ScalarType")
      return mlir::TypeAttr::get(ir::element_type(&ctx_, dtype()));
    if (type == "Device")
      return ir::DeviceAttr::get(&ctx_,
                                 choose<const char *>({"cpu", "cuda:0"}));
    return {};
  }
  static std::string normalized(std::string type) {
    // int[2] -> int[]
    size_t open = type.find('[');
    if (open != std::string::npos) {
      size_t close = type.find(']', open);
      type.erase(open + 1, close - open - 1);
    }
    return type;
  }
  /// The eager_call entry of an argument left out of the dialect op: its
  /// schema default, or None.
  mlir::Attribute eager_default(const Argument &a) {
    try {
      return ir::eager_arg_attr(&ctx_, ir::default_value(a), a);
    } catch (const std::exception &) {
      return ir::NoneAttr::get(&ctx_);
    }
  }
  /// An op of the table; one in four as ember.eager_call of its dispatcher
  /// op, with the same arguments.
  void op() {
    if (ops_.empty())
      for (mlir::RegisteredOperationName name : ctx_.getRegisteredOperations())
        if (const OperatorHandle *h = ir::table_op(name.getStringRef()))
          ops_.push_back({name.getStringRef().str(), h});
    auto [name, h] =
        ops_[in_.ConsumeIntegralInRange<size_t>(0, ops_.size() - 1)];
    const FunctionSchema &s = h->schema();
    mlir::OperationState state(b_.getUnknownLoc(), name);
    llvm::SmallVector<int32_t> segments;
    llvm::SmallVector<mlir::Attribute> eager_args;
    auto operand = [&] {
      eager_args.push_back(
          ir::OperandAttr::get(&ctx_, int64_t(state.operands.size())));
      state.addOperands(pick());
    };
    bool variadic = false;
    for (const Argument &a : s.arguments) {
      std::string type = normalized(a.type);
      bool optional = !type.empty() && type.back() == '?';
      if (optional)
        type.pop_back();
      if (type == "Tensor" && !optional) {
        operand();
        segments.push_back(1);
      } else if (type == "Tensor") {
        variadic = true;
        bool present = in_.ConsumeBool();
        if (present)
          operand();
        else
          eager_args.push_back(ir::NoneAttr::get(&ctx_));
        segments.push_back(present);
      } else if (type == "Tensor[]") {
        variadic = true;
        int n = in_.ConsumeIntegralInRange(0, 3);
        llvm::SmallVector<int64_t> nones;
        llvm::SmallVector<mlir::Attribute> list;
        int operands = 0;
        for (int i = 0; i < n; ++i) {
          if (in_.ConsumeIntegralInRange(0, 7) == 0) {
            nones.push_back(i);
            list.push_back(ir::NoneAttr::get(&ctx_));
          } else {
            list.push_back(
                ir::OperandAttr::get(&ctx_, int64_t(state.operands.size())));
            state.addOperands(pick());
            ++operands;
          }
        }
        if (!nones.empty())
          state.addAttribute(a.name + "_none", b_.getDenseI64ArrayAttr(nones));
        eager_args.push_back(b_.getArrayAttr(list));
        segments.push_back(operands);
      } else if (type == "Generator") {
        eager_args.push_back(ir::NoneAttr::get(&ctx_));
      } else if (!(optional || a.default_value) || in_.ConsumeBool()) {
        mlir::Attribute attr = attribute(type);
        if (attr)
          state.addAttribute(a.name, attr);
        eager_args.push_back(attr ? attr : eager_default(a));
      } else {
        eager_args.push_back(eager_default(a));
      }
    }
    int variable = 0;
    for (const Argument &a : s.arguments)
      variable += a.type == "Tensor?" || a.type == "Tensor[]";
    if (variadic && variable > 1)
      state.addAttribute("operandSegmentSizes",
                         b_.getDenseI32ArrayAttr(segments));
    llvm::SmallVector<mlir::Type> types;
    if (mlir::failed(ir::detail::inferReturnTypes(
            name, &ctx_, std::nullopt, state.operands,
            state.attributes.getDictionary(&ctx_), types)))
      return;
    if (in_.ConsumeIntegralInRange(0, 3) == 0) {
      mlir::OperationState call(b_.getUnknownLoc(), "ember.eager_call");
      call.addOperands(state.operands);
      call.addAttribute("callee", b_.getStringAttr(s.qualified_name()));
      call.addAttribute("args", b_.getArrayAttr(eager_args));
      state = std::move(call);
    }
    state.addTypes(types);
    mlir::Operation *op = b_.create(state);
    if (mlir::failed(mlir::verify(op))) { // an attribute ODS rejects
      op->erase();
      return;
    }
    for (mlir::Value r : op->getResults())
      if (llvm::isa<mlir::RankedTensorType>(r.getType()))
        values_.push_back(r);
  }

  mlir::MLIRContext &ctx_;
  FuzzedDataProvider &in_;
  mlir::OpBuilder b_;
  std::vector<mlir::Value> values_;
  std::vector<int64_t> base_; ///< the function's base shape
  // The table's ops (names, not OperationNames: those die with a context).
  static inline std::vector<std::pair<std::string, const OperatorHandle *>>
      ops_;
};
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // What ember-opt's main registers.
  (void)registry();
  ember::passes::register_passes();
  ember::codegen::register_fusion_targets(); // ember-fuse-elementwise's "cpu"
  return 0;
}

namespace {
// Note [One context for many inputs]
// A fresh MLIRContext per input (registering the ember dialect's few
// hundred ops each time) took two thirds of the time of an average input.
// Inputs share one, made anew every EMBER_FUZZ_CONTEXT_INPUTS inputs
// (default 256): what a context keeps between inputs is uniqued types and
// attributes, which change no answer, and the memory they hold stays
// bounded. A crash still replays from its input alone (run as the first
// input of a context); one that does not would depend on a context's
// history: fuzz with EMBER_FUZZ_CONTEXT_INPUTS=1 to rule that out.
mlir::MLIRContext &context() {
  static const long inputs_per_context = [] {
    const char *v = std::getenv("EMBER_FUZZ_CONTEXT_INPUTS");
    long n = v ? std::strtol(v, nullptr, 10) : 256;
    return n > 0 ? n : 1;
  }();
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static long uses = 0;
  if (!ctx || uses++ == inputs_per_context) {
    ctx.reset();
    ctx = std::make_unique<mlir::MLIRContext>(
        registry(), mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
    uses = 1;
  }
  return *ctx;
}

/// Parse, verify, the pipeline, lowering, printing: one input's way.
/// `generated`: the text is a module the generator printed, which must
/// parse back.
void run_text(mlir::MLIRContext &ctx, const std::string &text, bool generated) {
  mlir::ScopedDiagnosticHandler swallow(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });

  mlir::ParserConfig config(&ctx, /*verifyAfterParse=*/true);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz-input");
  if (!module) {
    if (!generated)
      return;
    std::fprintf(stderr,
                 "ember-opt-fuzz: a generated module that verified does not "
                 "parse back from its text:\n%s\n",
                 text.c_str());
    std::abort();
  }

  mlir::PassManager pm(&ctx, mlir::ModuleOp::getOperationName());
  ember::passes::build_pipeline(pm, /*level=*/2);
  std::string last_pass;
  pm.addInstrumentation(std::make_unique<LastPass>(&last_pass));
  if (mlir::failed(pm.run(*module))) {
    std::fprintf(stderr,
                 "ember-opt-fuzz: the module verified, and the pipeline "
                 "failed in or after %s (%s); ember-opt "
                 "--ember-pipeline=level=2 says why\n",
                 last_pass.c_str(),
                 mlir::succeeded(mlir::verify(*module))
                     ? "the pass gave an error"
                     : "the module it left does not verify");
    std::abort();
  }

  module->walk([](ember::ir::FusionOp fusion) {
    ember::codegen::KernelSpec spec;
    if (ember::codegen::lower_fusion(fusion, spec).empty())
      (void)spec.str();
  });
  std::string printed;
  llvm::raw_string_ostream os(printed);
  module->print(os);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0 || data[0] != 0) {
    // MLIR's lexer reads the byte after the buffer (files end in a NUL):
    // a std::string's does.
    run_text(context(), std::string(reinterpret_cast<const char *>(data), size),
             false);
    return 0;
  }
  mlir::MLIRContext &ctx = context();
  std::string text;
  {
    mlir::ScopedDiagnosticHandler swallow(
        &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
    FuzzedDataProvider in(data + 1, size - 1);
    text = ModuleGenerator(ctx, in).text();
  }
  if (text.empty())
    return 0;
  static const bool print = std::getenv("EMBER_FUZZ_PRINT") != nullptr;
  if (print)
    std::fprintf(stderr, "%s\n", text.c_str());
  run_text(ctx, text, true);
  return 0;
}
