#pragma once
/// Compiled vs eager: run a program both ways on copies of the same inputs
/// and require equal results (values bit for bit, dtypes, shapes) and equal
/// inputs afterwards (mutations).

#include "TestUtil.h"

#include <ember/ember.h>
#include <gtest/gtest.h>

#include <array>
#include <tuple>

namespace ember::test {

/// Bitwise equality of two tensors (NaNs equal), with a readable failure.
inline ::testing::AssertionResult same(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << toString(a.dtype()) << " != " << toString(b.dtype());
  return close(a, b, 0, 0);
}

/// Flattens what a program returns.
inline void flatten(const Tensor &t, std::vector<Tensor> &out) {
  out.push_back(t);
}
inline void flatten(const std::vector<Tensor> &v, std::vector<Tensor> &out) {
  out.insert(out.end(), v.begin(), v.end());
}
template <class... Ts>
void flatten(const std::tuple<Ts...> &t, std::vector<Tensor> &out) {
  std::apply([&](const auto &...e) { (flatten(e, out), ...); }, t);
}

/// Runs `fn(inputs...)` eagerly and through `compiled` (a CompiledFunction
/// of the same fn), `calls` times each, on fresh copies of `inputs`, and
/// checks equal outputs and equal inputs after each call.
template <class F, class C, size_t N>
void expect_same_with(F &fn, C &compiled, const Tensor (&inputs)[N],
                      int calls = 2) {
  for (int c = 0; c < calls; ++c) {
    std::array<Tensor, N> a, b;
    for (size_t i = 0; i < N; ++i) {
      a[i] = inputs[i].clone();
      b[i] = inputs[i].clone();
    }
    std::vector<Tensor> ra, rb;
    flatten(std::apply(fn, a), ra);
    flatten(std::apply(compiled, b), rb);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i)
      EXPECT_TRUE(same(rb[i], ra[i])) << "output " << i << " of call " << c;
    for (size_t i = 0; i < N; ++i)
      EXPECT_TRUE(same(b[i], a[i])) << "input " << i << " after call " << c;
  }
}

/// expect_same_with on a fresh compile(fn, options); returns its explain().
template <class F, size_t N>
ExplainOutput expect_same(F fn, const Tensor (&inputs)[N], int calls = 2,
                          CompileOptions options = {}) {
  auto compiled = compile(fn, options);
  expect_same_with(fn, compiled, inputs, calls);
  return compiled.explain();
}

} // namespace ember::test

namespace ember::test {

/// `text` contains `part` (the whole text is shown on failure).
inline ::testing::AssertionResult contains(const std::string &text,
                                           const std::string &part) {
  if (text.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in:\n"
                                       << text;
}

/// How many times `op` (a name as the trace prints it, "ember::mul", any
/// overload) is called in the traces of every compiled graph of `e`.
inline int64_t count_in_traces(const ExplainOutput &e, const std::string &op) {
  int64_t n = 0;
  std::string key = "= " + op;
  for (const GraphInfo &g : e.graphs)
    for (size_t p = g.trace.find(key); p != std::string::npos;
         p = g.trace.find(key, p + 1)) {
      char next = p + key.size() < g.trace.size() ? g.trace[p + key.size()] : 0;
      n += next == '(' || next == '.'; // the op or one of its overloads
    }
  return n;
}

} // namespace ember::test
