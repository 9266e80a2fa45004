#include "ir/Trace.h"

#include <cstring>
#include <sstream>
#include <string_view>
#include <variant>

namespace ember::ir {

namespace {
/// `prefix` then the number. (Not `"c" + std::to_string(i)`: GCC 12 warns
/// -Wrestrict on that pattern once inlined, a known false positive, GCC
/// bug 105329.)
std::string prefixed(const char *prefix, int64_t i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

constexpr std::pair<InputKind, const char *> kInputKinds[] = {
    {InputKind::Argument, "argument"},
    {InputKind::Lifted, "lifted"},
    {InputKind::ArgumentStorage, "storage"},
    {InputKind::Tangent, "tangent"}};
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
  // float32 -> f32, int64 -> i64, uint8 -> u8, bfloat16 -> bf16, bool.
  // (Written piecewise: GCC 12 warns -Wrestrict on string surgery here.)
  std::string_view n = short_names[int(t.dtype)];
  constexpr std::pair<std::string_view, std::string_view> kShort[] = {
      {"float", "f"}, {"bfloat", "bf"}, {"uint", "u"}, {"int", "i"}};
  for (auto [prefix, short_prefix] : kShort)
    if (n.substr(0, prefix.size()) == prefix) {
      os << short_prefix;
      n.remove_prefix(prefix.size());
      break;
    }
  os << n << "[";
  for (size_t i = 0; i < t.sizes.size(); ++i)
    os << (i ? ", " : "") << t.sizes[i];
  os << "]";
  if (t.device.is_cuda())
    os << "@" << t.device.str();
  return os.str();
}

namespace {
/// Doubles are compared by their bits: -0.0 and 0.0 differ (x * -0.0 is not
/// x * 0.0), and a NaN equals itself (a NaN argument must not recompile at
/// every call).
uint64_t bits_of(double d) {
  uint64_t bits;
  static_assert(sizeof bits == sizeof d);
  std::memcpy(&bits, &d, sizeof d);
  return bits;
}

/// FNV-1a style mixing of 64-bit words.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t v) { hash_combine(h, v); }
  void add_double(double d) { add(bits_of(d)); }
  void add(const std::string &s) { add(std::hash<std::string>()(s)); }
  template <class T> void add_all(const std::vector<T> &v) {
    add(v.size());
    for (const T &x : v)
      add(uint64_t(x));
  }
};

bool same_scalar(const Scalar &a, const Scalar &b) {
  if (a.tag() != b.tag())
    return false;
  return a.isFloatingPoint() ? bits_of(a.toDouble()) == bits_of(b.toDouble())
                             : a.toLong() == b.toLong();
}

/// Exact equality of attribute values (tensors by identity).
bool same_attr(const IValue &a, const IValue &b) {
  if (a.payload().index() != b.payload().index())
    return false;
  return std::visit(
      [&](const auto &x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T &y = std::get<T>(b.payload());
        if constexpr (std::is_same_v<T, std::monostate>)
          return true;
        else if constexpr (std::is_same_v<T, Tensor>)
          return x.is_same(y);
        else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
          if (x.size() != y.size())
            return false;
          for (size_t i = 0; i < x.size(); ++i)
            if (!x[i].is_same(y[i]))
              return false;
          return true;
        } else if constexpr (std::is_same_v<T, Generator>)
          return false; // never an attribute of a captured op
        else
          return x == y;
      },
      a.payload());
}

void hash_attr(Hasher &h, const IValue &a) {
  h.add(a.payload().index());
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, bool>)
          h.add(uint64_t(x));
        else if constexpr (std::is_same_v<T, double>)
          h.add_double(x);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          h.add_all(x);
        else if constexpr (std::is_same_v<T, std::vector<double>>) {
          h.add(x.size());
          for (double d : x)
            h.add_double(d);
        } else if constexpr (std::is_same_v<T, std::string>)
          h.add(x);
        else if constexpr (std::is_same_v<T, ScalarType>)
          h.add(uint64_t(x));
        else if constexpr (std::is_same_v<T, Device>)
          h.add(x.str());
      },
      a.payload());
}

bool same_arg(const Arg &a, const Arg &b) {
  return a.kind == b.kind && a.value == b.value && a.values == b.values &&
         (a.kind != Arg::Kind::Attr || same_attr(a.attr, b.attr));
}
} // namespace

std::string Node::label() const {
  if (!body)
    return op->name();
  return kernel ? "fusion[" + kernel->name() + "]" : "fusion[eager]";
}

bool Trace::same_structure(const Trace &o) const {
  if (types != o.types || outputs != o.outputs || gradients != o.gradients ||
      output_strides != o.output_strides || inputs.size() != o.inputs.size() ||
      constants.size() != o.constants.size() ||
      nodes.size() != o.nodes.size() || mutations.size() != o.mutations.size())
    return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input &a = inputs[i], &b = o.inputs[i];
    if (a.value != b.value || a.kind != b.kind || a.index != b.index ||
        a.name != b.name || a.fresh != b.fresh)
      return false;
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    const Constant &a = constants[i], &b = o.constants[i];
    if (a.value != b.value || a.tensor.defined() != b.tensor.defined() ||
        (a.tensor.defined() ? !a.tensor.is_same(b.tensor)
                            : !same_scalar(a.scalar, b.scalar)))
      return false;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node &a = nodes[i], &b = o.nodes[i];
    if (a.op != b.op || a.body != b.body || a.results != b.results ||
        a.recompute != b.recompute || a.args.size() != b.args.size())
      return false;
    for (size_t k = 0; k < a.args.size(); ++k)
      if (!same_arg(a.args[k], b.args[k]))
        return false;
  }
  for (size_t i = 0; i < mutations.size(); ++i)
    if (mutations[i].input != o.mutations[i].input ||
        mutations[i].value != o.mutations[i].value)
      return false;
  return true;
}

uint64_t Trace::structure_hash() const {
  Hasher h;
  h.add(types.size());
  for (const ValueType &t : types) {
    h.add_all(t.sizes);
    h.add(uint64_t(t.dtype));
  }
  for (const Input &in : inputs) {
    h.add(uint64_t(in.value));
    h.add(uint64_t(in.kind));
    h.add(uint64_t(in.index));
    h.add(uint64_t(in.fresh));
  }
  for (const Constant &c : constants) {
    h.add(uint64_t(c.value));
    if (!c.tensor.defined())
      h.add(c.scalar.isFloatingPoint() ? bits_of(c.scalar.toDouble())
                                       : uint64_t(c.scalar.toLong()));
  }
  for (const Node &n : nodes) {
    h.add(reinterpret_cast<uintptr_t>(n.op));
    h.add(n.recompute);
    for (const Arg &a : n.args) {
      h.add(uint64_t(a.kind));
      h.add(uint64_t(a.value));
      h.add(a.values.size());
      for (int v : a.values)
        h.add(uint64_t(v));
      if (a.kind == Arg::Kind::Attr)
        hash_attr(h, a.attr);
    }
  }
  h.add_all(outputs);
  for (const Mutation &m : mutations) {
    h.add(uint64_t(m.input));
    h.add(uint64_t(m.value));
  }
  h.add_all(gradients);
  return h.h;
}

std::string Trace::str() const {
  std::ostringstream os;
  os.precision(17); // constants and attributes exactly (the cache key uses it)
  auto v = [&](int id) { return prefixed("%", id); };
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
    os << (n.results.empty() ? "" : " = ") << n.label() << "(";
    static const std::vector<Argument> no_schema;
    const auto &schema = n.op ? n.op->schema().arguments : no_schema;
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
    if (n.body) {
      // The body, indented, without its header line.
      std::istringstream lines(n.body->str());
      std::string line;
      std::getline(lines, line);
      while (std::getline(lines, line))
        os << "    " << line << "\n";
    }
  }
  os << "  return (";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", " : "") << v(outputs[i]);
  os << ")\n";
  for (const Mutation &m : mutations)
    os << "  mutation: " << inputs[m.input].name << " <- " << v(m.value)
       << "\n";
  if (!gradients.empty()) {
    os << "  gradients: (";
    for (size_t i = 0; i < gradients.size(); ++i)
      os << (i ? ", " : "") << v(gradients[i]);
    os << ")\n";
  }
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
    std::string id = prefixed("in", i);
    def[in.value] = id;
    os << "  " << id << " [shape=box, style=filled, fillcolor=lightblue, "
       << "label=\"" << in.name << "\\n"
       << type_str(trace.types[in.value]) << "\"];\n";
  }
  for (size_t i = 0; i < trace.constants.size(); ++i) {
    const Constant &c = trace.constants[i];
    std::string id = prefixed("c", i);
    def[c.value] = id;
    os << "  " << id << " [shape=plaintext, label=\"" << c.scalar << "\"];\n";
  }
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const Node &n = trace.nodes[i];
    std::string id = prefixed("n", i);
    os << "  " << id << " [shape=" << (n.body ? "box" : "ellipse")
       << ", label=\"" << n.label();
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
