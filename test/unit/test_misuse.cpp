// Misuse, family by family: each case calls the API as a user might get it
// wrong and expects an ember::Error (of the right kind) whose message says
// what was wrong. PyTorch's OpInfo "error inputs" are the checklist: every
// pointwise op of the OpInfo table (test/support/OpInfo.h) gets the error
// inputs its kind implies, generated from the table; the other families
// have their cases listed here. A case that crashes, hangs, raises a
// non-ember exception or raises with another message fails.
#include "OpInfo.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <set>
#include <typeinfo>

using namespace ember;

namespace {

enum class Kind { Any, Index, Value, Type };

struct Misuse {
  const char *family;
  const char *what;
  std::function<void()> call;
  const char *message; ///< a substring of the expected message
  Kind kind = Kind::Any;
};

::testing::AssertionResult raises_as(const Misuse &m) {
  try {
    m.call();
  } catch (const Error &e) {
    std::string msg = e.what();
    if (msg.find(m.message) == std::string::npos)
      return ::testing::AssertionFailure()
             << m.family << ": " << m.what << ": raised \"" << msg
             << "\", expected it to contain \"" << m.message << "\"";
    bool kind_ok =
        m.kind == Kind::Any ||
        (m.kind == Kind::Index && dynamic_cast<const IndexError *>(&e)) ||
        (m.kind == Kind::Value && dynamic_cast<const ValueError *>(&e)) ||
        (m.kind == Kind::Type && dynamic_cast<const TypeError *>(&e));
    if (!kind_ok)
      return ::testing::AssertionFailure()
             << m.family << ": " << m.what << ": raised " << typeid(e).name()
             << ", not the expected error class";
    return ::testing::AssertionSuccess();
  } catch (const std::exception &e) {
    return ::testing::AssertionFailure()
           << m.family << ": " << m.what
           << ": raised a non-ember exception: " << e.what();
  }
  return ::testing::AssertionFailure()
         << m.family << ": " << m.what << ": did not raise";
}

Tensor f32(IntArrayRef s) { return randn(s); }

std::vector<Misuse> cases() {
  Tensor x = f32({2, 3}), v = f32({3});
  return {
      // --- creation ---------------------------------------------------------
      {"creation", "negative size",
       [] {
         empty({2, -1});
       },
       "negative"},
      {"creation", "size product overflows",
       [] {
         empty({INT64_MAX, 4});
       },
       "overflow"},
      {"creation", "empty_strided storage overflows",
       [] { empty_strided({3}, {int64_t(1) << 61}); }, "overflow"},
      {"creation", "arange zero step", [] { arange(0, 5, 0); },
       "step must be nonzero"},
      {"creation", "arange wrong sign", [] { arange(0, 5, -1); },
       "inconsistent with step sign"},
      {"creation", "arange of NaN", [] { arange(0.0, NAN); },
       "unsupported range"},
      {"creation", "linspace negative steps", [] { linspace(0, 1, -1); },
       "non-negative"},
      {"creation", "full value does not fit",
       [] { full({2}, 300, TensorOptions(kByte)); }, "without overflow"},
      {"creation", "randperm of a negative n", [] { randperm(-1); }, "n"},
      {"creation", "eye negative", [] { eye(-1); }, "non-negative"},
      // --- views and shapes
      // ---------------------------------------------------
      {"shape", "view of a wrong numel", [x] { x.view({4}); }, "invalid"},
      {"shape", "view with two -1",
       [x] {
         x.view({-1, -1});
       },
       "only one dimension can be inferred"},
      {"shape", "view of a transposed tensor", [x] { x.t().view({6}); },
       "reshape"},
      {"shape", "reshape to a wrong numel", [x] { x.reshape({7}); }, "invalid"},
      {"shape", "dim out of range", [x] { x.sum(std::vector<int64_t>{2}); },
       "Dimension out of range", Kind::Index},
      {"shape", "dim INT64_MIN", [x] { x.transpose(INT64_MIN, 0); },
       "Dimension out of range", Kind::Index},
      {"shape", "permute repeats a dim",
       [x] {
         x.permute({0, 0});
       },
       "appears multiple times"},
      {"shape", "permute of the wrong length", [x] { x.permute({0}); },
       "does not match the length"},
      {"shape", "expand to fewer dims", [x] { x.expand({3}); }, "expand"},
      {"shape", "expand a non-singleton",
       [x] {
         x.expand({4, 3});
       },
       "expanded size"},
      {"shape", "narrow past the end", [x] { x.narrow(1, 2, 5); },
       "exceeds dimension size"},
      {"shape", "select out of range", [x] { x.select(0, 2); }, "out of bounds",
       Kind::Index},
      {"shape", "slice with step 0", [x] { x.slice(0, 0, 2, 0); },
       "step must be"},
      {"shape", "cat of different ranks",
       [x, v] {
         cat({x, v});
       },
       "same number of dimensions"},
      {"shape", "cat of nothing", [] { cat(std::vector<Tensor>{}); },
       "empty list of tensors"},
      {"shape", "stack of different shapes",
       [x] {
         stack({x, x.t()});
       },
       "stack expects each tensor to be equal size"},
      {"shape", "split of size 0", [x] { x.split(0, 1); }, "split"},
      {"shape", "chunk of 0", [x] { x.chunk(0); }, "chunk"},
      {"shape", "repeat with fewer dims", [x] { x.repeat({2}); },
       "Number of dimensions of repeat dims"},
      {"shape", "squeeze of a 0-dim out of range",
       [] { tensor(1.0f).squeeze(3); }, "Dimension out of range", Kind::Index},
      {"shape", "pad of odd length", [x] { constant_pad_nd(x, {1}); },
       "Length of pad must be even"},
      {"shape", "as_strided negative stride", [x] { x.as_strided({2}, {-1}); },
       "stride"},
      {"shape", "as_strided past the storage",
       [x] {
         x.as_strided({2, 2}, {INT64_MAX - 3, 3});
       },
       "storage"},
      // --- indexing
      // -----------------------------------------------------------
      {"index", "integer index out of range", [x] { x.index({5}); },
       "out of bounds", Kind::Index},
      {"index", "index tensor out of range",
       [x] { x.index({tensor({int64_t(7)})}); }, "out of bounds", Kind::Index},
      {"index", "float index tensor", [x] { x.index({tensor({0.5f})}); },
       "tensors used as indices must be long, int, byte or bool"},
      {"index", "too many indices",
       [x] {
         x.index({0, 0, 0});
       },
       "too many indices"},
      {"index", "index_select with a 2-d index",
       [x] {
         x.index_select(0, zeros({1, 1}, kLong));
       },
       "index_select"},
      {"index", "gather out of range",
       [x] {
         x.gather(1, full({2, 3}, 9, kLong));
       },
       "out of bounds", Kind::Index},
      {"index", "scatter with a float index",
       [x] {
         x.scatter(1, zeros({2, 3}), 1.0);
       },
       "int64"},
      {"index", "masked_fill with an int mask",
       [x] {
         x.masked_fill(ones({2, 3}, kLong), 0);
       },
       "boolean"},
      {"index", "index_put_ of a wrong shape",
       [x] { x.clone().index_put_({tensor({int64_t(0)})}, ones({4})); },
       "shape"},
      {"index", "one_hot of a negative class",
       [] { one_hot(tensor({int64_t(-1)})); }, "non-negative"},
      // --- reductions
      // ---------------------------------------------------------
      {"reduction", "amax over nothing", [] { empty({0}).amax(); },
       "no elements"},
      {"reduction", "argmax over an empty dim",
       [] {
         empty({2, 0}).argmax(1);
       },
       "non-zero size"},
      {"reduction", "topk larger than the dim", [v] { v.topk(5); },
       "selected index k out of range"},
      {"reduction", "softmax dim out of range", [x] { x.softmax(3); },
       "Dimension out of range", Kind::Index},
      {"reduction", "mean of integers", [] { arange(4).mean(); },
       "mean(): could not infer output dtype"},
      {"reduction", "cumsum dim out of range", [v] { v.cumsum(1); },
       "Dimension out of range", Kind::Index},
      // --- arithmetic and dtypes ---------------------------------------------
      {"arithmetic", "integer division by zero",
       [] { arange(3).div(zeros({3}, kLong), "floor"); }, "ZeroDivisionError"},
      {"arithmetic", "remainder by zero",
       [] { arange(3).remainder(zeros({3}, kLong)); }, "ZeroDivisionError"},
      {"arithmetic", "float alpha on integers",
       [] { add(arange(3), arange(3), 0.5); }, "alpha"},
      {"arithmetic", "in-place float result into an int tensor",
       [] { arange(3).add_(0.5); }, "can't be cast"},
      {"arithmetic", "bitwise op on floats", [x] { x.bitwise_and(x); },
       "not implemented for"},
      {"arithmetic", "sub of bools", [] { tensor({true}).sub(tensor({true})); },
       "bool"},
      {"arithmetic", "clamp bound beyond int8",
       [] { ones({2}, kChar).clamp_max(300); },
       "max value 300 is outside the range of int8 [-128, 127]"},
      {"arithmetic", "item of a vector", [v] { v.item<float>(); },
       "3 elements cannot be converted"},
      // --- linear algebra
      // -----------------------------------------------------
      {"linalg", "mm of mismatched shapes", [x] { x.mm(x); },
       "cannot be multiplied"},
      {"linalg", "mm of a vector", [x, v] { x.mm(v); }, "must be a matrix"},
      {"linalg", "bmm of 2-d", [x] { x.bmm(x); }, "3D"},
      {"linalg", "matmul of mismatched dtypes",
       [x] { x.matmul(x.t().to(kDouble)); }, "dtype"},
      {"linalg", "matmul of 0-dim", [] { tensor(1.0f).matmul(tensor(2.0f)); },
       "at least 1D"},
      // --- autograd
      // -----------------------------------------------------------
      {"autograd", "backward of a non-scalar",
       [] {
         Tensor a = randn({2}).requires_grad_();
         (a * 2).backward();
       },
       "only for scalar outputs"},
      {"autograd", "backward without grad", [] { randn({1}).sum().backward(); },
       "does not require grad"},
      {"autograd", "backward twice",
       [] {
         Tensor a = randn({2}).requires_grad_();
         Tensor l = (a * a).sum();
         l.backward();
         l.backward();
       },
       "second time"},
      {"autograd", "requires_grad on an integer tensor",
       [] { arange(3).requires_grad_(); }, "floating point"},
      {"autograd", "in-place on a leaf that requires grad",
       [] {
         Tensor a = randn({2}).requires_grad_();
         a.add_(1);
       },
       "leaf Variable that requires grad"},
      {"autograd", "modified saved tensor",
       [] {
         Tensor a = randn({2}).requires_grad_();
         Tensor b = a * 1;
         Tensor c = b.sin(); // saves b
         b.mul_(2);
         c.sum().backward();
       },
       "modified by an inplace operation"},
      {"autograd", "grad of an unused input",
       [] {
         Tensor a = randn({2}).requires_grad_(),
                b = randn({2}).requires_grad_();
         autograd::grad({(a * 2).sum()}, {b});
       },
       "allow_unused"},
      {"autograd", "gradient of a wrong shape",
       [] {
         Tensor a = randn({2}).requires_grad_();
         (a * 2).backward(ones({3}));
       },
       "Mismatch in shape"},
      // --- nn
      // -----------------------------------------------------------------
      {"nn", "Linear on a wrong width",
       [] {
         nn::Linear l(4, 2);
         l->forward(randn({3, 5}));
       },
       "cannot be multiplied"},
      {"nn", "cross_entropy with out-of-range targets",
       [] {
         nn::functional::cross_entropy(randn({2, 3}), tensor({int64_t(0), 5}));
       },
       "out of bounds"},
      {"nn", "cross_entropy with float targets of a wrong shape",
       [] {
         nn::functional::cross_entropy(randn({2, 3}), randn({2, 4}));
       },
       "class indices"},
      {"nn", "conv2d of a 2-d input",
       [] {
         nn::Conv2d c(nn::Conv2dOptions(1, 2, 3));
         c->forward(randn({5, 5}));
       },
       "Expected 3D"},
      {"nn", "dropout probability out of range",
       [] {
         nn::functional::dropout(randn({2}),
                                 nn::functional::DropoutFuncOptions().p(1.5));
       },
       "dropout probability"},
      {"nn", "layer_norm shape mismatch",
       [] {
         nn::functional::layer_norm(randn({2, 3}),
                                    nn::functional::LayerNormFuncOptions({4}));
       },
       "normalized_shape"},
      {"nn", "embedding index out of range",
       [] {
         nn::Embedding e(3, 2);
         e->forward(tensor({int64_t(3)}));
       },
       "out of bounds", Kind::Index},
      // --- optim
      // --------------------------------------------------------------
      {"optim", "SGD negative learning rate",
       [] {
         Tensor p = randn({2}).requires_grad_();
         optim::SGD({p}, -0.1);
       },
       "Invalid learning rate"},
      {"optim", "Adam beta out of range",
       [] {
         Tensor p = randn({2}).requires_grad_();
         optim::Adam({p}, optim::AdamOptions(1e-3).betas({1.5, 0.9}));
       },
       "beta"},
      // --- serialization
      // ------------------------------------------------------
      {"serialize", "load of a missing file",
       [] {
         Tensor t;
         load(t, "/nonexistent/ember.pt");
       },
       "Cannot open"},
      {"serialize", "load of a directory",
       [] {
         Tensor t;
         load(t, std::filesystem::temp_directory_path().string());
       },
       "is a directory"},
      // --- compile
      // ------------------------------------------------------------
      {"compile", "opt_level out of range",
       [] {
         compile([](const Tensor &t) { return t; },
                 CompileOptions().opt_level(7));
       },
       "opt_level"},
      {"compile", "recompile_limit 0",
       [] {
         compile([](const Tensor &t) { return t; },
                 CompileOptions().recompile_limit(0));
       },
       "recompile_limit"},
      {"compile", "a negative memory_budget",
       [] {
         compile([](const Tensor &t) { return t; },
                 CompileOptions().memory_budget(-5));
       },
       "memory_budget must be a number of bytes"},
      {"compile", "an op's error inside a compiled function",
       [] {
         NoGradGuard g;
         auto f =
             compile([](const Tensor &a, const Tensor &b) { return a + b; });
         f(randn({2}), randn({3}));
       },
       "must match the size"},
      // --- runtime
      // ------------------------------------------------------------
      {"runtime", "set_num_threads(0)", [] { set_num_threads(0); }, "positive"},
  };
}

} // namespace

TEST(Misuse, EveryFamilyRaisesClearErrors) {
  std::vector<Misuse> all = cases();
  std::set<std::string> families;
  for (const Misuse &m : all) {
    families.insert(m.family);
    EXPECT_TRUE(raises_as(m));
  }
  EXPECT_GE(all.size(), 80u);
  EXPECT_EQ(families.size(), 12u);
}

// --- error inputs of every pointwise op, from the OpInfo table ---------------

TEST(Misuse, PointwiseErrorInputsFromTheOpInfoTable) {
  // For each pointwise entry: inputs that do not broadcast, an undefined
  // input, and for its in-place form a self the result does not fit (a
  // broadcast shape larger than self, a self that overlaps itself).
  int64_t checked = 0;
  for (const test::OpInfo &info : test::op_db()) {
    if (info.kind != test::Kind::Pointwise || !info.op)
      continue;
    ScalarType dt = info.dtypes.front();
    auto input = [&](IntArrayRef s, int k) {
      return test::sample_input(s, dt, info.domain, uint64_t(17 + k));
    };
    auto call = [&](const char *what, std::function<void()> fn,
                    const char *message) {
      Misuse m{"pointwise", what, std::move(fn), message};
      EXPECT_TRUE(raises_as(m)) << info.name;
      ++checked;
    };
    std::vector<Tensor> ok;
    for (int k = 0; k < info.arity; ++k)
      ok.push_back(input({2, 3}, k));
    if (info.arity >= 2) {
      std::vector<Tensor> bad = ok;
      bad[1] = input({4}, 1);
      call(
          "inputs that do not broadcast", [&] { info.op(bad); },
          "must match the size");
    }
    std::vector<Tensor> undefined = ok;
    undefined[0] = Tensor();
    call(
        "an undefined input", [&] { info.op(undefined); }, "defined tensor");
    if (info.op_ && info.arity >= 2) {
      std::vector<Tensor> small = ok;
      small[0] = input({3}, 0);
      small[1] = input({2, 3}, 1);
      call(
          "in place into a self smaller than the result",
          [&] { info.op_(small); }, "doesn't match the broadcast shape");
    }
    if (info.op_) {
      std::vector<Tensor> expanded = ok;
      expanded[0] = input({1, 3}, 0).expand({2, 3});
      call(
          "in place into an expanded self", [&] { info.op_(expanded); },
          "single memory location");
    }
  }
  std::cout << checked << " error inputs of "
            << "pointwise ops checked\n";
  EXPECT_GT(checked, 150);
}
