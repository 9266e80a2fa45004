// Uses only the installed package: <ember/ember.h> and ember::ember.
#include <ember/ember.h>

#include <iostream>

int main() {
  ember::manual_seed(0);
  auto a = ember::arange(6, ember::dtype(ember::kFloat)).view({2, 3});
  auto b = ember::ones({3}, ember::kFloat);
  auto c = (a * 2 + b).sum();
  float got = c.item<float>();
  if (got != 36.0f) {
    std::cerr << "downstream: expected 36, got " << got << "\n";
    return 1;
  }
  // Autograd, nn and optim through the installed headers.
  ember::nn::Linear lin(3, 1);
  ember::optim::SGD opt(lin->parameters(), 0.1);
  auto loss = lin->forward(a).pow(2).mean();
  loss.backward();
  opt.step();
  if (!lin->weight.grad().defined() ||
      loss.grad_fn()->name() != "MeanBackward0") {
    std::cerr << "downstream: autograd through nn::Linear failed\n";
    return 1;
  }
  std::cout << "downstream: find_package(ember) works, sum = " << got
            << ", loss.grad_fn = " << loss.grad_fn()->name() << "\n";
  return 0;
}
