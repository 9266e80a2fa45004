// The dispatcher: schemas, boxed calls, user dispatch modes (nesting,
// redispatch, results replaced by a mode) and custom ops (torch.library).
#include "TestUtil.h"

#include <thread>

using namespace ember;
using namespace ember::test;

namespace {

/// The seeds' op logger: records each op's name and its input shapes.
struct OpLogger : TorchDispatchMode {
  std::vector<std::string> log;
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    std::ostringstream os;
    os << op.schema().name;
    for (const IValue &v : stack)
      if (v.isTensor())
        os << " " << v.toTensor().sizes();
    log.push_back(os.str());
    op.callBoxed(stack);
  }
};

} // namespace

TEST(Dispatch, SchemaParsingAndPrinting) {
  auto s = FunctionSchema::parse(
      "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.ns, "ember");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(*s.arguments[2].default_value, "1");
  EXPECT_EQ(s.str(),
            "ember::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) "
            "-> Tensor");
  auto m = FunctionSchema::parse(
      "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, "
      "Tensor indices)");
  EXPECT_EQ(m.returns.size(), 2u);
  auto w = FunctionSchema::parse("add_.Tensor(Tensor(a!) self, Tensor other) "
                                 "-> Tensor(a!)");
  EXPECT_TRUE(w.is_inplace());
  auto l = FunctionSchema::parse("f(int[1]? dim, Tensor?[] xs) -> Tensor[]");
  EXPECT_EQ(l.arguments[0].type, "int[]?");
  EXPECT_EQ(l.arguments[1].type, "Tensor?[]");
  EXPECT_EMBER_ERROR(FunctionSchema::parse("f(Tensr x) -> Tensor"),
                     "unknown type 'Tensr'");
  EXPECT_EMBER_ERROR(FunctionSchema::parse("f(Tensor x -> Tensor"),
                     "invalid op schema");
}

TEST(Dispatch, EveryOpIsRegisteredWithItsSchema) {
  auto &d = Dispatcher::singleton();
  EXPECT_GT(d.allOps().size(), 150u);
  auto &add = d.findSchemaOrThrow("ember::add.Tensor");
  EXPECT_EQ(&add, &ops::add_Tensor());
  EXPECT_TRUE(add.hasKernel(DispatchKey::CPU));
  EXPECT_EQ(&d.findSchemaOrThrow("ember::relu"), &ops::relu());
  EXPECT_EMBER_ERROR(d.findSchemaOrThrow("ember::lerp"), "ambiguous");
  EXPECT_EMBER_ERROR(d.findSchemaOrThrow("ember::no_such_op"),
                     "no op named 'ember::no_such_op'");
}

TEST(Dispatch, BoxedCallsMatchUnboxed) {
  Tensor a = random({3}), b = random({3}, kFloat, 1);
  Stack out = call_op("ember::add.Tensor", {a, b, 2});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(close(out[0].toTensor(), a + 2 * b));
  Stack mx =
      call_op("ember::max.dim", {arange(6, kFloat).view({2, 3}), 1, false});
  ASSERT_EQ(mx.size(), 2u);
  EXPECT_TRUE(close(mx[1].toTensor(), tensor({2, 2})));
  auto typed = find_op<Tensor(const Tensor &, const Tensor &, const Scalar &)>(
      "ember::sub.Tensor");
  EXPECT_TRUE(close(typed.call(a, b, 1), a - b));
  EXPECT_EMBER_ERROR((find_op<Tensor(const Tensor &)>("ember::sub.Tensor")),
                     "wrong signature");
  EXPECT_EMBER_ERROR(call_op("ember::add.Tensor", {a}),
                     "boxed call with 1 arguments");
}

TEST(Dispatch, ModeLogsEveryOpOfAnMLPForward) {
  manual_seed(0);
  Tensor x = randn({4, 8});
  Tensor w1 = randn({16, 8}), b1 = randn({16});
  Tensor w2 = randn({2, 16}), b2 = randn({2});
  Tensor expected = linear(linear(x, w1, b1).relu(), w2, b2);
  OpLogger logger;
  Tensor y;
  {
    TorchDispatchModeGuard guard(logger);
    y = linear(linear(x, w1, b1).relu(), w2, b2);
  }
  EXPECT_TRUE(close(y, expected));
  std::vector<std::string> want = {"t [16, 8]", "addmm [16] [4, 8] [8, 16]",
                                   "relu [4, 16]", "t [2, 16]",
                                   "addmm [2] [4, 16] [16, 2]"};
  EXPECT_EQ(logger.log, want);
  // Outside the guard nothing is logged.
  (void)(x + 1);
  EXPECT_EQ(logger.log.size(), want.size());
}

namespace {
/// A mode that replaces the result of every add with zeros.
struct ZeroAdds : TorchDispatchMode {
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    bool isAdd = op.schema().name == "add";
    Tensor shape = stack[0].toTensor();
    op.callBoxed(stack);
    if (isAdd)
      stack[0] = zeros_like(stack[0].toTensor());
  }
};
struct Counter : TorchDispatchMode {
  int calls = 0;
  void dispatch(const OperatorHandle &op, Stack &stack) override {
    ++calls;
    op.callBoxed(stack);
  }
};
} // namespace

TEST(Dispatch, ModesNestAndMayReplaceResults) {
  Tensor a = ones({2});
  ZeroAdds zero;
  Counter outer, inner;
  {
    TorchDispatchModeGuard g1(outer);
    TorchDispatchModeGuard g2(inner);
    TorchDispatchModeGuard g3(zero);
    Tensor r = a + a;
    EXPECT_TRUE(close(r, zeros({2})));
  }
  // The innermost mode (zero) saw add first and called it once: inner and
  // outer each saw it exactly once, below zero (plus zeros_like's fill).
  EXPECT_GE(inner.calls, 1);
  EXPECT_EQ(inner.calls, outer.calls);
  EXPECT_TRUE(close(a + a, tensor({2.0, 2.0}))); // modes popped
}

TEST(Dispatch, ModeExceptionsRestoreTheModeStack) {
  struct Thrower : TorchDispatchMode {
    void dispatch(const OperatorHandle &, Stack &) override {
      throw ValueError("mode refused");
    }
  } thrower;
  {
    TorchDispatchModeGuard g(thrower);
    EXPECT_EMBER_ERROR(ones({1}) + 1, "mode refused");
    EXPECT_EMBER_ERROR(ones({1}) + 1, "mode refused"); // still active
  }
  EXPECT_TRUE(close(ones({1}) + 1, tensor({2.0})));
}

namespace {
Tensor scale_cpu(const Tensor &x, double a) { return x * a; }
Tensor scale_add_boxed_calls = Tensor();
} // namespace

TEST(Dispatch, CustomOpsAreCallableAndSeenByModes) {
  static Library lib("mylib");
  static bool once = [] {
    lib.def("scale(Tensor x, float a) -> Tensor", &scale_cpu);
    lib.def("twice(Tensor x) -> Tensor");
    lib.impl_boxed("twice", kCPU,
                   [](const OperatorHandle &, DispatchKeySet, Stack &s) {
                     Tensor x = s[0].toTensor();
                     s.clear();
                     s.emplace_back(x * 2);
                   });
    return true;
  }();
  (void)once;
  auto scale = find_op<Tensor(const Tensor &, double)>("mylib::scale");
  Tensor x = arange(3, kFloat);
  EXPECT_TRUE(close(scale.call(x, 1.5), tensor({0.0, 1.5, 3.0})));
  auto twice = find_op<Tensor(const Tensor &)>("mylib::twice");
  EXPECT_TRUE(close(twice.call(x), tensor({0.0, 2.0, 4.0})));
  EXPECT_TRUE(close(call_op("mylib::scale", {x, 2.0})[0].toTensor(),
                    tensor({0.0, 2.0, 4.0})));
  OpLogger logger;
  {
    TorchDispatchModeGuard g(logger);
    scale.call(x, 3.0);
  }
  // The mode sees the custom op; the ops its kernel runs happen below the
  // mode (as in PyTorch, where func(*args) runs with the mode popped).
  ASSERT_EQ(logger.log.size(), 1u);
  EXPECT_EQ(logger.log[0], "scale [3]");
  EXPECT_EMBER_ERROR(lib.def("scale(Tensor x) -> Tensor"), "already defined");
  EXPECT_EMBER_ERROR(Library("ember"), "reserved");
  EXPECT_EMBER_ERROR((lib.impl(
                         "scale", kCPU, +[](const Tensor &x) { return x; })),
                     "wrong signature");
  EXPECT_EMBER_ERROR((find_op<Tensor(const Tensor &, double)>("mylib::nope")),
                     "no op named 'mylib::nope'");
}

namespace {
Tensor same_cpu(const Tensor &x) { return x; }
} // namespace

TEST(Dispatch, OpsDefinedWhileAnotherThreadFindsOps) {
  // The registry is shared by every thread: a library may define ops while
  // another thread looks ops up by name (TSan checks the registry's lock).
  static Library lib("threadlib");
  constexpr int kOps = 100;
  std::thread definer([] {
    static bool once = [] {
      for (int i = 0; i < kOps; ++i)
        lib.def("op" + std::to_string(i) + "(Tensor x) -> Tensor", &same_cpu);
      return true;
    }();
    (void)once;
  });
  Tensor x = arange(3, kFloat);
  for (int i = 0; i < kOps; ++i) {
    auto add = find_op<Tensor(const Tensor &, const Tensor &, const Scalar &)>(
        "ember::add.Tensor");
    EXPECT_TRUE(close(add.call(x, x, 1), x * 2));
    EXPECT_GE(Dispatcher::singleton().allOps().size(), 1u);
  }
  definer.join();
  for (int i = 0; i < kOps; ++i)
    EXPECT_TRUE(close(
        call_op("threadlib::op" + std::to_string(i), {x})[0].toTensor(), x));
}

TEST(Dispatch, MissingBackendKernelErrors) {
  static Library lib2("cpuonly");
  static bool once = [] {
    lib2.def("noop(Tensor x) -> Tensor");
    return true;
  }();
  (void)once;
  EXPECT_EMBER_ERROR(call_op("cpuonly::noop", {ones({1})}),
                     "Could not run 'cpuonly::noop' with arguments from the "
                     "'CPU' backend");
}
