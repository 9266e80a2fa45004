// Compiled vs eager: nn models and nn::functional (MLP, a small CNN with
// conv/pool/batch_norm, an attention block with layer_norm and
// MultiheadAttention, embeddings, dropout in eval mode, losses) for
// inference under NoGradGuard, and a training loop whose parameters require
// grad (it runs eagerly and still trains).
#include "E2EUtil.h"

using namespace ember;
using ember::test::contains;
using ember::test::count_in_traces;
using ember::test::expect_same;
using ember::test::random;
using ember::test::same;
namespace F = ember::nn::functional;

TEST(E2EModels, MLPInference) {
  ember::test::StayOnCpu cpu(
      "the function closes over modules whose parameters are CPU tensors");
  manual_seed(1);
  nn::Sequential mlp(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 16),
                     nn::GELU(), nn::Linear(16, 4));
  NoGradGuard ng;
  auto fn = [&](const Tensor &x) { return mlp->forward(x).log_softmax(-1); };
  auto e = expect_same(fn, {random({5, 8}, kFloat, 200)}, 3);
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(e.eager_calls, 0);
  ASSERT_EQ(e.graphs.size(), 1u);
  // The input and the six parameters (lifted).
  EXPECT_EQ(e.graphs[0].inputs, 7);
  EXPECT_EQ(e.cache_hits, 2);
}

TEST(E2EModels, SmallCNNInference) {
  ember::test::StayOnCpu cpu(
      "the function closes over modules whose parameters are CPU tensors");
  manual_seed(2);
  nn::Conv2d c1(nn::Conv2dOptions(3, 6, 3).padding(1));
  nn::BatchNorm2d bn(6);
  nn::Conv2d c2(nn::Conv2dOptions(6, 8, 3).stride(2));
  nn::MaxPool2d pool(nn::MaxPool2dOptions(2));
  nn::Linear head(8 * 1 * 1, 5);
  // Non-trivial running statistics, then evaluation mode.
  {
    NoGradGuard ng;
    bn->running_mean.copy_(random({6}, kFloat, 201) * 0.1);
    bn->running_var.copy_(
        ember::test::random_positive({6}, kFloat, 0.5, 2.0, 201));
  }
  bn->eval();
  NoGradGuard ng;
  auto fn = [&](const Tensor &x) {
    Tensor h = F::relu(bn->forward(c1->forward(x)));
    h = pool->forward(h);        // (N, 6, 4, 4)
    h = F::silu(c2->forward(h)); // (N, 8, 1, 1)
    h = F::avg_pool2d(h, F::AvgPool2dFuncOptions(1));
    return head->forward(h.flatten(1));
  };
  Tensor x = random({2, 3, 8, 8}, kFloat, 202);
  auto e = expect_same(fn, {x});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_EQ(e.graphs[0].mutations, 0); // eval: running stats untouched
  EXPECT_EQ(fn(x).sizes().vec(), std::vector<int64_t>({2, 5}));
}

TEST(E2EModels, FunctionalConvPool1dAnd2d) {
  NoGradGuard ng;
  auto fn = [](const Tensor &x, const Tensor &w, const Tensor &b,
               const Tensor &s, const Tensor &w1) {
    Tensor y = F::conv2d(x, w, b, 1, 1, 1, 1);
    Tensor yg =
        F::conv2d(x, w.narrow(1, 0, 1).repeat({1, 1, 1, 1}),
                  F::Conv2dFuncOptions().groups(2).stride(2).padding(1));
    Tensor yd = F::conv2d(x, w, F::Conv2dFuncOptions().dilation(2).padding(2));
    auto [mp, idx] = F::max_pool2d_with_indices(y, F::MaxPool2dFuncOptions(2));
    Tensor ap =
        F::avg_pool2d(y, F::AvgPool2dFuncOptions(3).stride(1).padding(1));
    Tensor c1 = F::conv1d(s, w1, F::Conv1dFuncOptions().padding(1));
    Tensor m1 = F::max_pool1d(c1, F::MaxPool1dFuncOptions(2));
    Tensor a1 = F::avg_pool1d(c1, F::AvgPool1dFuncOptions(2));
    return std::make_tuple(y, yg, yd, mp, idx, ap, c1, m1, a1);
  };
  auto e = expect_same(
      fn, {random({2, 2, 6, 6}, kFloat, 203), random({4, 2, 3, 3}, kFloat, 204),
           random({4}, kFloat, 205), random({2, 3, 10}, kFloat, 206),
           random({5, 3, 3}, kFloat, 207)});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
}

TEST(E2EModels, NormsEmbeddingDropoutEval) {
  ember::test::StayOnCpu cpu(
      "the function closes over modules whose parameters are CPU tensors");
  manual_seed(3);
  nn::Embedding emb(nn::EmbeddingOptions(10, 6).padding_idx(0));
  nn::LayerNorm ln(nn::LayerNormOptions({6}));
  nn::Dropout drop(0.5);
  drop->eval();
  NoGradGuard ng;
  {
    ln->weight.copy_(random({6}, kFloat, 208));
    ln->bias.copy_(random({6}, kFloat, 209));
  }
  Tensor rm = random({6}, kFloat, 210),
         rv = random({6}, kFloat, 211).abs() + 0.5;
  Tensor gw = random({6}, kFloat, 212), gb = random({6}, kFloat, 213);
  auto fn = [&](const Tensor &ids) {
    Tensor h = emb->forward(ids);      // (B, T, 6)
    h = drop->forward(ln->forward(h)); // eval: identity
    Tensor f = F::dropout(h, 0.3, /*training=*/false);
    Tensor n = F::layer_norm(f, F::LayerNormFuncOptions({3, 6}).eps(1e-3));
    Tensor b = F::batch_norm(h.transpose(1, 2), rm, rv,
                             F::BatchNormFuncOptions().weight(gw).bias(gb));
    Tensor g = F::group_norm(h.transpose(1, 2), F::GroupNormFuncOptions(2));
    return std::make_tuple(h, n, b, g, F::embedding(ids, emb->weight));
  };
  Tensor ids = randint(0, 10, {2, 3}, Generator(214));
  Tensor rm0 = rm.clone();
  auto e = expect_same(fn, {ids});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_TRUE(same(rm, rm0)); // evaluation never updates running stats
}

TEST(E2EModels, AttentionBlock) {
  ember::test::StayOnCpu cpu(
      "the function closes over modules whose parameters are CPU tensors");
  manual_seed(4);
  const int64_t E = 16, H = 4;
  nn::MultiheadAttention mha(
      nn::MultiheadAttentionOptions(E, H).batch_first(true));
  nn::LayerNorm ln1(std::vector<int64_t>{E}), ln2(std::vector<int64_t>{E});
  nn::Linear up(E, 4 * E), down(4 * E, E);
  mha->eval();
  NoGradGuard ng;
  auto block = [&](const Tensor &x, const Tensor &pad_mask) {
    Tensor h = ln1->forward(x);
    Tensor causal =
        ember::ones({x.size(1), x.size(1)}, TensorOptions(kBool)).triu(1);
    auto [att, weights] = mha->forward(h, h, h, pad_mask, true, causal);
    Tensor y = x + att;
    y = y + down->forward(F::gelu(up->forward(ln2->forward(y))));
    return std::make_tuple(y, weights);
  };
  Tensor x = random({2, 5, E}, kFloat, 215);
  Tensor pad = ember::zeros({2, 5}, TensorOptions(kBool));
  pad.index_put_({1, indexing::Slice(3, indexing::None)}, true);
  auto e = expect_same(block, {x, pad});
  EXPECT_EQ(e.graph_break_count, 0);
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_GE(count_in_traces(e, "ember::softmax"), 1);
}

TEST(E2EModels, ScaledDotProductAttentionAndLosses) {
  NoGradGuard ng;
  auto fn = [](const Tensor &q, const Tensor &k, const Tensor &v,
               const Tensor &target, const Tensor &labels) {
    Tensor a = F::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    Tensor b = F::scaled_dot_product_attention(
        q, k, v, (q.sum(-1, true) > 0).expand({2, 3, 4, 4}));
    Tensor logits = a.flatten(2).sum(1); // (2, 4 * 8)
    Tensor mse = F::mse_loss(a, target);
    Tensor ce = F::cross_entropy(logits, labels);
    Tensor l1 = F::smooth_l1_loss(b, target);
    Tensor bce = F::binary_cross_entropy_with_logits(a, target.sigmoid());
    return std::make_tuple(a, b, mse, ce, l1, bce);
  };
  auto e = expect_same(
      fn, {random({2, 3, 4, 8}, kFloat, 216), random({2, 3, 4, 8}, kFloat, 217),
           random({2, 3, 4, 8}, kFloat, 218), random({2, 3, 4, 8}, kFloat, 219),
           randint(0, 32, {2}, Generator(220))});
  EXPECT_EQ(e.graph_count, 1);
  EXPECT_EQ(e.graph_break_count, 0);
  for (const GraphBreak &b : e.break_reasons)
    ADD_FAILURE() << "unexpected break: " << b.reason << " at " << b.where;
}

TEST(E2EModels, CrossEntropyBadTargetRaisesWhenTheGraphRuns) {
  // Under compile() the targets have no data while the loss is captured: the
  // range check happens in the compiled graph, an IndexError all the same.
  auto f = compile(
      [](const Tensor &x, const Tensor &t) { return F::cross_entropy(x, t); });
  Tensor x = random({2, 3}, kFloat, 221);
  EXPECT_TRUE(same(f(x, tensor({2, 0}).to(kLong)),
                   F::cross_entropy(x, tensor({2, 0}).to(kLong))));
  try {
    f(x, tensor({1, 5}).to(kLong));
    ADD_FAILURE() << "no error for target 5 of 3 classes";
  } catch (const IndexError &err) {
    EXPECT_TRUE(contains(err.what(), "index 5 is out of bounds"));
  }
  // The failed call left nothing behind: the next one runs normally.
  EXPECT_TRUE(same(f(x, tensor({0, 1}).to(kLong)),
                   F::cross_entropy(x, tensor({0, 1}).to(kLong))));
}

TEST(E2EModels, TrainingStepCompilesAndTrains) {
  // Two identical models: one trained with an eager loss function, one with
  // the compiled one, whose forward and backward are compiled (Note [The
  // joint graph] in frontend/Capture.cpp).
  auto make = [] {
    manual_seed(5);
    return nn::Sequential(nn::Linear(3, 8), nn::Tanh(), nn::Linear(8, 1));
  };
  nn::Sequential me = make(), mc = make();
  optim::SGD oe(me->parameters(), optim::SGDOptions(0.05));
  optim::SGD oc(mc->parameters(), optim::SGDOptions(0.05));
  Tensor x = random({16, 3}, kFloat, 221);
  Tensor y = (x.select(1, 0) * 2 - x.select(1, 2)).unsqueeze(1);
  auto loss_of = [](nn::Sequential &m) {
    return [&m](const Tensor &x, const Tensor &y) {
      return F::mse_loss(m->forward(x * 1.0), y);
    };
  };
  auto eager_loss = loss_of(me);
  auto compiled_loss = compile(loss_of(mc));
  std::vector<float> losses;
  for (int step = 0; step < 6; ++step) {
    oe.zero_grad();
    oc.zero_grad();
    Tensor le = eager_loss(x, y), lc = compiled_loss(x, y);
    ASSERT_TRUE(lc.requires_grad()) << "the compiled loss has a grad_fn";
    le.backward();
    lc.backward();
    EXPECT_TRUE(same(lc, le)) << "step " << step;
    auto pe = me->parameters(), pc = mc->parameters();
    for (size_t i = 0; i < pe.size(); ++i)
      EXPECT_TRUE(same(pc[i].grad(), pe[i].grad()))
          << "step " << step << " param " << i;
    oe.step();
    oc.step();
    losses.push_back(lc.item<float>());
  }
  EXPECT_LT(losses.back(), losses.front());
  auto e = compiled_loss.explain();
  EXPECT_TRUE(e.eager_reasons.empty()) << e;
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_TRUE(e.graphs[0].training);
  EXPECT_EQ(e.eager_calls, 0);
}

TEST(E2EModels, ArgumentRequiringGradCompiles) {
  auto fn = [](const Tensor &x, const Tensor &w) {
    return (x.matmul(w).tanh() * 3).sum();
  };
  Tensor x = random({4, 3}, kFloat, 222), w = random({3, 2}, kFloat, 223);
  Tensor we = w.clone().set_requires_grad(true),
         wc = w.clone().set_requires_grad(true);
  auto f = compile(fn);
  Tensor le = fn(x, we), lc = f(x, wc);
  EXPECT_TRUE(same(lc, le));
  le.backward();
  lc.backward();
  ASSERT_TRUE(wc.grad().defined());
  EXPECT_TRUE(same(wc.grad(), we.grad()));
  auto e = f.explain();
  EXPECT_EQ(e.eager_calls, 0);
  EXPECT_TRUE(e.eager_reasons.empty()) << e;
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_TRUE(e.graphs[0].training);
  // The same function under NoGradGuard is another entry, without backward.
  NoGradGuard ng;
  EXPECT_TRUE(same(f(x, wc), fn(x, w)));
  EXPECT_EQ(f.explain().eager_calls, 0);
  EXPECT_EQ(f.explain().graph_count, 1);
  ASSERT_EQ(f.explain().graphs.size(), 2u);
  EXPECT_FALSE(f.explain().graphs[1].training);
}

TEST(E2EModels, BatchNormTrainingUpdatesLiftedBuffers) {
  // Training-mode batch norm under NoGradGuard: batch statistics, and the
  // running statistics (lifted buffers) updated in place at every call.
  auto make = [] {
    manual_seed(6);
    return nn::BatchNorm1d(nn::BatchNormOptions(4).momentum(0.3));
  };
  nn::BatchNorm1d be = make(), bc = make();
  NoGradGuard ng;
  auto f = compile([&](const Tensor &x) { return bc->forward(x); });
  for (int i = 0; i < 3; ++i) {
    Tensor x = random({6, 4}, kFloat, 224 + i) * (i + 1);
    EXPECT_TRUE(same(f(x), be->forward(x))) << "call " << i;
    EXPECT_TRUE(same(bc->running_mean, be->running_mean)) << "call " << i;
    EXPECT_TRUE(same(bc->running_var, be->running_var)) << "call " << i;
    EXPECT_TRUE(same(bc->num_batches_tracked, be->num_batches_tracked));
  }
  EXPECT_EQ(bc->num_batches_tracked.item<int64_t>(), 3);
  auto e = f.explain();
  EXPECT_EQ(e.cache_misses, 1);
  ASSERT_EQ(e.graphs.size(), 1u);
  EXPECT_GE(e.graphs[0].mutations, 2);
}

namespace {
using TrainFn = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;

/// The models above, trained: `fn` under grad mode eagerly and compiled,
/// its floating outputs summed into a loss (through tanh), backward; the
/// loss and the gradients of `params` and of the floating inputs equal
/// (Note [The joint graph] in frontend/Capture.cpp).
void expect_same_training(const TrainFn &fn, const std::vector<Tensor> &params,
                          const std::vector<Tensor> &inputs) {
  std::vector<Tensor> grads[2];
  Tensor losses[2];
  auto compiled = compile(fn);
  for (int c = 0; c < 2; ++c) {
    for (const Tensor &p : params)
      p.mutable_grad() = Tensor();
    std::vector<Tensor> in;
    for (const Tensor &t : inputs)
      in.push_back(
          isFloatingType(t.dtype()) ? t.detach().clone().requires_grad_() : t);
    std::vector<Tensor> outs = c ? compiled(in) : fn(in);
    Tensor loss = zeros({}, TensorOptions(kDouble));
    for (const Tensor &o : outs)
      if (isFloatingType(o.dtype()) && o.requires_grad())
        loss = loss + o.to(kDouble).tanh().sum();
    loss.backward();
    losses[c] = loss.detach();
    for (const Tensor &p : params)
      grads[c].push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    for (const Tensor &t : in)
      if (t.requires_grad())
        grads[c].push_back(t.grad().defined() ? t.grad().clone() : Tensor());
  }
  EXPECT_TRUE(same(losses[1], losses[0]));
  ASSERT_EQ(grads[1].size(), grads[0].size());
  for (size_t i = 0; i < grads[0].size(); ++i) {
    ASSERT_EQ(grads[1][i].defined(), grads[0][i].defined()) << "gradient " << i;
    if (grads[0][i].defined()) {
      EXPECT_TRUE(ember::test::close(grads[1][i], grads[0][i], 1e-4, 1e-5))
          << "gradient " << i;
    }
  }
  ExplainOutput e = compiled.explain();
  EXPECT_TRUE(e.eager_reasons.empty()) << e;
  for (const GraphInfo &g : e.graphs)
    EXPECT_TRUE(g.training) << e;
}
} // namespace

TEST(E2EModels, TheModelsTrainCompiledAsEagerly) {
  manual_seed(6);
  {
    SCOPED_TRACE("CNN, BatchNorm in training");
    nn::Conv2d c1(nn::Conv2dOptions(3, 6, 3).padding(1));
    nn::BatchNorm2d bn(6);
    nn::Conv2d c2(nn::Conv2dOptions(6, 8, 3).stride(2));
    nn::Linear head(8, 5);
    TrainFn fn = [&](const std::vector<Tensor> &in) {
      Tensor h = F::relu(bn->forward(c1->forward(in[0])));
      h = F::max_pool2d(h, F::MaxPool2dFuncOptions(2));
      h = F::silu(c2->forward(h));
      return std::vector<Tensor>{
          F::cross_entropy(head->forward(h.flatten(1)), in[1])};
    };
    std::vector<Tensor> params;
    for (auto ps : {c1->parameters(), bn->parameters(), c2->parameters(),
                    head->parameters()})
      params.insert(params.end(), ps.begin(), ps.end());
    expect_same_training(fn, params,
                         {random({2, 3, 8, 8}, kFloat, 230),
                          randint(0, 5, {2}, Generator(231))});
  }
  {
    SCOPED_TRACE("embedding and norms");
    nn::Embedding emb(nn::EmbeddingOptions(10, 6).padding_idx(0));
    nn::LayerNorm ln(nn::LayerNormOptions({6}));
    TrainFn fn = [&](const std::vector<Tensor> &in) {
      Tensor h = ln->forward(emb->forward(in[0]));
      Tensor g = F::group_norm(h.transpose(1, 2), F::GroupNormFuncOptions(2));
      return std::vector<Tensor>{h, g};
    };
    std::vector<Tensor> params = emb->parameters();
    for (const Tensor &p : ln->parameters())
      params.push_back(p);
    expect_same_training(fn, params, {randint(0, 10, {2, 3}, Generator(232))});
  }
  {
    SCOPED_TRACE("attention block");
    const int64_t E = 16, H = 4;
    nn::MultiheadAttention mha(
        nn::MultiheadAttentionOptions(E, H).batch_first(true));
    nn::LayerNorm ln1(std::vector<int64_t>{E}), ln2(std::vector<int64_t>{E});
    nn::Linear up(E, 4 * E), down(4 * E, E);
    TrainFn fn = [&](const std::vector<Tensor> &in) {
      Tensor h = ln1->forward(in[0]);
      Tensor causal =
          ember::ones({in[0].size(1), in[0].size(1)}, TensorOptions(kBool))
              .triu(1);
      auto [att, w] = mha->forward(h, h, h, {}, false, causal);
      Tensor y = in[0] + att;
      return std::vector<Tensor>{
          y + down->forward(F::gelu(up->forward(ln2->forward(y))))};
    };
    std::vector<Tensor> params;
    for (auto ps : {mha->parameters(), ln1->parameters(), ln2->parameters(),
                    up->parameters(), down->parameters()})
      params.insert(params.end(), ps.begin(), ps.end());
    expect_same_training(fn, params, {random({2, 5, E}, kFloat, 233)});
  }
  {
    SCOPED_TRACE("attention and losses");
    TrainFn fn = [](const std::vector<Tensor> &in) {
      Tensor a =
          F::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true);
      Tensor logits = a.flatten(2).sum(1);
      return std::vector<Tensor>{
          F::mse_loss(a, in[3]), F::cross_entropy(logits, in[4]),
          F::smooth_l1_loss(a, in[3]),
          F::binary_cross_entropy_with_logits(a, in[3].sigmoid())};
    };
    expect_same_training(
        fn, {},
        {random({2, 3, 4, 8}, kFloat, 234), random({2, 3, 4, 8}, kFloat, 235),
         random({2, 3, 4, 8}, kFloat, 236), random({2, 3, 4, 8}, kFloat, 237),
         randint(0, 32, {2}, Generator(238))});
  }
}
