// A differential fuzzer: random programs (chains and DAGs of pointwise ops
// from the op table, with views and reductions between them, over random
// shapes, broadcasts, dtypes and non-contiguous inputs), compiled vs eager.
//
// The test run checks 1000 programs (10 blocks of 100, which ctest runs in
// parallel). Any number on demand, from any seed:
//   FUZZ_PROGRAMS=100000 FUZZ_SEED=7 test/e2e/e2e_fuzz
//   --gtest_filter=*OnDemand*
// A failure prints the program and the seed that makes it;
// FUZZ_FIRST=<index> FUZZ_PROGRAMS=1 reruns one program.
#include "E2EUtil.h"
#include "FuzzUtil.h"
#include "eager/Meta.h"

#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>

using namespace ember;
using ember::test::pointwise_ops;
using ember::test::same;

namespace {

struct Program {
  struct Step {
    std::string name;
    std::vector<int> args; ///< value ids
    std::function<Tensor(const std::vector<Tensor> &)> fn;
    bool view = false; ///< returns a view of its argument
  };
  std::vector<Tensor> inputs; ///< values 0..n-1 (maybe non-contiguous)
  std::vector<Step> steps;    ///< value n + i
  std::vector<int> outputs;

  /// `direction` +1 or -1 nudges every computed floating value (Note
  /// [Unstable values] in FuzzUtil.h).
  std::vector<Tensor> run(const std::vector<Tensor> &in,
                          int direction = 0) const {
    std::vector<Tensor> v(in.begin(), in.end());
    for (const Step &s : steps) {
      std::vector<Tensor> a;
      for (int i : s.args)
        a.push_back(v[size_t(i)]);
      v.push_back(s.fn(a));
      if (direction && !s.view && isFloatingType(v.back().dtype()))
        v.back() = ember::test::nudged(v.back(), direction);
    }
    std::vector<Tensor> out;
    for (int o : outputs)
      out.push_back(v[size_t(o)]);
    return out;
  }

  std::string str() const {
    std::ostringstream os;
    for (size_t i = 0; i < inputs.size(); ++i)
      os << "  %" << i << " = input " << toString(inputs[i].dtype())
         << inputs[i].sizes() << " strides " << inputs[i].strides() << "\n";
    for (size_t i = 0; i < steps.size(); ++i) {
      os << "  %" << inputs.size() + i << " = " << steps[i].name << "(";
      for (size_t k = 0; k < steps[i].args.size(); ++k)
        os << (k ? ", " : "") << "%" << steps[i].args[k];
      os << ")\n";
    }
    os << "  return";
    for (int o : outputs)
      os << " %" << o;
    return os.str();
  }
};

class Generator : public ember::test::FuzzRandom {
public:
  using FuzzRandom::FuzzRandom;

  Program make() {
    static const std::vector<const OperatorHandle *> ops = pointwise_ops();
    Program p;
    // A base shape; inputs take it or a broadcastable reduction of it.
    std::vector<int64_t> base;
    int rank = pick(0, 3);
    for (int d = 0; d < rank; ++d)
      base.push_back(chance(0.03) ? 0 : pick(1, 7));
    int ninputs = pick(1, 3);
    std::vector<Tensor> values;
    for (int i = 0; i < ninputs; ++i) {
      std::vector<int64_t> shape = base;
      if (!shape.empty() && chance(0.3))
        shape.erase(shape.begin(), shape.begin() + pick(1, int(shape.size())));
      for (int64_t &s : shape)
        if (chance(0.25))
          s = 1;
      Tensor t = make_input(shape, dtype());
      p.inputs.push_back(t);
      values.push_back(t);
    }
    int nsteps = pick(1, 10);
    for (int s = 0; s < nsteps; ++s) {
      for (int attempt = 0; attempt < 30; ++attempt) {
        Program::Step step;
        if (chance(0.15)) {
          step = structural(values);
        } else {
          const OperatorHandle *op = ops[size_t(pick(0, int(ops.size()) - 1))];
          step.name = op->name();
          for (const Argument &a : op->schema().arguments)
            if (a.type == "Tensor")
              step.args.push_back(recent(int(values.size())));
          step.fn = [op](const std::vector<Tensor> &a) {
            Stack st;
            size_t k = 0;
            for (const Argument &arg : op->schema().arguments)
              st.push_back(arg.type == "Tensor" ? IValue(a[k++])
                                                : *arg.default_value);
            op->callBoxed(st);
            return st.at(0).toTensor();
          };
        }
        if (!step.fn)
          continue;
        // Keep the step only if eager accepts it (dtypes, broadcasting,
        // integer division by zero...).
        std::vector<Tensor> a;
        for (int i : step.args)
          a.push_back(values[size_t(i)]);
        try {
          NoGradGuard g;
          values.push_back(step.fn(a));
        } catch (const Error &) {
          continue;
        }
        p.steps.push_back(std::move(step));
        break;
      }
    }
    int last = int(values.size()) - 1;
    p.outputs.push_back(last);
    if (last > 0 && chance(0.5))
      p.outputs.push_back(pick(0, last - 1));
    return p;
  }

private:
  /// A value id, favouring recent ones (chains) over old ones (DAGs).
  int recent(int n) { return chance(0.6) ? n - 1 : pick(0, n - 1); }

  ScalarType dtype() {
    static const ScalarType pool[] = {kFloat,  kFloat, kFloat,    kFloat,
                                      kDouble, kHalf,  kBFloat16, kInt,
                                      kLong,   kBool,  kByte};
    return pool[pick(0, int(std::size(pool)) - 1)];
  }

  Tensor make_input(const std::vector<int64_t> &shape, ScalarType dt) {
    ember::Generator g(rng_());
    Tensor t;
    // Transposed or sliced storage in a third of the inputs.
    int layout = shape.size() >= 2 ? pick(0, 2) : 0;
    std::vector<int64_t> alloc = shape;
    if (layout == 1)
      std::swap(alloc[0], alloc[1]);
    if (layout == 2)
      alloc.back() = alloc.back() * 2 + 1;
    t = randn(alloc, g) * 3;
    if (isIntegralType(dt, /*includeBool=*/true))
      t = t.round();
    t = t.to(dt);
    if (layout == 1)
      t = t.transpose(0, 1);
    if (layout == 2)
      t = t.narrow(-1, 1, shape.back());
    return t;
  }

  /// A view or reduction between pointwise ops (an eager step of the
  /// compiled program, and a fusion boundary).
  Program::Step structural(const std::vector<Tensor> &values) {
    Program::Step s;
    int v = recent(int(values.size()));
    const Tensor &t = values[size_t(v)];
    s.args = {v};
    bool floating = isFloatingType(t.dtype());
    bool nonempty = t.dim() >= 1 && t.numel() > 0;
    switch (pick(0, 7)) {
    case 0:
      if (t.dim() < 2)
        return {};
      s.name = "t";
      s.view = true;
      s.fn = [](const std::vector<Tensor> &a) { return a[0].t(); };
      break;
    case 1:
      if (t.dim() < 1)
        return {};
      s.name = "sum(-1, keepdim)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].sum(-1, true); };
      break;
    case 2:
      if (t.dim() < 1)
        return {};
      s.name = "sum(0)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].sum(0); };
      break;
    case 3:
      if (!nonempty || t.dtype() == kBool)
        return {};
      s.name = "amax(-1, keepdim)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].amax(-1, true); };
      break;
    case 4:
      if (t.dim() < 1 || !floating)
        return {};
      s.name = "mean(0, keepdim)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].mean(0, true); };
      break;
    case 5:
      if (!nonempty || !floating)
        return {};
      s.name = "softmax(-1)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].softmax(-1); };
      break;
    case 6:
      if (!nonempty || !floating)
        return {};
      s.name = "log_softmax(0)";
      s.fn = [](const std::vector<Tensor> &a) { return a[0].log_softmax(0); };
      break;
    default:
      s.name = "unsqueeze(0)";
      s.view = true;
      s.fn = [](const std::vector<Tensor> &a) { return a[0].unsqueeze(0); };
      break;
    }
    return s;
  }
};

/// The seed of program `i` of the stream from `seed`.
uint64_t program_seed(uint64_t seed, int i) {
  return seed * 1000003 + uint64_t(i);
}

/// Runs programs [first, first + n) of the stream from `seed`; returns how
/// many compiled to at least one kernel.
int fuzz(uint64_t seed, int first, int n) {
  int with_kernels = 0;
  for (int i = first; i < first + n; ++i) {
    uint64_t s = program_seed(seed, i);
    Program p = Generator(s).make();
    auto fn = [&p](const std::vector<Tensor> &in) { return p.run(in); };
    std::vector<Tensor> want, up, down;
    bool unstable = false;
    {
      NoGradGuard g;
      want = fn(p.inputs);
      try {
        up = p.run(p.inputs, +1);
        down = p.run(p.inputs, -1);
      } catch (const Error &) {
        unstable = true; // whether it raises hangs on rounding
      }
    }
    NoGradGuard g;
    auto f = compile(fn);
    std::vector<Tensor> got;
    try {
      got = f(ember::test::compiled_args(p.inputs));
    } catch (const Error &e) {
      ADD_FAILURE() << "program " << i << " (seed " << s
                    << ") raised when compiled: " << e.what() << "\n"
                    << p.str();
      continue;
    }
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size() && k < want.size() && !unstable; ++k)
      EXPECT_TRUE(ember::test::same_where(
          ember::test::on_cpu(got[k]), want[k],
          ember::test::stable_mask(want[k], up[k], down[k])))
          << "output " << k << " of program " << i << " (seed " << s << "):\n"
          << p.str() << "\n"
          << f.explain();
    with_kernels += ember::test::ran_kernels(f.explain());
  }
  return with_kernels;
}

/// The same programs made differentiable: floating inputs in float64
/// require grad, the loss weighs every floating output by a smooth
/// function; compiled training's gradients (Note [The joint graph] in
/// frontend/Capture.cpp) equal eager's. Programs whose eager forward or
/// backward raises, or whose loss is not finite, are skipped. The programs
/// take turns over four memory budgets (ember-remat's minimum cut, its
/// knapsack at 0, a small and a huge budget). Returns how many graphs
/// compiled their backward.
int fuzz_training(uint64_t seed, int first, int n) {
  int compiled_backward = 0;
  for (int i = first; i < first + n; ++i) {
    uint64_t s = program_seed(seed, i);
    Program p = Generator(s).make();
    std::vector<Tensor> in;
    bool any = false;
    for (const Tensor &t : p.inputs) {
      bool f = isFloatingType(t.dtype());
      in.push_back(f ? t.to(kDouble) : t);
      any = any || f;
    }
    if (!any)
      continue;
    auto loss_of = [&p](const std::vector<Tensor> &x) {
      Tensor loss = zeros({}, TensorOptions(kDouble).device(x.at(0).device()));
      for (const Tensor &o : p.run(x))
        if (isFloatingType(o.dtype()) && o.requires_grad())
          loss = loss + (o.to(kDouble) * 0.5).tanh().sum();
      return loss;
    };
    auto leaves = [&] {
      std::vector<Tensor> l;
      for (const Tensor &t : in)
        l.push_back(isFloatingType(t.dtype())
                        ? t.detach().clone().requires_grad_()
                        : t);
      return l;
    };
    std::vector<Tensor> a = leaves(), b = ember::test::compiled_args(leaves());
    Tensor le;
    try {
      le = loss_of(a);
      if (!le.requires_grad())
        continue;
      le.backward();
    } catch (const Error &) {
      continue; // (no derivative, a domain error: not this test's subject)
    }
    if (!std::isfinite(le.item<double>()))
      continue;
    // Compiled on another device (Note [The e2e suite on CUDA]), the math
    // library's last bits differ from the CPU's: a program that amplifies
    // them (the sine of a sinh of 1e97) has no answer to compare with.
    // Such a program's eager gradients change under a nudge of its inputs
    // by 1e-13 of their values; it is skipped there.
    if (ember::test::compiled_device()) {
      std::vector<Tensor> n = leaves();
      for (Tensor &t : n)
        if (t.requires_grad())
          t = (t.detach() * (1 + 1e-13)).requires_grad_();
      Tensor ln = loss_of(n);
      ln.backward();
      bool stable = same(ln, le);
      for (size_t k = 0; k < a.size() && stable; ++k)
        if (a[k].grad().defined() && n[k].grad().defined())
          stable =
              ember::test::agree(n[k].grad(), a[k].grad()).all().item<bool>();
      if (!stable)
        continue;
    }
    // (each program under one of four memory budgets in turn: none, 0,
    // one that fits a little, one that fits everything)
    constexpr int64_t kBudgets[] = {-1, 0, 256, int64_t(1) << 40};
    const int64_t budget = kBudgets[i % 4];
    auto f = compile(loss_of, CompileOptions().memory_budget(budget));
    Tensor lc;
    try {
      lc = f(b);
      lc.backward();
    } catch (const Error &e) {
      ADD_FAILURE() << "program " << i << " (seed " << s << ", budget "
                    << budget << ") raised in compiled training: " << e.what()
                    << "\n"
                    << p.str();
      continue;
    }
    EXPECT_TRUE(same(ember::test::on_cpu(lc), le)) << "program " << i << ":\n"
                                                   << p.str();
    for (size_t k = 0; k < a.size(); ++k) {
      if (!a[k].requires_grad())
        continue;
      EXPECT_EQ(b[k].grad().defined(), a[k].grad().defined())
          << "input " << k << " of program " << i << ":\n"
          << p.str();
      if (a[k].grad().defined() && b[k].grad().defined()) {
        EXPECT_TRUE(
            ember::test::agree(ember::test::on_cpu(b[k].grad()), a[k].grad())
                .all()
                .item<bool>())
            << "gradient of input " << k << " of program " << i << " (seed "
            << s << ", budget " << budget << "):\n"
            << p.str() << "\neager " << a[k].grad() << "\ncompiled "
            << b[k].grad() << "\n"
            << f.explain();
      }
    }
    for (const GraphInfo &g : f.explain().graphs)
      compiled_backward += g.training;
  }
  return compiled_backward;
}

class Fuzz : public ::testing::TestWithParam<int> {};

TEST(FuzzTraining, CompiledGradientsEqualEager) {
  int compiled = fuzz_training(/*seed=*/7, 0, 150);
  EXPECT_GT(compiled, 50);
}

TEST_P(Fuzz, CompiledEqualsEager) {
  constexpr int kPerBlock = 100;
  int compiled = fuzz(/*seed=*/1, GetParam() * kPerBlock, kPerBlock);
  // Most programs must actually exercise the kernels.
  EXPECT_GT(compiled, kPerBlock / 2);
}
INSTANTIATE_TEST_SUITE_P(Blocks, Fuzz, ::testing::Range(0, 10));

TEST(FuzzOnDemand, FromEnvironment) {
  std::optional<ember::test::FuzzRequest> r = ember::test::fuzz_request();
  if (!r)
    GTEST_SKIP() << "set FUZZ_PROGRAMS (and FUZZ_SEED) to run more programs";
  fuzz(r->seed, r->first, r->programs);
  fuzz_training(r->seed, r->first, r->programs);
}

} // namespace
