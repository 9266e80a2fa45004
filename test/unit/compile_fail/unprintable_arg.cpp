// Must not compile: a non-tensor argument of a compiled function is guarded on
// its printed value, and this one has no operator<<. The test
// (compile_fail_unprintable_arg) checks that the compiler says so in ember's
// words rather than in a page of template errors.
#include <ember/ember.h>

struct Options {
  int depth;
};

int main() {
  auto f = ember::compile(
      [](const ember::Tensor &x, Options o) { return x * double(o.depth); });
  f(ember::ones({2}), Options{3});
}
