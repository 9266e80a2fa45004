#!/usr/bin/env python3
"""Generates ember's op bindings from ops.yaml (DESIGN.md, "One op table").

Outputs (into --out/eager/generated/):
  Functions.h          ember:: functions and ember::ops:: op handles
  TensorMethods.inc    Tensor method declarations (included in class Tensor)
  NativeFunctions.h    signatures the hand-written kernels must implement
  PointwiseFunctors.h  one functor per pointwise op: its scalar expression
  Ops.cpp              schemas, functions, methods, registrations
  PointwiseKernels_N.cpp  CPU kernels of the pointwise ops, in shards
  MetaFunctions.h      signatures of the shape rules of the `cpu:` ops
                       (eager/meta/, ember::meta::rules)
  MetaRules.cpp        the table of shape rules: one per dispatched op
  PointwiseSpecs.h     the PointwiseSpec of each pointwise op (kernel and rule)
"""
import argparse
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_autograd  # noqa: E402

# --- schema parsing -------------------------------------------------------------


class Arg:
    def __init__(self, type_, name, default, kwonly, write):
        self.type, self.name, self.default = type_, name, default
        self.kwonly, self.write = kwonly, write


def parse_type(t):
    """'Tensor(a!)' -> ('Tensor', True); 'int[1]?' -> ('int[]?', False)."""
    write = "!" in t
    t = re.sub(r"\([a-z]!?\)", "", t)
    t = re.sub(r"\[\d*\]", "[]", t)
    return t, write


def split_top(s):
    out, depth, cur = [], 0, ""
    for c in s:
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        out.append(cur.strip())
    return out


class Schema:
    def __init__(self, text):
        self.text = text
        m = re.match(r"^([\w.]+)\((.*)\)\s*->\s*(.+)$", text)
        if not m:
            sys.exit(f"bad schema: {text}")
        full, args, rets = m.groups()
        self.name, _, self.overload = full.partition(".")
        self.args = []
        kwonly = False
        for a in split_top(args):
            if a == "*":
                kwonly = True
                continue
            decl, _, default = a.partition("=")
            ty, name = decl.rsplit(None, 1)
            ty, write = parse_type(ty)
            self.args.append(Arg(ty, name, default.strip() or None, kwonly, write))
        rets = rets.strip()
        if rets.startswith("("):
            rets = rets[1:-1]
        self.returns = [parse_type(r.split()[0]) for r in split_top(rets)]
        # Tensor(a) / Tensor(a)[] returns: a view of self.
        self.is_view = bool(re.search(r"Tensor\(a\)", rets))
        # Arguments whose defaults the C++ declaration omits (ops.yaml
        # `cpp_no_default_args`): set by Op.
        self.no_default_args = set()

    @property
    def cname(self):
        """C++ identifier of the op: add.Tensor -> add_Tensor."""
        return self.name + ("_" + self.overload if self.overload else "")

    @property
    def inplace(self):
        return bool(self.args) and self.args[0].write


CPP_ARG = {
    "Tensor": "const Tensor &", "Tensor?": "const std::optional<Tensor> &",
    "Tensor[]": "TensorList", "int": "int64_t", "int?": "std::optional<int64_t>",
    "int[]": "IntArrayRef", "int[]?": "OptionalIntArrayRef", "float": "double",
    "float?": "std::optional<double>", "bool": "bool",
    "bool?": "std::optional<bool>", "Scalar": "const Scalar &",
    "Scalar?": "const std::optional<Scalar> &", "str": "std::string_view",
    "str?": "std::optional<std::string_view>",
    "ScalarType?": "std::optional<ScalarType>", "ScalarType": "ScalarType",
    "Device?": "std::optional<Device>", "Generator?": "std::optional<Generator>",
}
# The type the kernel's function pointer is called with (templates see these).
CPP_CALL = {k: v.replace(" &", "&") for k, v in CPP_ARG.items()}


def cpp_ret(schema):
    if schema.inplace:
        return "const Tensor &"
    rs = schema.returns
    one = {"Tensor": "Tensor", "Tensor[]": "std::vector<Tensor>", "bool": "bool",
           "float": "double", "int": "int64_t", "Scalar": "Scalar"}
    if len(rs) == 1:
        return one[rs[0][0]]
    return "std::tuple<" + ", ".join(one[r[0]] for r in rs) + ">"


# ATen's enum defaults of int arguments (`int reduction=Mean`): the C++ names
# of their values (eager/Enum.h).
ENUM_DEFAULTS = {"Mean": "Reduction::Mean", "Sum": "Reduction::Sum"}


def cpp_default(a):
    d = a.default
    if d is None:
        return ""
    if d == "None":
        return " = std::nullopt"
    if a.type == "int" and d in ENUM_DEFAULTS:
        return " = " + ENUM_DEFAULTS[d]
    if d in ("True", "False"):
        return " = " + d.lower()
    if d.startswith("["):
        return " = {" + d[1:-1] + "}"
    if d.startswith("'"):
        return ' = "' + d[1:-1] + '"'
    return " = " + d


def params(schema, skip_self=False, defaults=True):
    out = []
    for a in schema.args:
        if skip_self and a.name == "self":
            continue
        t = CPP_ARG[a.type]
        default = defaults and a.name not in schema.no_default_args
        out.append(t + ("" if t.endswith("&") else " ") + a.name +
                   (cpp_default(a) if default else ""))
    return ", ".join(out)


def names(schema):
    return ", ".join(a.name for a in schema.args)


def sig_type(schema):
    ret = cpp_ret(schema).replace(" &", "&")
    return ret, ", ".join(CPP_CALL[a.type] for a in schema.args)


# --- autocast -------------------------------------------------------------------

AUTOCAST_POLICIES = {"lower_precision_fp", "fp32", "fp32_set_opt_dtype",
                     "promote", "banned"}


def autocast_policies(o):
    """The op's (cpu, cuda) cast policies from its `autocast:` field, or None
    (Note [Autocast] in eager/amp/Autocast.h). Only the op the entry declares
    gets them: its in-place form and Scalar overload (which calls it) do not."""
    a = o.entry.get("autocast")
    if a is None or o.kind in ("pointwise_inplace", "scalar_overload"):
        return None
    if o.schema.inplace:
        sys.exit(f"{o.schema.text}: an in-place op cannot have an autocast "
                 "policy (a cast would write into a copy)")
    if isinstance(a, str):
        pol = {"cpu": a, "cuda": a}
    elif isinstance(a, dict) and set(a) <= {"cpu", "cuda"}:
        pol = {"cpu": a.get("cpu", "none"), "cuda": a.get("cuda", "none")}
    else:
        sys.exit(f"{o.schema.text}: autocast is a policy or {{cpu: ..., cuda: ...}}")
    for v in pol.values():
        if v != "none" and v not in AUTOCAST_POLICIES:
            sys.exit(f"{o.schema.text}: unknown autocast policy {v} "
                     f"(one of {', '.join(sorted(AUTOCAST_POLICIES))})")
    if "fp32_set_opt_dtype" in pol.values() and not any(
            x.name == "dtype" and x.type == "ScalarType?" for x in o.schema.args):
        sys.exit(f"{o.schema.text}: fp32_set_opt_dtype needs a `ScalarType? dtype` argument")
    return pol["cpu"], pol["cuda"]


def autocast_plan(o, pol):
    """C++ statements making `plan` for one call of `o`, and the casted
    argument names."""
    s = o.schema
    dtype_given = ("dtype.has_value()" if any(
        a.name == "dtype" and a.type == "ScalarType?" for a in s.args) else "false")
    qual = "ember::" + s.name + ("." + s.overload if s.overload else "")
    lines = [f"  const autocast::detail::Plan plan = autocast::detail::plan("
             f'"{qual}", autocast::CastPolicy::{pol[0]}, '
             f"autocast::CastPolicy::{pol[1]}, {dtype_given}, {names(s)});"]
    casted = []
    for a in s.args:
        if a.type in ("Tensor", "Tensor?", "Tensor[]"):
            lines.append(f"  const auto &c_{a.name} = autocast::detail::cast(plan, {a.name});")
            casted.append("c_" + a.name)
        else:
            casted.append(a.name)
    return lines, ", ".join(casted)


# --- pointwise ------------------------------------------------------------------

LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*(?:[eE][-+]?\d+)?|\d+(?:[eE][-+]?\d+)?)(?![\w.])")


def functor(op, pw, device=False):
    """The functor template: its expression over compute-type values. With
    `device`, the CUDA form that the eager CUDA kernels compile with NVRTC
    (eager/cuda/Pointwise.cpp)."""
    s = op.schema
    bool_args = set(pw.get("bool_args", []))
    tensors = [a for a in s.args if a.type == "Tensor"]
    scalars = [a for a in s.args if a.type == "Scalar"]
    expr = LITERAL.sub(lambda m: f"T({m.group(1)})", pw["expr"])
    fields = "".join(f"  T {a.name};\n" for a in scalars)
    ps = ", ".join(("bool " if a.name in bool_args else "T ") + a.name for a in tensors)
    mask = sum(1 << i for i, a in enumerate(tensors) if a.name in bool_args)
    return (f"/// {s.text}\n/// = {pw['expr']}\n"
            f"template <class T> struct {s.cname}_op {{\n{fields}"
            f"  static constexpr int arity = {len(tensors)};\n"
            f"  /// Bit i set: tensor argument i is read as bool.\n"
            f"  static constexpr unsigned bool_args = {mask};\n"
            + ("  __device__ __forceinline__" if device else "  [[gnu::always_inline]]")
            + f" auto operator()({ps}) const {{\n"
            f"    return {expr};\n  }}\n}};\n")


PROMOTE = {"default": "Default", "float": "Float", "compare": "Compare",
           "bool": "Bool"}
DTYPES = {"all": "All", "nobool": "NoBool", "integral": "Integral",
          "float": "Float"}


def pw_spec(op, pw):
    """The PointwiseSpec initializer of a pointwise op (or its in-place form):
    the one description of its promotion, dtypes, bool and divisor arguments
    that its kernel and its shape rule read (PointwiseSpecs.h)."""
    s = op.schema
    tensors = [a.name for a in s.args if a.type == "Tensor"]
    bool_args = pw.get("bool_args", [])
    mask = sum(1 << i for i, n in enumerate(tensors) if n in bool_args)
    nzname = pw.get("nonzero_divisor")
    nz = tensors.index(nzname) if nzname else -1
    scalars = [a.name for a in s.args if a.type == "Scalar"]
    promo = sum(1 << i for i, n in enumerate(scalars)
                if n in pw.get("promote_scalars", []))
    integral = sum(1 << i for i, n in enumerate(scalars)
                   if n in pw.get("integral_scalars", []))
    bound = sum(1 << i for i, n in enumerate(scalars)
                if n in pw.get("bound_scalars", []))
    float_numbers = "true" if pw.get("float_numbers") else "false"
    same = pw.get("same_dtype", [])
    same_dtype = sum((1 << i) | ((1 << (8 + i)) if f"{n} unless 0-dim" in same else 0)
                     for i, n in enumerate(tensors)
                     if n in same or f"{n} unless 0-dim" in same)
    assert len(scalars) <= 4 and len(tensors) <= 4, s.text
    errs = pw.get("bool_error", [])
    assert len(errs) <= 2, s.text
    assert not any('"' in m for m in errs), s.text
    cstr = lambda m: f'"{m}"' if m else "nullptr"
    bool_error = f"{{{cstr(errs[0] if errs else None)}, {cstr(errs[1] if len(errs) > 1 else None)}}}"
    names = ", ".join(f'"{n}"' for n in scalars)
    tnames = ", ".join(f'"{n}"' for n in tensors)
    return (f'{{"{s.name}", Promote::{PROMOTE[pw.get("promote", "default")]}, '
            f'DtypeGroup::{DTYPES[pw.get("dtypes", "all")]}, {mask}, {nz}, {promo}, '
            f'{integral}, {bound}, {float_numbers}, {{{names}}}, {same_dtype}, '
            f'{{{tnames}}}, {bool_error}}}')


def cuda_native(op):
    """The native function of an op's CUDA kernel: the `cuda:` field, or the
    generated one of a pointwise op (CudaPointwiseKernels.cpp); None when
    the op has no CUDA kernel of its own (`kernel:` ops serve every device)."""
    if op.kind in ("pointwise", "pointwise_inplace"):
        return f"{op.schema.cname}_cuda"
    if op.kind == "cpu":
        if "cuda" in op.entry:
            return op.entry["cuda"]
        # Note [CUDA kernels from decompositions] (eager/Decompose.h)
        if "decompose" in op.entry:
            return f"{op.schema.cname}_cuda_decomposed"
    return None


def cuda_pw_kernel(op, pw, inplace):
    """The CUDA kernel of a pointwise op: the CPU kernel's plan, then a kernel
    NVRTC compiles from the op's functor (eager/cuda/Pointwise.cpp)."""
    s = op.schema
    base = op.base if inplace else op
    tensors = [a for a in s.args if a.type == "Tensor"]
    scalars = [a for a in s.args if a.type == "Scalar"]
    promote = PROMOTE[pw.get("promote", "default")]
    dtypes = DTYPES[pw.get("dtypes", "all")]
    ret = "const Tensor &" if inplace else "Tensor"
    out = "&self" if inplace else "nullptr"
    call = (f"cuda::run_pointwise(meta::pointwise_specs::{s.cname}, "
            f"DtypeGroup::{'Float' if promote == 'Float' else dtypes}, "
            f"kFunctor_{base.schema.cname}, inputs, "
            f"{'scalars' if scalars else '{}'}, {out})")
    return (
        f"{ret} {s.cname}_cuda({params(s, defaults=False)}) {{\n"
        f"  const Tensor *inputs[] = {{{', '.join('&' + a.name for a in tensors)}}};\n"
        + (f"  const Scalar *scalars[] = {{{', '.join('&' + a.name for a in scalars)}}};\n"
           if scalars else "")
        + (f"  {call};\n  return self;\n}}\n" if inplace else f"  return {call};\n}}\n"))


def pw_kernel(op, pw, inplace):
    """The CPU kernel of a pointwise op (functional or in-place form)."""
    s = op.schema
    fnname = op.base.schema.cname if inplace else s.cname
    tensors = [a for a in s.args if a.type == "Tensor"]
    scalars = [a for a in s.args if a.type == "Scalar"]
    name = s.cname
    ret = "const Tensor &" if inplace else "Tensor"
    init = ", ".join(f"{a.name}.to<T>()" for a in scalars)
    promote = PROMOTE[pw.get("promote", "default")]
    dtypes = DTYPES[pw.get("dtypes", "all")]
    out = "self" if inplace else "nullptr"
    return (
        f"{ret} {name}({params(s, defaults=False)}) {{\n"
        f"  const PointwiseSpec &spec = meta::pointwise_specs::{s.cname};\n"
        f"  const Tensor *inputs[] = {{{', '.join('&' + a.name for a in tensors)}}};\n"
        + (f"  const Scalar *scalars[] = {{{', '.join('&' + a.name for a in scalars)}}};\n"
           if scalars else "")
        + f"  return run_pointwise<DtypeGroup::{'Float' if promote == 'Float' else dtypes}>(spec, inputs, "
        f"{'scalars' if scalars else '{}'}, {out}, [&]<class T>() {{\n"
        f"    return fn::{fnname}_op<T>{{{init}}};\n  }});\n}}\n")


# --- ops ---------------------------------------------------------------------------


class Op:
    def __init__(self, entry, schema_text=None, kind=None):
        self.entry = entry
        self.schema = Schema(schema_text or entry["func"])
        self.schema.no_default_args = set(entry.get("cpp_no_default_args", []))
        unknown = self.schema.no_default_args - {a.name for a in self.schema.args}
        if unknown:
            sys.exit(f"{self.schema.text}: cpp_no_default_args names no argument: "
                     f"{', '.join(sorted(unknown))}")
        variants = entry.get("variants", "function")
        self.variants = [v.strip() for v in variants.split(",")]
        self.kind = kind  # pointwise | pointwise_inplace | scalar_overload | cpu | kernel | composite

    @property
    def dispatched(self):
        return self.kind != "composite" and self.kind != "scalar_overload"

    @property
    def native(self):
        e = self.entry
        if self.kind in ("pointwise", "pointwise_inplace", "scalar_overload"):
            return self.schema.cname
        return e.get(self.kind)


# The fields of an ops.yaml entry and of its `pointwise:` (the yaml's header
# documents each): a field outside these lists is a typo, rejected here, so
# that every generator reading the table (this one, gen_autograd.py,
# ir/gen_dialect.py) sees only fields it knows.
FIELDS = {"func", "variants", "kernel", "cpu", "cuda", "composite", "pointwise",
          "identity", "decompose", "conversion", "composes", "reduction",
          "derivative", "nondifferentiable_outputs", "example",
          "cpp_no_default_args", "contraction", "random_state", "autocast",
          "backward_node"}
POINTWISE_FIELDS = {"expr", "promote", "dtypes", "bool_args", "promote_scalars",
                    "integral_scalars", "bound_scalars", "float_numbers",
                    "same_dtype", "bool_error",
                    "nonzero_divisor", "inplace", "scalar_overload"}


def check_fields(e):
    unknown = sorted(set(e) - FIELDS)
    if unknown:
        sys.exit(f"ops.yaml: {e.get('func')}: unknown field(s) {', '.join(unknown)} "
                 "(the yaml's header lists the fields)")
    unknown = sorted(set(e.get("pointwise") or {}) - POINTWISE_FIELDS)
    if unknown:
        sys.exit(f"ops.yaml: {e['func']}: unknown pointwise field(s) "
                 f"{', '.join(unknown)}")


def expand(entries):
    ops = []
    for e in entries:
        check_fields(e)
        if "pointwise" in e:
            pw = e["pointwise"]
            base = Op(e, kind="pointwise")
            ops.append(base)
            s = base.schema
            if pw.get("inplace"):
                args = s.text[s.text.index("(") + 1:s.text.rindex(")")]
                args = args.replace("Tensor self", "Tensor(a!) self", 1)
                ov = "." + s.overload if s.overload else ""
                # `inplace: function`: also ember::name_(t), as ATen's
                # `variants: function, method` (relu_, exp_); else a method.
                variants = ("function, method" if pw["inplace"] == "function"
                            else "method")
                ip = Op(dict(e, variants=variants),
                        f"{s.name}_{ov}({args}) -> Tensor(a!)", "pointwise_inplace")
                ip.base = base
                ops.append(ip)
            if pw.get("scalar_overload"):
                args = s.text[s.text.index("(") + 1:s.text.rindex(")")]
                args = args.replace("Tensor other", "Scalar other", 1)
                sc = Op(e, f"{s.name}.Scalar({args}) -> Tensor", "scalar_overload")
                sc.base = base
                ops.append(sc)
                if pw.get("inplace"):
                    args2 = args.replace("Tensor self", "Tensor(a!) self", 1)
                    sci = Op(dict(e, variants="method"),
                             f"{s.name}_.Scalar({args2}) -> Tensor(a!)", "scalar_overload")
                    sci.base = ops[-3]
                    ops.append(sci)
        else:
            kinds = [k for k in ("cpu", "kernel", "composite") if k in e]
            if len(kinds) != 1:
                sys.exit(f"{e['func']}: exactly one of cpu/kernel/composite/pointwise")
            ops.append(Op(e, kind=kinds[0]))
    seen = set()
    for o in ops:
        n = o.schema.cname
        if n in seen:
            sys.exit(f"duplicate op {n}")
        seen.add(n)
    return ops


def scalar_overload_body(op):
    """name.Scalar: wraps `other` as a 0-dim wrapped-number tensor."""
    s = op.schema
    base = op.base.schema
    call_args = ", ".join("wrapped_scalar_tensor(other)" if a.name == "other" else a.name
                          for a in s.args)
    fn = base.name + ("_" if s.inplace else "")
    if s.inplace:
        return f"  return self.{fn}({', '.join(call_args.split(', ')[1:])});\n"
    return f"  return ember::{base.name}({call_args});\n"


# --- shape rules (eager/Meta.h) ----------------------------------------------------


def meta_files(ops, files):
    """MetaFunctions.h and MetaRules.cpp: one shape rule per dispatched op.

    Pointwise ops (and their in-place forms) get the shared pointwise rule with
    their spec; `kernel:` ops (views) run their kernel on fake tensors; every
    `cpu:` op calls ember::meta::rules::<native>, hand-written in eager/meta/
    with the kernel's signature and returning a meta::Result: a missing rule
    is a link error, never a silent gap.
    """
    disp = [o for o in ops if o.dispatched]
    h = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         "// The shape rules of the `cpu:` ops, with the signatures of their",
         "// kernels (eager/meta/ implements them).",
         "#pragma once", '#include "eager/Meta.h"', "",
         "namespace ember::meta::rules {"]
    seen = set()
    for o in disp:
        if o.kind == "cpu" and o.native not in seen:
            seen.add(o.native)
            h.append(f"/// {o.schema.text}")
            h.append(f"Result {o.native}({params(o.schema, defaults=False)});")
    h.append("} // namespace ember::meta::rules")
    files["MetaFunctions.h"] = "\n".join(h) + "\n"

    p = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         "// The spec of every pointwise op and in-place form: read by its CPU",
         "// kernel (PointwiseKernels_N.cpp) and its shape rule (MetaRules.cpp).",
         "#pragma once", '#include "eager/Meta.h"', "",
         "namespace ember::meta::pointwise_specs {"]
    for o in disp:
        if o.kind in ("pointwise", "pointwise_inplace"):
            p.append(f"inline constexpr PointwiseSpec {o.schema.cname}"
                     f"{pw_spec(o, o.entry['pointwise'])};")
    p.append("} // namespace ember::meta::pointwise_specs")
    files["PointwiseSpecs.h"] = "\n".join(p) + "\n"

    c = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         '#include "eager/generated/Functions.h"',
         '#include "eager/generated/MetaFunctions.h"',
         '#include "eager/generated/PointwiseSpecs.h"',
         '#include "eager/meta/MetaSupport.h"', "",
         "#include <unordered_map>", "",
         "namespace ember::meta::detail {", "namespace {"]
    reg = []
    for o in disp:
        s = o.schema
        fn = f"rule_{s.cname}"
        if o.kind == "kernel":
            reg.append(f"  m.add(ops::{s.cname}(), &view_rule);")
            continue
        nargs = len(s.args)
        c.append(f"// {s.text}")
        c.append(f"Result {fn}(const OperatorHandle &op, const Stack &s) {{")
        c.append(f"  check_arity(op, s, {nargs});")
        if o.kind in ("pointwise", "pointwise_inplace"):
            pw = o.entry["pointwise"]
            tensors = [i for i, a in enumerate(s.args) if a.type == "Tensor"]
            scalars = [i for i, a in enumerate(s.args) if a.type == "Scalar"]
            c.append(f"  static const int tensors[] = {{{', '.join(map(str, tensors))}}};")
            if scalars:
                c.append(f"  static const int scalars[] = {{{', '.join(map(str, scalars))}}};")
            c.append(f"  return pointwise_rule(pointwise_specs::{s.cname}, s, tensors, "
                     f"{'scalars' if scalars else '{}'}, "
                     f"{'true' if o.kind == 'pointwise_inplace' else 'false'});")
        else:  # cpu
            args = ", ".join(f"arg<{CPP_CALL[a.type].rstrip('&').replace('const ', '')}>(s, {i})"
                             for i, a in enumerate(s.args))
            nontensor = [r[0] for r in s.returns if not r[0].startswith("Tensor")]
            if nontensor:
                # A non-tensor result is a value computed from the data.
                c.append(f"  return returns_value(op, rules::{o.native}({args}));")
            else:
                c.append(f"  return rules::{o.native}({args});")
        c.append("}")
        reg.append(f"  m.add(ops::{s.cname}(), &{fn});")
    c.append("} // namespace\n")
    c.append("void add_builtin_rules(RuleMap &m) {")
    c += reg
    c.append("}")
    c.append("} // namespace ember::meta::detail\n")
    c.append("namespace ember::meta {")
    c.append("const PointwiseSpec *find_pointwise_spec(const OperatorHandle &op) {")
    c.append("  static const std::unordered_map<const OperatorHandle *, "
             "const PointwiseSpec *> specs = {")
    for o in disp:
        if o.kind in ("pointwise", "pointwise_inplace"):
            c.append(f"      {{&ops::{o.schema.cname}(), &pointwise_specs::{o.schema.cname}}},")
    c.append("  };")
    c.append("  auto it = specs.find(&op);")
    c.append("  return it == specs.end() ? nullptr : it->second;")
    c.append("}")
    c.append("} // namespace ember::meta")
    files["MetaRules.cpp"] = "\n".join(c) + "\n"


def decomposition_files(ops, files):
    """Decompositions.cpp: the ops with `decompose:` (the compiler's
    ember-decompose pass runs these bodies, written with other ops in
    eager/ops/Decompositions.cpp, on fake tensors), keyed by their handle for
    ember::find_decomposition (eager/Decompose.h)."""
    c = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         '#include "eager/Decompose.h"',
         '#include "eager/generated/Functions.h"',
         '#include "eager/generated/NativeFunctions.h"', "",
         "#include <unordered_map>", "",
         "namespace ember::native::decompose {"]
    dec = [o for o in ops if o.dispatched and "decompose" in o.entry]
    for o in dec:
        c.append(f"{cpp_ret(o.schema)} {o.entry['decompose']}({params(o.schema, defaults=False)});")
    c.append("} // namespace ember::native::decompose\n")
    # Note [CUDA kernels from decompositions]
    c.append("namespace ember::native {")
    for o in dec:
        if "cuda" in o.entry:
            continue
        sch = o.schema
        tensors = [a.name for a in sch.args if a.type in ("Tensor", "Tensor?")]
        first = [a.name for a in sch.args if a.type == "Tensor"][0]
        empty = " || ".join(f"ember::detail::decomposed::empty({t})" for t in tensors)
        host = ", ".join(f"ember::detail::decomposed::host({a.name})" for a in sch.args)
        c.append(f"{cpp_ret(sch)} {sch.cname}_cuda_decomposed({params(sch, defaults=False)}) {{")
        c.append(f"  if ({empty})")
        c.append(f"    return ember::detail::decomposed::back(native::{o.native}({host}), {first}.device());")
        c.append(f"  return decompose::{o.entry['decompose']}({names(sch)});")
        c.append("}")
    c.append("} // namespace ember::native\n")
    c.append("namespace ember {")
    c.append("const KernelFunction *find_decomposition(const OperatorHandle &op) {")
    c.append("  static const std::unordered_map<const OperatorHandle *, "
             "KernelFunction> table = {")
    for o in dec:
        c.append(f"      {{&ops::{o.schema.cname}(), KernelFunction::makeFromUnboxed("
                 f"&native::decompose::{o.entry['decompose']})}},")
    c.append("  };")
    c.append("  auto it = table.find(&op);")
    c.append("  return it == table.end() ? nullptr : &it->second;")
    c.append("}")
    c.append("} // namespace ember")
    files["Decompositions.cpp"] = "\n".join(c) + "\n"

    # Reductions.cpp: the folds code generators compute (`reduction: <kind>`).
    kinds = {"sum": "Sum", "mean": "Mean", "amax": "Amax", "amin": "Amin"}
    r = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         '#include "eager/Reduction.h"',
         '#include "eager/OpTraits.h"',
         '#include "eager/generated/Functions.h"', "",
         "#include <unordered_map>", "",
         "namespace ember {",
         "const ReductionInfo *find_reduction(const OperatorHandle &op) {",
         "  static const std::unordered_map<const OperatorHandle *, "
         "ReductionInfo> table = {"]
    for o in ops:
        k = o.entry.get("reduction")
        if not o.dispatched or k in (None, True):
            continue
        if k not in kinds:
            sys.exit(f"{o.schema.text}: reduction: {k}? (true or one of {sorted(kinds)})")
        pos = {a.name: i for i, a in enumerate(o.schema.args)}
        r.append(f"      {{&ops::{o.schema.cname}(), {{ReductionInfo::{kinds[k]}, "
                 f"{pos.get('dim', -1)}, {pos.get('keepdim', -1)}, {pos.get('dtype', -1)}}}}},")
    r.append("  };")
    r.append("  auto it = table.find(&op);")
    r.append("  return it == table.end() ? nullptr : &it->second;")
    r.append("}\n")
    # The fields that name an argument: a function returning its position.
    for fn, field in [("contraction_arg", "contraction"),
                      ("random_state_arg", "random_state")]:
        r.append(f"int {fn}(const OperatorHandle &op) {{")
        for o in ops:
            arg = o.entry.get(field)
            if arg is None:
                continue
            pos = {a.name: i for i, a in enumerate(o.schema.args)}
            if not o.dispatched or arg not in pos:
                sys.exit(f"{o.schema.text}: {field}: {arg}? (a tensor "
                         "argument of a dispatched op)")
            r.append(f"  if (&op == &ops::{o.schema.cname}())")
            r.append(f"    return {pos[arg]};")
        r.append("  return -1;")
        r.append("}\n")
    r.append("bool is_conversion(const OperatorHandle &op) {")
    conv = [o for o in ops if o.dispatched and o.entry.get("conversion")]
    r.append("  return " + (" || ".join(f"&op == &ops::{o.schema.cname}()" for o in conv) or "false") + ";")
    r.append("}")
    r.append("} // namespace ember")
    files["Reductions.cpp"] = "\n".join(r) + "\n"


def generate(ops, out):
    gen = os.path.join(out, "eager", "generated")
    os.makedirs(gen, exist_ok=True)
    files = {}

    # Functions.h
    h = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         "#pragma once", '#include "eager/Dispatcher.h"', '#include "eager/Enum.h"',
         "", "namespace ember {"]
    h.append("namespace ops {")
    h.append("/// The OperatorHandle of each dispatched op, by C++ name.")
    for o in ops:
        if o.dispatched:
            h.append(f"const OperatorHandle &{o.schema.cname}();")
    h.append("} // namespace ops\n")
    for o in ops:
        if "function" in o.variants:
            h.append(f"/// {o.schema.text}")
            h.append(f"{cpp_ret(o.schema)} {o.schema.name}({params(o.schema)});")
    h.append("} // namespace ember")
    files["Functions.h"] = "\n".join(h) + "\n"

    # TensorMethods.inc
    m = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit."]
    for o in ops:
        if "method" in o.variants:
            m.append(f"{cpp_ret(o.schema)} {o.schema.name}({params(o.schema, skip_self=True)}) const;")
    files["TensorMethods.inc"] = "\n".join(m) + "\n"

    # NativeFunctions.h
    n = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         "// The kernels named in ops.yaml, with the signatures they must have.",
         "#pragma once", '#include "eager/Dispatcher.h"', "", "namespace ember::native {"]
    for o in ops:
        if o.kind in ("cpu", "kernel", "composite", "pointwise", "pointwise_inplace"):
            n.append(f"{cpp_ret(o.schema)} {o.native}({params(o.schema, defaults=False)});")
        if cuda_native(o) and cuda_native(o) != o.native:
            n.append(f"{cpp_ret(o.schema)} {cuda_native(o)}({params(o.schema, defaults=False)});")
    n.append("} // namespace ember::native")
    files["NativeFunctions.h"] = "\n".join(n) + "\n"



    # PointwiseFunctors.h
    p = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         "// The scalar expression of every pointwise op, as a functor over its",
         "// compute type T: the eager CPU kernels instantiate it with float,",
         "// double and the integer types; code generators with their own T.",
         "#pragma once", '#include "eager/PointwiseMath.h"', "",
         "namespace ember::fn {", "using namespace ember::pw;"]
    pw_ops = [o for o in ops if o.kind == "pointwise"]
    for o in pw_ops:
        p.append(functor(o, o.entry["pointwise"]))
    p.append("} // namespace ember::fn")
    p.append("")
    p.append("/// X-macro over the pointwise ops: _(cname, arity).")
    p.append("#define EMBER_FORALL_POINTWISE_OPS(_) \\")
    for o in pw_ops:
        ar = sum(1 for a in o.schema.args if a.type == "Tensor")
        p.append(f"  _({o.schema.cname}, {ar}) \\")
    p.append("")
    files["PointwiseFunctors.h"] = "\n".join(p) + "\n"

    # Pointwise kernels, sharded so the build parallelizes.
    nshards = 4
    kernels = [o for o in ops if o.kind in ("pointwise", "pointwise_inplace")]
    for i in range(nshards):
        k = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
             '#include "eager/cpu/PointwiseKernel.h"',
             '#include "eager/generated/NativeFunctions.h"',
             '#include "eager/generated/PointwiseFunctors.h"',
             '#include "eager/generated/PointwiseSpecs.h"', "",
             "namespace ember::native {"]
        for o in kernels[i::nshards]:
            k.append(pw_kernel(o, o.entry["pointwise"], o.kind == "pointwise_inplace"))
        k.append("} // namespace ember::native")
        files[f"PointwiseKernels_{i}.cpp"] = "\n".join(k) + "\n"

    # CudaPointwiseKernels.cpp: each pointwise op's functor as CUDA source and
    # its CUDA kernel.
    k = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         '#include "eager/cuda/Pointwise.h"',
         '#include "eager/generated/NativeFunctions.h"',
         '#include "eager/generated/PointwiseSpecs.h"', "",
         "namespace ember::native {", "namespace {"]
    for o in ops:
        if o.kind == "pointwise":
            pw = o.entry["pointwise"]
            tensors = [a for a in o.schema.args if a.type == "Tensor"]
            scalars = [a for a in o.schema.args if a.type == "Scalar"]
            promote = PROMOTE[pw.get("promote", "default")]
            group = "Float" if promote == "Float" else DTYPES[pw.get("dtypes", "all")]
            k.append(f"const cuda::Functor kFunctor_{o.schema.cname}{{"
                     f'"{o.schema.cname}_op", {len(tensors)}, {len(scalars)}, R"EMBER(\n'
                     + functor(o, pw, device=True) + ')EMBER",\n'
                     f"    &meta::pointwise_specs::{o.schema.cname}, DtypeGroup::{group}}};")
    k.append("const cuda::Functor kAll[] = {")
    for o in ops:
        if o.kind == "pointwise":
            k.append(f"    kFunctor_{o.schema.cname},")
    k.append("};")
    k.append("} // namespace")
    for o in ops:
        if o.kind in ("pointwise", "pointwise_inplace"):
            k.append(cuda_pw_kernel(o, o.entry["pointwise"], o.kind == "pointwise_inplace"))
    k.append("} // namespace ember::native\n")
    k.append("ember::ArrayRef<ember::cuda::Functor> ember::cuda::pointwise_functors() {")
    k.append("  return native::kAll;")
    k.append("}")
    files["CudaPointwiseKernels.cpp"] = "\n".join(k) + "\n"

    # Ops.cpp
    c = ["// Generated by eager/ops/gen_ops.py from ops.yaml. Do not edit.",
         '#include "eager/generated/Functions.h"',
         '#include "eager/generated/NativeFunctions.h"',
         '#include "eager/OpsSupport.h"',
         '#include "eager/amp/Autocast.h"',
         '#include "eager/Capturing.h"', "",
         "namespace ember::autograd::generated {",
         "void register_autograd_kernels();",
         "}", "", "namespace ember {", "namespace {",
         "struct OpTable {"]
    disp = [o for o in ops if o.dispatched]
    # The Autocast key's kernels (Note [Autocast]): cast, then run below.
    autocast_ops = [o for o in ops if autocast_policies(o)]
    ac = []
    for o in disp:
        pol = autocast_policies(o)
        if not pol:
            continue
        s_ = o.schema
        ret, argt = sig_type(s_)
        lines, casted = autocast_plan(o, pol)
        ac.append(f"{cpp_ret(s_)} autocast_{s_.cname}({params(s_, defaults=False)}) {{")
        ac.append("  ExcludeDispatchKeyGuard no_autocast(DispatchKey::Autocast);")
        ac += lines
        ac.append(f"  return ops::{s_.cname}().redispatch<{ret}, {argt}>("
                  f"ember::detail::keysOf({casted}), {casted});")
        ac.append("}")
    c[c.index("struct OpTable {"):c.index("struct OpTable {")] = ac
    for o in disp:
        c.append(f"  OperatorHandle *{o.schema.cname};")
    c.append("  OpTable() {")
    c.append("    auto &d = Dispatcher::singleton();")
    for o in disp:
        s = o.schema
        c.append(f'    {s.cname} = &d.registerSchema("{s.text}");')
        fnp = f"&native::{o.native}"
        if o.kind == "kernel":
            for key in ("CPU", "CUDA"):
                c.append(f"    {s.cname}->setKernel(DispatchKey::{key}, "
                         f"KernelFunction::makeFromUnboxed({fnp}));")
        else:
            c.append(f"    {s.cname}->setKernel(DispatchKey::CPU, "
                     f"KernelFunction::makeFromUnboxed({fnp}));")
        if cuda_native(o):
            c.append(f"    {s.cname}->setKernel(DispatchKey::CUDA, "
                     f"KernelFunction::makeFromUnboxed(&native::{cuda_native(o)}));")
        if autocast_policies(o):
            c.append(f"    {s.cname}->setKernel(DispatchKey::Autocast, "
                     f"KernelFunction::makeFromUnboxed(&autocast_{s.cname}));")
    c.append("  }")
    c.append("};")
    c.append("const OpTable &table() {")
    c.append("  static const OpTable *t = new OpTable();")
    c.append("  return *t;")
    c.append("}")
    c.append("// Registers every op (and its autograd kernel) at load time, so the")
    c.append("// registry is complete before main (modes and lookups by name see")
    c.append("// every op).")
    c.append("const bool kRegistered = (table(), autograd::generated::register_autograd_kernels(), true);")
    c.append("} // namespace\n")
    c.append("namespace ops {")
    for o in disp:
        c.append(f"const OperatorHandle &{o.schema.cname}() {{ return *table().{o.schema.cname}; }}")
    c.append("} // namespace ops\n")

    def body(o):
        s = o.schema
        if o.kind == "scalar_overload":
            return scalar_overload_body(o)
        if o.kind == "composite":
            # (its factories' values follow from its arguments: Note [Host
            # state in replayed calls])
            guard = "  ember::detail::LibraryFactories library_factories;\n"
            pol = autocast_policies(o)
            if not pol:
                return guard + f"  return native::{o.native}({names(s)});\n"
            # Not dispatched: the composite casts as the Autocast key's
            # kernels do, and runs below autocast when it cast.
            lines, casted = autocast_plan(o, pol)
            return (guard +
                    "  if (EMBER_UNLIKELY(autocast::detail::active())) {\n" +
                    "\n".join("  " + l for l in lines[:1]) + "\n"
                    "    if (plan.cast) {\n"
                    "      ExcludeDispatchKeyGuard no_autocast(DispatchKey::Autocast);\n" +
                    "".join("    " + l + "\n" for l in lines[1:]) +
                    f"      return native::{o.native}({casted});\n"
                    "    }\n  }\n"
                    f"  return native::{o.native}({names(s)});\n")
        ret, argt = sig_type(s)
        call = (f"table().{s.cname}->call<{ret}"
                f"{', ' + argt if argt else ''}>({names(s)})")
        if s.is_view:
            # Views remember their base (autograd rebases in-place ops on
            # views through it).
            return f"  return detail::track_view({call}, self);\n"
        return f"  return {call};\n"

    for o in ops:
        s = o.schema
        if "function" in o.variants:
            c.append(f"{cpp_ret(s)} {s.name}({params(s, defaults=False)}) {{\n{body(o)}}}")
    for o in ops:
        s = o.schema
        if "method" in o.variants:
            if not any(a.name == "self" and a.type == "Tensor" for a in s.args):
                sys.exit(f"{s.text}: a method needs a Tensor argument named self")
            rest = params(s, skip_self=True, defaults=False)
            c.append(f"{cpp_ret(s)} Tensor::{s.name}({rest}) const {{")
            c.append("  const Tensor &self = *this;")
            c.append(body(o) + "}")
    c.append("")
    c.append("/// Every op's autocast policies, as ops.yaml declares them.")
    c.append("ArrayRef<autocast::detail::PolicyRow> autocast::detail::policy_table() {")
    c.append("  static const PolicyRow rows[] = {")
    for o in autocast_ops:
        s = o.schema
        pol = autocast_policies(o)
        qual = "ember::" + s.name + ("." + s.overload if s.overload else "")
        c.append(f'      {{"{qual}", CastPolicy::{pol[0]}, CastPolicy::{pol[1]}}},')
    c.append("  };")
    c.append("  return {rows, sizeof(rows) / sizeof(rows[0])};")
    c.append("}")
    c.append("} // namespace ember")
    files["Ops.cpp"] = "\n".join(c) + "\n"

    gen_autograd.generate(ops, files, cpp_ret, params, sig_type, names)
    meta_files(ops, files)
    decomposition_files(ops, files)

    write_files(gen, files)


def write_files(outdir, files):
    """Writes {name: text} into `outdir`, leaving a file whose text is
    unchanged untouched (its timestamp too: no needless rebuilds). Every
    generator of the build writes through this."""
    os.makedirs(outdir, exist_ok=True)
    for name, text in files.items():
        path = os.path.join(outdir, name)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yaml", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.yaml) as f:
        entries = yaml.safe_load(f)
    generate(expand(entries), a.out)


if __name__ == "__main__":
    main()
