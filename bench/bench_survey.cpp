// A survey of eager calls against PyTorch: each call of bench/survey_torch.py
// (the same names, inputs and sizes: 1024x1024 float32 unless named), timed
// as the median of up to 200 calls (stopping after 0.4 s), 2 threads.
// Prints "name ms" lines; bench/survey.py runs both sides and writes
// bench/results/eager_survey.md. It finds outliers (an op 10x behind), not
// small differences.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ember/ember.h>
#include <functional>
#include <string>
#include <vector>
using namespace ember;
namespace F = ember::nn::functional;
using ember::indexing::Slice;

static double bench(const std::function<void()> &f) {
  f();
  f();
  std::vector<double> v;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    v.push_back(std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count());
    if (i >= 5 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                .count() > 0.4)
      break;
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
#define T(name, expr)                                                          \
  std::printf("%s %.4f\n", name, bench([&] {                                   \
                auto r = (expr);                                               \
                (void)r;                                                       \
              }))
int main() {
  set_num_threads(2);
  manual_seed(0);
  NoGradGuard ng;
  Tensor x = randn({1024, 1024}), y = randn({1024, 1024});
  Tensor I = randint(0, 1024, {512}), G2 = randint(0, 1024, {1024, 64});
  Tensor M = x > 0, XH = x.to(kHalf), Y512 = y.narrow(0, 0, 512).contiguous();
  Tensor table = randn({30000, 512}), I2 = randint(0, 30000, {4096}),
         IB = randint(0, 1000, {4096});
  Tensor img = randn({8, 32, 56, 56}), wc = randn({64, 32, 3, 3}),
         bc = randn({64});
  Tensor Tg = randint(0, 1024, {1024});
  Tensor a3 = randn({64, 128, 64}), b3 = randn({64, 64, 128});
  Tensor s256 = randn({256, 256});
  T("add", x + y);
  T("mul_scalar", x * 2.5);
  T("div", x / y);
  T("exp", x.exp());
  T("log", x.abs().log());
  T("sin", x.sin());
  T("tanh", x.tanh());
  T("sigmoid", x.sigmoid());
  T("gelu", F::gelu(x));
  T("pow2", x.pow(2));
  T("pow_t", x.abs().pow(y));
  T("atan2", atan2(x, y));
  T("remainder", x.remainder(y));
  T("round", x.round());
  T("sum_all", x.sum());
  T("sum_dim0", x.sum(0));
  T("sum_dim1", x.sum(1));
  T("mean_dim1", x.mean(1));
  T("max_dim1", std::get<0>(x.max(1)));
  T("argmax1", x.argmax(1));
  T("var1", x.var(1));
  T("norm", x.norm());
  T("logsumexp1", x.logsumexp(1));
  T("cumsum1", x.cumsum(1));
  T("cumsum0", x.cumsum(0));
  T("softmax1", x.softmax(1));
  T("log_softmax1", x.log_softmax(1));
  T("transpose_contig", x.t().contiguous());
  T("cat0", cat({x, y}, 0));
  T("stack", stack({x, y}));
  T("repeat", x.repeat({2, 1}));
  T("flip0", x.flip({0}));
  T("roll", x.roll({5}, {1}));
  T("tril", x.tril());
  T("index_select", x.index_select(0, I));
  T("gather", x.gather(1, G2));
  T("scatter_add", x.scatter_add(1, G2, y));
  T("index_add", x.index_add(0, I, Y512));
  T("masked_select", x.masked_select(M));
  T("nonzero", M.nonzero());
  T("sort1", std::get<0>(x.sort(1)));
  T("topk1", std::get<0>(x.topk(10, 1)));
  T("where_t", where(M, x, y));
  T("masked_fill", x.masked_fill(M, 0.0));
  T("clamp", x.clamp(-0.5, 0.5));
  T("to_half", x.to(kHalf));
  T("half_to_float", XH.to(kFloat));
  T("embedding", F::embedding(I2, table));
  T("one_hot", F::one_hot(IB, 1000));
  T("layer_norm", F::layer_norm(x, F::LayerNormFuncOptions({1024})));
  T("mm256", mm(s256, s256));
  T("conv2d", F::conv2d(img, wc, F::Conv2dFuncOptions().bias(bc).padding(1)));
  T("max_pool2d", F::max_pool2d(img, F::MaxPool2dFuncOptions(2)));
  T("avg_pool2d", F::avg_pool2d(img, F::AvgPool2dFuncOptions(2)));
  T("cross_entropy", F::cross_entropy(x, Tg));
  T("mse", F::mse_loss(x, y));
  T("dropout", F::dropout(x, F::DropoutFuncOptions().p(0.5).training(true)));
  T("randperm", randperm(1 << 20));
  T("bmm", bmm(a3, b3));
  T("einsum", einsum("ij,ij->i", {x, y}));
  T("pad", F::pad(x, F::PadFuncOptions({2, 2, 2, 2})));
  T("index_tensor", x.index({I}));
  T("index_put", x.clone().index_put_({I}, Y512));
  T("adv_index_2d", x.index({I, I}));
  T("sort_flat", std::get<0>(x.flatten().sort(0)));
  T("randn", randn({1024, 1024}));
  T("rand", rand({1024, 1024}));
  T("arange", arange(1 << 20));
  T("max_all", x.max());
  T("std1", x.std(1));
  T("prod1", x.prod(1));
  T("any", M.any());
  T("isnan", x.isnan());
  T("allclose", allclose(x, y));
  T("eq", x == y);
  T("copy_strided", x.t().clone());
  T("expand_contig", x.narrow(0, 0, 1).expand({1024, 1024}).contiguous());
  T("unfold", x.unfold(1, 8, 8).contiguous());
  T("tensor_sum_half", XH.sum());
  T("bce_logits", F::binary_cross_entropy_with_logits(x, M.to(kFloat)));
  // Note [Pointwise runs in blocks]: a 0-dim operand, float16 with one,
  // float16 comparisons.
  Tensor s0 = tensor(1.5f), YH = y.to(kHalf), s0h = s0.to(kHalf);
  T("add_0dim", x + s0);
  T("half_add", XH + YH);
  T("half_mul_0dim", XH * s0h);
  T("half_where_0dim", where(M, XH, s0h));
  T("half_gt", XH > YH);
}
