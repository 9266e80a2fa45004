// Shape and dtype inference (eager/Meta.h): every dispatched op of the op
// table is run eagerly on random inputs and inferred on (a) the same real
// tensors, (b) fake twins (meta::fake storage, same metadata) and (c)
// capture-like twins (the Capture key, a storage without data); the inferred
// sizes, strides, storage offset, dtype and device must be eager's, and an
// error must be eager's error (same exception type and message).
#include "OpCases.h"
#include "OpInfo.h"
#include "TestUtil.h"
#include "eager/Meta.h"

#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <typeinfo>

namespace ember {
namespace {

using test::random;
using test::random_positive;

// --- argument helpers (R, NC, W, NZ, Idx, L, TL, None: test/support) ------

using namespace test::samples;
using test::samples::kNone; // not ember::kNone (nn options)

/// A fake tensor.
Tensor F(const Shape &s, ScalarType dt = kFloat) { return meta::fake(s, dt); }

// --- the cases (test/support/OpCases.h) ------------------------------------

using Case = test::OpCase;
const std::vector<Case> &cases() { return test::op_cases(); }
const std::set<std::string> &localOps() { return test::op_case_local_ops(); }
void buildCases() {}

// --- running a case ---------------------------------------------------------

/// A twin of t with the same metadata (sizes, strides, offset, dtype,
/// device, wrapped-number flag): a fake tensor, or a capture-like tensor
/// (the Capture key over a storage without data).
Tensor twin(const Tensor &t, bool capture) {
  if (!t.defined())
    return t;
  size_t nbytes = t.storage().nbytes();
  Storage s = capture
                  ? Storage::borrow(nullptr, nbytes, t.device())
                  : meta::fake({int64_t(nbytes)}, kByte, t.device()).storage();
  auto impl = make_intrusive<TensorImpl>(s, t.dtype(), t.sizes(), t.strides(),
                                         t.storage_offset());
  impl->set_wrapped_number(t.unsafeGetTensorImpl()->is_wrapped_number());
  if (capture)
    impl->set_key(DispatchKey::Capture, true);
  return Tensor(std::move(impl));
}

Stack twins(const Stack &args, bool capture) {
  return test::map_tensors(
      args, [capture](const Tensor &t) { return twin(t, capture); });
}

struct Outcome {
  bool threw = false;
  std::string type, msg;
  std::vector<Tensor> outs;
  std::string needs_data;
};

Outcome runEager(const OperatorHandle &op, Stack s) {
  Outcome o;
  try {
    op.callBoxed(s);
  } catch (const Error &e) {
    o.threw = true;
    o.type = typeid(e).name();
    o.msg = e.what();
    return o;
  }
  o.outs = test::tensors_of(s);
  return o;
}

Outcome runInfer(const OperatorHandle &op, const Stack &s) {
  Outcome o;
  try {
    meta::Result r = meta::infer(op, s);
    o.outs = r.outputs;
    o.needs_data = r.needs_data;
  } catch (const Error &e) {
    o.threw = true;
    o.type = typeid(e).name();
    o.msg = e.what();
  }
  return o;
}

// Reading a capture twin's data calls the front end's sync hook: here it
// fails the test (shape rules never read data).
int gDataReads = 0;
void failingSync(TensorImpl &, const char *reason,
                 const std::source_location &) {
  ++gDataReads;
  throw Error(std::string("shape rule read a capture tensor's data: ") +
              reason);
}

struct Stats {
  std::map<std::string, int> ok, errors;
};

void checkCase(const Case &c, Stats &st) {
  SCOPED_TRACE(c.op);
  const OperatorHandle &op = Dispatcher::singleton().findSchemaOrThrow(c.op);
  Stack args = c.args();
  Stack fakes = twins(args, false), caps = twins(args, true);
  Outcome fromReal = runInfer(op, args);
  Outcome fromFake = runInfer(op, fakes);
  Outcome fromCapture = runInfer(op, caps);
  Outcome eager = runEager(op, args);
  if (c.flags & kThrows) {
    EXPECT_TRUE(eager.threw) << c.op << ": expected eager to raise";
  }
  (eager.threw ? st.errors : st.ok)[c.op]++;
  const bool inplace = op.schema().is_inplace();
  // A view: eager's result aliases self (and so must the shape rule's).
  const bool view = !inplace && !eager.threw && !eager.outs.empty() &&
                    eager.outs[0].defined() && args[0].isTensor() &&
                    eager.outs[0].is_alias_of(args[0].toTensor());
  struct Variant {
    const char *name;
    const Outcome *o;
    const Stack *args;
  } variants[] = {{"real", &fromReal, &args},
                  {"fake", &fromFake, &fakes},
                  {"capture", &fromCapture, &caps}};
  for (const Variant &v : variants) {
    SCOPED_TRACE(v.name);
    const Outcome &m = *v.o;
    if (eager.threw) {
      EXPECT_TRUE(m.threw) << c.op << ": eager raised '" << eager.msg
                           << "' but infer did not";
      if (m.threw) {
        EXPECT_EQ(m.type, eager.type)
            << "infer: " << m.msg << "\neager: " << eager.msg;
        EXPECT_EQ(m.msg, eager.msg);
      }
      continue;
    }
    ASSERT_FALSE(m.threw) << c.op << ": infer raised '" << m.msg
                          << "' where eager did not";
    if (c.flags & kNeedsData) {
      EXPECT_FALSE(m.needs_data.empty());
      EXPECT_TRUE(m.outs.empty());
      EXPECT_NE(m.needs_data.find(op.schema().name), std::string::npos)
          << m.needs_data;
      continue;
    }
    ASSERT_TRUE(m.needs_data.empty()) << m.needs_data;
    ASSERT_EQ(m.outs.size(), eager.outs.size());
    for (size_t i = 0; i < m.outs.size(); ++i) {
      const Tensor &a = m.outs[i], &e = eager.outs[i];
      ASSERT_TRUE(a.defined());
      EXPECT_EQ(a.sizes(), e.sizes()) << "output " << i;
      EXPECT_EQ(a.strides(), e.strides()) << "output " << i;
      EXPECT_EQ(a.storage_offset(), e.storage_offset()) << "output " << i;
      EXPECT_EQ(a.dtype(), e.dtype()) << "output " << i;
      EXPECT_EQ(a.device(), e.device()) << "output " << i;
      const Tensor &self0 =
          (*v.args)[0].isTensor() ? (*v.args)[0].toTensor() : Tensor();
      if (inplace) {
        EXPECT_TRUE(a.is_same(self0)) << "in place: the result is self";
      } else if (view) {
        EXPECT_TRUE(a.is_alias_of(self0)) << "a view shares self's storage";
      } else if (std::string(v.name) != "real") {
        EXPECT_TRUE(meta::is_fake(a)) << "output " << i << " is fake";
      }
    }
  }
}

class MetaTest : public ::testing::Test {
protected:
  void SetUp() override {
    saved_ = detail::capture_sync_fn;
    detail::capture_sync_fn = &failingSync;
    gDataReads = 0;
  }
  void TearDown() override {
    detail::capture_sync_fn = saved_;
    EXPECT_EQ(gDataReads, 0);
  }
  detail::CaptureSyncFn saved_ = nullptr;
};

// --- tests ------------------------------------------------------------------

TEST_F(MetaTest, EveryOpMatchesEager) {
  buildCases();
  Stats st;
  for (const Case &c : cases())
    checkCase(c, st);
  // Every case's op exists, and every op has at least one case where eager
  // succeeds (so its shapes, not just its errors, are checked).
  for (const Case &c : cases())
    EXPECT_GT(st.ok[c.op], 0) << c.op << " has no succeeding case";
  int ok = 0, errors = 0;
  for (auto &[op, n] : st.ok)
    ok += n;
  for (auto &[op, n] : st.errors)
    errors += n;
  std::cout << "[ meta     ] " << cases().size() << " cases over "
            << st.ok.size() << " ops: " << ok << " run, " << errors
            << " raise (in eager and in infer)\n";
  EXPECT_GT(ok, 900);
}

TEST_F(MetaTest, EveryDispatchedOpHasARuleAndACase) {
  buildCases();
  std::set<std::string> tested;
  for (const Case &c : cases())
    tested.insert(c.op);
  int n = 0;
  for (const OperatorHandle *op : Dispatcher::singleton().allOps()) {
    if (op->schema().ns != "ember")
      continue;
    ++n;
    EXPECT_TRUE(meta::has_rule(*op)) << op->name() << " has no shape rule";
    EXPECT_TRUE(tested.count(op->name()))
        << op->name() << " has no case in test_meta.cpp";
  }
  EXPECT_GT(n, 150);
}

// Every pointwise op and every reduction of ops.yaml has its cases in the
// OpInfo table (Note [The OpInfo table]), and no op has cases both there
// and here.
TEST_F(MetaTest, OpInfoTableCoversPointwiseOpsAndReductions) {
  buildCases();
  for (const test::OpTableEntry &e : test::op_table_entries()) {
    if (!e.dispatched || !(e.pointwise || e.reduction))
      continue;
    const test::OpInfo *o = test::find_op_info(e.name);
    ASSERT_TRUE(o) << e.name << " has no entry in test/support/OpInfo.cpp";
    EXPECT_EQ(o->kind,
              e.pointwise ? test::Kind::Pointwise : test::Kind::Reduction)
        << e.name;
  }
  for (const test::OpInfo &o : test::op_db()) {
    EXPECT_FALSE(o.meta.empty()) << o.name << " has no shape-rule case";
    EXPECT_FALSE(localOps().count(o.name))
        << o.name << ": cases in the OpInfo table and in test_meta.cpp";
    if (!o.inplace.empty()) {
      EXPECT_FALSE(localOps().count(o.inplace)) << o.inplace;
    }
  }
}

TEST_F(MetaTest, FakeTensors) {
  Tensor f = F({2, 3}, kHalf);
  EXPECT_TRUE(meta::is_fake(f));
  EXPECT_EQ(f.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(f.strides(), IntArrayRef({3, 1}));
  EXPECT_EQ(f.dtype(), kHalf);
  EXPECT_EQ(f.storage().nbytes(), 12u);
  EXPECT_EQ(f.storage().data(), nullptr);
  Tensor g = meta::fake({2, 3}, kFloat, kCPU, IntArrayRef({1, 2}));
  EXPECT_EQ(g.strides(), IntArrayRef({1, 2}));
  EXPECT_FALSE(g.is_contiguous());
  EXPECT_EQ(g.storage().nbytes(), 24u);
  EXPECT_EQ(F({0, 3}, kFloat).storage().nbytes(), 0u);
  // Real tensors, empty ones included, and capture-like ones are not fake.
  EXPECT_FALSE(meta::is_fake(R({2})));
  EXPECT_FALSE(meta::is_fake(empty({0})));
  EXPECT_FALSE(meta::is_fake(Tensor()));
  EXPECT_FALSE(meta::is_fake(twin(R({2}), true)));
  EXPECT_TRUE(meta::is_fake(twin(R({2}), false)));
  // A view of a fake tensor is fake, and view kernels check its storage.
  Tensor v = meta::infer(ops::t(), {f}).outputs[0];
  EXPECT_TRUE(meta::is_fake(v));
  EXPECT_TRUE(v.is_alias_of(f));
  EXPECT_EMBER_ERROR(
      meta::infer(ops::as_strided(), {f, L({3, 3}), L({3, 1}), None()}),
      "require a storage of");
  EXPECT_EMBER_ERROR(meta::fake({2}, kFloat, kCPU, IntArrayRef({1, 1})),
                     "2 strides");
  // A fake CUDA tensor: its rules need no CUDA device.
  Tensor c = meta::fake({4, 1}, kFloat, Device(kCUDA, 0));
  meta::Result r = meta::infer(ops::expand(), {c, L({2, 4, 3}), false});
  EXPECT_EQ(r.outputs[0].sizes(), IntArrayRef({2, 4, 3}));
  EXPECT_EQ(r.outputs[0].device(), Device(kCUDA, 0));
  r = meta::infer(ops::mul_Tensor(),
                  {c, meta::fake({3}, kFloat, Device(kCUDA, 0))});
  EXPECT_EQ(r.outputs[0].device(), Device(kCUDA, 0));
  EXPECT_EQ(r.outputs[0].sizes(), IntArrayRef({4, 3}));
}

TEST_F(MetaTest, WrappedNumbersPromoteAsScalars) {
  Tensor h = F({3}, kHalf), l = F({3}, kLong);
  auto dt = [](const Tensor &a, const Tensor &b) {
    return meta::infer(ops::add_Tensor(), {a, b, 1}).outputs[0].dtype();
  };
  // A wrapped double does not promote a float16 tensor; a 0-dim double
  // tensor does not either (same category), a 1-d one does.
  EXPECT_EQ(dt(h, meta::fake_wrapped_number(kDouble)), kHalf);
  EXPECT_EQ(dt(h, F({}, kDouble)), kHalf);
  EXPECT_EQ(dt(h, F({1}, kDouble)), kDouble);
  // Integers with a wrapped float give the default dtype.
  EXPECT_EQ(dt(l, meta::fake_wrapped_number(kDouble)), get_default_dtype());
  EXPECT_EQ(dt(l, meta::fake_wrapped_number(kLong)), kLong);
  EXPECT_EQ(dt(F({3}, kBool), meta::fake_wrapped_number(kLong)), kLong);
  EXPECT_TRUE(meta::fake_wrapped_number(kDouble)
                  .unsafeGetTensorImpl()
                  ->is_wrapped_number());
  EXPECT_TRUE(meta::is_fake(meta::fake_wrapped_number(kDouble)));
  // The same as eager on real wrapped numbers.
  EXPECT_EQ(dt(l, meta::fake_wrapped_number(kDouble)),
            (R({3}, kLong) + 2.5).dtype());
}

TEST_F(MetaTest, InPlaceChecks) {
  Tensor x = F({2, 3}, kLong);
  // The result of an in-place op is self.
  meta::Result r = meta::infer(ops::add__Tensor(), {x, F({3}, kLong), 1});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].is_same(x));
  // A float result can't be written into an int64 tensor; a broadcast
  // result must have self's shape; an expanded self can't be written.
  EXPECT_EMBER_ERROR(meta::infer(ops::add__Tensor(), {x, F({3}, kFloat), 1}),
                     "can't be cast to the desired output type");
  EXPECT_EMBER_ERROR(meta::infer(ops::div__Tensor(), {x, x}),
                     "can't be cast to the desired output type");
  EXPECT_EMBER_ERROR(meta::infer(ops::mul__Tensor(), {F({3}, kLong), x}),
                     "doesn't match the broadcast shape");
  Tensor e = meta::infer(ops::expand(), {F({3}), L({2, 3}), false}).outputs[0];
  EXPECT_EMBER_ERROR(meta::infer(ops::neg_(), {e}), "more than one element");
  EXPECT_EMBER_ERROR(meta::infer(ops::copy_(), {e, F({2, 3}), false}),
                     "more than one element");
  EXPECT_EMBER_ERROR(
      meta::infer(ops::index_put_(),
                  {F({4}), TL({F({2}, kLong)}), F({2}, kDouble), false}),
      "dtypes match");
}

TEST_F(MetaTest, ErrorsAreEagersErrors) {
  auto typeOf = [](auto &&fn) -> std::string {
    try {
      fn();
    } catch (const Error &e) {
      return typeid(e).name();
    }
    return "";
  };
  Tensor a = F({2, 3}), b = F({4, 4});
  EXPECT_EQ(typeOf([&] {
              meta::infer(ops::add_Tensor(), {a, b, 1});
            }),
            typeid(Error).name());
  EXPECT_EQ(typeOf([&] {
              meta::infer(ops::mm(), {a, b});
            }),
            typeid(Error).name());
  EXPECT_EQ(typeOf([&] {
              meta::infer(ops::sum_dim_IntList(), {a, L({5}), false, None()});
            }),
            typeid(IndexError).name());
  EXPECT_EQ(typeOf([&] { meta::infer(ops::bitwise_not(), {a}); }), typeOf([&] {
              ember::bitwise_not(R({2, 3}));
            }));
  EXPECT_EQ(typeOf([&] {
              meta::infer(ops::mean(), {F({2}, kLong), None()});
            }),
            typeid(TypeError).name());
  EXPECT_EQ(typeOf([&] { meta::infer(ops::neg(), {F({2}, kBool)}); }),
            typeid(TypeError).name());
  EXPECT_EMBER_ERROR(meta::infer(ops::mm(), {a, b}),
                     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x4)");
  EXPECT_EMBER_ERROR(meta::infer(ops::add_Tensor(), {a, b, 1}),
                     "must match the size of tensor b");
  // A stack with the wrong number of arguments.
  EXPECT_EMBER_ERROR(meta::infer(ops::mm(), {a}), "expected 2 arguments");
}

TEST_F(MetaTest, NeedsData) {
  auto why = [](const OperatorHandle &op, Stack s) {
    meta::Result r = meta::infer(op, s);
    EXPECT_TRUE(r.outputs.empty());
    return r.needs_data;
  };
  EXPECT_NE(why(ops::nonzero(), {F({3, 4})}).find("ember::nonzero"),
            std::string::npos);
  EXPECT_NE(why(ops::masked_select(), {F({3, 4}), F({4}, kBool)}).find("mask"),
            std::string::npos);
  EXPECT_FALSE(
      why(ops::index_Tensor(), {F({3, 4}), TL({F({3}, kBool)})}).empty());
  EXPECT_FALSE(
      why(ops::index_Tensor(), {F({3, 4}), TL({F({3, 4}, kByte)})}).empty());
  EXPECT_NE(why(ops::equal(), {F({3}), F({3})}).find("bool"),
            std::string::npos);
  // Integer indices need no data.
  meta::Result r =
      meta::infer(ops::index_Tensor(), {F({3, 4}), TL({F({2, 5}, kLong)})});
  EXPECT_TRUE(r.needs_data.empty());
  EXPECT_EQ(r.outputs[0].sizes(), IntArrayRef({2, 5, 4}));
}

// A custom op and its fake function.
Tensor scaleCpu(const Tensor &x, double a) { return x * a; }
Tensor stackRowsCpu(const Tensor &x, const Tensor &y) {
  return ember::cat({x, y}, 0);
}

TEST_F(MetaTest, RegisterFakeForCustomOps) {
  static Library lib("metatest");
  static bool defined = false;
  if (!defined) {
    lib.def("scale(Tensor x, float a) -> Tensor", &scaleCpu);
    lib.def("stack_rows(Tensor x, Tensor y) -> Tensor", &stackRowsCpu);
    lib.def("split2(Tensor x) -> (Tensor, Tensor)");
    defined = true;
  }
  const OperatorHandle &scale =
      Dispatcher::singleton().findSchemaOrThrow("metatest::scale");
  const OperatorHandle &rows =
      Dispatcher::singleton().findSchemaOrThrow("metatest::stack_rows");
  const OperatorHandle &split2 =
      Dispatcher::singleton().findSchemaOrThrow("metatest::split2");
  EXPECT_FALSE(meta::has_rule(scale));
  EXPECT_EMBER_ERROR(meta::infer(scale, {F({2}), 2.0}),
                     "ember::meta::register_fake");
  try {
    meta::infer(scale, {F({2}), 2.0});
  } catch (const NotImplementedError &e) {
    EXPECT_NE(std::string(e.what()).find("metatest::scale"), std::string::npos);
  }

  static bool sawFake = true;
  meta::register_fake("metatest::scale", [](const Stack &s) {
    const Tensor &x = s[0].toTensor();
    sawFake = sawFake && meta::is_fake(x);
    return std::vector<Tensor>{meta::fake(x.sizes(), x.dtype(), x.device())};
  });
  EXPECT_TRUE(meta::has_rule(scale));
  meta::Result r = meta::infer(scale, {F({2, 3}, kDouble), 2.0});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(r.outputs[0].dtype(), kDouble);
  // Real and capture-like arguments reach the fake function as fakes.
  meta::infer(scale, {R({4}), 2.0});
  meta::infer(scale, {twin(R({4}), true), 2.0});
  EXPECT_TRUE(sawFake);

  // A fake function may compute with ember ops: they run as shape rules.
  meta::register_fake("metatest::stack_rows", [](const Stack &s) {
    Tensor x = s[0].toTensor(), y = s[1].toTensor();
    return std::vector<Tensor>{ember::cat({x.t().t(), y + 1}, 0)};
  });
  r = meta::infer(rows, {F({2, 3}), twin(R({4, 3}, kLong), true)});
  EXPECT_EQ(r.outputs[0].sizes(), IntArrayRef({6, 3}));
  EXPECT_EQ(r.outputs[0].dtype(), kFloat);
  EXPECT_TRUE(meta::is_fake(r.outputs[0]));
  Stack eagerArgs{R({2, 3}), R({4, 3}, kLong)};
  rows.callBoxed(eagerArgs);
  EXPECT_EQ(eagerArgs[0].toTensor().sizes(), r.outputs[0].sizes());
  // Errors of the ops it calls are the ops' errors.
  EXPECT_EMBER_ERROR(meta::infer(rows, {F({2, 3}), F({2, 4})}),
                     "Sizes of tensors must match");

  // The number of tensors must match the schema.
  meta::register_fake("metatest::split2", [](const Stack &s) {
    return std::vector<Tensor>{s[0].toTensor()};
  });
  EXPECT_EMBER_ERROR(meta::infer(split2, {F({2})}),
                     "returned 1 tensors, but the op has 2 returns");
  // Ops of the table have built-in rules.
  EXPECT_EMBER_ERROR(
      meta::register_fake("ember::mm",
                          [](const Stack &) { return std::vector<Tensor>{}; }),
      "built in");
}

TEST_F(MetaTest, RulesNeverRecordOrTrack) {
  // A Capture fallback that records: infer must never reach it, even on
  // capture tensors (it runs view kernels below capture and autograd).
  static int captured = 0;
  KernelFunction saved = Dispatcher::singleton().fallback(DispatchKey::Capture);
  Dispatcher::singleton().setFallback(
      DispatchKey::Capture,
      [](const OperatorHandle &op, DispatchKeySet ks, Stack &s) {
        ++captured;
        op.redispatchBoxed(ks.below(DispatchKey::Capture), s);
      });
  captured = 0;
  Tensor c = twin(R({2, 3}), true);
  meta::infer(ops::t(), {c});
  meta::infer(ops::add_Tensor(), {c, c, 1});
  meta::infer(ops::sum_dim_IntList(), {c, L({1}), false, None()});
  meta::infer(ops::pow_Tensor_Scalar(), {c, 2});
  EXPECT_EQ(captured, 0);
  Dispatcher::singleton().setFallback(
      DispatchKey::Capture, saved.boxed ? saved.boxed : BoxedKernelFn());

  // Views of tensors that require grad: no autograd history.
  Tensor x = R({2, 3}).requires_grad_();
  Tensor v = meta::infer(ops::transpose_int(), {x, 0, 1}).outputs[0];
  EXPECT_FALSE(v.requires_grad());
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_EQ(v.strides(), IntArrayRef({1, 3}));
}

TEST_F(MetaTest, InferIsCheap) {
  // Capture calls infer once per op: a pointwise rule is a table lookup,
  // the promotion and broadcast, and one fake tensor.
  Tensor a = F({64, 128}), b = F({128});
  Stack args{a, b, 1};
  const OperatorHandle &add = ops::add_Tensor();
  auto t0 = std::chrono::steady_clock::now();
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    meta::infer(add, args);
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - t0)
                  .count() /
              n;
  // Generous: a few hundred nanoseconds is typical.
  EXPECT_LT(us, 20.0) << us << " us per infer()";
}

} // namespace
} // namespace ember
