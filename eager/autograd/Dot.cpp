#include "eager/autograd/Dot.h"
#include "eager/autograd/BuiltinNodes.h"
#include "eager/autograd/Variable.h"

#include <sstream>
#include <unordered_map>

namespace ember::autograd {

namespace {
std::string shape(IntArrayRef s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}
std::string escape(const std::string &s) {
  std::string r;
  for (char c : s) {
    if (c == '\n')
      r += "\\n";
    else
      r += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  }
  return r;
}
} // namespace

std::string to_dot(const variable_list &roots,
                   const std::vector<std::pair<std::string, Tensor>> &params) {
  std::ostringstream os;
  os << "digraph autograd {\n"
        "  node [shape=box, style=filled, fillcolor=lightgray, "
        "fontname=monospace, fontsize=10];\n";
  std::unordered_map<const Node *, int> ids;
  std::vector<const Node *> order;
  auto id_of = [&](const Node *n) {
    auto [it, added] = ids.emplace(n, int(ids.size()));
    if (added)
      order.push_back(n);
    return it->second;
  };
  int ri = 0;
  for (const Tensor &r : roots) {
    os << "  out" << ri << " [label=\"" << shape(r.sizes())
       << "\", fillcolor=darkolivegreen1];\n";
    if (const auto &fn = r.grad_fn())
      os << "  n" << id_of(fn.get()) << " -> out" << ri << ";\n";
    ++ri;
  }
  for (size_t i = 0; i < order.size(); ++i) {
    const Node *n = order[i];
    std::string label = n->name();
    std::string color = "lightgray";
    if (auto *acc = dynamic_cast<const AccumulateGrad *>(n)) {
      std::string name;
      for (const auto &[pn, p] : params)
        if (p.is_same(acc->variable))
          name = pn;
      label = (name.empty() ? "" : name + "\n") + shape(acc->variable.sizes());
      color = "lightblue";
    }
    for (const auto &[sn, ss] : n->saved_tensors_info())
      if (!ss.empty() || sn.size())
        label += "\n" + sn + ": " + shape(ss);
    os << "  n" << id_of(n) << " [label=\"" << escape(label)
       << "\", fillcolor=" << color << "];\n";
    for (const Edge &e : n->next_edges())
      if (e.function)
        os << "  n" << id_of(e.function.get()) << " -> n" << id_of(n) << ";\n";
  }
  os << "}\n";
  return os.str();
}

} // namespace ember::autograd
