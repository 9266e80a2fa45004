#include "runtime/Generator.h"

#include <cmath>

namespace ember {

double Generator::normal(GeneratorImpl *g) {
  if (g->has_next_normal_) {
    g->has_next_normal_ = false;
    return g->next_normal_;
  }
  double u1 = 1.0 - uniform(g); // (0, 1]: log is finite
  double u2 = uniform(g);
  double r = std::sqrt(-2.0 * std::log(u1));
  g->next_normal_ = r * std::sin(2.0 * M_PI * u2);
  g->has_next_normal_ = true;
  return r * std::cos(2.0 * M_PI * u2);
}

Generator &default_generator() {
  static Generator *g = new Generator(Generator::kDefaultSeed);
  return *g;
}

void manual_seed(uint64_t seed) { default_generator().set_current_seed(seed); }

} // namespace ember
