// Mixed precision: autocast (the policies of PyTorch's op lists, the
// region's state, the cast cache, autograd and checkpoint under autocast,
// compile() under autocast) and GradScaler (the skip/backoff/growth
// sequence, the order of calls, every optimizer, clipping, state).
#include "TestUtil.h"

#include "eager/profiler/Profiler.h"

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

using namespace ember;
using autocast::CastPolicy;
using ember::test::close;
using ember::test::random;

namespace {

// PyTorch's autocast op lists (the "Autocast Op Reference" of the torch.amp
// docs and aten/src/ATen/autocast_mode.cpp), for the ops ember has: the
// policy each op has on the CPU and on CUDA. Written here from those lists,
// not from ops.yaml, which the test checks against them.
struct Expected {
  const char *op;
  CastPolicy cpu, cuda;
};
constexpr CastPolicy L = CastPolicy::lower_precision_fp, F = CastPolicy::fp32,
                     D = CastPolicy::fp32_set_opt_dtype,
                     P = CastPolicy::promote, B = CastPolicy::banned,
                     N = CastPolicy::none;
const Expected kPyTorchLists[] = {
    // lower_precision_fp on both (CPU: bfloat16 list; CUDA: float16 list)
    {"ember::mm", L, L},
    {"ember::bmm", L, L},
    {"ember::addmm", L, L},
    {"ember::baddbmm", L, L},
    {"ember::matmul", L, L},
    {"ember::linear", L, L},
    {"ember::conv1d", L, L},
    {"ember::conv1d.padding", L, L},
    {"ember::conv2d", L, L},
    {"ember::conv2d.padding", L, L},
    {"ember::scaled_dot_product_attention", L, L},
    // CUDA only
    {"ember::mv", N, L},
    {"ember::einsum", N, L},
    // fp32 on CUDA
    {"ember::exp", N, F},
    {"ember::expm1", N, F},
    {"ember::log", N, F},
    {"ember::log2", N, F},
    {"ember::log10", N, F},
    {"ember::log1p", N, F},
    {"ember::rsqrt", N, F},
    {"ember::reciprocal", N, F},
    {"ember::tan", N, F},
    {"ember::asin", N, F},
    {"ember::acos", N, F},
    {"ember::sinh", N, F},
    {"ember::cosh", N, F},
    {"ember::softplus", N, F},
    {"ember::pow.Tensor_Scalar", N, F},
    {"ember::pow.Tensor_Tensor", N, F},
    {"ember::pow.Scalar", N, F},
    {"ember::layer_norm", N, F},
    {"ember::native_layer_norm", N, F},
    {"ember::group_norm", N, F},
    {"ember::logsumexp", N, F},
    {"ember::norm.Scalar", N, F},
    {"ember::norm.ScalarOpt_dim", N, F},
    // fp32_set_opt_dtype on CUDA
    {"ember::sum", N, D},
    {"ember::sum.dim_IntList", N, D},
    {"ember::cumsum", N, D},
    {"ember::cumprod", N, D},
    {"ember::softmax.int", N, D},
    {"ember::log_softmax.int", N, D},
    {"ember::prod", F, D},
    {"ember::prod.dim_int", F, D},
    // fp32 on both: the losses
    {"ember::mse_loss", F, F},
    {"ember::l1_loss", F, F},
    {"ember::smooth_l1_loss", F, F},
    {"ember::huber_loss", F, F},
    {"ember::nll_loss", F, F},
    {"ember::nll_loss2d", F, F},
    {"ember::cross_entropy_loss", F, F},
    {"ember::binary_cross_entropy_with_logits", F, F},
    {"ember::kl_div", F, F},
    {"ember::binary_cross_entropy", F, B},
    // fp32 on the CPU: padding
    {"ember::reflection_pad1d", F, N},
    {"ember::reflection_pad2d", F, N},
    {"ember::replication_pad1d", F, N},
    {"ember::replication_pad2d", F, N},
    {"ember::replication_pad3d", F, N},
    // promote
    {"ember::cat", P, N},
    {"ember::stack", P, N},
    {"ember::addcmul", N, P},
    {"ember::addcdiv", N, P},
    {"ember::atan2", N, P},
    {"ember::dot", N, P},
    {"ember::scatter_add", N, P},
    // on no list: they run in the dtype they are given
    {"ember::add.Tensor", N, N},
    {"ember::relu", N, N},
    {"ember::mean", N, N},
    {"ember::max_pool2d", N, N},
    {"ember::exp_", N, N},
    {"ember::_to_copy", N, N},
};

/// The number of calls of `op` while `fn` runs.
int64_t calls_of(const std::string &op, const std::function<void()> &fn) {
  profiler::profile prof({profiler::ProfilerActivity::CPU});
  {
    auto g = prof.guard();
    fn();
  }
  return prof.key_averages().find(op).count;
}

} // namespace

TEST(AutocastPolicy, OpsYamlHoldsPyTorchsLists) {
  for (const Expected &e : kPyTorchLists) {
    EXPECT_EQ(autocast::policy_of(e.op, kCPU), e.cpu)
        << e.op << " on cpu: " << autocast::toString(e.cpu) << " expected";
    EXPECT_EQ(autocast::policy_of(e.op, kCUDA), e.cuda)
        << e.op << " on cuda: " << autocast::toString(e.cuda) << " expected";
  }
  // And ops.yaml has no policy the lists lack.
  for (const auto &row : autocast::detail::policy_table()) {
    bool listed = false;
    for (const Expected &e : kPyTorchLists)
      listed = listed || std::string(e.op) == row.name;
    EXPECT_TRUE(listed) << row.name << " has a policy on no PyTorch list";
  }
}

TEST(AutocastPolicy, NamesWithoutOverloadFindTheirOps) {
  EXPECT_EQ(autocast::policy_of("ember::softmax", kCUDA),
            CastPolicy::fp32_set_opt_dtype);
  EXPECT_EQ(autocast::policy_of("ember::pow", kCUDA), CastPolicy::fp32);
  EXPECT_EQ(autocast::policy_of("ember::pow", kCPU), CastPolicy::none);
  EXPECT_EQ(autocast::policy_of("ember::conv2d", kCPU),
            CastPolicy::lower_precision_fp);
  EXPECT_EQ(autocast::policy_of("ember::po", kCUDA), CastPolicy::none);
  EXPECT_EQ(autocast::policy_of("nonsense", kCPU), CastPolicy::none);
}

TEST(Autocast, NnModulesAndFunctionalFormsFollowTheirOps) {
  namespace F = nn::functional;
  Tensor big = full({4, 3}, 320.0), zero = zeros({4, 3});
  {
    // float16: a squared error of 320^2 overflows unless computed in float32.
    amp::autocast g(kCPU, kHalf);
    Tensor h = big.to(kHalf);
    for (Tensor l :
         {mse_loss(h, zero.to(kHalf)), F::mse_loss(h, zero.to(kHalf)),
          nn::MSELoss()->forward(h, zero.to(kHalf))}) {
      EXPECT_EQ(l.dtype(), kFloat);
      EXPECT_EQ(l.item<double>(), 102400.0);
    }
  }
  Tensor logits = random({5, 4}, kBFloat16, 1);
  Tensor labels = randint(0, 4, {5}, Generator(2));
  Tensor p = random({5, 4}, kFloat, 3).sigmoid().to(kBFloat16);
  Tensor img = random({2, 3, 8, 8}, kFloat, 4);
  amp::autocast g(kCPU, kBFloat16);
  EXPECT_EQ(nn::CrossEntropyLoss()->forward(logits, labels).dtype(), kFloat);
  EXPECT_EQ(F::cross_entropy(logits, labels).dtype(), kFloat);
  EXPECT_EQ(nn::NLLLoss()->forward(logits.log_softmax(1), labels).dtype(),
            kFloat);
  EXPECT_EQ(nn::L1Loss()->forward(p, p).dtype(), kFloat);
  EXPECT_EQ(nn::SmoothL1Loss()->forward(p, p).dtype(), kFloat);
  EXPECT_EQ(nn::BCELoss()->forward(p, p).dtype(), kFloat);
  EXPECT_EQ(nn::BCEWithLogitsLoss()->forward(p, p).dtype(), kFloat);
  // Convolutions in bfloat16, whatever dtype reaches them.
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).bias(false)),
                     nn::ReLU(), nn::Conv2d(nn::Conv2dOptions(4, 2, 3)));
  Tensor y = net->forward(img);
  EXPECT_EQ(y.dtype(), kBFloat16);
  Tensor w = random({4, 3, 3, 3}, kFloat, 5), bias = random({4}, kFloat, 6);
  Tensor y1 =
      F::conv2d(img.to(kBFloat16), w, F::Conv2dFuncOptions().bias(bias));
  EXPECT_EQ(y1.dtype(), kBFloat16);
  EXPECT_TRUE(close(y1, conv2d(img, w, bias), 0, 0));
  EXPECT_EQ(F::conv2d(img, w, F::Conv2dFuncOptions().padding(kSame)).dtype(),
            kBFloat16);
  EXPECT_EQ(nn::Conv1d(nn::Conv1dOptions(3, 2, 3))
                ->forward(random({2, 3, 9}, kFloat, 7))
                .dtype(),
            kBFloat16);
  // Reflect and replicate padding in float32, as PyTorch's F.pad.
  Tensor s1 = random({2, 3, 6}, kBFloat16, 8);
  EXPECT_EQ(F::pad(s1, F::PadFuncOptions({1, 2}).mode(kReflect)).dtype(),
            kFloat);
  EXPECT_EQ(pad(s1, {1, 1}, "replicate").dtype(), kFloat);
  EXPECT_EQ(F::pad(s1, F::PadFuncOptions({1, 2})).dtype(), kBFloat16);
  EXPECT_EQ(F::pad(s1, F::PadFuncOptions({1, 2}).mode(kCircular)).dtype(),
            kBFloat16);
  // Attention in bfloat16, also through the module.
  Tensor q = random({2, 5, 8}, kFloat, 9);
  EXPECT_EQ(F::scaled_dot_product_attention(q, q, q).dtype(), kBFloat16);
  nn::MultiheadAttention mha(8, 2);
  EXPECT_EQ(std::get<0>(mha->forward(q.transpose(0, 1), q.transpose(0, 1),
                                     q.transpose(0, 1)))
                .dtype(),
            kBFloat16);
  // With a float mask too, the attention weights stay bfloat16 (PyTorch's
  // baddbmm casts the mask with the product).
  Tensor qt = q.transpose(0, 1), fmask = zeros({5, 5});
  fmask.select(0, 1).select(0, 2).fill_(-1e4);
  auto [o2, w2] = mha->forward(qt, qt, qt, Tensor(), true, fmask);
  EXPECT_EQ(o2.dtype(), kBFloat16);
  EXPECT_EQ(w2.dtype(), kBFloat16);
}

TEST(Autocast, LowerPrecisionOpsRunInTheRegionsDtype) {
  Tensor a = random({5, 7}, kFloat, 1), b = random({7, 3}, kFloat, 2);
  Tensor bias = random({3}, kFloat, 3);
  Tensor ba = random({2, 5, 7}, kFloat, 4), bb = random({2, 7, 3}, kFloat, 5);
  Tensor w = random({3, 7}, kFloat, 6);
  Tensor img = random({2, 3, 8, 8}, kFloat, 7),
         k = random({4, 3, 3, 3}, kFloat, 8);
  Tensor sig = random({2, 3, 10}, kFloat, 9),
         k1 = random({4, 3, 3}, kFloat, 10);
  Tensor q = random({2, 4, 6}, kFloat, 11);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    std::vector<std::pair<Tensor, Tensor>> got; // (autocast, reference)
    {
      amp::autocast guard(kCPU, dt);
      got.push_back({mm(a, b), Tensor()});
      got.push_back({bmm(ba, bb), Tensor()});
      got.push_back({addmm(bias, a, b), Tensor()});
      got.push_back({baddbmm(bias, ba, bb), Tensor()});
      got.push_back({matmul(a, b), Tensor()});
      got.push_back({linear(a, w, bias), Tensor()});
      got.push_back({conv2d(img, k), Tensor()});
      got.push_back({conv1d(sig, k1), Tensor()});
      got.push_back({scaled_dot_product_attention(q, q, q), Tensor()});
    }
    // The same ops on inputs cast by hand, outside the region: equal bits.
    auto c = [&](const Tensor &t) { return t.to(dt); };
    std::vector<Tensor> ref = {mm(c(a), c(b)),
                               bmm(c(ba), c(bb)),
                               addmm(c(bias), c(a), c(b)),
                               baddbmm(c(bias), c(ba), c(bb)),
                               matmul(c(a), c(b)),
                               linear(c(a), c(w), c(bias)),
                               conv2d(c(img), c(k)),
                               conv1d(c(sig), c(k1)),
                               scaled_dot_product_attention(c(q), c(q), c(q))};
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_EQ(got[i].first.dtype(), dt) << "op " << i;
      EXPECT_TRUE(close(got[i].first, ref[i], 0, 0)) << "op " << i;
    }
  }
}

TEST(Autocast, Fp32OpsPromoteOpsAndOpsOnNoList) {
  Tensor x = random({4, 6}, kBFloat16, 1), t = random({4, 6}, kFloat, 2);
  Tensor logits = random({4, 5}, kBFloat16, 3);
  Tensor labels = randint(0, 5, {4}, Generator(3));
  Tensor p = (random({4, 6}, kFloat, 4).sigmoid()).to(kBFloat16);
  Tensor target01 = rand({4, 6}, Generator(5));
  amp::autocast guard(kCPU); // bfloat16, the CPU default
  EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
  // fp32: the losses take bfloat16 inputs and compute in float32.
  Tensor l = mse_loss(x, t);
  EXPECT_EQ(l.dtype(), kFloat);
  EXPECT_TRUE(close(l, mse_loss(x.to(kFloat), t), 0, 0));
  EXPECT_EQ(cross_entropy_loss(logits, labels).dtype(), kFloat);
  EXPECT_EQ(binary_cross_entropy(p, target01).dtype(), kFloat);
  EXPECT_EQ(l1_loss(x, x).dtype(), kFloat);
  EXPECT_EQ(prod(x).dtype(), kFloat);
  // promote: the widest floating type of the list.
  Tensor cat_ = cat({x, t});
  EXPECT_EQ(cat_.dtype(), kFloat);
  EXPECT_EQ(stack({x, t}).dtype(), kFloat);
  EXPECT_EQ(cat({x, x}).dtype(), kBFloat16);
  // On no CPU list: as given (exp and softmax are fp32 only on CUDA).
  EXPECT_EQ(x.exp().dtype(), kBFloat16);
  EXPECT_EQ(x.softmax(-1).dtype(), kBFloat16);
  EXPECT_EQ(x.relu().dtype(), kBFloat16);
  EXPECT_EQ((x + t).dtype(), kFloat); // ordinary type promotion
}

TEST(Autocast, DoubleIntegerAndOtherTensorsAreNotCast) {
  Tensor a = random({3, 4}, kDouble, 1), b = random({4, 2}, kDouble, 2);
  Tensor ia = random({3, 4}, kLong, 3), ib = random({4, 2}, kLong, 4);
  Tensor ref = mm(a, b);
  amp::autocast guard(kCPU, kBFloat16);
  EXPECT_EQ(mm(a, b).dtype(), kDouble);
  EXPECT_TRUE(close(mm(a, b), ref, 0, 0));
  EXPECT_EQ(mm(ia, ib).dtype(), kLong);
  EXPECT_EQ(mse_loss(a, a * 2).dtype(), kDouble); // fp32 leaves float64 be
  // Empty, 0-dim and non-contiguous inputs.
  Tensor e = mm(empty({0, 4}), random({4, 2}, kFloat, 5));
  EXPECT_EQ(e.dtype(), kBFloat16);
  EXPECT_EQ(e.sizes(), IntArrayRef({0, 2}));
  Tensor s = random({}, kBFloat16, 6);
  EXPECT_EQ(mse_loss(s, s).dtype(), kFloat);
  Tensor nc = random({4, 3}, kFloat, 7).t();
  EXPECT_FALSE(nc.is_contiguous());
  EXPECT_TRUE(close(
      mm(nc, random({4, 2}, kFloat, 8)),
      mm(nc.to(kBFloat16), random({4, 2}, kFloat, 8).to(kBFloat16)), 0, 0));
}

TEST(Autocast, RegionsNestRestoreAndAreThreadLocal) {
  Tensor a = random({2, 3}, kFloat, 1), b = random({3, 2}, kFloat, 2);
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  {
    amp::autocast outer(kCPU, kBFloat16);
    EXPECT_TRUE(autocast::is_autocast_enabled(kCPU));
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    {
      amp::autocast off(kCPU, std::nullopt, /*enabled=*/false);
      EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
      EXPECT_EQ(mm(a, b).dtype(), kFloat);
      amp::autocast half(kCPU, kHalf);
      EXPECT_EQ(mm(a, b).dtype(), kHalf);
    }
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
    EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
    // Another thread starts with autocast off.
    ScalarType other = kDouble;
    std::thread th([&] { other = mm(a, b).dtype(); });
    th.join();
    EXPECT_EQ(other, kFloat);
  }
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  EXPECT_EQ(mm(a, b).dtype(), kFloat);
  // The spelling the issue proposed is the same guard.
  {
    autocast::AutocastGuard g(kCPU, kBFloat16);
    EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
  }
  EXPECT_EQ(mm(a, b).dtype(), kFloat);
}

TEST(Autocast, BadArgumentsRaiseAndChangeNothing) {
  try {
    amp::autocast g(kCPU, kFloat);
    FAIL() << "float32 is not a lower precision";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("float16 or bfloat16"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_THROW(autocast::set_autocast_dtype(kCUDA, kInt), Error);
  EXPECT_EQ(autocast::get_autocast_dtype(kCUDA), kHalf);
  if (!cuda::is_available()) {
    // As torch.autocast: a warning, and the region does nothing.
    amp::autocast g(kCUDA);
    EXPECT_FALSE(autocast::is_autocast_enabled(kCUDA));
  }
  // A CUDA region leaves CPU ops alone.
  autocast::set_autocast_enabled(kCUDA, true);
  EXPECT_EQ(mm(random({2, 2}), random({2, 2})).dtype(), kFloat);
  autocast::set_autocast_enabled(kCUDA, false);
}

TEST(Autocast, WeightCastsAreCachedPerRegion) {
  nn::Linear lin(8, 8);
  Tensor x = random({4, 8}, kFloat, 1);
  // `_to_copy` calls in one region of `uses` forwards (the bfloat16
  // kernels convert internally too: the test counts differences).
  auto casts = [&](int uses, bool cache) {
    return calls_of("ember::_to_copy", [&] {
      amp::autocast g(kCPU, kBFloat16, true, cache);
      for (int i = 0; i < uses; ++i)
        lin->forward(x);
    });
  };
  // The weight and bias are cast once per region with the cache, at each
  // use without it; x (not a leaf that requires grad) at each use.
  EXPECT_EQ(casts(1, false) - casts(1, true), 0);
  EXPECT_EQ(casts(3, false) - casts(3, true), 2 * 2);
  EXPECT_EQ(casts(5, false) - casts(5, true), 2 * 4);
  // A new region casts them again (the cache ends with the outermost
  // region), and nested regions share the outer one's cache.
  EXPECT_EQ(casts(1, true), casts(1, true));
  int64_t nested = calls_of("ember::_to_copy", [&] {
    amp::autocast outer(kCPU, kBFloat16);
    lin->forward(x);
    amp::autocast inner(kCPU, kBFloat16);
    lin->forward(x);
  });
  EXPECT_EQ(nested, casts(2, true));
}

TEST(Autocast, CachedCastsFollowWritesAndGradMode) {
  Tensor w = random({3, 3}, kFloat, 1).requires_grad_();
  Tensor x = random({2, 3}, kFloat, 2);
  amp::autocast g(kCPU, kBFloat16);
  {
    NoGradGuard ng;
    mm(x, w); // the weight's cast is made (and cached) without a history
  }
  // Needed with a history now: made again (PyTorch's cache would hand out
  // the cast without one, and w would get no gradient).
  mm(x, w).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat);
  EXPECT_TRUE(close(w.grad(),
                    x.to(kBFloat16).t().sum(1, true).expand({3, 3}).to(kFloat),
                    1.6e-2, 1e-3));
  // A weight written since its cast is cast again.
  {
    NoGradGuard ng;
    w.add_(1.0);
  }
  EXPECT_TRUE(
      close(mm(x, w), mm(x.to(kBFloat16), w.detach().to(kBFloat16)), 0, 0));
}

TEST(Autocast, GradientsReachWeightsInTheirDtype) {
  // A float32 model under bfloat16 autocast: the same gradients as the
  // model written with explicit casts, reaching the weights in float32.
  Tensor x = random({6, 5}, kFloat, 1), tgt = random({6, 3}, kFloat, 2);
  Tensor w1 = (random({4, 5}, kFloat, 3) * 0.5).requires_grad_();
  Tensor b1 = random({4}, kFloat, 4).requires_grad_();
  Tensor w2 = (random({3, 4}, kFloat, 5) * 0.5).requires_grad_();
  auto bf = [](const Tensor &t) { return t.to(kBFloat16); };
  Tensor loss;
  {
    amp::autocast g(kCPU, kBFloat16);
    Tensor h = linear(x, w1, b1).relu();
    EXPECT_EQ(h.dtype(), kBFloat16);
    loss = mse_loss(linear(h, w2), tgt);
  }
  EXPECT_EQ(loss.dtype(), kFloat);
  auto grads = autograd::grad({loss}, {w1, b1, w2});
  Tensor h = linear(bf(x), bf(w1), bf(b1)).relu();
  Tensor ref_loss = mse_loss(linear(h, bf(w2)).to(kFloat), tgt);
  auto ref = autograd::grad({ref_loss}, {w1, b1, w2});
  EXPECT_TRUE(close(loss, ref_loss, 0, 0));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(grads[i].dtype(), kFloat);
    EXPECT_TRUE(close(grads[i], ref[i], 0, 0)) << "gradient " << i;
  }
  // Backward called inside a region runs as outside it: the backward ops
  // run in the dtypes the forward chose.
  Tensor loss2;
  std::vector<Tensor> grads2;
  {
    amp::autocast g(kCPU, kBFloat16);
    loss2 = mse_loss(linear(linear(x, w1, b1).relu(), w2), tgt);
    grads2 = autograd::grad({loss2}, {w1, b1, w2});
  }
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(close(grads2[i], ref[i], 0, 0)) << "gradient " << i;
}

TEST(Autocast, CheckpointRecomputesUnderTheForwardsState) {
  Tensor x = random({4, 6}, kFloat, 1);
  Tensor w = random({6, 6}, kFloat, 2).requires_grad_();
  auto block = [&](const Tensor &t) { return matmul(t, w).tanh(); };
  Tensor plain, ckpt;
  {
    amp::autocast g(kCPU, kBFloat16);
    plain = block(x).to(kFloat).sum();
  }
  Tensor gp = autograd::grad({plain}, {w})[0];
  {
    amp::autocast g(kCPU, kBFloat16);
    ckpt = checkpoint(block, x).to(kFloat).sum();
  }
  Tensor gc = autograd::grad({ckpt}, {w})[0]; // recomputed outside the region
  EXPECT_TRUE(close(gc, gp, 0, 0));
}

TEST(Autocast, CompiledEqualsEagerAndCastsFuse) {
  Tensor x = random({8, 16}, kFloat, 1), w = random({16, 16}, kFloat, 2),
         b = random({16}, kFloat, 3), t = random({8, 16}, kFloat, 4);
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b,
               const Tensor &t) {
    Tensor h = linear(x, w, b).relu();
    return std::make_tuple(h, mse_loss(h, t));
  };
  auto compiled = compile(fn);
  Tensor eh, el, ch, cl;
  {
    amp::autocast g(kCPU, kBFloat16);
    std::tie(eh, el) = fn(x, w, b, t);
    std::tie(ch, cl) = compiled(x, w, b, t);
  }
  EXPECT_EQ(ch.dtype(), kBFloat16);
  EXPECT_EQ(cl.dtype(), kFloat);
  EXPECT_TRUE(close(ch, eh, 0, 0));
  EXPECT_TRUE(close(cl, el, 1e-6, 1e-7));
  ExplainOutput e = compiled.explain();
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_NE(e.graphs[0].trace.find("_to_copy"), std::string::npos)
      << e.graphs[0].trace;
  // No cast runs as an eager step: they fuse into the kernels.
  for (const std::string &r : e.graphs[0].fallback_reasons)
    EXPECT_EQ(r.find("_to_copy"), std::string::npos) << r;
  // Without autocast the same function is another graph, in float32.
  auto [fh, fl] = compiled(x, w, b, t);
  EXPECT_EQ(fh.dtype(), kFloat);
  EXPECT_TRUE(close(fh, std::get<0>(fn(x, w, b, t)), 1e-5, 1e-6));
  ExplainOutput e2 = compiled.explain();
  ASSERT_EQ(e2.recompiles.size(), 1u);
  EXPECT_EQ(e2.recompiles[0].reason,
            "fn0_graph0: autocast changed. expected autocast cpu=bfloat16, "
            "actual autocast off");
}

TEST(Autocast, CompiledRegionInsideTheFunctionAndReplay) {
  Tensor x = random({4, 8}, kFloat, 1), w = random({8, 8}, kFloat, 2);
  auto fn = [](const Tensor &x, const Tensor &w) {
    amp::autocast g(kCPU, kBFloat16);
    return matmul(x, w).sum(-1);
  };
  auto compiled = compile(fn);
  Tensor e = fn(x, w), c = compiled(x, w);
  EXPECT_EQ(c.dtype(), kBFloat16);
  EXPECT_TRUE(close(c, e, 0, 0));
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  // Replay mode guards on the autocast state around the call.
  auto f2 = [](const Tensor &x, const Tensor &w) { return matmul(x, w); };
  auto replayed = compile(f2, CompileOptions().replay(true));
  Tensor r32 = replayed(x, w);
  Tensor r16;
  {
    amp::autocast g(kCPU, kBFloat16);
    r16 = replayed(x, w);
  }
  Tensor r32b = replayed(x, w);
  EXPECT_EQ(r32.dtype(), kFloat);
  EXPECT_EQ(r16.dtype(), kBFloat16);
  EXPECT_EQ(r32b.dtype(), kFloat);
  EXPECT_TRUE(close(r16, matmul(x.to(kBFloat16), w.to(kBFloat16)), 0, 0));
}

TEST(Autocast, CompiledTrainingUnderAutocastEqualsEager) {
  Tensor x = random({8, 6}, kFloat, 1), t = random({8, 4}, kFloat, 2);
  Tensor w = (random({4, 6}, kFloat, 3) * 0.4).requires_grad_();
  Tensor b = random({4}, kFloat, 4).requires_grad_();
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b,
               const Tensor &t) { return mse_loss(linear(x, w, b).tanh(), t); };
  auto compiled = compile(fn);
  for (int step = 0; step < 2; ++step) {
    Tensor le, lc;
    {
      amp::autocast g(kCPU, kBFloat16);
      le = fn(x, w, b, t);
    }
    auto ge = autograd::grad({le}, {w, b});
    {
      amp::autocast g(kCPU, kBFloat16);
      lc = compiled(x, w, b, t);
    }
    auto gc = autograd::grad({lc}, {w, b});
    EXPECT_TRUE(close(lc, le, 1e-6, 1e-7));
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(gc[i].dtype(), kFloat);
      // bfloat16 intermediates: a fused kernel may round once where eager
      // rounds twice.
      EXPECT_TRUE(close(gc[i], ge[i], 1.6e-2, 1e-3)) << "gradient " << i;
    }
  }
}

// --- GradScaler -------------------------------------------------------------

namespace {
/// One parameter whose gradient a test sets by hand.
struct Fixture {
  Tensor p = random({4}, kFloat, 1).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{p}, 0.5};
  void set_grad(const Tensor &g) { p.mutable_grad() = g.clone(); }
};
} // namespace

TEST(GradScaler, SkipBackoffAndGrowthSequence) {
  Fixture f;
  amp::GradScaler scaler(kCPU, /*init_scale=*/8.0, /*growth_factor=*/2.0,
                         /*backoff_factor=*/0.25, /*growth_interval=*/3);
  EXPECT_EQ(scaler.get_scale(), 8.0);
  Tensor loss = scaler.scale(f.p.sum());
  EXPECT_EQ(loss.item<double>(), 8.0 * f.p.sum().item<double>());
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // finite, finite, finite (grow), inf (skip, back off), nan (skip, back
  // off), finite x3 (grow)
  struct Step {
    float bad; // 0: finite gradients
    double scale_after;
    int64_t tracker_after;
  };
  std::vector<Step> steps = {{0, 8, 1},   {0, 8, 2},   {0, 16, 0},
                             {inf, 4, 0}, {nan, 1, 0}, {0, 1, 1},
                             {0, 1, 2},   {0, 2, 0},   {-inf, 0.5, 0}};
  for (size_t i = 0; i < steps.size(); ++i) {
    double s = scaler.get_scale();
    Tensor g = random({4}, kFloat, 10 + i) * s;
    if (steps[i].bad != 0)
      g.select(0, 2).fill_(steps[i].bad);
    f.set_grad(g);
    Tensor before = f.p.detach().clone();
    std::optional<Tensor> r = scaler.step(f.opt);
    if (steps[i].bad != 0) {
      EXPECT_FALSE(r.has_value()) << "step " << i;
      EXPECT_TRUE(close(f.p, before, 0, 0)) << "step " << i << " not skipped";
    } else {
      EXPECT_TRUE(r.has_value()) << "step " << i;
      // SGD with lr 0.5 on the unscaled gradient (a power-of-2 scale
      // divides exactly).
      EXPECT_TRUE(close(f.p, before - 0.5 * (g / s), 0, 0)) << "step " << i;
    }
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), steps[i].scale_after) << "step " << i;
    EXPECT_EQ(scaler.get_growth_tracker(), steps[i].tracker_after)
        << "step " << i;
  }
}

TEST(GradScaler, GrowthStopsBeforeInfinity) {
  Fixture f;
  amp::GradScaler scaler(kCPU, 3e38, 2.0, 0.5, 1);
  scaler.scale(f.p.sum());
  f.set_grad(ones({4}));
  scaler.step(f.opt);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), double(float(3e38))); // 6e38 is not finite
}

TEST(GradScaler, CallsOutOfOrderRaise) {
  Fixture f;
  amp::GradScaler scaler(kCPU);
  f.set_grad(ones({4}));
  EXPECT_THROW(scaler.unscale_(f.opt), Error); // nothing scaled yet
  scaler.scale(f.p.sum());
  EXPECT_THROW(scaler.update(), Error); // no inf checks recorded
  scaler.unscale_(f.opt);
  try {
    scaler.unscale_(f.opt);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("unscale_() has already been called"),
              std::string::npos);
  }
  scaler.step(f.opt);
  try {
    scaler.step(f.opt);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("step() has already been called"),
              std::string::npos);
  }
  EXPECT_THROW(scaler.unscale_(f.opt), Error); // after step
  scaler.update();
  // float16 gradients are refused before any gradient is touched.
  Tensor q = ones({2}, TensorOptions(kHalf)).requires_grad_();
  optim::SGD both(std::vector<Tensor>{f.p, q}, 0.1);
  f.set_grad(full({4}, 1024.0));
  q.mutable_grad() = ones({2}, TensorOptions(kHalf));
  scaler.scale(f.p.sum());
  EXPECT_THROW(scaler.unscale_(both), Error);
  EXPECT_TRUE(close(f.p.grad(), full({4}, 1024.0), 0, 0));
  // An optimizer without gradients records no inf check: step raises.
  Tensor lonely = ones({3}).requires_grad_();
  optim::SGD none(std::vector<Tensor>{lonely}, 0.1);
  EXPECT_THROW(scaler.step(none), Error);
  // Bad factors.
  EXPECT_THROW(amp::GradScaler(kCPU, 0.0), Error);
  EXPECT_THROW(amp::GradScaler(kCPU, 1.0, 1.0), Error);
  EXPECT_THROW(amp::GradScaler(kCPU, 1.0, 2.0, 1.5), Error);
  EXPECT_THROW(amp::GradScaler(kCPU, 1.0, 2.0, 0.5, 0), Error);
  EXPECT_THROW(scaler.set_growth_factor(0.5), Error);
  EXPECT_EQ(scaler.get_growth_factor(), 2.0);
  EXPECT_THROW(scaler.update(-1.0), Error);
  EXPECT_THROW(scaler.update(ones({2})), Error);
  scaler.update(tensor({128.0}));
  EXPECT_EQ(scaler.get_scale(), 128.0);
}

TEST(GradScaler, DisabledPassesThrough) {
  Fixture f;
  amp::GradScaler scaler(kCPU, 1024.0, 2.0, 0.5, 2000, /*enabled=*/false);
  Tensor l = f.p.sum();
  EXPECT_TRUE(scaler.scale(l).is_same(l));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  f.set_grad(ones({4}));
  Tensor before = f.p.detach().clone();
  scaler.step(f.opt);
  EXPECT_TRUE(close(f.p, before - 0.5, 0, 0));
  scaler.update();
  if (!cuda::is_available()) {
    amp::GradScaler cuda_scaler; // warns, disables itself
    EXPECT_FALSE(cuda_scaler.is_enabled());
  }
}

TEST(GradScaler, EveryOptimizerStepsAsOnTheUnscaledLoss) {
  auto run = [](const std::string &which, bool scaled, bool clip) {
    manual_seed(3);
    nn::Linear lin(6, 3);
    std::unique_ptr<optim::Optimizer> opt;
    if (which == "SGD")
      opt = std::make_unique<optim::SGD>(lin->parameters(),
                                         optim::SGDOptions(0.1).momentum(0.9));
    else if (which == "Adam")
      opt = std::make_unique<optim::Adam>(lin->parameters(),
                                          optim::AdamOptions(1e-2));
    else if (which == "AdamW")
      opt = std::make_unique<optim::AdamW>(lin->parameters(),
                                           optim::AdamWOptions(1e-2));
    else
      opt = std::make_unique<optim::RMSprop>(lin->parameters(),
                                             optim::RMSpropOptions(1e-2));
    amp::GradScaler scaler(kCPU, 1024.0);
    for (int i = 0; i < 4; ++i) {
      Tensor x = random({5, 6}, kFloat, 20 + i);
      opt->zero_grad();
      Tensor loss = lin->forward(x).pow(2).mean();
      if (scaled) {
        scaler.scale(loss).backward();
        if (clip) {
          scaler.unscale_(*opt);
          nn::utils::clip_grad_norm_(lin->parameters(), 0.05);
        }
        scaler.step(*opt);
        scaler.update();
      } else {
        loss.backward();
        if (clip)
          nn::utils::clip_grad_norm_(lin->parameters(), 0.05);
        opt->step();
      }
    }
    return lin->parameters();
  };
  for (std::string which : {"SGD", "Adam", "AdamW", "RMSprop"})
    for (bool clip : {false, true}) {
      auto a = run(which, true, clip), b = run(which, false, clip);
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(close(a[i], b[i], 1e-6, 1e-7))
            << which << (clip ? " with clipping" : "") << ", parameter " << i;
    }
}

TEST(GradScaler, StateRoundTrips) {
  Fixture f;
  amp::GradScaler scaler(kCPU, 64.0, 4.0, 0.125, 7);
  for (int i = 0; i < 3; ++i) {
    scaler.scale(f.p.sum());
    f.set_grad(ones({4}));
    scaler.step(f.opt);
    scaler.update();
  }
  auto path = std::filesystem::temp_directory_path() /
              ("ember_scaler_" + std::to_string(::getpid()) + ".pt");
  ember::save(scaler, path.string());
  amp::GradScaler loaded(kCPU);
  ember::load(loaded, path.string());
  auto s = loaded.state_dict();
  EXPECT_EQ(s.scale, 64.0);
  EXPECT_EQ(s.growth_factor, 4.0);
  EXPECT_EQ(s.backoff_factor, 0.125);
  EXPECT_EQ(s.growth_interval, 7);
  EXPECT_EQ(s.growth_tracker, 3);
  s.growth_tracker = -1;
  EXPECT_THROW(loaded.load_state_dict(s), Error);
  EXPECT_EQ(loaded.get_growth_tracker(), 3);
  // A tracker past a lowered interval loads (the scale just stops growing
  // until the next inf, as PyTorch's).
  s.growth_tracker = 30;
  loaded.load_state_dict(s);
  EXPECT_EQ(loaded.get_growth_tracker(), 30);
  // A disabled scaler saves nothing, and loading that raises (PyTorch's
  // empty state dict).
  amp::GradScaler off(kCPU, 2.0, 2.0, 0.5, 10, /*enabled=*/false);
  ember::save(off, path.string());
  try {
    ember::load(loaded, path.string());
    FAIL() << "loaded an empty state";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("disabled instance of GradScaler"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TEST(GradientClipping, NormAndValue) {
  Tensor a = tensor({3.0f, 4.0f}).requires_grad_(),
         b = tensor({12.0f}).requires_grad_();
  a.mutable_grad() = tensor({3.0f, 4.0f});
  b.mutable_grad() = tensor({12.0f});
  // Total 2-norm 13: clipped to 6.5.
  // (PyTorch's coefficient: max_norm / (total + 1e-6)).
  double n = nn::utils::clip_grad_norm_({a, b}, 6.5);
  EXPECT_DOUBLE_EQ(n, 13.0);
  EXPECT_TRUE(close(a.grad(), tensor({1.5f, 2.0f}), 1e-6, 0));
  EXPECT_TRUE(close(b.grad(), tensor({6.0f}), 1e-6, 0));
  // Below the bound: unchanged; the infinity norm.
  Tensor before = b.grad().clone();
  EXPECT_NEAR(nn::utils::clip_grad_norm_(
                  {a, b}, 100.0, std::numeric_limits<double>::infinity()),
              6.0, 1e-5);
  EXPECT_TRUE(close(b.grad(), before, 0, 0));
  b.mutable_grad() = tensor({std::numeric_limits<float>::infinity()});
  EXPECT_THROW(nn::utils::clip_grad_norm_({a, b}, 1.0, 2.0, true), Error);
  nn::utils::clip_grad_value_({a, b}, 1.75);
  EXPECT_TRUE(close(a.grad(), tensor({1.5f, 1.75f}), 1e-6, 0));
  EXPECT_TRUE(close(b.grad(), tensor({1.75f}), 0, 0));
  Tensor none = zeros({2}).requires_grad_(); // no gradient: nothing to clip
  EXPECT_EQ(nn::utils::clip_grad_norm_(none, 1.0), 0.0);
  // -inf: the smallest magnitude.
  a.mutable_grad() = tensor({-3.0f, 4.0f});
  b.mutable_grad() = tensor({-0.5f});
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_(
                       {a, b}, 10.0, -std::numeric_limits<double>::infinity()),
                   0.5);
  // An infinite norm scales the gradients by 0 (PyTorch's coefficient).
  a.mutable_grad() = tensor({std::numeric_limits<float>::infinity(), 1.0f});
  EXPECT_TRUE(std::isinf(nn::utils::clip_grad_norm_(a, 1.0)));
  EXPECT_TRUE(close(a.grad(), tensor({std::nanf(""), 0.0f}), 0, 0));
  EXPECT_THROW(nn::utils::clip_grad_norm_(a, 1.0, -1.0), Error);
}

// --- a model trained under autocast ---------------------------------------

TEST(Autocast, TrainingReachesTheFloat32ModelsAccuracy) {
  // Two Gaussian blobs per class in 10-d, 3 classes; an MLP trained with
  // SGD for the same steps in float32 and under bfloat16 autocast.
  Generator g(11);
  const int64_t n = 600;
  // Overlapping classes, so that neither model is perfect.
  Tensor centers = randn({3, 10}, g) * 0.6;
  Tensor labels = randint(0, 3, {n}, g);
  Tensor x = centers.index_select(0, labels) + randn({n, 10}, g);
  auto train = [&](bool amp_on) {
    manual_seed(5);
    nn::Sequential net(nn::Linear(10, 32), nn::ReLU(), nn::Linear(32, 3));
    optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (int epoch = 0; epoch < 30; ++epoch) {
      opt.zero_grad();
      Tensor loss;
      {
        amp::autocast ac(kCPU, kBFloat16, amp_on);
        Tensor out = net->forward(x);
        EXPECT_EQ(out.dtype(), amp_on ? kBFloat16 : kFloat);
        loss = cross_entropy_loss(out, labels);
      }
      loss.backward();
      opt.step();
    }
    for (const Tensor &p : net->parameters())
      EXPECT_EQ(p.dtype(), kFloat);
    NoGradGuard ng;
    Tensor pred = std::get<1>(net->forward(x).max(1));
    return pred.eq(labels).to(kDouble).mean().item<double>();
  };
  double acc32 = train(false), acc16 = train(true);
  std::cout << "accuracy: float32 " << acc32 << ", bfloat16 autocast " << acc16
            << "\n";
  EXPECT_GT(acc32, 0.6);
  EXPECT_LT(acc32, 0.98);
  // The stated margin: within 2 points of the float32 model.
  EXPECT_GE(acc16, acc32 - 0.02);
}
