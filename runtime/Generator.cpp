#include "runtime/Generator.h"

namespace ember {

Generator &default_generator() {
  static Generator *g = new Generator(Generator::kDefaultSeed);
  return *g;
}

void manual_seed(uint64_t seed) { default_generator().set_current_seed(seed); }

} // namespace ember
