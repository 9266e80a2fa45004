"""Autograd bindings from the `derivative` fields of ops.yaml (DESIGN.md:
"the autograd formula ... written with ember ops").

An entry's `derivative` is one of:
  {arg: formula, ...}  one C++ expression (ember ops) per differentiable
                       argument, over: `grad` (gradient of the first
                       output), `grads` (all of them), the op's arguments by
                       name, `result` / the named outputs, and
                       `<arg>_sizes`, `<arg>_strides`, `<arg>_options`, `<arg>_dtype`,
                       `<arg>_dim` (saved instead of the tensor). A Tensor[]
                       argument's formula returns one tensor per element.
                       A key naming several arguments ("input, weight, bias")
                       is one formula for all of them: it returns a
                       std::tuple (one tensor per name, in order) and reads
                       `grad_input_mask`, a std::array<bool, n> saying which
                       are needed (PyTorch's derivatives.yaml form).
  none                 not differentiable: outputs never require grad.
  composite            the kernel is made of differentiable ember ops:
                       autograd records those (CompositeImplicitAutograd).
An in-place op without its own entry uses its out-of-place op's formulas.

From each differentiable op this generates a Node (`MulBackward0`: the op's
name in CamelCase, numbered over the op's overloads as PyTorch does) and an
Autograd kernel that records it (generated/AutogradNodes.h,
generated/AutogradKernels.cpp). Ops without any entry get the Autograd
fallback: their outputs carry a NotImplemented node.
"""
import re
import sys

# `<arg>_<suffix>` in a formula saves this property of the tensor argument
# instead of the tensor: its C++ type, and how to read it from tensor {t}.
SUFFIXES = {
    "sizes": ("std::vector<int64_t>", "std::vector<int64_t>({t}.sizes().begin(), {t}.sizes().end())"),
    "strides": ("std::vector<int64_t>", "std::vector<int64_t>({t}.strides().begin(), {t}.strides().end())"),
    "options": ("TensorOptions", "{t}.options()"),
    "dtype": ("ScalarType", "{t}.dtype()"),
    "dim": ("int64_t", "{t}.dim()"),
}
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")

# How a non-tensor argument is stored in a node, and how apply() reads it.
STORE = {
    "int": ("int64_t", "{n}_"), "int?": ("std::optional<int64_t>", "{n}_"),
    "int[]": ("std::vector<int64_t>", "IntArrayRef({n}_)"),
    "int[]?": ("std::optional<std::vector<int64_t>>",
               "({n}_ ? OptionalIntArrayRef(*{n}_) : OptionalIntArrayRef())"),
    "float": ("double", "{n}_"), "float?": ("std::optional<double>", "{n}_"),
    "bool": ("bool", "{n}_"), "Scalar": ("Scalar", "{n}_"),
    "Scalar?": ("std::optional<Scalar>", "{n}_"),
    "str": ("std::string", "std::string_view({n}_)"),
    "str?": ("std::optional<std::string>",
             "({n}_ ? std::optional<std::string_view>(*{n}_) : std::nullopt)"),
    "ScalarType?": ("std::optional<ScalarType>", "{n}_"),
    "ScalarType": ("ScalarType", "{n}_"),
}
STORE_INIT = {"int[]": "std::vector<int64_t>({n}.begin(), {n}.end())",
              "int[]?": "({n} ? std::optional<std::vector<int64_t>>(std::vector<int64_t>({n}->begin(), {n}->end())) : std::nullopt)",
              "str": "std::string({n})",
              "str?": "({n} ? std::optional<std::string>(std::string(*{n})) : std::nullopt)"}


def camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_") if p)


class Info:
    """The derivative of one op, analysed."""

    def __init__(self, op, formulas, node, nondiff_outputs=()):
        s = op.schema
        self.op, self.node = op, node
        self.tensor_args = [a for a in s.args if a.type in ("Tensor", "Tensor?", "Tensor[]")]
        # One formula per argument, or one for a group ("a, b"): `groups`
        # maps each group's first argument to (names, formula).
        self.formulas, self.groups = {}, {}
        names = [a.name for a in self.tensor_args]
        for k, f in formulas.items():
            ks = [x.strip() for x in k.split(",")]
            for x in ks:
                if x not in names:
                    sys.exit(f"{s.text}: derivative for '{x}', which is not a tensor argument")
                if len(ks) > 1 and next(a for a in self.tensor_args if a.name == x).type == "Tensor[]":
                    sys.exit(f"{s.text}: a grouped derivative cannot take the Tensor[] '{x}'")
            if len(ks) == 1:
                self.formulas[ks[0]] = f
            else:
                self.groups[ks[0]] = (ks, f)
                for x in ks:
                    self.formulas[x] = None
        self.diff = [a for a in self.tensor_args if a.name in self.formulas]
        outs = s.returns
        self.out_names = ["result"] if len(outs) == 1 else [
            r for r in re.findall(r"Tensor\s+(\w+)", s.text.split("->")[1])]
        for o in nondiff_outputs:
            if o not in self.out_names:
                sys.exit(f"{s.text}: nondifferentiable output '{o}' is not an output")
        self.nondiff_outputs = set(nondiff_outputs)
        used = set()
        for f in formulas.values():
            used |= set(IDENT.findall(f))
        self.used = used
        # Which formulas (edge args) use each name: save only if needed.
        self.users = {}
        for k, f in formulas.items():
            for n in set(IDENT.findall(f)):
                for x in k.split(","):
                    self.users.setdefault(n, []).append(x.strip())


def analyse(ops):
    by_name = {}
    for o in ops:
        by_name[o.schema.cname] = o
    infos, counters = {}, {}
    # Out-of-place first: in-place ops inherit.
    for o in ops:
        d = o.entry.get("derivative")
        if o.kind == "composite" or not o.dispatched:
            continue
        if o.kind == "pointwise_inplace":
            continue
        if isinstance(d, dict):
            base = o.schema.name.rstrip("_")
            idx = counters.get(base, 0)
            counters[base] = idx + 1
            infos[o.schema.cname] = Info(o, d, f"{camel(base)}Backward{idx}",
                                         o.entry.get("nondifferentiable_outputs", ()))
    result = {}
    for o in ops:
        if not o.dispatched or o.kind == "composite":
            continue
        d = o.entry.get("derivative")
        if o.kind == "pointwise_inplace":
            d = o.base.entry.get("derivative")
            if isinstance(d, dict):
                result[o.schema.cname] = ("formula", infos[o.base.schema.cname])
                continue
        elif isinstance(d, dict):
            result[o.schema.cname] = ("formula", infos[o.schema.cname])
            continue
        if d is None and o.schema.inplace:
            # clamp_ inherits clamp's entry
            cand = o.schema.name.rstrip("_") + ("_" + o.schema.overload if o.schema.overload else "")
            if cand in infos:
                result[o.schema.cname] = ("formula", infos[cand])
                continue
        if d in ("none", "composite"):
            result[o.schema.cname] = (d, None)
    return result, infos


def node_decl(info):
    s = info.op.schema
    f = []
    for a in s.args:
        n = a.name
        if a.type in ("Tensor", "Tensor?") and n in info.used:
            f.append(f"  SavedVariable {n}_;")
        elif a.type == "Tensor[]":
            if n in info.used:
                f.append(f"  std::vector<SavedVariable> {n}_;")
            if a in info.diff:
                f.append(f"  size_t {n}_size_ = 0;")
        elif n in info.used:
            f.append(f"  {STORE[a.type][0]} {n}_;")
        for suf in SUFFIXES:
            if f"{n}_{suf}" in info.used:
                lst = a.type == "Tensor[]"
                t = SUFFIXES[suf][0]
                f.append(f"  {'std::vector<' + t + '>' if lst else t} {n}_{suf}_;")
    for o in info.out_names:
        if o in info.used:
            f.append(f"  SavedVariable {o}_;")
    saved = [a.name for a in s.args if a.type in ("Tensor", "Tensor?") and a.name in info.used]
    saved += [o for o in info.out_names if o in info.used]
    lists = [a.name for a in s.args if a.type == "Tensor[]" and a.name in info.used]
    rel = "".join(f"    {n}_.reset_data();\n" for n in saved)
    rel += "".join(f"    for (auto &v : {n}_) v.reset_data();\n" for n in lists)
    infos = "".join(f'    r.push_back({{"{n}", {n}_.sizes()}});\n' for n in saved)
    return (f"/// Backward of {s.text}\n"
            f"struct {info.node} final : Node {{\n"
            f"  variable_list apply(variable_list &&grads) override;\n"
            f"  std::string name() const override {{ return \"{info.op.entry.get('backward_node', info.node)}\"; }}\n"
            f"  void release_variables() override {{\n{rel}  }}\n"
            f"  std::vector<std::pair<std::string, std::vector<int64_t>>> saved_tensors_info() const override {{\n"
            f"    std::vector<std::pair<std::string, std::vector<int64_t>>> r;\n{infos}    return r;\n  }}\n"
            + "\n".join(f) + "\n};\n")


def node_apply(info):
    s = info.op.schema
    L = [f"variable_list {info.node}::apply(variable_list &&grads_in) {{",
         "  if (!any_defined(grads_in))",
         "    return variable_list(num_outputs());",
         "  variable_list grads = materialize_grads(*this, std::move(grads_in));",
         "  [[maybe_unused]] const Tensor &grad = grads[0];",
         "  [[maybe_unused]] auto self_node = shared_from_this();"]
    for a in s.args:
        n = a.name
        if a.type in ("Tensor", "Tensor?") and n in info.used:
            L.append(f"  Tensor {n} = {n}_.unpack();")
        elif a.type == "Tensor[]" and n in info.used:
            L.append(f"  std::vector<Tensor> {n};")
            L.append(f"  for (const auto &v : {n}_) {n}.push_back(v.unpack());")
        elif a.type not in ("Tensor", "Tensor?", "Tensor[]") and n in info.used:
            L.append(f"  [[maybe_unused]] auto {n} = {STORE[a.type][1].format(n=n)};")
        for suf in SUFFIXES:
            if f"{n}_{suf}" in info.used:
                L.append(f"  const auto &{n}_{suf} = {n}_{suf}_;")
    for o in info.out_names:
        if o in info.used:
            L.append(f"  Tensor {o} = {o}_.unpack(self_node);")
    L.append("  variable_list out(num_outputs());")
    L.append("  size_t k = 0;")
    for a in info.diff:
        n, f = a.name, info.formulas[a.name]
        if f is None:  # in a group: computed below, at edge k_<name>
            L.append(f"  const size_t k_{n} = k++;")
            continue
        if a.type == "Tensor[]":
            L.append(f"  if (any_should_compute(*this, k, {n}_size_)) {{")
            L.append(f"    variable_list r = {f};")
            L.append(f"    for (size_t i = 0; i < {n}_size_; ++i) if (should_compute_output(k + i)) out[k + i] = r.at(i);")
            L.append("  }")
            L.append(f"  k += {n}_size_;")
        else:
            L.append(f"  if (should_compute_output(k))")
            L.append(f"    out[k] = {f};")
            L.append("  ++k;")
    for names, f in info.groups.values():
        L.append("  {")
        L.append(f"    std::array<bool, {len(names)}> grad_input_mask = {{"
                 + ", ".join(f"should_compute_output(k_{n})" for n in names) + "};")
        L.append("    if (" + " || ".join(f"grad_input_mask[{i}]" for i in range(len(names))) + ") {")
        L.append(f"      auto r = {f};")
        for i, n in enumerate(names):
            L.append(f"      if (grad_input_mask[{i}])")
            L.append(f"        out[k_{n}] = std::get<{i}>(r);")
        L.append("    }")
        L.append("  }")
    L.append("  return out;")
    L.append("}")
    return "\n".join(L) + "\n"


def kernel(op, info, cpp_ret, params, sig_type, names):
    s = op.schema
    inplace = s.inplace
    ret, argt = sig_type(s)
    diff = info.diff
    single = [a for a in diff if a.type != "Tensor[]"]
    lists = [a for a in diff if a.type == "Tensor[]"]

    def ptr(a):
        return f"opt_ptr({a.name})" if a.type == "Tensor?" else f"&{a.name}"
    L = [f"{cpp_ret(s)} {s.cname}({params(s, defaults=False)}) {{"]
    conds = [f"compute_requires_grad({{{', '.join(ptr(a) for a in single)}}})"] if single else []
    conds += [f"any_requires_grad({a.name})" for a in lists]
    L.append(f"  bool rg = {' || '.join(conds) or 'false'};")
    if inplace:
        L.append("  check_inplace(self, rg);")
    L.append(f"  std::shared_ptr<{info.node}> grad_fn;")
    L.append("  if (rg) {")
    L.append(f"    grad_fn = std::make_shared<{info.node}>();")
    L.append("    edge_list edges;")
    for a in diff:
        if a.type == "Tensor[]":
            L.append(f"    for (const Tensor &t : {a.name}) edges.push_back(gradient_edge(t));")
            L.append(f"    grad_fn->{a.name}_size_ = {a.name}.size();")
        elif a.type == "Tensor?":
            L.append(f"    edges.push_back({a.name} ? gradient_edge(*{a.name}) : Edge());")
        else:
            L.append(f"    edges.push_back(gradient_edge({a.name}));")
    L.append("    grad_fn->set_next_edges(std::move(edges));")
    # Which edges (by arg) need each saved value: save when any of them does.
    edge_start, k = {}, "0"
    for a in diff:
        edge_start[a.name] = k
        k = f"{k} + {a.name}.size()" if a.type == "Tensor[]" else f"{k} + 1"

    def needed(n):
        users = info.users.get(n, [])
        cs = []
        for u in users:
            a = next(x for x in diff if x.name == u)
            if a.type == "Tensor[]":
                cs.append(f"any_should_compute(*grad_fn, {edge_start[u]}, {u}.size())")
            else:
                cs.append(f"grad_fn->should_compute_output({edge_start[u]})")
        return " || ".join(cs) or "false"
    for a in s.args:
        n = a.name
        if a.type in ("Tensor", "Tensor?") and n in info.used:
            val = n if a.type == "Tensor" else f"({n} ? *{n} : Tensor())"
            if inplace and n == "self":
                val = "self.clone()"  # the value before the op overwrites it
            L.append(f"    if ({needed(n)}) grad_fn->{n}_ = SavedVariable({val}, false);")
        elif a.type == "Tensor[]" and n in info.used:
            L.append(f"    if ({needed(n)}) for (const Tensor &t : {n}) grad_fn->{n}_.emplace_back(t, false);")
        elif n in info.used:
            init = STORE_INIT.get(a.type, "{n}").format(n=n)
            L.append(f"    grad_fn->{n}_ = {init};")
        for suf in SUFFIXES:
            if f"{n}_{suf}" in info.used:
                if a.type == "Tensor[]":
                    expr = SUFFIXES[suf][1].format(t="t")
                    L.append(f"    for (const Tensor &t : {n}) grad_fn->{n}_{suf}_.push_back({expr});")
                else:
                    expr = SUFFIXES[suf][1].format(t=n)
                    L.append(f"    grad_fn->{n}_{suf}_ = {expr};")
    L.append("  }")
    call = (f"ops::{s.cname}().redispatch<{ret}{', ' + argt if argt else ''}>("
            f"ember::detail::keysOf({names(s)}), {names(s)})")
    rtype = "Tensor" if inplace else cpp_ret(s)
    L.append(f"  {'const Tensor &' if inplace else rtype} result = [&]() -> {'const Tensor &' if inplace else rtype} {{")
    L.append("    ExcludeDispatchKeyGuard below(DispatchKey::Autograd);")
    L.append(f"    return {call};")
    L.append("  }();")
    L.append("  if (grad_fn) {")
    tins = [a.name for a in s.args if a.type == "Tensor"]
    if inplace:
        L.append("    rebase_history(self, grad_fn);")
        if "result" in info.used:
            L.append("    grad_fn->result_ = SavedVariable(self, true);")
    else:
        rs = s.returns
        if len(rs) == 1 and rs[0][0] == "Tensor[]":
            L.append("    for (const Tensor &r : result) attach_output(r, grad_fn, {" + ", ".join("&" + t for t in tins) + "});")
        elif len(rs) == 1:
            L.append("    attach_output(result, grad_fn, {" + ", ".join("&" + t for t in tins) + "});")
            if "result" in info.used:
                L.append("    grad_fn->result_ = SavedVariable(result, true);")
        else:
            for i, o in enumerate(info.out_names):
                if o in info.nondiff_outputs:
                    # No history: recorded as the node's input, never as
                    # its output, and saved as a plain tensor.
                    L.append(f"    grad_fn->add_input_metadata(std::get<{i}>(result));")
                    if o in info.used:
                        L.append(f"    grad_fn->{o}_ = SavedVariable(std::get<{i}>(result), false);")
                    continue
                L.append(f"    attach_output(std::get<{i}>(result), grad_fn, {{" + ", ".join("&" + t for t in tins) + "});")
                if o in info.used:
                    L.append(f"    grad_fn->{o}_ = SavedVariable(std::get<{i}>(result), true);")
    L.append("  }")
    L.append("  return result;")
    L.append("}")
    return "\n".join(L) + "\n"


def passthrough(op, cpp_ret, params, sig_type, names):
    """derivative: none -- run below autograd; outputs get no history."""
    s = op.schema
    ret, argt = sig_type(s)
    return (f"{cpp_ret(s)} {s.cname}({params(s, defaults=False)}) {{\n"
            f"  ExcludeDispatchKeyGuard below(DispatchKey::Autograd);\n"
            f"  return ops::{s.cname}().redispatch<{ret}{', ' + argt if argt else ''}>("
            f"ember::detail::keysOf({names(s)}), {names(s)});\n}}\n")


def generate(ops, files, cpp_ret, params, sig_type, names):
    result, infos = analyse(ops)
    h = ["// Generated by eager/ops/gen_autograd.py from ops.yaml. Do not edit.",
         "// The autograd nodes of the ops with derivative formulas.",
         "#pragma once", '#include "eager/autograd/SavedVariable.h"', "",
         "namespace ember::autograd::generated {"]
    for info in infos.values():
        h.append(node_decl(info))
    h.append("} // namespace ember::autograd::generated")
    h.append("")
    h.append("/// X-macro over the ops with derivative formulas (their out-of-place")
    h.append("/// forms): _(cname, NodeName). Tests check each has a gradcheck case.")
    h.append("#define EMBER_FORALL_DIFFERENTIABLE_OPS(_) \\")
    for cname, info in infos.items():
        h.append(f"  _({cname}, {info.node}) \\")
    h.append("")
    files["AutogradNodes.h"] = "\n".join(h) + "\n"

    c = ["// Generated by eager/ops/gen_autograd.py from ops.yaml. Do not edit.",
         '#include "eager/Factory.h"',
         '#include "eager/autograd/FunctionsManual.h"',
         '#include "eager/autograd/KernelSupport.h"',
         '#include "eager/generated/AutogradNodes.h"',
         '#include "eager/generated/Functions.h"',
         '#include "eager/generated/NativeFunctions.h"', "",
         "namespace ember::autograd::generated {",
         "using namespace ember::autograd::details;", ""]
    for info in infos.values():
        c.append(node_apply(info))
    c.append("namespace kernels {")
    for o in ops:
        r = result.get(o.schema.cname)
        if not r:
            continue
        kind, info = r
        if kind == "formula":
            c.append(kernel(o, info, cpp_ret, params, sig_type, names))
        elif kind == "none":
            c.append(passthrough(o, cpp_ret, params, sig_type, names))
    c.append("} // namespace kernels")
    c.append("")
    c.append("void register_autograd_kernels() {")
    c.append("  register_autograd_fallback();")
    for o in ops:
        r = result.get(o.schema.cname)
        if not r:
            continue
        fn = f"&native::{o.native}" if r[0] == "composite" else f"&kernels::{o.schema.cname}"
        c.append(f"  const_cast<OperatorHandle &>(ops::{o.schema.cname}()).setKernel("
                 f"DispatchKey::Autograd, KernelFunction::makeFromUnboxed({fn}));")
    c.append("}")
    c.append("} // namespace ember::autograd::generated")
    files["AutogradKernels.cpp"] = "\n".join(c) + "\n"
