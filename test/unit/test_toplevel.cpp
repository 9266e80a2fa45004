// libtorch's top-level forms of the nn ops (torch::mse_loss, torch::conv2d,
// torch::dropout, ...: ops.yaml's "nn ops" section, eager/nn/
// FunctionalOps.cpp): each against its nn::functional form on random
// inputs, with every reduction and the arguments whose ATen conventions
// differ from the options' (int reductions, `int[2]` given one value, the
// empty pooling stride, padding_idx=-1, Tensor? arguments); the ops with
// math of their own (elu's scales, kl_div, feature_dropout, enable_gqa)
// against float64 references.
#include "TestUtil.h"

#include "eager/nn/Functional.h"

#include <cmath>

using namespace ember;
using namespace ember::test;
namespace F = ember::nn::functional;

namespace {

/// The three reductions as the int64_t the top-level losses take, with the
/// nn::functional Reduction they mean.
const std::vector<std::pair<int64_t, Reduction>> kReductions = {
    {Reduction::None, kNone}, {Reduction::Mean, kMean}, {Reduction::Sum, kSum}};

/// Same inputs, same ops: the two forms agree to the last bit.
::testing::AssertionResult same(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << toString(a.dtype()) << " != " << toString(b.dtype());
  return close(a, b, 0, 0);
}

/// An in-place form: its name, a call of it, and what it must leave.
struct InPlace {
  const char *name;
  std::function<const Tensor &(const Tensor &)> op;
  Tensor expected;
};

/// Each in-place form writes into (a copy of) x and returns its argument.
void expectInPlace(const Tensor &x, const std::vector<InPlace> &cases) {
  for (const InPlace &c : cases) {
    SCOPED_TRACE(c.name);
    Tensor y = x.clone();
    const Tensor &r = c.op(y);
    EXPECT_TRUE(r.is_same(y));
    EXPECT_TRUE(same(y, c.expected));
  }
}

/// Runs `fn` twice from the same seed (dropout draws).
template <class Fn> Tensor seeded(uint64_t seed, Fn &&fn) {
  manual_seed(seed);
  return fn();
}

} // namespace

TEST(TopLevel, ReductionIsAtReduction) {
  // at::Reduction's values, usable where ATen takes `int64_t reduction`.
  int64_t none = Reduction::None, mean = Reduction::Mean, sum = Reduction::Sum;
  EXPECT_EQ(none, 0);
  EXPECT_EQ(mean, 1);
  EXPECT_EQ(sum, 2);
  EXPECT_EQ(Reduction::from_int(2), Reduction(kSum));
  Tensor a = random({3}), b = random({3}, kFloat, 1);
  EXPECT_EMBER_ERROR(ember::mse_loss(a, b, 3),
                     "3 is not a valid value for reduction");
  EXPECT_THROW(ember::l1_loss(a, b, -1), ValueError);
}

TEST(TopLevel, RegressionLossesMatchFunctional) {
  Tensor x = random({4, 5}, kFloat, 1), t = random({4, 5}, kFloat, 2);
  for (auto [r, red] : kReductions) {
    SCOPED_TRACE(red.name());
    EXPECT_TRUE(same(ember::mse_loss(x, t, r), F::mse_loss(x, t, red)));
    EXPECT_TRUE(same(ember::l1_loss(x, t, r), F::l1_loss(x, t, red)));
    EXPECT_TRUE(same(
        ember::smooth_l1_loss(x, t, r, 0.5),
        F::smooth_l1_loss(x, t, F::SmoothL1LossFuncOptions(red).beta(0.5))));
    EXPECT_TRUE(
        same(ember::huber_loss(x, t, r, 0.7),
             F::huber_loss(x, t, F::HuberLossFuncOptions(red).delta(0.7))));
  }
  // The defaults: mean, beta = delta = 1.
  EXPECT_TRUE(same(ember::smooth_l1_loss(x, t), F::smooth_l1_loss(x, t)));
  EXPECT_TRUE(same(ember::huber_loss(x, t), F::huber_loss(x, t)));
  // And a float64 reference, so that the pair is not only self-consistent.
  auto xv = values(x), tv = values(t);
  double mse = 0, sl1 = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    double d = xv[i] - tv[i];
    mse += d * d;
    sl1 += std::fabs(d) < 1 ? 0.5 * d * d : std::fabs(d) - 0.5;
  }
  EXPECT_NEAR(ember::mse_loss(x, t).item<double>(), mse / 20, 1e-5);
  EXPECT_NEAR(ember::smooth_l1_loss(x, t, Reduction::Sum).item<double>(), sl1,
              1e-4);
}

TEST(TopLevel, ClassificationLossesMatchFunctional) {
  Tensor logits = random({6, 4}, kFloat, 3);
  Tensor logp = ember::log_softmax(logits, 1);
  Tensor target = tensor({0, 3, 1, 1, 2, 0});
  Tensor w = random_positive({4}, kFloat, 0.5, 2.0, 4);
  for (auto [r, red] : kReductions) {
    SCOPED_TRACE(red.name());
    EXPECT_TRUE(same(
        ember::nll_loss(logp, target, w, r, 1),
        F::nll_loss(logp, target,
                    F::NLLLossFuncOptions(red).weight(w).ignore_index(1))));
    EXPECT_TRUE(same(ember::nll_loss_nd(logp, target, {}, r),
                     F::nll_loss(logp, target, red)));
    EXPECT_TRUE(same(
        ember::cross_entropy_loss(logits, target, w, r, -100, 0.1),
        F::cross_entropy(
            logits, target,
            F::CrossEntropyFuncOptions(red).weight(w).label_smoothing(0.1))));
  }
  // An undefined Tensor for `Tensor? weight` is no weight, as {} is.
  EXPECT_TRUE(same(ember::nll_loss(logp, target, Tensor()),
                   ember::nll_loss(logp, target)));
  // nll_loss2d: (N, C, H, W) only.
  Tensor lp4 = ember::log_softmax(random({2, 3, 4, 5}, kFloat, 5), 1);
  Tensor t4 = randint(0, 3, {2, 4, 5}, Generator(6));
  EXPECT_TRUE(same(ember::nll_loss2d(lp4, t4), F::nll_loss(lp4, t4)));
  EXPECT_EMBER_ERROR(ember::nll_loss2d(logp, target),
                     "only batches of spatial inputs supported (4D tensors)");

  Tensor p = ember::sigmoid(random({3, 4}, kFloat, 7));
  Tensor y = (random({3, 4}, kFloat, 8) > 0).to(kFloat);
  Tensor bw = random_positive({3, 4}, kFloat, 0.5, 2.0, 9);
  Tensor pw = random_positive({4}, kFloat, 0.5, 2.0, 10);
  for (auto [r, red] : kReductions) {
    SCOPED_TRACE(red.name());
    EXPECT_TRUE(
        same(ember::binary_cross_entropy(p, y, bw, r),
             F::binary_cross_entropy(
                 p, y, F::BinaryCrossEntropyFuncOptions(red).weight(bw))));
    EXPECT_TRUE(same(ember::binary_cross_entropy_with_logits(
                         logits.narrow(0, 0, 3), y, bw, pw, r),
                     F::binary_cross_entropy_with_logits(
                         logits.narrow(0, 0, 3), y,
                         F::BinaryCrossEntropyWithLogitsFuncOptions(red)
                             .weight(bw)
                             .pos_weight(pw))));
  }
}

TEST(TopLevel, KlDivMatchesReference) {
  Tensor input = ember::log_softmax(random({3, 5}, kDouble, 11), 1);
  Tensor target = ember::softmax(random({3, 5}, kDouble, 12), 1);
  target.index_put_({0, 2}, 0.0); // xlogy: 0 * log 0 = 0
  auto iv = values(input), tv = values(target);
  double sum = 0, sumLog = 0;
  std::vector<double> pointwise;
  for (size_t i = 0; i < iv.size(); ++i) {
    double v = tv[i] == 0 ? 0 : tv[i] * (std::log(tv[i]) - iv[i]);
    pointwise.push_back(v);
    sum += v;
    sumLog += std::exp(tv[i]) * (tv[i] - iv[i]);
  }
  Tensor none = ember::kl_div(input, target, Reduction::None);
  EXPECT_TRUE(
      close(none,
            from_fn({3, 5}, [&](int64_t i) { return pointwise[size_t(i)]; })
                .to(kDouble),
            1e-12, 1e-12));
  EXPECT_NEAR(ember::kl_div(input, target).item<double>(), sum / 15, 1e-12);
  EXPECT_NEAR(ember::kl_div(input, target, Reduction::Sum).item<double>(), sum,
              1e-12);
  EXPECT_NEAR(ember::kl_div(input, target, Reduction::Sum, /*log_target=*/true)
                  .item<double>(),
              sumLog, 1e-12);
  // Differentiable in the input: d/dx sum = -target.
  Tensor x = input.detach().requires_grad_(true);
  ember::kl_div(x, target, Reduction::Sum).backward();
  EXPECT_TRUE(close(x.grad(), -target, 1e-12, 1e-12));
}

TEST(TopLevel, ActivationsMatchFunctional) {
  Tensor x = random({4, 6}, kFloat, 13) * 4;
  EXPECT_TRUE(same(ember::relu6(x), F::relu6(x)));
  EXPECT_TRUE(same(ember::leaky_relu(x), F::leaky_relu(x)));
  EXPECT_TRUE(
      same(ember::leaky_relu(x, 0.2),
           F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2))));
  EXPECT_TRUE(
      same(ember::elu(x, 0.5), F::elu(x, F::ELUFuncOptions().alpha(0.5))));
  EXPECT_TRUE(
      same(ember::hardtanh(x, -2, 3),
           F::hardtanh(x, F::HardtanhFuncOptions().min_val(-2).max_val(3))));
  EXPECT_TRUE(same(ember::log_sigmoid(x), F::logsigmoid(x)));
  expectInPlace(
      x,
      {{"relu6_", &ember::relu6_, F::relu6(x)},
       {"leaky_relu_",
        [](const Tensor &t) -> const Tensor & {
          return ember::leaky_relu_(t, 0.3);
        },
        ember::leaky_relu(x, 0.3)},
       {"elu_",
        [](const Tensor &t) -> const Tensor & { return ember::elu_(t, 2); },
        ember::elu(x, 2)},
       {"hardtanh_",
        [](const Tensor &t) -> const Tensor & { return ember::hardtanh_(t); },
        F::hardtanh(x)}});
}

TEST(TopLevel, InPlaceFunctions) {
  // The in-place ops that ATen declares `variants: function, method`
  // (ops.yaml `inplace: function`, and clamp_, fill_, zero_).
  Tensor x = random({3, 4}, kFloat, 42);
  expectInPlace(
      x, {{"relu_", &ember::relu_, ember::relu(x)},
          {"sigmoid_", &ember::sigmoid_, ember::sigmoid(x)},
          {"silu_", &ember::silu_, ember::silu(x)},
          {"exp_", &ember::exp_, ember::exp(x)},
          {"abs_", &ember::abs_, ember::abs(x)},
          {"clamp_min_",
           [](const Tensor &t) -> const Tensor & {
             return ember::clamp_min_(t, 0.5);
           },
           ember::clamp_min(x, 0.5)},
          {"clamp_",
           [](const Tensor &t) -> const Tensor & {
             return ember::clamp_(t, -0.5, 0.5);
           },
           ember::clamp(x, -0.5, 0.5)},
          {"fill_",
           [](const Tensor &t) -> const Tensor & { return ember::fill_(t, 2); },
           full({3, 4}, 2.0)},
          {"zero_", &ember::zero_, zeros({3, 4})}});
  // clamp(x) is the Scalar form, as ATen's: the Tensor form has no default
  // for min (cpp_no_default_args), so the call compiles, and raises.
  EXPECT_EMBER_ERROR(ember::clamp(x),
                     "At least one of 'min' or 'max' must not be None");
  EXPECT_TRUE(same(ember::clamp(x, {}, ember::zeros({4})),
                   ember::clamp_max(x, ember::zeros({4}))));
}

TEST(TopLevel, EluScalesMatchReference) {
  // ATen's elu: scale * x for x > 0, scale * alpha * (exp(input_scale * x) -
  // 1) otherwise (F::elu has scale = input_scale = 1).
  Tensor x = random({50}, kDouble, 14) * 3;
  double alpha = 1.5, scale = 1.25, inputScale = 0.75;
  auto xv = values(x);
  Tensor want = from_fn({50}, [&](int64_t i) {
    double v = xv[size_t(i)];
    return v > 0 ? scale * v : scale * alpha * std::expm1(inputScale * v);
  });
  EXPECT_TRUE(
      close(ember::elu(x, alpha, scale, inputScale), want, 1e-12, 1e-12));
  Tensor y = x.clone();
  ember::elu_(y, alpha, scale, inputScale);
  EXPECT_TRUE(close(y, want, 1e-12, 1e-12));
}

TEST(TopLevel, DropoutMatchesFunctional) {
  Tensor x = random_positive({20, 30}, kFloat, 0.5, 2.0, 15);
  EXPECT_TRUE(same(seeded(7, [&] { return ember::dropout(x, 0.3, true); }),
                   seeded(7, [&] { return F::dropout(x, 0.3, true); })));
  EXPECT_TRUE(ember::dropout(x, 0.3, false).is_same(x));
  Tensor y = x.clone();
  Tensor want = seeded(8, [&] { return F::dropout(x, 0.4, true); });
  const Tensor &r = seeded(
      8, [&]() -> const Tensor & { return ember::dropout_(y, 0.4, true); });
  EXPECT_TRUE(r.is_same(y));
  EXPECT_TRUE(same(y, want));
  EXPECT_EMBER_ERROR(ember::dropout(x, 1.5, false),
                     "dropout probability has to be between 0 and 1");
}

TEST(TopLevel, FeatureDropoutDropsWholeMaps) {
  Tensor x = random_positive({8, 16, 3, 3}, kFloat, 0.5, 2.0, 16);
  Tensor y = ember::feature_dropout(x, 0.5, true);
  auto xv = values(x), yv = values(y);
  int dropped = 0;
  for (int64_t m = 0; m < 8 * 16; ++m) {
    bool zero = yv[size_t(m * 9)] == 0;
    dropped += zero;
    for (int64_t k = 0; k < 9; ++k) {
      size_t i = size_t(m * 9 + k);
      EXPECT_NEAR(yv[i], zero ? 0 : xv[i] * 2, 1e-5) << "map " << m;
    }
  }
  EXPECT_GT(dropped, 32);
  EXPECT_LT(dropped, 96);
  EXPECT_TRUE(ember::feature_dropout(x, 0.5, false).is_same(x));
  Tensor z = x.clone();
  Tensor want = seeded(9, [&] { return ember::feature_dropout(x, 0.3, true); });
  seeded(9, [&] { return ember::feature_dropout_(z, 0.3, true); });
  EXPECT_TRUE(same(z, want));
  EXPECT_EMBER_ERROR(ember::feature_dropout(random({5}), 0.5, true),
                     "Feature dropout requires at least 2 dimensions");
  // F::dropout2d and nn::Dropout2d draw through it; unbatched (C, H, W)
  // input is one batch element.
  EXPECT_TRUE(same(
      seeded(10, [&] { return F::dropout2d(x, F::Dropout2dFuncOptions(0.3)); }),
      seeded(10, [&] { return ember::feature_dropout(x, 0.3, true); })));
  Tensor x3 = x[0];
  EXPECT_TRUE(same(
      seeded(11,
             [&] { return F::dropout2d(x3, F::Dropout2dFuncOptions(0.3)); }),
      seeded(11, [&] {
        return ember::feature_dropout(x3.unsqueeze(0), 0.3, true).squeeze(0);
      })));
  nn::Dropout2d module(0.3);
  EXPECT_TRUE(same(seeded(12, [&] { return module(x); }),
                   seeded(12, [&] { return F::dropout2d(x, 0.3); })));
  module->eval();
  EXPECT_TRUE(module(x).is_same(x));
  std::ostringstream os;
  os << *module;
  EXPECT_EQ(os.str(), "ember::nn::Dropout2d(p=0.3, inplace=false)");
  EXPECT_EMBER_ERROR(F::dropout2d(random({2, 3})),
                     "dropout2d: expected a 4-D (N, C, H, W) input");
}

TEST(TopLevel, EmbeddingTakesWeightFirst) {
  Tensor w = random({10, 4}, kFloat, 17);
  Tensor idx = tensor({{1, 3, 3}, {0, 9, 1}});
  EXPECT_TRUE(same(ember::embedding(w, idx), F::embedding(idx, w)));
  // padding_idx = 1: its rows get no gradient; -1 (the default) is none.
  Tensor wg = w.clone().requires_grad_(true);
  ember::embedding(wg, idx, 1).sum().backward();
  EXPECT_TRUE(close(wg.grad()[1], zeros({4}), 0, 0));
  EXPECT_TRUE(close(wg.grad()[3], full({4}, 2.0), 0, 0));
  Tensor wg2 = w.clone().requires_grad_(true);
  ember::embedding(wg2, idx).sum().backward();
  EXPECT_TRUE(close(wg2.grad()[1], full({4}, 2.0), 0, 0));
  EXPECT_THROW(ember::embedding(w, idx, -1, /*scale_grad_by_freq=*/true),
               NotImplementedError);
}

TEST(TopLevel, NormalizationsMatchFunctional) {
  Tensor x = random({4, 6, 5}, kFloat, 18);
  Tensor w = random({5}, kFloat, 19), b = random({5}, kFloat, 20);
  EXPECT_TRUE(
      same(ember::layer_norm(x, {5}, w, b, 1e-3),
           F::layer_norm(
               x, F::LayerNormFuncOptions({5}).weight(w).bias(b).eps(1e-3))));
  EXPECT_TRUE(same(ember::layer_norm(x, {6, 5}),
                   F::layer_norm(x, F::LayerNormFuncOptions({6, 5}))));
  Tensor gw = random({6}, kFloat, 21), gb = random({6}, kFloat, 22);
  EXPECT_TRUE(
      same(ember::group_norm(x, 3, gw, gb),
           F::group_norm(x, F::GroupNormFuncOptions(3).weight(gw).bias(gb))));
  // batch_norm: the same output and the same running statistics.
  Tensor m1 = zeros({6}), v1 = ones({6}), m2 = zeros({6}), v2 = ones({6});
  EXPECT_TRUE(same(ember::batch_norm(x, gw, gb, m1, v1, true, 0.2, 1e-4, true),
                   F::batch_norm(x, m2, v2,
                                 F::BatchNormFuncOptions()
                                     .weight(gw)
                                     .bias(gb)
                                     .training(true)
                                     .momentum(0.2)
                                     .eps(1e-4))));
  EXPECT_TRUE(same(m1, m2));
  EXPECT_TRUE(same(v1, v2));
  EXPECT_TRUE(same(ember::batch_norm(x, {}, {}, m1, v1, false, 0.1, 1e-5, true),
                   F::batch_norm(x, m1, v1)));
}

TEST(TopLevel, ConvolutionsMatchFunctional) {
  Tensor x = random({2, 4, 9, 8}, kFloat, 23);
  Tensor w = random({6, 2, 3, 2}, kFloat, 24), b = random({6}, kFloat, 25);
  // One int for every dimension, or one per dimension.
  EXPECT_TRUE(
      same(ember::conv2d(x, w, b, 2, 1, 1, 2), F::conv2d(x, w, b, 2, 1, 1, 2)));
  EXPECT_TRUE(same(ember::conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}, 2),
                   F::conv2d(x, w, b, {2, 1}, {1, 0}, {1, 2}, 2)));
  Tensor w4 = random({6, 4, 3, 2}, kFloat, 41);
  EXPECT_TRUE(same(ember::conv2d(x, w4), F::conv2d(x, w4)));
  // The `str padding` overload.
  EXPECT_TRUE(
      same(ember::conv2d(x, w, b, 1, "same", 1, 2),
           F::conv2d(x, w,
                     F::Conv2dFuncOptions().bias(b).padding(kSame).groups(2))));
  // (A literal 0 for padding would be ambiguous between the two overloads,
  // as with libtorch's: 0 also converts to a string.)
  int64_t noPadding = 0;
  EXPECT_TRUE(same(ember::conv2d(x, w, {}, 1, "valid", 1, 2),
                   ember::conv2d(x, w, {}, 1, noPadding, 1, 2)));
  Tensor x1 = random({2, 4, 11}, kFloat, 26);
  Tensor w1 = random({3, 4, 3}, kFloat, 27);
  EXPECT_TRUE(same(ember::conv1d(x1, w1, b.narrow(0, 0, 3), 2, 1, 2),
                   F::conv1d(x1, w1, b.narrow(0, 0, 3), 2, 1, 2)));
  EXPECT_TRUE(same(ember::conv1d(x1, w1, {}, 1, "same"),
                   F::conv1d(x1, w1, F::Conv1dFuncOptions().padding(kSame))));
  EXPECT_EMBER_ERROR(ember::conv2d(x, w, b, {1, 1, 1}),
                     "Expected 2 values (one per spatial dimension)");
}

TEST(TopLevel, PoolingMatchesFunctional) {
  Tensor x = random({2, 3, 9, 10}, kFloat, 28);
  // The default stride ([]) is the kernel size.
  EXPECT_TRUE(same(ember::max_pool2d(x, 2),
                   F::max_pool2d(x, F::MaxPool2dFuncOptions(2))));
  EXPECT_TRUE(same(ember::max_pool2d(x, {3, 2}, {2, 1}, {1, 0}, {1, 2}),
                   F::max_pool2d(x, F::MaxPool2dFuncOptions({3, 2})
                                        .stride({2, 1})
                                        .padding({1, 0})
                                        .dilation({1, 2}))));
  auto [v, i] = ember::max_pool2d_with_indices(x, 3, 2, 1);
  auto [fv, fi] = F::max_pool2d_with_indices(
      x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  EXPECT_TRUE(same(v, fv));
  EXPECT_TRUE(same(i, fi));
  EXPECT_TRUE(same(ember::avg_pool2d(x, 3, 2, 1, false, false, 5),
                   F::avg_pool2d(x, F::AvgPool2dFuncOptions(3)
                                        .stride(2)
                                        .padding(1)
                                        .count_include_pad(false)
                                        .divisor_override(5))));
  Tensor x1 = random({2, 3, 13}, kFloat, 29);
  EXPECT_TRUE(same(ember::max_pool1d(x1, 3),
                   F::max_pool1d(x1, F::MaxPool1dFuncOptions(3))));
  EXPECT_TRUE(
      same(ember::avg_pool1d(x1, 4, 2, 1),
           F::avg_pool1d(x1, F::AvgPool1dFuncOptions(4).stride(2).padding(1))));
  EXPECT_TRUE(
      same(ember::max_pool2d(x, 2, {}, 0, 1, /*ceil_mode=*/true),
           F::max_pool2d(x, F::MaxPool2dFuncOptions(2).ceil_mode(true))));
}

TEST(TopLevel, Im2colCol2imMatchUnfoldFold) {
  Tensor x = random({2, 3, 7, 6}, kFloat, 30);
  Tensor cols = ember::im2col(x, {3, 2}, 1, {1, 0}, {2, 1});
  EXPECT_TRUE(same(
      cols, F::unfold(x, F::UnfoldFuncOptions({3, 2}).padding({1, 0}).stride(
                             {2, 1}))));
  EXPECT_TRUE(same(
      ember::col2im(cols, {7, 6}, {3, 2}, 1, {1, 0}, {2, 1}),
      F::fold(
          cols,
          F::FoldFuncOptions({7, 6}, {3, 2}).padding({1, 0}).stride({2, 1}))));
}

TEST(TopLevel, PaddingMatchesFunctional) {
  Tensor x = random({2, 3, 5, 6}, kFloat, 31);
  using PadFn = Tensor (*)(const Tensor &, IntArrayRef);
  struct Case {
    PadFn fn;
    std::vector<int64_t> pad;
    nn::PadMode mode;
    Tensor input;
  };
  Tensor x5 = random({1, 2, 4, 4, 4}, kFloat, 32);
  std::vector<Case> cases = {
      {&ember::reflection_pad1d, {2, 1}, kReflect, x[0]},
      {&ember::reflection_pad2d, {2, 1, 0, 3}, kReflect, x},
      {&ember::reflection_pad3d, {1, 1, 2, 0, 3, 1}, kReflect, x5},
      {&ember::replication_pad1d, {0, 4}, kReplicate, x[0]},
      {&ember::replication_pad2d, {1, 2, 3, 4}, kReplicate, x},
      {&ember::replication_pad3d, {2, 2, 1, 0, 0, 1}, kReplicate, x5}};
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.pad));
    EXPECT_TRUE(same(c.fn(c.input, c.pad),
                     F::pad(c.input, F::PadFuncOptions(c.pad).mode(c.mode))));
  }
  EXPECT_EMBER_ERROR(ember::reflection_pad2d(x, {1, 1}),
                     "reflection_pad2d: expected a padding of 4 values");
  // ember::pad (ATen's pad) reaches every mode of F::pad.
  EXPECT_TRUE(same(ember::pad(x, {1, 2, 0, 1}, "circular"),
                   F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).mode(kCircular))));
  EXPECT_TRUE(same(ember::pad(x, {1, 2, 0, 1}, "constant", 2.5),
                   F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).value(2.5))));
  EXPECT_EMBER_ERROR(ember::pad(x, {1, 1}, "reflect", 0.0),
                     "Padding mode \"reflect\" doesn't take in value argument");
}

TEST(TopLevel, AttentionMatchesFunctional) {
  Tensor q = random({2, 4, 5, 8}, kFloat, 33);
  Tensor k = random({2, 4, 6, 8}, kFloat, 34);
  Tensor v = random({2, 4, 6, 3}, kFloat, 35);
  Tensor mask = random({5, 6}, kFloat, 36) > -0.5;
  EXPECT_TRUE(
      same(ember::scaled_dot_product_attention(q, k, v, mask, 0.0, false, 0.3),
           F::scaled_dot_product_attention(q, k, v, mask, 0.0, false, 0.3)));
  EXPECT_TRUE(same(ember::scaled_dot_product_attention(q, k, v, {}, 0.0, true),
                   F::scaled_dot_product_attention(q, k, v, {}, 0.0, true)));
  // enable_gqa: 2 key/value heads serve 4 query heads, each two in turn.
  Tensor k2 = k.narrow(1, 0, 2), v2 = v.narrow(1, 0, 2);
  Tensor kr =
      ember::stack({k2[0][0], k2[0][0], k2[0][1], k2[0][1]}).unsqueeze(0);
  Tensor krep = ember::cat(
      {kr,
       ember::stack({k2[1][0], k2[1][0], k2[1][1], k2[1][1]}).unsqueeze(0)});
  Tensor vrep = ember::cat(
      {ember::stack({v2[0][0], v2[0][0], v2[0][1], v2[0][1]}).unsqueeze(0),
       ember::stack({v2[1][0], v2[1][0], v2[1][1], v2[1][1]}).unsqueeze(0)});
  EXPECT_TRUE(
      close(ember::scaled_dot_product_attention(q, k2, v2, {}, 0.0, false,
                                                std::nullopt, true),
            F::scaled_dot_product_attention(q, krep, vrep), 1e-6, 1e-6));
  EXPECT_EMBER_ERROR(ember::scaled_dot_product_attention(
                         q, k.narrow(1, 0, 3), v.narrow(1, 0, 3), {}, 0.0,
                         false, std::nullopt, true),
                     "with enable_gqa, the key heads (dim -3) must divide");
}

TEST(TopLevel, LossGradientsMatchFunctional) {
  Tensor x = random({3, 4}, kFloat, 37), t = random({3, 4}, kFloat, 38);
  Tensor a = x.clone().requires_grad_(true), b = x.clone().requires_grad_(true);
  ember::smooth_l1_loss(a, t, Reduction::Sum, 0.5).backward();
  F::smooth_l1_loss(b, t, F::SmoothL1LossFuncOptions(kSum).beta(0.5))
      .backward();
  EXPECT_TRUE(same(a.grad(), b.grad()));
  Tensor c = random({2, 3, 6, 6}, kFloat, 39).requires_grad_(true);
  Tensor d = c.detach().clone().requires_grad_(true);
  Tensor w = random({4, 3, 3, 3}, kFloat, 40);
  ember::max_pool2d(ember::conv2d(c, w, {}, 1, 1), 2).sum().backward();
  F::max_pool2d(F::conv2d(d, w, F::Conv2dFuncOptions().padding(1)),
                F::MaxPool2dFuncOptions(2))
      .sum()
      .backward();
  EXPECT_TRUE(same(c.grad(), d.grad()));
}

// libtorch functions a probe found missing (each value from PyTorch 2.15):
// nan_to_num with its dtype's defaults, where with numbers (a number
// promotes as a Python scalar), count_nonzero, floor_divide, isinf.
TEST(TopLevel, NanToNumWhereWithNumbersCountNonzeroFloorDivide) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor x = tensor({nan, inf, -inf, 1.5});
  EXPECT_TRUE(equal(x.nan_to_num(), tensor({0.0, 3.4028234663852886e+38,
                                            -3.4028234663852886e+38, 1.5})));
  EXPECT_TRUE(equal(x.to(kHalf).nan_to_num(),
                    tensor({0.0, 65504.0, -65504.0, 1.5}, kHalf)));
  EXPECT_TRUE(
      equal(x.to(kBFloat16).nan_to_num(),
            tensor({0.0, 3.3895313892515355e+38, -3.3895313892515355e+38, 1.5},
                   kBFloat16)));
  EXPECT_TRUE(
      equal(x.to(kDouble).nan_to_num(std::nullopt, 2.0),
            tensor({0.0, 2.0, -1.7976931348623157e+308, 1.5}, kDouble)));
  Tensor y = x.clone();
  ember::nan_to_num_(y, 7.0);
  EXPECT_TRUE(equal(
      y, tensor({7.0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.5})));
  Tensor i = tensor({3, -4}, kInt);
  EXPECT_TRUE(equal(i.nan_to_num(), i));
  EXPECT_FALSE(i.nan_to_num().is_same(i));
  EXPECT_TRUE(equal(x.isinf(), tensor({false, true, true, false})));
  EXPECT_TRUE(equal(x.isposinf(), tensor({false, true, false, false})));
  EXPECT_TRUE(equal(x.isneginf(), tensor({false, false, true, false})));
  EXPECT_TRUE(equal(x.isfinite(), tensor({false, false, false, true})));
  EXPECT_TRUE(equal(i.isinf(), tensor({false, false})));
  EXPECT_TRUE(equal(i.isfinite(), tensor({true, true})));

  Tensor c = tensor({true, false});
  EXPECT_EQ(ember::where(c, 1, 0).dtype(), kLong);
  EXPECT_TRUE(equal(ember::where(c, 1, 0), tensor({1, 0}, kLong)));
  EXPECT_EQ(ember::where(c, 1.0, 0).dtype(), kFloat);
  Tensor i32 = tensor({1, 2}, kInt);
  EXPECT_EQ(ember::where(c, i32, 2.5).dtype(), kFloat);
  EXPECT_TRUE(equal(ember::where(c, i32, 2.5), tensor({1.0, 2.5})));
  EXPECT_EQ(ember::where(c, 2, i32.to(kHalf)).dtype(), kHalf);
  EXPECT_EQ(ember::where(c, i32, 7).dtype(), kInt);

  Tensor z = tensor({0, 1, 2, 0, 0, 3}, kLong).reshape({2, 3});
  EXPECT_TRUE(equal(ember::count_nonzero(z), scalar_tensor(3, kLong)));
  EXPECT_TRUE(equal(z.count_nonzero(std::optional<int64_t>(0)),
                    tensor({0, 1, 2}, kLong)));
  EXPECT_TRUE(equal(ember::count_nonzero(z, IntArrayRef{0, 1}),
                    scalar_tensor(3, kLong)));

  EXPECT_TRUE(equal(
      ember::floor_divide(tensor({-7, 7, 7}, kLong), tensor({2, -2, 2}, kLong)),
      tensor({-4, -4, 3}, kLong)));
  EXPECT_TRUE(equal(tensor({-7.5, 7.0}).floor_divide(2), tensor({-4.0, 3.0})));
}

// What a second probe found in the functions above: where raises for a
// number its result's dtype cannot hold; nan_to_num takes replacements
// beyond the dtype's range as a cast does (inf, or the largest value), and
// its gradient keeps a NaN incoming one; clamp keeps x unless it lies
// strictly beyond a bound (-0.0 stays -0.0), as PyTorch's.
TEST(TopLevel, WhereNumbersFitNanToNumRangesClampSignedZeros) {
  Tensor c = tensor({true, false});
  EXPECT_EMBER_ERROR(ember::where(c, tensor({1, 2}, kChar), 1000),
                     "without overflow");
  EXPECT_EMBER_ERROR(ember::where(c, 300, tensor({1, 2}, kByte)),
                     "without overflow");
  EXPECT_EMBER_ERROR(ember::where(c, tensor({1.0f, 2.0f}), 1e300),
                     "without overflow");
  EXPECT_TRUE(equal(ember::where(c, tensor({1, 2}, kChar), 100),
                    tensor({1, 100}, kChar)));
  EXPECT_EMBER_ERROR(ember::where(c, 1, 1e300), "without overflow");
  // (float16 and bfloat16 take any number, as PyTorch's where)
  EXPECT_TRUE(equal(ember::where(c, tensor({1.0, 2.0}, kHalf), 1e10),
                    tensor({1.0, INFINITY}, kHalf)));
  const double inf = INFINITY;
  Tensor h = tensor({std::nan(""), inf, -inf, 1.0}, kHalf);
  EXPECT_TRUE(equal(h.nan_to_num(1e10, 65510.0, -70000.0),
                    tensor({inf, 65504.0, -inf, 1.0}, kHalf)));
  EXPECT_TRUE(equal(tensor({inf}).nan_to_num(0.0, 1e300), tensor({inf})));
  EXPECT_TRUE(equal(tensor({inf}, kBFloat16).nan_to_num(0.0, 3.39e38),
                    tensor({3.3895313892515355e38}, kBFloat16)));
  Tensor b = tensor({std::nan(""), 1.0}, kDouble).requires_grad_(true);
  Tensor g = autograd::grad({b.nan_to_num()}, {b},
                            {tensor({std::nan(""), 2.0}, kDouble)})[0];
  EXPECT_TRUE(std::isnan(g[0].item<double>()));
  EXPECT_EQ(g[1].item<double>(), 2.0);
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    Tensor z = tensor({-0.0}, dt);
    for (const Tensor &r : {z.clamp(0, 1), z.clamp_min(0),
                            nn::functional::relu6(z), ember::hardtanh(z, 0, 1),
                            z.clamp(std::optional<Tensor>(tensor({0.0}, dt)),
                                    std::optional<Tensor>(tensor({1.0}, dt)))})
      EXPECT_TRUE(std::signbit(r.item<double>())) << dt;
    EXPECT_FALSE(std::signbit(tensor({0.0}, dt).clamp_max(-0.0).item<double>()))
        << dt;
  }
}

// Bool tensors in sub, rsub and neg raise PyTorch's messages; abs of bool
// raises, as PyTorch's.
TEST(TopLevel, BoolSubtractionAndNegationRaise) {
  Tensor b = tensor({true, false});
  EXPECT_EMBER_ERROR(b - 1, "with a bool tensor is not supported");
  EXPECT_EMBER_ERROR(2 - b, "with a bool tensor is not supported");
  EXPECT_EMBER_ERROR(tensor({1, 2}) - b, "with a bool tensor is not supported");
  EXPECT_EMBER_ERROR(b - b, "with two bool tensors is not supported");
  EXPECT_EMBER_ERROR(-b, "Negation, the `-` operator, on a bool tensor");
  EXPECT_EMBER_ERROR(b.abs(), "abs");
  EXPECT_TRUE(equal(tensor({3, 4}) - 1, tensor({2, 3})));
}

// fmax/fmin (NaN ignored unless both are; gradients split at a tie),
// var_mean/std_mean, and hardtanh's fused backward with its double
// backward, against PyTorch 2.15's values.
TEST(TopLevel, FmaxFminVarMeanHardtanhBackward) {
  const double nan = std::nan("");
  auto t = [](std::vector<double> v) { return tensor(v, kDouble); };
  Tensor a = t({nan, 1, nan, 3, 2}).requires_grad_(true),
         b = t({1, nan, nan, 2, 2}).requires_grad_(true);
  Tensor y = ember::fmax(a, b);
  EXPECT_EQ(y.grad_fn()->name(), "FmaxBackward0");
  EXPECT_TRUE(close(y.detach(), t({1, 1, nan, 3, 2}), 0, 0));
  auto g = autograd::grad({y.sum()}, {a, b});
  EXPECT_TRUE(close(g[0], t({0, 1, 1, 1, 0.5}), 0, 0));
  EXPECT_TRUE(close(g[1], t({1, 0, 0, 0, 0.5}), 0, 0));
  y = ember::fmin(a, b);
  EXPECT_TRUE(close(y.detach(), t({1, 1, nan, 2, 2}), 0, 0));
  g = autograd::grad({y.sum()}, {a, b});
  EXPECT_TRUE(close(g[0], t({0, 1, 1, 0, 0.5}), 0, 0));
  EXPECT_TRUE(close(g[1], t({1, 0, 0, 1, 0.5}), 0, 0));
  EXPECT_TRUE(equal(tensor({1, 5}, kInt).fmax(tensor({3, 2}, kInt)),
                    tensor({3, 5}, kInt)));

  Tensor x = tensor({1.0, 2.0, 4.0, 3.0, 5.0, 9.0}).reshape({2, 3});
  auto [v, m] = ember::var_mean(x, IntArrayRef{1});
  EXPECT_TRUE(close(v, tensor({2.3333332538604736, 9.333333015441895})));
  EXPECT_TRUE(close(m, tensor({2.3333332538604736, 5.666666507720947})));
  auto [s, m2] = ember::std_mean(x);
  EXPECT_NEAR(s.item<double>(), 2.8284270763397217, 1e-6);
  EXPECT_NEAR(m2.item<double>(), 4.0, 1e-6);
  auto [v3, m3] = ember::var_mean(x, IntArrayRef{0}, 0, true);
  EXPECT_TRUE(close(v3, tensor({1.0, 2.25, 6.25}).reshape({1, 3})));
  EXPECT_TRUE(close(m3, tensor({2.0, 3.5, 6.5}).reshape({1, 3})));

  Tensor h = tensor({-1.0, -0.5, 0.0, 0.25, 1.0, nan}).requires_grad_(true);
  Tensor gh = autograd::grad(
      {nn::functional::hardtanh(
           h, nn::functional::HardtanhFuncOptions().min_val(-0.5).max_val(0.25))
           .sum()},
      {h}, {}, /*retain_graph=*/true,
      /*create_graph=*/true)[0];
  EXPECT_TRUE(close(gh.detach(), tensor({0.0, 0.0, 1.0, 0.0, 0.0, 1.0}), 0, 0));
  EXPECT_EQ(gh.grad_fn()->name(), "HardtanhBackwardBackward0");
}
