#include "ir/Trace.h"

#include <sstream>

namespace ember::ir {

namespace {
constexpr std::pair<InputKind, const char *> kInputKinds[] = {
    {InputKind::Argument, "argument"},
    {InputKind::Lifted, "lifted"},
    {InputKind::ArgumentStorage, "storage"}};
} // namespace

const char *input_kind_name(InputKind k) {
  for (auto [kind, name] : kInputKinds)
    if (kind == k)
      return name;
  return "?";
}

bool parse_input_kind(std::string_view name, InputKind &k) {
  for (auto [kind, n] : kInputKinds)
    if (name == n) {
      k = kind;
      return true;
    }
  return false;
}

/// "f32[4, 8]"
static std::string type_str(const ValueType &t) {
  static const char *short_names[] = {
#define EMBER_SHORT(cpp, name, py) #py,
      EMBER_FORALL_SCALAR_TYPES(EMBER_SHORT)
#undef EMBER_SHORT
  };
  std::ostringstream os;
  std::string n = short_names[int(t.dtype)];
  // float32 -> f32, int64 -> i64, uint8 -> u8, bfloat16 -> bf16, bool.
  if (n.rfind("float", 0) == 0)
    n = "f" + n.substr(5);
  else if (n.rfind("bfloat", 0) == 0)
    n = "bf" + n.substr(6);
  else if (n.rfind("uint", 0) == 0)
    n = "u" + n.substr(4);
  else if (n.rfind("int", 0) == 0)
    n = "i" + n.substr(3);
  os << n << "[";
  for (size_t i = 0; i < t.sizes.size(); ++i)
    os << (i ? ", " : "") << t.sizes[i];
  os << "]";
  if (t.device.is_cuda())
    os << "@" << t.device.str();
  return os.str();
}

std::string Trace::str() const {
  std::ostringstream os;
  os.precision(17); // constants and attributes exactly (the cache key uses it)
  auto v = [&](int id) { return "%" + std::to_string(id); };
  os << "graph " << name << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input &in = inputs[i];
    os << (i ? ", " : "") << v(in.value) << ": " << type_str(types[in.value])
       << " " << in.name;
  }
  os << "):\n";
  for (const Constant &c : constants) {
    os << "  " << v(c.value) << " : " << type_str(types[c.value])
       << " = constant ";
    if (c.tensor.defined())
      os << "<tensor>\n";
    else
      os << c.scalar << "\n";
  }
  for (const Node &n : nodes) {
    os << "  ";
    for (size_t i = 0; i < n.results.size(); ++i)
      os << (i ? ", " : "") << v(n.results[i]);
    os << (n.results.empty() ? "" : " : ");
    for (size_t i = 0; i < n.results.size(); ++i)
      os << (i ? ", " : "") << type_str(types[n.results[i]]);
    os << (n.results.empty() ? "" : " = ") << n.op->name() << "(";
    const auto &schema = n.op->schema().arguments;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const Arg &a = n.args[i];
      os << (i ? ", " : "");
      if (a.kind != Arg::Kind::Value && a.kind != Arg::Kind::ValueList &&
          i < schema.size())
        os << schema[i].name << "=";
      switch (a.kind) {
      case Arg::Kind::Value:
        os << (a.value < 0 ? "None" : v(a.value));
        break;
      case Arg::Kind::ValueList:
        os << "[";
        for (size_t j = 0; j < a.values.size(); ++j)
          os << (j ? ", " : "") << (a.values[j] < 0 ? "None" : v(a.values[j]));
        os << "]";
        break;
      case Arg::Kind::Attr:
        os << a.attr;
        break;
      }
    }
    os << ")";
    if (!n.loc.empty())
      os << "  # " << n.loc;
    os << "\n";
  }
  os << "  return (";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", " : "") << v(outputs[i]);
  os << ")\n";
  for (const Mutation &m : mutations)
    os << "  mutation: " << inputs[m.input].name << " <- " << v(m.value)
       << "\n";
  return os.str();
}

} // namespace ember::ir

namespace ember::ir {

std::string to_dot(const Trace &trace) {
  std::ostringstream os;
  // Which node (or input/constant) defines each value.
  std::vector<std::string> def(trace.types.size());
  os << "digraph \"" << trace.name << "\" {\n";
  os << "  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (size_t i = 0; i < trace.inputs.size(); ++i) {
    const Input &in = trace.inputs[i];
    std::string id = "in" + std::to_string(i);
    def[in.value] = id;
    os << "  " << id << " [shape=box, style=filled, fillcolor=lightblue, "
       << "label=\"" << in.name << "\\n"
       << type_str(trace.types[in.value]) << "\"];\n";
  }
  for (size_t i = 0; i < trace.constants.size(); ++i) {
    const Constant &c = trace.constants[i];
    std::string id = "c" + std::to_string(i);
    def[c.value] = id;
    os << "  " << id << " [shape=plaintext, label=\"" << c.scalar << "\"];\n";
  }
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const Node &n = trace.nodes[i];
    std::string id = "n" + std::to_string(i);
    os << "  " << id << " [shape=ellipse, label=\"" << n.op->name();
    for (int r : n.results)
      os << "\\n" << type_str(trace.types[r]);
    os << "\"];\n";
    auto edge = [&](int v) {
      if (v >= 0 && !def[v].empty())
        os << "  " << def[v] << " -> " << id << ";\n";
    };
    for (const Arg &a : n.args) {
      if (a.kind == Arg::Kind::Value)
        edge(a.value);
      else if (a.kind == Arg::Kind::ValueList)
        for (int v : a.values)
          edge(v);
    }
    for (int r : n.results)
      def[r] = id;
  }
  for (size_t i = 0; i < trace.outputs.size(); ++i) {
    os << "  out" << i << " [shape=box, style=filled, fillcolor=palegreen, "
       << "label=\"output " << i << "\"];\n";
    if (!def[trace.outputs[i]].empty())
      os << "  " << def[trace.outputs[i]] << " -> out" << i << ";\n";
  }
  for (size_t i = 0; i < trace.mutations.size(); ++i) {
    const Mutation &m = trace.mutations[i];
    os << "  mut" << i << " [shape=box, style=filled, fillcolor=salmon, "
       << "label=\"write " << trace.inputs[m.input].name << "\"];\n";
    if (!def[m.value].empty())
      os << "  " << def[m.value] << " -> mut" << i << ";\n";
  }
  os << "}\n";
  return os.str();
}

} // namespace ember::ir
