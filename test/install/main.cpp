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
  std::cout << "downstream: find_package(ember) works, sum = " << got << "\n";
  return 0;
}
