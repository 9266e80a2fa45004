// The ember dialect (ir/): its ops against the dispatcher, type mapping,
// result-type inference, build_module / import_func round trips on
// hand-made traces (every argument kind, constants, mutations, eager calls
// of custom ops), verification errors and folding. The textual forms are
// tested by lit (test/lit/ir).
#include "TestUtil.h"

#include "eager/Factory.h"
#include "eager/Meta.h"
#include "ir/Builder.h"
#include "ir/Import.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/DebugStringHelper.h"
#include "mlir/Transforms/Passes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

using namespace ember;
using namespace ember::ir;

namespace {

std::unique_ptr<mlir::MLIRContext> ctx() { return make_context(); }

/// The op table's dialect ops registered in `c` (not constant / eager_call).
std::vector<mlir::RegisteredOperationName> table_ops(mlir::MLIRContext &c) {
  std::vector<mlir::RegisteredOperationName> out;
  for (mlir::RegisteredOperationName n : c.getRegisteredOperations())
    if (n.getDialectNamespace() == "ember" && table_op(n.getStringRef()))
      out.push_back(n);
  return out;
}

bool same_ivalue(const IValue &a, const IValue &b) {
  if (a.isNone() || b.isNone())
    return a.isNone() && b.isNone();
  if (a.isInt() || a.isDouble() || a.isBool()) {
    if (a.isInt() != b.isInt() || a.isDouble() != b.isDouble() ||
        a.isBool() != b.isBool())
      return false;
    return a.isDouble() ? a.toDouble() == b.toDouble() : a.toInt() == b.toInt();
  }
  if (a.isIntList())
    return b.isIntList() && a.toIntList().vec() == b.toIntList().vec();
  if (a.isDoubleList())
    return b.isDoubleList() && a.toDoubleList() == b.toDoubleList();
  if (a.isString())
    return b.isString() && a.toStringRef() == b.toStringRef();
  if (a.isScalarType())
    return b.isScalarType() && a.toScalarType() == b.toScalarType();
  if (a.isDevice())
    return b.isDevice() && a.toDevice() == b.toDevice();
  if (a.isGenerator())
    return b.isGenerator() && a.toGenerator().get() == b.toGenerator().get();
  return false;
}

/// Field-by-field equality of two traces (value ids included).
void expect_same_trace(const Trace &a, const Trace &b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.types, b.types);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].value, b.inputs[i].value);
    EXPECT_EQ(a.inputs[i].kind, b.inputs[i].kind);
    EXPECT_EQ(a.inputs[i].index, b.inputs[i].index);
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (size_t i = 0; i < a.constants.size(); ++i) {
    const Constant &x = a.constants[i], &y = b.constants[i];
    EXPECT_EQ(x.value, y.value);
    ASSERT_EQ(x.tensor.defined(), y.tensor.defined());
    if (x.tensor.defined()) {
      EXPECT_EQ(x.tensor.dtype(), y.tensor.dtype());
      EXPECT_TRUE(ember::equal(x.tensor, y.tensor));
    } else {
      EXPECT_EQ(x.scalar.tag(), y.scalar.tag());
      EXPECT_EQ(x.scalar.toDouble(), y.scalar.toDouble());
    }
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    EXPECT_EQ(x.op, y.op) << x.op->name() << " vs " << y.op->name();
    EXPECT_EQ(x.results, y.results);
    EXPECT_EQ(x.loc, y.loc);
    ASSERT_EQ(x.args.size(), y.args.size()) << x.op->name();
    for (size_t k = 0; k < x.args.size(); ++k) {
      const Arg &p = x.args[k], &q = y.args[k];
      EXPECT_EQ(p.kind, q.kind) << x.op->name() << " arg " << k;
      EXPECT_EQ(p.value, q.value) << x.op->name() << " arg " << k;
      EXPECT_EQ(p.values, q.values) << x.op->name() << " arg " << k;
      EXPECT_TRUE(same_ivalue(p.attr, q.attr))
          << x.op->name() << " arg " << k << ": " << p.attr << " vs " << q.attr;
    }
  }
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.mutations.size(), b.mutations.size());
  for (size_t i = 0; i < a.mutations.size(); ++i) {
    EXPECT_EQ(a.mutations[i].input, b.mutations[i].input);
    EXPECT_EQ(a.mutations[i].value, b.mutations[i].value);
  }
}

/// build -> verify -> print -> import -> build -> print: the same text, and
/// the imported trace equals `t` (whose values are numbered in order).
Trace round_trip(const Trace &t, std::string *printed = nullptr) {
  auto c = ctx();
  auto m1 = build_module(*c, {&t});
  verify_module(*m1);
  std::string text1 = print_module(*m1, /*with_locations=*/true);
  auto func = *m1->getOps<mlir::func::FuncOp>().begin();
  Trace back = import_func(func);
  auto m2 = build_module(*c, {&back});
  verify_module(*m2);
  EXPECT_EQ(text1, print_module(*m2, true));
  // And through text: parse the printed module, import it again.
  auto parsed = parse_module(*c, text1);
  verify_module(*parsed);
  Trace again = import_func(*parsed->getOps<mlir::func::FuncOp>().begin());
  expect_same_trace(back, again);
  if (printed)
    *printed = print_module(*m1, false);
  return back;
}

int value(Trace &t, std::vector<int64_t> sizes, ScalarType dtype = kFloat,
          Device device = kCPU) {
  return t.add_value(ValueType{std::move(sizes), dtype, device});
}

Node node(const std::string &op, std::vector<Arg> args,
          std::vector<int> results, std::string loc = "") {
  Node n;
  n.op = &Dispatcher::singleton().findSchemaOrThrow(op);
  n.args = std::move(args);
  n.results = std::move(results);
  n.loc = std::move(loc);
  return n;
}

// A custom op with an argument of every kind, and one with a generator.
Tensor everything_cpu(const Tensor &self, const std::optional<Tensor> &,
                      TensorList, int64_t, std::optional<int64_t>, double, bool,
                      const Scalar &, const std::optional<Scalar> &,
                      IntArrayRef, std::string_view, ScalarType,
                      std::optional<Device>) {
  return self.clone();
}
Tensor noisy_cpu(const Tensor &self, std::optional<Generator>) {
  return self.clone();
}
struct CustomOps {
  CustomOps() : lib("irtest") {
    lib.def("everything(Tensor self, Tensor? opt, Tensor[] list, int i, "
            "int? oi, float f, bool b, Scalar s, Scalar? so, int[] il, "
            "str st, ScalarType dt, Device? dev) -> Tensor",
            &everything_cpu);
    lib.def("noisy(Tensor self, Generator? generator=None) -> Tensor",
            &noisy_cpu);
    lib.def("lists(Tensor self, float[] fl) -> (Tensor, Tensor)");
    meta::register_fake("irtest::everything", [](const Stack &s) {
      return std::vector<Tensor>{
          meta::fake(s[0].toTensor().sizes(), s[0].toTensor().dtype())};
    });
  }
  Library lib;
};
const CustomOps &custom_ops() {
  static CustomOps *ops = new CustomOps();
  return *ops;
}

} // namespace

// ---------------------------------------------------------------------------
// The dialect against the op table
// ---------------------------------------------------------------------------

TEST(IrDialect, OneOpPerDispatchedOp) {
  auto c = ctx();
  std::vector<std::string> missing;
  size_t ember_ops = 0;
  for (const OperatorHandle *op : Dispatcher::singleton().allOps()) {
    if (op->schema().ns != "ember")
      continue;
    ++ember_ops;
    if (!has_dialect_op(c.get(), *op))
      missing.push_back(op->name());
  }
  EXPECT_TRUE(missing.empty()) << "dispatcher ops without a dialect op: "
                               << ::testing::PrintToString(missing);
  // And no dialect op without a dispatcher op but the hand-written ones
  // (ir/EmberOps.td).
  const std::set<std::string> hand_written = {
      "ember.constant", "ember.eager_call", "ember.fusion", "ember.yield"};
  size_t dialect_ops = 0;
  for (mlir::RegisteredOperationName n : c->getRegisteredOperations()) {
    if (n.getDialectNamespace() != "ember")
      continue;
    ++dialect_ops;
    if (!hand_written.count(n.getStringRef().str())) {
      EXPECT_NE(table_op(n.getStringRef()), nullptr) << n.getStringRef().str();
    }
  }
  EXPECT_EQ(dialect_ops, ember_ops + hand_written.size());
  EXPECT_GT(ember_ops, 150u);
}

// Note [Schema to ODS]: the generated ODS (ir/gen_dialect.py) and the C++
// mapping agree on every op's attributes.
TEST(IrDialect, AttributesAreSchemaArguments) {
  auto c = ctx();
  for (mlir::RegisteredOperationName n : table_ops(*c)) {
    const FunctionSchema &s = table_op(n.getStringRef())->schema();
    std::set<std::string> want;
    int variable = 0;
    for (const Argument &a : s.arguments) {
      ArgKind k = arg_kind(a);
      if (k == ArgKind::Attribute)
        want.insert(a.name);
      if (k == ArgKind::TensorList)
        want.insert(none_positions_attr(a));
      variable += k == ArgKind::OptionalTensor || k == ArgKind::TensorList;
    }
    if (variable > 1)
      want.insert("operandSegmentSizes");
    std::set<std::string> got;
    for (mlir::StringAttr a : n.getAttributeNames())
      got.insert(a.str());
    EXPECT_EQ(got, want) << n.getStringRef().str();
  }
}

TEST(IrDialect, EveryOpHasATestedExample) {
  std::ifstream f(EMBER_OP_EXAMPLES);
  ASSERT_TRUE(f) << "cannot read " << EMBER_OP_EXAMPLES;
  std::stringstream text;
  text << f.rdbuf();
  auto c = ctx();
  std::vector<std::string> missing;
  for (mlir::RegisteredOperationName n : table_ops(*c))
    if (text.str().find("= " + n.getStringRef().str() + " ") ==
        std::string::npos)
      missing.push_back(n.getStringRef().str());
  EXPECT_TRUE(missing.empty())
      << "ops without an example (add an `example:` to their entry in "
         "eager/ops/ops.yaml; test/lit/ir/examples.mlir checks them): "
      << ::testing::PrintToString(missing);
}

TEST(IrDialect, Traits) {
  auto c = ctx();
  auto op = [&](const char *name) {
    auto n = mlir::RegisteredOperationName::lookup(name, c.get());
    EXPECT_TRUE(n.has_value()) << name;
    return *n;
  };
  EXPECT_TRUE(op("ember.add.Tensor").hasTrait<OpTrait::Pointwise>());
  EXPECT_TRUE(op("ember.where.self").hasTrait<OpTrait::Pointwise>());
  EXPECT_FALSE(op("ember.mm").hasTrait<OpTrait::Pointwise>());
  EXPECT_TRUE(op("ember.add_.Tensor").hasTrait<OpTrait::InPlace>());
  EXPECT_TRUE(op("ember.add_.Tensor").hasTrait<OpTrait::Pointwise>());
  EXPECT_TRUE(op("ember.copy_").hasTrait<OpTrait::InPlace>());
  EXPECT_FALSE(op("ember.add.Tensor").hasTrait<OpTrait::InPlace>());
  EXPECT_TRUE(op("ember.transpose.int").hasTrait<OpTrait::View>());
  EXPECT_TRUE(op("ember.select.int").hasTrait<OpTrait::View>());
  EXPECT_FALSE(op("ember.clone").hasTrait<OpTrait::View>());
  EXPECT_TRUE(op("ember.sum.dim_IntList").hasTrait<OpTrait::Reduction>());
  EXPECT_TRUE(op("ember.argmax").hasTrait<OpTrait::Reduction>());
  EXPECT_FALSE(op("ember.cumsum").hasTrait<OpTrait::Reduction>());
  EXPECT_TRUE(op("ember.relu").hasInterface<mlir::MemoryEffectOpInterface>());
  EXPECT_TRUE(op("ember.relu").hasTrait<mlir::OpTrait::ConstantLike>() ==
              false);
  EXPECT_TRUE(op("ember.constant").hasTrait<mlir::OpTrait::ConstantLike>());
  // Pure: no memory effects; the eager fallback has unknown effects.
  EXPECT_TRUE(op("ember.mm").hasInterface<mlir::MemoryEffectOpInterface>());
  EXPECT_FALSE(
      op("ember.eager_call").hasInterface<mlir::MemoryEffectOpInterface>());
  EXPECT_TRUE(op("ember.mm").hasInterface<mlir::InferTypeOpInterface>());
  // ops.yaml `composes` and `identity:` (not on in-place forms).
  EXPECT_TRUE(op("ember.view").hasTrait<OpTrait::Composes>());
  EXPECT_FALSE(op("ember.transpose.int").hasTrait<OpTrait::Composes>());
  EXPECT_TRUE(op("ember.sub.Tensor").hasInterface<IdentityOpInterface>());
  EXPECT_FALSE(op("ember.sub_.Tensor").hasInterface<IdentityOpInterface>());
  EXPECT_FALSE(op("ember.rsub.Tensor").hasInterface<IdentityOpInterface>());
  auto *sub = op("ember.sub.Tensor").getInterface<IdentityOpInterface>();
  ASSERT_NE(sub, nullptr);
  llvm::ArrayRef<Identity> ids = sub->getIdentities();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_STREQ(ids[0].arg, "other");
  EXPECT_EQ(ids[0].value, 0.0);
  EXPECT_STREQ(ids[1].arg, "alpha");
  EXPECT_EQ(ids[1].value, 1.0);
}

TEST(IrDialect, TableOpOfAnOperation) {
  // table_op(Operation *) keeps its answer per registered op (Note [Finding
  // an op's dispatcher op]): the same answer in every context, and as by name.
  for (int round = 0; round < 2; ++round) {
    auto c = ctx();
    auto answer = [&](llvm::StringRef name) {
      mlir::OperationState st(mlir::UnknownLoc::get(c.get()), name);
      mlir::Operation *op = mlir::Operation::create(st);
      const OperatorHandle *h = table_op(op);
      op->destroy();
      return h;
    };
    for (mlir::RegisteredOperationName n : c->getRegisteredOperations()) {
      if (n.getDialectNamespace() == "ember") {
        EXPECT_EQ(answer(n.getStringRef()), table_op(n.getStringRef()))
            << n.getStringRef().str();
      }
    }
    EXPECT_EQ(answer("ember.add.Tensor"),
              Dispatcher::singleton().findOp("ember::add.Tensor"));
    EXPECT_NE(answer("ember.add.Tensor"), nullptr);
    EXPECT_EQ(answer("ember.constant"), nullptr);
    EXPECT_EQ(answer("ember.eager_call"), nullptr);
    EXPECT_EQ(answer("ember.fusion"), nullptr);
    EXPECT_EQ(answer("ember.no_such_op"), nullptr); // unregistered
    EXPECT_EQ(answer("arith.addf"), nullptr);
  }
}

TEST(IrDialect, ElementTypes) {
  auto c = ctx();
  for (int i = 0; i < kNumScalarTypes; ++i) {
    ScalarType t = ScalarType(i);
    mlir::Type e = element_type(c.get(), t);
    EXPECT_EQ(scalar_type(e), t) << toString(t);
    EXPECT_TRUE(isElementType(e));
  }
  auto str = [](mlir::Type t) { return mlir::debugString(t); };
  EXPECT_EQ(str(element_type(c.get(), kFloat)), "f32");
  EXPECT_EQ(str(element_type(c.get(), kDouble)), "f64");
  EXPECT_EQ(str(element_type(c.get(), kHalf)), "f16");
  EXPECT_EQ(str(element_type(c.get(), kBFloat16)), "bf16");
  EXPECT_EQ(str(element_type(c.get(), kLong)), "i64");
  EXPECT_EQ(str(element_type(c.get(), kInt)), "i32");
  EXPECT_EQ(str(element_type(c.get(), kShort)), "i16");
  EXPECT_EQ(str(element_type(c.get(), kChar)), "i8");
  EXPECT_EQ(str(element_type(c.get(), kByte)), "ui8");
  EXPECT_EQ(str(element_type(c.get(), kBool)), "i1");
  EXPECT_FALSE(scalar_type(
      mlir::IntegerType::get(c.get(), 8, mlir::IntegerType::Signed)));
  EXPECT_FALSE(scalar_type(mlir::Float8E4M3FNType::get(c.get())));
  // Value types, with the device as the encoding.
  ValueType cuda{{2, 3}, kHalf, Device(kCUDA, 1)};
  auto tt = tensor_type(c.get(), cuda);
  EXPECT_EQ(str(tt), "tensor<2x3xf16, #ember.device<\"cuda:1\">>");
  EXPECT_EQ(value_type(tt), cuda);
  ValueType cpu{{}, kBool, kCPU};
  EXPECT_EQ(str(tensor_type(c.get(), cpu)), "tensor<i1>");
  EXPECT_EQ(value_type(tensor_type(c.get(), cpu)), cpu);
  EXPECT_EMBER_ERROR(
      value_type(mlir::RankedTensorType::get({mlir::ShapedType::kDynamic},
                                             mlir::Float32Type::get(c.get()))),
      "static shape");
}

// ---------------------------------------------------------------------------
// Result types by ember::meta (InferTypeOpInterface)
// ---------------------------------------------------------------------------

TEST(IrDialect, InferReturnTypes) {
  auto c = ctx();
  mlir::OpBuilder b(c.get());
  auto module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToStart(module.getBody());
  auto arg = [&](ValueType t) {
    // Values to infer from: results of constants of the wanted types.
    auto type = tensor_type(c.get(), t);
    return b
        .create<ConstantOp>(b.getUnknownLoc(),
                            mlir::DenseElementsAttr::get(
                                type, b.getZeroAttr(type.getElementType())),
                            false)
        .getResult();
  };
  auto wrapped = [&](double v) {
    auto type = tensor_type(c.get(), {{}, kDouble, kCPU});
    return b
        .create<ConstantOp>(
            b.getUnknownLoc(),
            mlir::DenseElementsAttr::get(type, b.getF64FloatAttr(v)), true)
        .getResult();
  };
  auto infer = [&](const char *name, std::vector<mlir::Value> operands,
                   mlir::DictionaryAttr attrs = {}) {
    auto n = mlir::RegisteredOperationName::lookup(name, c.get());
    auto *iface = n->getInterface<mlir::InferTypeOpInterface>();
    llvm::SmallVector<mlir::Type> out;
    std::string error;
    mlir::ScopedDiagnosticHandler h(c.get(), [&](mlir::Diagnostic &d) {
      error = d.str();
      return mlir::success();
    });
    if (mlir::failed(
            iface->inferReturnTypes(c.get(), b.getUnknownLoc(), operands,
                                    attrs ? attrs : b.getDictionaryAttr({}),
                                    mlir::OpaqueProperties(nullptr), {}, out)))
      return "error: " + error;
    std::string s;
    for (mlir::Type t : out)
      s += (s.empty() ? "" : ", ") + mlir::debugString(t);
    return s;
  };
  mlir::Value x = arg({{2, 3}, kFloat}), l = arg({{2}, kLong}),
              d0 = arg({{}, kDouble}), f0 = arg({{}, kFloat});
  EXPECT_EQ(infer("ember.add.Tensor", {x, x}), "tensor<2x3xf32>");
  EXPECT_EQ(infer("ember.mm", {x, arg({{3, 5}, kFloat})}), "tensor<2x5xf32>");
  // A wrapped number promotes as a C++ number, a 0-dim tensor as a tensor.
  EXPECT_EQ(infer("ember.add.Tensor", {l, wrapped(2.5)}), "tensor<2xf32>");
  EXPECT_EQ(infer("ember.add.Tensor", {l, d0}), "tensor<2xf64>");
  EXPECT_EQ(infer("ember.mul.Tensor", {f0, wrapped(2.0)}), "tensor<f32>");
  EXPECT_EQ(infer("ember.mul.Tensor", {f0, d0}), "tensor<f64>");
  // Attributes and defaults.
  EXPECT_EQ(infer("ember.sum.dim_IntList", {x},
                  b.getDictionaryAttr(
                      {b.getNamedAttr("dim", b.getDenseI64ArrayAttr({0})),
                       b.getNamedAttr("keepdim", b.getBoolAttr(true)),
                       b.getNamedAttr("dtype",
                                      mlir::TypeAttr::get(b.getF64Type()))})),
            "tensor<1x3xf64>");
  EXPECT_EQ(infer("ember.max.dim", {x},
                  b.getDictionaryAttr(
                      {b.getNamedAttr("dim", b.getI64IntegerAttr(-1))})),
            "tensor<2xf32>, tensor<2xi64>");
  // eager's errors become diagnostics.
  EXPECT_NE(infer("ember.add.Tensor", {x, l}).find("must match the size"),
            std::string::npos);
  EXPECT_NE(infer("ember.nonzero", {x}).find("give its result types"),
            std::string::npos);
  module.erase();
}

// ---------------------------------------------------------------------------
// build_module / import_func
// ---------------------------------------------------------------------------

TEST(IrBuilder, RoundTripOfDialectOps) {
  Trace t;
  t.name = "graph0";
  int x = value(t, {2, 3}), w = value(t, {3}), idx = value(t, {2}, kLong),
      two = value(t, {}, kDouble);
  t.inputs = {{x, InputKind::Argument, 0, "x"},
              {w, InputKind::Lifted, 3, "L['weight']"},
              {idx, InputKind::Argument, 1, "i"}};
  t.constants = {{two, Scalar(2.0), Tensor()}};
  int a = value(t, {2, 3});
  t.nodes.push_back(node(
      "ember::add.Tensor",
      {Arg::of_value(x), Arg::of_value(w), Arg::of_attr(Scalar(int64_t(3)))},
      {a}, "model.cpp:12:7"));
  int b = value(t, {2, 3});
  t.nodes.push_back(node("ember::mul.Tensor",
                         {Arg::of_value(a), Arg::of_value(two)}, {b},
                         "a location that is not file:line:col"));
  int s = value(t, {1, 3}, kDouble);
  t.nodes.push_back(
      node("ember::sum.dim_IntList",
           {Arg::of_value(b), Arg::of_attr(std::vector<int64_t>{0}),
            Arg::of_attr(true), Arg::of_attr(kDouble)},
           {s}));
  int s2 = value(t, {}, kFloat);
  t.nodes.push_back(
      node("ember::sum", {Arg::of_value(b), Arg::of_attr(IValue())}, {s2}));
  int cat = value(t, {4, 3});
  t.nodes.push_back(node(
      "ember::cat", {Arg::of_values({b, x}), Arg::of_attr(int64_t(0))}, {cat}));
  int mv = value(t, {4}), mi = value(t, {4}, kLong);
  t.nodes.push_back(
      node("ember::max.dim",
           {Arg::of_value(cat), Arg::of_attr(int64_t(1)), Arg::of_attr(false)},
           {mv, mi}));
  // index with a None element (x[:, i]), and index_put_ likewise.
  int sel = value(t, {2, 2});
  t.nodes.push_back(node("ember::index.Tensor",
                         {Arg::of_value(x), Arg::of_values({-1, idx})}, {sel}));
  int put = value(t, {2, 3});
  t.nodes.push_back(node("ember::index_put_",
                         {Arg::of_value(x), Arg::of_values({-1, idx}),
                          Arg::of_value(sel), Arg::of_attr(true)},
                         {put}));
  int p = value(t, {3, 2});
  t.nodes.push_back(
      node("ember::permute",
           {Arg::of_value(x), Arg::of_attr(std::vector<int64_t>{1, 0})}, {p}));
  int h = value(t, {3, 2}, kHalf);
  t.nodes.push_back(
      node("ember::_to_copy",
           {Arg::of_value(p), Arg::of_attr(kHalf), Arg::of_attr(Device(kCPU))},
           {h}));
  // In-place: add_ returns the new value of w, written back after the graph.
  int w2 = value(t, {3});
  t.nodes.push_back(node(
      "ember::add_.Tensor",
      {Arg::of_value(w), Arg::of_value(two), Arg::of_attr(Scalar(int64_t(2)))},
      {w2}));
  t.outputs = {s, s2, mv, mi, h, sel, put};
  t.mutations = {{1, w2}};

  std::string text;
  Trace back = round_trip(t, &text);
  expect_same_trace(t, back);
  EXPECT_NE(text.find("func.func @graph0(%arg0: tensor<2x3xf32> "
                      "{ember.input = \"argument:0\", ember.name = \"x\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{ember.input = \"lifted:3\", "
                      "ember.name = \"L['weight']\"}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("attributes {ember.mutations = array<i64: 1>}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ember.constant {wrapped_number} "
                      "dense<2.000000e+00> : tensor<f64>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ember.add.Tensor %arg0, %arg1 {alpha = 3 : i64}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ember.add_.Tensor %arg1, %0 {alpha = 2 : i64}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ember.cat ["), std::string::npos) << text;
  EXPECT_NE(text.find("ember.index.Tensor %arg0, [none, %arg2] : "
                      "(tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x2xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ember.index_put_ %arg0, [none, %arg2], %"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("eager_call"), std::string::npos) << text;

  auto c = ctx();
  auto m = build_module(*c, {&t});
  std::string with_locs = print_module(*m, true);
  // Locations are printed as aliases: NameLoc(op, FileLineColLoc).
  std::smatch m1, m2;
  ASSERT_TRUE(std::regex_search(
      with_locs, m1,
      std::regex(
          "ember\\.add\\.Tensor %arg0, %arg1 [^\\n]* loc\\((#loc[0-9]+)\\)")))
      << with_locs;
  ASSERT_TRUE(std::regex_search(
      with_locs, m2,
      std::regex(m1[1].str() +
                 " = loc\\(\"ember::add\\.Tensor\"\\((#loc[0-9]+)\\)\\)")))
      << with_locs;
  EXPECT_NE(with_locs.find(m2[1].str() + " = loc(\"model.cpp\":12:7)"),
            std::string::npos)
      << with_locs;
}

TEST(IrBuilder, CustomOpsAreEagerCalls) {
  custom_ops();
  Trace t;
  t.name = "custom";
  int x = value(t, {4}), y = value(t, {4});
  t.inputs = {{x, InputKind::Argument, 0, "x"},
              {y, InputKind::Argument, 1, "y"}};
  int r = value(t, {4});
  // Every argument kind: tensor, absent Tensor?, Tensor[], int, None, float,
  // bool, Scalar, Scalar?, int[], str, ScalarType, Device?.
  t.nodes.push_back(
      node("irtest::everything",
           {Arg::of_value(x), Arg::of_value(-1), Arg::of_values({x, y, x}),
            Arg::of_attr(int64_t(-7)), Arg::of_attr(IValue()),
            Arg::of_attr(0.25), Arg::of_attr(true), Arg::of_attr(Scalar(1.5)),
            Arg::of_attr(Scalar(int64_t(4))),
            Arg::of_attr(std::vector<int64_t>{}), Arg::of_attr("mean"),
            Arg::of_attr(kBFloat16), Arg::of_attr(Device(kCUDA, 0))},
           {r}, "f.cpp:1:2"));
  int r2 = value(t, {4});
  t.nodes.push_back(node(
      "irtest::everything",
      {Arg::of_value(r), Arg::of_value(y), Arg::of_values({-1, y}),
       Arg::of_attr(int64_t(0)), Arg::of_attr(int64_t(5)), Arg::of_attr(-1.0),
       Arg::of_attr(false), Arg::of_attr(Scalar(false)), Arg::of_attr(IValue()),
       Arg::of_attr(std::vector<int64_t>{1, -2}), Arg::of_attr(""),
       Arg::of_attr(kLong), Arg::of_attr(IValue())},
      {r2}));
  // A float[] argument and two results, without a shape rule.
  int l1 = value(t, {4}), l2 = value(t, {2}, kLong);
  t.nodes.push_back(
      node("irtest::lists",
           {Arg::of_value(r2), Arg::of_attr(std::vector<double>{0.5, -2})},
           {l1, l2}));
  // A generator: the builtin form has none, so this is an eager call too.
  Generator g(42);
  int n1 = value(t, {4}), n2 = value(t, {4});
  t.nodes.push_back(
      node("irtest::noisy", {Arg::of_value(l1), Arg::of_attr(g)}, {n1}));
  t.nodes.push_back(
      node("irtest::noisy", {Arg::of_value(n1), Arg::of_attr(IValue())}, {n2}));
  t.outputs = {n2, l2};

  std::string text;
  Trace back = round_trip(t, &text);
  expect_same_trace(t, back);
  EXPECT_NE(
      text.find("ember.eager_call \"irtest::everything\"(%arg0, %arg0, %arg1, "
                "%arg0) {args = [#ember.operand<0>, #ember.none, "
                "[#ember.operand<1>, #ember.operand<2>, #ember.operand<3>], "
                "-7, #ember.none, 2.500000e-01, true, 1.500000e+00, 4, "
                "array<i64>, \"mean\", bf16, #ember.device<\"cuda:0\">]}"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("\"irtest::everything\"(%0, %arg1, %arg1) {args = "
                      "[#ember.operand<0>, #ember.operand<1>, [#ember.none, "
                      "#ember.operand<2>], 0, 5,"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("array<f64: 5.000000e-01, -2.000000e+00>"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("#ember.generator<" + std::to_string(generator_id(g)) + ">"),
      std::string::npos)
      << text;
}

TEST(IrBuilder, ConstantTensorsAndFolding) {
  Trace t;
  t.name = "consts";
  int x = value(t, {2, 2}, kInt);
  t.inputs = {{x, InputKind::Argument, 0, "x"}};
  int k = value(t, {2, 2}, kInt);
  t.constants = {{k, Scalar(), ember::tensor({1, 2, 3, 4}, kInt).view({2, 2})}};
  int r = value(t, {2, 2}, kInt);
  t.nodes.push_back(
      node("ember::mul.Tensor", {Arg::of_value(x), Arg::of_value(k)}, {r}));
  t.outputs = {r};
  expect_same_trace(t, round_trip(t));

  // A graph of constants folds to one constant with the eager result; the
  // imported trace holds it as a constant tensor.
  Trace f;
  f.name = "folds";
  int a = value(f, {3}, kFloat), one = value(f, {}, kLong);
  f.constants = {{a, Scalar(), ember::tensor({1.f, -2.f, 3.f})},
                 {one, Scalar(int64_t(1)), Tensor()}};
  int e = value(f, {3}), s = value(f, {3});
  f.nodes.push_back(node("ember::exp", {Arg::of_value(a)}, {e}));
  f.nodes.push_back(node(
      "ember::sub.Tensor",
      {Arg::of_value(e), Arg::of_value(one), Arg::of_attr(Scalar(int64_t(1)))},
      {s}));
  f.outputs = {s};
  auto c = ctx();
  auto m = build_module(*c, {&f});
  verify_module(*m);
  mlir::PassManager pm(c.get());
  pm.addPass(mlir::createCanonicalizerPass());
  ASSERT_TRUE(mlir::succeeded(pm.run(*m)));
  Trace folded = import_func(*m->getOps<mlir::func::FuncOp>().begin());
  EXPECT_TRUE(folded.nodes.empty()) << print_module(*m);
  ASSERT_EQ(folded.constants.size(), 1u);
  Tensor want = ember::tensor({1.f, -2.f, 3.f}).exp() - 1;
  ASSERT_TRUE(folded.constants[0].tensor.defined());
  EXPECT_TRUE(ember::equal(folded.constants[0].tensor, want));
}

TEST(IrBuilder, DeviceTypes) {
  Trace t;
  t.name = "on_cuda";
  Device cuda(kCUDA, 0);
  int x = value(t, {4}, kFloat, cuda), y = value(t, {4}, kFloat, cuda);
  t.inputs = {{x, InputKind::Argument, 0, "x"}};
  t.nodes.push_back(node("ember::relu", {Arg::of_value(x)}, {y}));
  t.outputs = {y};
  std::string text;
  expect_same_trace(t, round_trip(t, &text));
  EXPECT_NE(text.find("tensor<4xf32, #ember.device<\"cuda:0\">>"),
            std::string::npos)
      << text;
}

TEST(IrBuilder, MalformedTraces) {
  auto c = ctx();
  auto build = [&](const Trace &t) { (void)build_module(*c, {&t}); };
  Trace t;
  t.name = "bad";
  int x = value(t, {4}), y = value(t, {4});
  t.inputs = {{x, InputKind::Argument, 0, "x"}};
  t.nodes.push_back(node("ember::relu", {Arg::of_value(7)}, {y}));
  EXPECT_EMBER_ERROR(build(t), "uses value %7, which is not defined before");

  t.nodes = {node("ember::relu", {Arg::of_value(x), Arg::of_value(x)}, {y})};
  EXPECT_EMBER_ERROR(build(t), "has 2 arguments but its schema has 1");

  t.nodes = {node("ember::relu", {Arg::of_attr(int64_t(1))}, {y})};
  EXPECT_EMBER_ERROR(build(t), "argument 'self' has type Tensor but the trace "
                               "gives an attribute");

  t.nodes = {node(
      "ember::select.int",
      {Arg::of_value(x), Arg::of_attr(0.5), Arg::of_attr(int64_t(0))}, {y})};
  EXPECT_EMBER_ERROR(build(t), "argument 'dim' has type int but got a value "
                               "of type float");

  t.nodes = {node("ember::relu", {Arg::of_value(x)}, {x})};
  EXPECT_EMBER_ERROR(build(t), "value %0 is defined twice");

  t.nodes = {};
  t.mutations = {{3, x}};
  EXPECT_EMBER_ERROR(build(t), "a mutation writes to input 3");

  Trace u;
  u.name = "wrapped";
  int k = value(u, {2});
  u.constants = {{k, Scalar(1.0), Tensor()}};
  EXPECT_EMBER_ERROR(build(u), "wrapped number %0 must be 0-dim");
}

TEST(IrBuilder, VerifierReportsEagerErrors) {
  auto c = ctx();
  Trace t;
  t.name = "mismatch";
  int x = value(t, {4}), y = value(t, {3}), z = value(t, {4});
  t.inputs = {{x, InputKind::Argument, 0, "x"},
              {y, InputKind::Argument, 1, "y"}};
  t.nodes.push_back(node(
      "ember::add.Tensor",
      {Arg::of_value(x), Arg::of_value(y), Arg::of_attr(Scalar(int64_t(1)))},
      {z}, "net.cpp:3:9"));
  t.outputs = {z};
  auto m = build_module(*c, {&t});
  EXPECT_EMBER_ERROR(verify_module(*m), "'ember.add.Tensor' op The size of "
                                        "tensor a (4) must match the size of "
                                        "tensor b (3)");
  EXPECT_EMBER_ERROR(verify_module(*m), "(\"net.cpp\":3:9)");
  // A wrong declared type.
  t.types[size_t(y)] = {{4}, kFloat, kCPU};
  t.types[size_t(z)] = {{4}, kDouble, kCPU};
  m = build_module(*c, {&t});
  EXPECT_EMBER_ERROR(verify_module(*m), "result #0 has type 'tensor<4xf64>' "
                                        "but ember::meta::infer gives "
                                        "'tensor<4xf32>'");
  // A custom op's shape rule checks an eager call.
  custom_ops();
  Trace u;
  u.name = "custom";
  int a = value(u, {4}), r = value(u, {5});
  u.inputs = {{a, InputKind::Argument, 0, "a"}};
  u.nodes.push_back(
      node("irtest::everything",
           {Arg::of_value(a), Arg::of_value(-1), Arg::of_values({}),
            Arg::of_attr(int64_t(0)), Arg::of_attr(IValue()), Arg::of_attr(1.0),
            Arg::of_attr(true), Arg::of_attr(Scalar(1.0)),
            Arg::of_attr(IValue()), Arg::of_attr(std::vector<int64_t>{}),
            Arg::of_attr("s"), Arg::of_attr(kFloat), Arg::of_attr(IValue())},
           {r}));
  u.outputs = {r};
  m = build_module(*c, {&u});
  EXPECT_EMBER_ERROR(verify_module(*m), "result #0 has type 'tensor<5xf32>' "
                                        "but ember::meta::infer gives "
                                        "'tensor<4xf32>'");
}

TEST(IrImport, ParsedModules) {
  auto c = ctx();
  auto m = parse_module(*c, R"mlir(
    func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
      %c = ember.constant {wrapped_number} dense<true> : tensor<i1>
      %0 = ember.add.Tensor %x, %c {alpha = 2.0 : f64} : (tensor<3xf32>, tensor<i1>) -> tensor<3xf32>
      %1 = ember.eager_call "ember::relu"(%0) {args = [#ember.operand<0>]} : (tensor<3xf32>) -> tensor<3xf32>
      return %1 : tensor<3xf32>
    })mlir");
  verify_module(*m);
  Trace t = import_func(*m->getOps<mlir::func::FuncOp>().begin());
  EXPECT_EQ(t.name, "f");
  ASSERT_EQ(t.inputs.size(), 1u);
  EXPECT_EQ(t.inputs[0].name, "arg0");
  ASSERT_EQ(t.constants.size(), 1u);
  EXPECT_TRUE(t.constants[0].scalar.isBoolean());
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[0].op->name(), "ember::add.Tensor");
  EXPECT_TRUE(t.nodes[0].args[2].attr.isDouble());
  EXPECT_EQ(t.nodes[0].args[2].attr.toDouble(), 2.0);
  EXPECT_EQ(t.nodes[1].op->name(), "ember::relu");
  // Defaults come back from the schema: sum's dtype is None.
  auto m2 = parse_module(*c, R"mlir(
    func.func @g(%x: tensor<3xf32>) -> tensor<f32> {
      %0 = ember.sum %x : (tensor<3xf32>) -> tensor<f32>
      return %0 : tensor<f32>
    })mlir");
  Trace g = import_func(*m2->getOps<mlir::func::FuncOp>().begin());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_TRUE(g.nodes[0].args[1].attr.isNone());

  EXPECT_EMBER_ERROR(parse_module(*c, "func.func @h( {"),
                     "could not parse the module");
  EXPECT_EMBER_ERROR(
      parse_module(*c, "func.func @h(%x: tensor<2xf32>) {\n"
                       "  %0 = ember.eager_call \"no::op\"(%x) {args = "
                       "[#ember.operand<0>]} : (tensor<2xf32>) -> "
                       "tensor<2xf32>\n  return\n}"),
      "calls 'no::op', which is not a registered op");
  auto m3 = parse_module(*c, R"mlir(
    func.func @k(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = arith.addf %x, %x : tensor<3xf32>
      return %0 : tensor<3xf32>
    })mlir");
  EXPECT_EMBER_ERROR(import_func(*m3->getOps<mlir::func::FuncOp>().begin()),
                     "op 'arith.addf' is not part of an ember program");
  // A generator number that this process never handed out.
  EXPECT_EMBER_ERROR(generator_of(1 << 30), "names no generator");
}
