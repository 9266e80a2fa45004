#pragma once
/// What the shape rules (eager/Meta.cpp, eager/meta/*.cpp and the generated
/// MetaRules.cpp) share: the rule table, argument unboxing, the generic
/// pointwise and view rules, and small helpers for building results.

#include "eager/Meta.h"

#include <unordered_map>

namespace ember::meta::detail {

/// A shape rule: the op's arguments (one IValue per schema argument) to its
/// fake results.
using RuleFn = Result (*)(const OperatorHandle &op, const Stack &args);

/// The rules of the op table, by op (built once, then read only).
struct RuleMap {
  std::unordered_map<const OperatorHandle *, RuleFn> rules;
  void add(const OperatorHandle &op, RuleFn fn) { rules.emplace(&op, fn); }
};

/// Registers one rule per dispatched op of ops.yaml (generated:
/// MetaRules.cpp).
void add_builtin_rules(RuleMap &m);

/// Checks that a boxed call has one value per schema argument.
void check_arity(const OperatorHandle &op, const Stack &s, size_t n);

/// Argument i of a boxed call as the C++ type its kernel takes (views such
/// as IntArrayRef point into the stack, which outlives the rule call).
template <class T> T arg(const Stack &s, size_t i) {
  return ember::detail::Unbox<T>::get(const_cast<IValue &>(s[i]));
}

/// The rule of every pointwise op: `tensors` are the stack positions of its
/// tensor arguments (in schema order), `scalars` those of the scalars that
/// take part in type promotion.
Result pointwise_rule(const PointwiseSpec &spec, const Stack &s,
                      ArrayRef<int> tensors, ArrayRef<int> scalars,
                      bool inplace);

/// The rule of every `kernel:` op (views): runs the op's own kernel on the
/// arguments, below capture and autograd (Note [View rules]).
Result view_rule(const OperatorHandle &op, const Stack &s);

/// A result of one fake tensor.
inline Result one(Tensor t) {
  Result r;
  r.outputs.push_back(std::move(t));
  return r;
}
/// A result of two fake tensors (values, indices).
inline Result two(Tensor a, Tensor b) {
  Result r;
  r.outputs.reserve(2);
  r.outputs.push_back(std::move(a));
  r.outputs.push_back(std::move(b));
  return r;
}
/// The result of an op whose schema returns a non-tensor (equal -> bool):
/// `checked` is its rule's answer after the argument checks; such a result
/// always needs the data.
Result returns_value(const OperatorHandle &op, Result checked);

/// A result that needs the data (see Result::needs_data).
inline Result needs_data(std::string why) {
  Result r;
  r.needs_data = std::move(why);
  return r;
}

} // namespace ember::meta::detail
