// Polynomial regression with nn::Linear and SGD (libtorch's regression
// example, in ember): fit y = w . (x, x^2, x^3, x^4) + b to a random target
// polynomial until the smooth-L1 loss falls below 1e-3.
#include <ember/ember.h>

#include <cstdio>
#include <iostream>

using namespace ember;
namespace F = ember::nn::functional;

namespace {
constexpr int64_t kDegree = 4;
constexpr int64_t kBatch = 32;

/// Columns x, x^2, ..., x^kDegree.
Tensor make_features(const Tensor &x) {
  Tensor c = x.unsqueeze(1);
  std::vector<Tensor> cols;
  for (int64_t i = 1; i <= kDegree; ++i)
    cols.push_back(c.pow(i));
  return cat(cols, 1);
}

std::string poly_desc(const Tensor &w, const Tensor &b) {
  std::string s = "y = ";
  for (int64_t i = 0; i < w.size(0); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%+.2f x^%lld ", w[i].item<double>(),
                  (long long)(i + 1));
    s += buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f", b.item<double>());
  return s + buf;
}
} // namespace

int main() {
  manual_seed(0);
  Tensor w_target = randn({kDegree, 1}) * 5;
  Tensor b_target = randn({1}) * 5;
  auto f = [&](const Tensor &x) { return x.mm(w_target) + b_target; };

  nn::Linear fc(kDegree, 1);
  optim::SGD optimizer(fc->parameters(), 0.1);
  double loss = 0;
  int64_t batch = 0;
  for (batch = 1; batch <= 100000; ++batch) {
    Tensor x = make_features(randn({kBatch}));
    Tensor y = f(x);
    optimizer.zero_grad();
    Tensor l = F::smooth_l1_loss(fc->forward(x), y);
    l.backward();
    optimizer.step();
    loss = l.item<double>();
    if (loss < 1e-3)
      break;
  }
  std::printf("Loss: %.6f after %lld batches\n", loss, (long long)batch);
  std::cout << "==> Learned function:\t"
            << poly_desc(fc->weight.view({-1}), fc->bias) << "\n";
  std::cout << "==> Actual function:\t"
            << poly_desc(w_target.view({-1}), b_target) << "\n";
  return loss < 1e-3 ? 0 : 1;
}
