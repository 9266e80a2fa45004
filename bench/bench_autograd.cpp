// Autograd and training benchmarks (issue 3): the overhead autograd adds to
// 1-element ops, and one SGD training step of an MLP 784-1024-1024-10 at
// batch 256 next to the time its matmuls take in raw OpenBLAS.
#include <ember/ember.h>

#include <benchmark/benchmark.h>
#include <cblas.h>

using namespace ember;

namespace {

void BM_Add1_NoGrad(benchmark::State &s) {
  Tensor a = randn({1}), b = randn({1});
  for (auto _ : s)
    benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_Add1_NoGrad);

void BM_Add1_RecordGraph(benchmark::State &s) {
  Tensor a = randn({1}).requires_grad_(), b = randn({1}).requires_grad_();
  for (auto _ : s)
    benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_Add1_RecordGraph);

void BM_Mul1_RecordGraph(benchmark::State &s) {
  Tensor a = randn({1}).requires_grad_(), b = randn({1}).requires_grad_();
  for (auto _ : s)
    benchmark::DoNotOptimize(a * b);
}
BENCHMARK(BM_Mul1_RecordGraph);

void BM_Mul1_ForwardBackward(benchmark::State &s) {
  Tensor a = randn({}).requires_grad_(), b = randn({}).requires_grad_();
  for (auto _ : s) {
    (a * b).backward();
    a.mutable_grad() = Tensor();
    b.mutable_grad() = Tensor();
  }
}
BENCHMARK(BM_Mul1_ForwardBackward);

constexpr int64_t kBatch = 256, kIn = 784, kHidden = 1024, kOut = 10;

void BM_MLP_TrainStep(benchmark::State &s) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(kIn, kHidden), nn::ReLU(),
                       nn::Linear(kHidden, kHidden), nn::ReLU(),
                       nn::Linear(kHidden, kOut));
  optim::SGD opt(model->parameters(), 0.01);
  Tensor x = randn({kBatch, kIn});
  Tensor y = randint(0, kOut, {kBatch});
  for (auto _ : s) {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    benchmark::DoNotOptimize(loss);
  }
}
BENCHMARK(BM_MLP_TrainStep)->Unit(benchmark::kMillisecond)->UseRealTime();

/// The 8 GEMMs of that step, on raw buffers: forward x W^T for three
/// layers; backward dW = dY^T X for three layers and dX = dY W for two.
void BM_MLP_RawSgemm(benchmark::State &s) {
  auto buf = [](int64_t n) { return randn({n}); };
  Tensor x = buf(kBatch * kIn), w1 = buf(kHidden * kIn),
         w2 = buf(kHidden * kHidden), w3 = buf(kOut * kHidden);
  Tensor h1 = buf(kBatch * kHidden), h2 = buf(kBatch * kHidden),
         o = buf(kBatch * kOut);
  Tensor d1 = buf(kHidden * kIn), d2 = buf(kHidden * kHidden),
         d3 = buf(kOut * kHidden), g1 = buf(kBatch * kHidden),
         g2 = buf(kBatch * kHidden);
  auto P = [](const Tensor &t) { return t.data_ptr<float>(); };
  auto gemm = [](bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                 const float *a, const float *b, float *c) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), 1.0f, a,
                ta ? int(m) : int(k), b, tb ? int(k) : int(n), 0.0f, c, int(n));
  };
  for (auto _ : s) {
    gemm(false, true, kBatch, kHidden, kIn, P(x), P(w1), P(h1));
    gemm(false, true, kBatch, kHidden, kHidden, P(h1), P(w2), P(h2));
    gemm(false, true, kBatch, kOut, kHidden, P(h2), P(w3), P(o));
    gemm(true, false, kOut, kHidden, kBatch, P(o), P(h2), P(d3));
    gemm(false, false, kBatch, kHidden, kOut, P(o), P(w3), P(g2));
    gemm(true, false, kHidden, kHidden, kBatch, P(g2), P(h1), P(d2));
    gemm(false, false, kBatch, kHidden, kHidden, P(g2), P(w2), P(g1));
    gemm(true, false, kHidden, kIn, kBatch, P(g1), P(x), P(d1));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MLP_RawSgemm)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
