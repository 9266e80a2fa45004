#include "ir/Decompose.h"

#include "eager/Decompose.h"
#include "eager/Meta.h"
#include "eager/TensorImpl.h"

#include <unordered_map>

namespace ember::ir {

namespace {

ValueType type_of(const Tensor &t) {
  return {std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), t.dtype(),
          t.device()};
}

/// A dispatch mode that records every op call on fake tensors into a trace
/// (and answers it with fake results from the op's shape rule); an op with
/// a decomposition is replaced by the calls of its decomposition.
class Recorder final : public TorchDispatchMode {
public:
  explicit Recorder(Trace &t) : t_(t) {}

  void bind(const Tensor &fake, int value) {
    ids_[fake.unsafeGetTensorImpl()] = value;
    keep_.push_back(fake);
  }
  int id(const Tensor &t) {
    auto it = ids_.find(t.unsafeGetTensorImpl());
    if (it != ids_.end())
      return it->second;
    // A tensor the decomposition made itself: a wrapped number (x * 0.5)
    // or a real constant.
    EMBER_CHECK(!meta::is_fake(t),
                "decompose: a fake tensor that no recorded op produced");
    int v = t_.add_value(type_of(t));
    if (t.unsafeGetTensorImpl()->is_wrapped_number())
      t_.constants.push_back({v, t.item(), Tensor()});
    else
      t_.constants.push_back({v, Scalar(), t.clone()});
    bind(t, v);
    return v;
  }

  void dispatch(const OperatorHandle &op, Stack &stack) override {
    if (const KernelFunction *d = find_decomposition(op)) {
      TorchDispatchModeGuard again(*this); // record what it calls
      d->boxed(op, DispatchKeySet(), stack);
      return;
    }
    const FunctionSchema &s = op.schema();
    EMBER_CHECK(s.arguments.empty() || !s.arguments[0].is_write,
                "decompose: ", op.name(), " writes to its input");
    EMBER_CHECK(meta::has_rule(op), "decompose: ", op.name(),
                " has no shape rule");
    meta::Result r = meta::infer(op, stack);
    EMBER_CHECK(r.needs_data.empty(), "decompose: ", r.needs_data);
    Node n;
    n.op = &op;
    for (size_t i = 0; i < stack.size(); ++i) {
      const IValue &v = stack[i];
      if (v.isTensor()) {
        const Tensor &t = v.toTensor();
        n.args.push_back(Arg::of_value(t.defined() ? id(t) : -1));
      } else if (v.isTensorList()) {
        std::vector<int> vs;
        for (const Tensor &t : v.toTensorList())
          vs.push_back(t.defined() ? id(t) : -1);
        n.args.push_back(Arg::of_values(std::move(vs)));
      } else if (i < s.arguments.size() &&
                 s.arguments[i].type.rfind("Tensor", 0) == 0) {
        n.args.push_back(Arg::of_value(-1));
      } else {
        EMBER_CHECK(!v.isGenerator(), "decompose: ", op.name(),
                    " takes a generator");
        n.args.push_back(Arg::of_attr(v));
      }
    }
    stack.clear();
    for (const Tensor &o : r.outputs) {
      int v = t_.add_value(type_of(o));
      n.results.push_back(v);
      bind(o, v);
      stack.emplace_back(o);
    }
    t_.nodes.push_back(std::move(n));
  }

private:
  Trace &t_;
  std::unordered_map<const TensorImpl *, int> ids_;
  std::vector<Tensor> keep_; // keeps the keys of ids_ alive
};

} // namespace

std::optional<Trace> decompose(const Trace &op_trace, std::string *why) {
  EMBER_CHECK(op_trace.nodes.size() == 1 && op_trace.nodes[0].op,
              "decompose: expected a trace of one op");
  const Node &node = op_trace.nodes[0];
  if (!find_decomposition(*node.op)) {
    if (why)
      *why = node.op->name() + " has no decomposition";
    return std::nullopt;
  }
  Trace t;
  t.name = op_trace.name;
  Recorder rec(t);
  std::vector<Tensor> values(op_trace.types.size());
  for (const Input &in : op_trace.inputs) {
    const ValueType &vt = op_trace.types[size_t(in.value)];
    values[size_t(in.value)] = meta::fake(vt.sizes, vt.dtype, vt.device);
    Input copy = in;
    copy.value = t.add_value(vt);
    rec.bind(values[size_t(in.value)], copy.value);
    t.inputs.push_back(std::move(copy));
  }
  for (const Constant &c : op_trace.constants) {
    const ValueType &vt = op_trace.types[size_t(c.value)];
    values[size_t(c.value)] =
        c.tensor.defined() ? c.tensor : meta::fake_wrapped_number(vt.dtype);
    Constant copy = c;
    copy.value = t.add_value(vt);
    rec.bind(values[size_t(c.value)], copy.value);
    t.constants.push_back(std::move(copy));
  }
  Stack stack;
  for (const Arg &a : node.args) {
    switch (a.kind) {
    case Arg::Kind::Value:
      stack.emplace_back(a.value < 0 ? Tensor() : values[size_t(a.value)]);
      break;
    case Arg::Kind::ValueList: {
      std::vector<Tensor> ts;
      for (int v : a.values)
        ts.push_back(v < 0 ? Tensor() : values[size_t(v)]);
      stack.emplace_back(std::move(ts));
      break;
    }
    case Arg::Kind::Attr:
      stack.emplace_back(a.attr);
      break;
    }
  }
  try {
    TorchDispatchModeGuard guard(rec);
    node.op->callBoxed(stack);
  } catch (const Error &e) {
    if (why)
      *why = e.what();
    return std::nullopt;
  }
  EMBER_CHECK(stack.size() == node.results.size(),
              "decompose: ", node.op->name(), "'s decomposition returned ",
              stack.size(), " values, the op has ", node.results.size());
  for (size_t i = 0; i < stack.size(); ++i) {
    const Tensor &r = stack[i].toTensor();
    EMBER_CHECK(type_of(r) == op_trace.types[size_t(node.results[i])],
                "decompose: ", node.op->name(),
                "'s decomposition gives another type for result ", i);
    t.outputs.push_back(rec.id(r));
  }
  return t;
}

} // namespace ember::ir
