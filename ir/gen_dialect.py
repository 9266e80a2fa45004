#!/usr/bin/env python3
"""Generates the ember dialect's ops from the op table (DESIGN.md, "One op
table"): one ODS op per *dispatched* op of eager/ops/ops.yaml.

Outputs (into --out/ir/):
  EmberGeneratedOps.td   the ops, included by ir/EmberOps.td
  EmberOpExamples.mlir   every op's example (the one in its description) as a
                         lit/FileCheck round-trip test (test/lit/ir/examples.mlir)

What the compiler asks of an op comes with the op: traits (Ember_Pointwise,
Ember_View, Ember_Reduction, Ember_Conversion, Ember_InPlace, Ember_Composes
from ops.yaml `composes`) and Ember_IdentityOpInterface for the ops with
ops.yaml `identity:` entries (getIdentities(), defined in the op's
extraClassDefinition), so that no pass or pattern matches op names.

The ops.yaml entries are expanded exactly as eager/ops/gen_ops.py expands
them (it is imported), so the dialect has an op for each OperatorHandle in
namespace "ember": `pointwise` ops and their in-place forms, `cpu` and
`kernel` ops. `composite` ops and the `.Scalar` overloads of pointwise ops
are plain functions (never dispatched, never captured): no dialect op.

How a schema maps to ODS (ir/Dialect.h, Note [Schema to ODS], implements the
same mapping in C++ for inference, folding, the builder and the importer):
  Tensor -> operand, Tensor? -> Optional operand, Tensor[] -> Variadic operand
  (AttrSizedOperandSegments when there are several variable-length ones)
  plus `<name>_none`, the positions of None elements (index's `x[:, i]`),
  written `[none, %i]`;
  int -> I64Attr, int[] -> DenseI64ArrayAttr, float -> F64Attr, float[] ->
  DenseF64ArrayAttr, bool -> BoolAttr, Scalar -> i64/f64/i1 attribute, str ->
  StrAttr, ScalarType -> TypeAttr (the element type), Device ->
  #ember.device; `T?` -> OptionalAttr, a schema default -> a default-valued
  attribute; Generator? -> no operand (the op is then not Pure: a call with a
  generator is captured as ember.eager_call).
"""
import argparse
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "eager", "ops"))
import gen_ops  # noqa: E402

# --- examples ------------------------------------------------------------------
#
# Each op's description shows one use of it, and EmberOpExamples.mlir runs every
# example through ember-opt (parse, verify with the shape rules of
# ember::meta, print, parse again), so the examples are checked documentation.
# Pointwise ops get theirs from the schema (see pointwise_example). Other ops
# need one here: the text after the op name, in ember-opt's printed form
# (attributes sorted by name, defaults omitted, floats as 2.000000e+00). An op
# without an example still builds; test_ir's coverage test then names it.

EXAMPLES = {
    "pow.Tensor_Scalar": "%self {exponent = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "pow.Scalar": "%exponent {self = 2.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "copy_": "%self, %src : (tensor<2x3xf32>, tensor<3xf64>) -> tensor<2x3xf32>",
    "fill_.Scalar": "%self {value = 1.500000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "_to_copy": "%self {dtype = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>",
    "clone": "%self : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "as_strided_scatter": "%self, %src {size = array<i64: 2>, stride = array<i64: 3>} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>",
    "as_strided": "%self {size = array<i64: 2, 2>, stride = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>",
    "view": "%self {size = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>",
    "squeeze": "%self : (tensor<2x1x3xf32>) -> tensor<2x3xf32>",
    "squeeze.dim": "%self {dim = 1 : i64} : (tensor<2x1x3xf32>) -> tensor<2x3xf32>",
    "squeeze.dims": "%self {dim = array<i64: 0, 2>} : (tensor<1x3x1xf32>) -> tensor<3xf32>",
    "unsqueeze": "%self {dim = 0 : i64} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>",
    "transpose.int": "%self {dim0 = 0 : i64, dim1 = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>",
    "t": "%self : (tensor<2x3xf32>) -> tensor<3x2xf32>",
    "permute": "%self {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>",
    "expand": "%self {size = array<i64: 2, 3>} : (tensor<3xf32>) -> tensor<2x3xf32>",
    "select.int": "%self {dim = 0 : i64, index = 1 : i64} : (tensor<2x3xf32>) -> tensor<3xf32>",
    "slice.Tensor": "%self {dim = 1 : i64, end = 3 : i64, start = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32>",
    "diagonal": "%self : (tensor<3x3xf32>) -> tensor<3xf32>",
    "unfold": "%self {dimension = 0 : i64, size = 2 : i64, step = 1 : i64} : (tensor<4xf32>) -> tensor<3x2xf32>",
    "sum": "%self : (tensor<2x3xf32>) -> tensor<f32>",
    "sum.dim_IntList": "%self {dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "mean": "%self : (tensor<2x3xf32>) -> tensor<f32>",
    "mean.dim": "%self {dim = array<i64: 0>, keepdim = true} : (tensor<2x3xf32>) -> tensor<1x3xf32>",
    "prod.dim_int": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "max.dim": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)",
    "min.dim": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)",
    "amax": "%self {dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "amin": "%self {dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "argmax": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi64>",
    "argmin": "%self : (tensor<2x3xf32>) -> tensor<i64>",
    "var.correction": "%self {correction = 1 : i64, dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "norm.ScalarOpt_dim": "%self {dim = array<i64: 1>, p = 2 : i64} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "logsumexp": "%self {dim = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>",
    "all.dim": "%self {dim = 1 : i64} : (tensor<2x3xi1>) -> tensor<2xi1>",
    "any.dim": "%self {dim = 1 : i64} : (tensor<2x3xi1>) -> tensor<2xi1>",
    "cumsum": "%self {dim = 1 : i64} : (tensor<2x3xi32>) -> tensor<2x3xi64>",
    "cumprod": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "softmax.int": "%self {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "log_softmax.int": "%self {dim = 1 : i64, dtype = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>",
    "_softmax_backward_data": "%grad_output, %output {dim = 1 : i64, input_dtype = f32} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>",
    "_log_softmax_backward_data": "%grad_output, %output {dim = 0 : i64, input_dtype = f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf64>",
    "native_layer_norm": "%input, %weight, %bias {eps = 1.000000e-05 : f64, normalized_shape = array<i64: 3>} : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)",
    "native_layer_norm_backward": "%grad_out, %input, %mean, %rstd, %weight, none {normalized_shape = array<i64: 3>, output_mask = array<i64: 1, 1, 1>} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)",
    "mm": "%self, %mat2 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>",
    "bmm": "%self, %mat2 : (tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>",
    "addmm": "%self, %mat1, %mat2 {beta = 5.000000e-01 : f64} : (tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>",
    "baddbmm": "%self, %batch1, %batch2 : (tensor<5x2x4xf32>, tensor<5x2x3xf32>, tensor<5x3x4xf32>) -> tensor<5x2x4xf32>",
    "dot": "%self, %tensor : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>",
    "cat": "[%t0, %t1] : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>",
    "flip": "%self {dims = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>",
    "tril": "%self : (tensor<3x3xf32>) -> tensor<3x3xf32>",
    "triu": "%self {diagonal = 1 : i64} : (tensor<3x3xf32>) -> tensor<3x3xf32>",
    "index_select": "%self, %index {dim = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>",
    "gather": "%self, %index {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>) -> tensor<2x2xf32>",
    "scatter_.src": "%self, %index, %src {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>",
    "scatter_add_": "%self, %index, %src {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x3xf32>",
    "index_add_": "%self, %index, %source {dim = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>",
    "masked_select": "%self, %mask : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<?xf32>",
    "nonzero": "%self : (tensor<2x3xf32>) -> tensor<?x2xi64>",
    "sort": "%self : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)",
    "topk": "%self {k = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)",
    "constant_pad_nd": "%self {pad = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x5xf32>",
    "index.Tensor": "%self, [%i0] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>",
    "index_put_": "%self, [%i0], %values : (tensor<4x3xf32>, tensor<2xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>",
    "equal": "%self, %other : (tensor<2x3xf32>, tensor<2x3xf32>) -> i1",
    "_im2col": "%self {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>) -> tensor<1x4x9xf32>",
    "_col2im": "%self {dilation = array<i64: 1, 1>, kernel_size = array<i64: 2, 2>, output_size = array<i64: 4, 4>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x9xf32>) -> tensor<1x1x4x4xf32>",
}

# --- schema -> ODS ---------------------------------------------------------------

TENSOR_KINDS = ("Tensor", "Tensor?", "Tensor[]")
ATTRS = {  # schema type -> ODS attribute constraint
    "int": "I64Attr", "int[]": "DenseI64ArrayAttr", "float": "F64Attr",
    "float[]": "DenseF64ArrayAttr", "bool": "BoolAttr", "Scalar": "Ember_ScalarAttr",
    "str": "StrAttr", "ScalarType": "Ember_DtypeAttr", "Device": "Ember_DeviceAttr",
}
ATTR_DOC = {
    "int": "i64", "int[]": "array<i64>", "float": "f64", "float[]": "array<f64>",
    "bool": "bool", "Scalar": "Scalar: i64, f64 or bool", "str": "string",
    "ScalarType": "dtype: an element type", "Device": "#ember.device",
}
RESULTS = {"Tensor": "Ember_AnyTensor", "bool": "I1", "int": "I64", "float": "F64",
           "Scalar": "Ember_ScalarType"}


def camel(s):
    return "".join(p[:1].upper() + p[1:] for p in s.split("_") if p)


def class_name(schema):
    """add.Tensor -> AddTensorOp, add_.Tensor -> Add_TensorOp, _to_copy ->
    InternalToCopyOp (C++ names may not start with _ and a capital)."""
    n = camel(schema.name)
    if schema.name.endswith("_"):
        n += "_"
    if schema.name.startswith("_"):
        n = "Internal" + n
    return n + camel(schema.overload) + "Op"


def default_cpp(ty, d):
    """A schema default as the C++ argument of the attribute's builder."""
    if ty == "bool":
        return {"True": "true", "False": "false"}[d]
    if ty in ("int[]", "float[]"):
        return "{" + d.strip("[]") + "}"
    if ty == "str":
        return d.strip("'\"")
    if ty == "Scalar":
        return {"True": "true", "False": "false"}.get(d, d)
    if ty == "float" and re.fullmatch(r"-?\d+", d):
        return d + ".0"
    return d


def attr_constraint(a):
    opt = a.type.endswith("?")
    base = a.type.rstrip("?")
    if base not in ATTRS:
        sys.exit(f"gen_dialect.py: schema type '{a.type}' of argument '{a.name}' "
                 "has no attribute mapping")
    c = ATTRS[base]
    if a.default is not None and a.default != "None":
        d = default_cpp(base, a.default)
        if base == "str":
            return f'DefaultValuedStrAttr<{c}, "{d}">'
        return f'DefaultValuedAttr<{c}, "{d}">'
    if opt or a.default == "None":
        return f"OptionalAttr<{c}>"
    return c


def td_string(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')


class DialectOp:
    def __init__(self, op):
        self.op = op
        s = op.schema
        self.schema = s
        self.name = s.name + ("." + s.overload if s.overload else "")
        self.cls = class_name(s)
        self.tensors = [a for a in s.args if a.type in TENSOR_KINDS]
        self.generator = [a for a in s.args if a.type.rstrip("?") == "Generator"]
        self.attrs = [a for a in s.args
                      if a.type not in TENSOR_KINDS and a not in self.generator]
        for a in s.args:
            if a.type.startswith("Tensor") and a.type not in TENSOR_KINDS:
                sys.exit(f"gen_dialect.py: {self.name}: unsupported type {a.type}")
        self.returns = [r[0] for r in s.returns]
        self.pointwise = op.kind in ("pointwise", "pointwise_inplace")
        entry = op.entry
        self.reduction = bool(entry.get("reduction"))
        self.conversion = bool(entry.get("conversion"))
        self.view = s.is_view
        self.inplace = s.inplace
        self.pure = not self.generator
        # ops.yaml `identity:` and `composes` hold for the op itself, not for
        # its in-place form (Note [Identities] in ir/Fold.cpp).
        own = op.kind in ("pointwise", "cpu", "kernel")
        self.identities = list((entry.get("identity") or {}).items()) if own else []
        self.composes = own and bool(entry.get("composes"))
        self.tensor_results = all(r in ("Tensor", "Tensor[]") for r in self.returns)

    def traits(self):
        t = []
        if self.pure:
            t.append("Pure")
        if self.pointwise:
            t.append("Ember_Pointwise")
        if self.view:
            t.append("Ember_View")
        if self.reduction:
            t.append("Ember_Reduction")
        if self.conversion:
            t.append("Ember_Conversion")
        if self.inplace:
            t.append("Ember_InPlace")
        if self.composes:
            t.append("Ember_Composes")
        if self.identities:
            t.append("DeclareOpInterfaceMethods<Ember_IdentityOpInterface>")
        var = [a for a in self.tensors if a.type != "Tensor"]
        if len(var) > 1:
            t.append("AttrSizedOperandSegments")
        return t

    def result_names(self):
        rets = re.sub(r"^\(|\)$", "", self.schema.text.split("->", 1)[1].strip())
        named = [r.split()[1] if len(r.split()) > 1 else None
                 for r in gen_ops.split_top(rets)]
        if len(self.returns) == 1:
            return [named[0] or "result"]
        return [n or f"result{i}" for i, n in enumerate(named)]

    def assembly_format(self):
        parts = []
        for a in self.tensors:
            if a.type == "Tensor":
                p = f"${a.name}"
            elif a.type == "Tensor[]":
                p = f"custom<TensorList>(${a.name}, ${a.name}_none)"
            else:  # Tensor?: the operand or the keyword `none`
                p = f"(${a.name}^) : (`none`)?"
            parts.append(p)
        body = " `,` ".join(parts)
        return f"{body} attr-dict `:` functional-type(operands, results)"

    def summary(self):
        if self.pointwise:
            expr = self.op.entry["pointwise"]["expr"]
            return (f"in-place elementwise `{expr}`" if self.inplace
                    else f"elementwise `{expr}`")
        what = ("view" if self.view else "reduction" if self.reduction
                else "in-place op (functional form)" if self.inplace else "op")
        return f"`{self.schema.name}` {what}"

    def example(self):
        if self.name in EXAMPLES:
            return EXAMPLES[self.name]
        if self.pointwise:
            return pointwise_example(self)
        return None

    def description(self):
        d = [f"The dispatcher op `ember::{self.name}` "
             f"(eager/ops/ops.yaml), with value semantics:", "",
             "```", f"{self.schema.text}", "```", ""]
        if self.inplace:
            d += [f"The functional form of an in-place op: the result is the "
                  f"updated value of `{self.schema.args[0].name}`; nothing is "
                  "mutated.", ""]
        if self.view:
            d += ["Eager returns a view (an alias of its input); here the "
                  "result is a value.", ""]
        if self.generator:
            d += ["The generator argument is not represented: the op uses the "
                  "default generator (a call with one is captured as "
                  "`ember.eager_call`).", ""]
        for a in self.tensors:
            if a.type == "Tensor[]":
                d += [f"`{a.name}` is a list of tensors, `[%a, %b]`; `none` "
                      "elements (`[none, %i]`, as in `x[:, i]`) are listed by "
                      f"the attribute `{a.name}_none`.", ""]
        if self.attrs:
            d.append("Attributes (schema arguments):")
            for a in self.attrs:
                base = a.type.rstrip("?")
                extra = []
                if a.type.endswith("?") or a.default == "None":
                    extra.append("optional")
                if a.default is not None and a.default != "None":
                    extra.append(f"default {a.default}")
                d.append(f"- `{a.name}`: {ATTR_DOC[base]}"
                         + (f" ({', '.join(extra)})" if extra else ""))
            d.append("")
        d += ["Result types are inferred by `ember::meta::infer` (the rules "
              "eager uses) and checked by the verifier.", ""]
        ex = self.example()
        if ex:
            results = self.result_names()
            lhs = ", ".join("%" + r for r in results) if len(results) > 1 else "%" + results[0]
            d += ["Example:", "", "```mlir", f"{lhs} = ember.{self.name} {ex}", "```"]
        return "\n".join(d)

    def td(self):
        args = []
        for a in self.schema.args:
            if a in self.generator:
                continue
            if a.type == "Tensor":
                args.append(f"Ember_AnyTensor:${a.name}")
            elif a.type == "Tensor?":
                args.append(f"Optional<Ember_AnyTensor>:${a.name}")
            elif a.type == "Tensor[]":
                args.append(f"Variadic<Ember_AnyTensor>:${a.name}")
                args.append(f"OptionalAttr<DenseI64ArrayAttr>:${a.name}_none")
            else:
                args.append(f"{attr_constraint(a)}:${a.name}")
        results = []
        for r, n in zip(self.returns, self.result_names()):
            if r == "Tensor[]":
                results.append(f"Variadic<Ember_AnyTensor>:${n}")
            elif r in RESULTS:
                results.append(f"{RESULTS[r]}:${n}")
            else:
                sys.exit(f"gen_dialect.py: {self.name}: unsupported return {r}")
        # Every op: the verifier (Note [Verifying result types]); pure ops
        # with tensor results: the folder (Note [Folding with eager]).
        defs = ["    ::llvm::LogicalResult $cppClass::verify() {",
                "      return ::ember::ir::detail::verifyTableOp(getOperation());",
                "    }"]
        fold = ""
        if self.pure and self.tensor_results:
            fold = "  let hasFolder = 1;\n"
            if len(self.returns) == 1 and self.returns[0] == "Tensor":
                defs += ["    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {",
                         "      return ::ember::ir::detail::foldOne(getOperation(),",
                         "                                          adaptor.getOperands());",
                         "    }"]
            else:
                defs += ["    ::llvm::LogicalResult $cppClass::fold(FoldAdaptor adaptor,",
                         "        ::llvm::SmallVectorImpl<::mlir::OpFoldResult> &results) {",
                         "      return ::ember::ir::detail::foldMany(getOperation(),",
                         "          adaptor.getOperands(), results);",
                         "    }"]
        if self.identities:
            # Ember_IdentityOpInterface (ir/EmberBase.td).
            items = ", ".join(f'{{"{arg}", {cpp_double(value)}}}'
                              for arg, value in self.identities)
            defs += ["    ::llvm::ArrayRef<::ember::ir::Identity> $cppClass::getIdentities() {",
                     f"      static constexpr ::ember::ir::Identity kIdentities[] = {{{items}}};",
                     "      return kIdentities;",
                     "    }"]
        fold += "  let extraClassDefinition = [{\n" + "\n".join(defs) + "\n  }];\n"
        traits = ", ".join(self.traits())
        return (f'def Ember_{self.cls} : Ember_TableOp<"{self.name}", [{traits}]> {{\n'
                f'  let summary = "{td_string(self.summary())}";\n'
                f"  let description = [{{\n{self.description()}\n  }}];\n"
                f"  let arguments = (ins {', '.join(args)});\n"
                f"  let results = (outs {', '.join(results)});\n"
                f'  let assemblyFormat = "{td_string(self.assembly_format())}";\n'
                f"{fold}}}\n")


def cpp_double(value):
    """A finite number of ops.yaml as a C++ double literal (-0.0 stays -0.0)."""
    text = repr(float(value))
    if text in ("inf", "-inf", "nan"):
        sys.exit(f"gen_dialect.py: identity value {value} is not finite")
    return text


def pointwise_example(d):
    """self is 2x3, the other tensors broadcast from 3; bool arguments are i1,
    integral-only ops use i64; the result dtype follows `promote`."""
    pw = d.op.entry["pointwise"]
    bool_args = set(pw.get("bool_args", []))
    dt = "i64" if pw.get("dtypes") == "integral" else "f32"
    operands, types = [], []
    for i, a in enumerate(d.tensors):
        operands.append("%" + a.name)
        shape = "2x3" if i == 0 or a.name == "self" else "3"
        types.append(f"tensor<{shape}x{'i1' if a.name in bool_args else dt}>")
    shape = "2x3"
    out = "i1" if pw.get("promote") in ("compare", "bool") else dt
    attrs = []
    for a in d.attrs:
        if a.default is None and a.type == "Scalar":
            attrs.append(f"{a.name} = 5.000000e-01 : f64")
    attr = (" {" + ", ".join(sorted(attrs)) + "}") if attrs else ""
    return (f"{', '.join(operands)}{attr} : ({', '.join(types)}) -> "
            f"tensor<{shape}x{out}>")


def example_test(ops):
    """A round-trip test of every example: a func per op, with a CHECK line."""
    out = ["// Generated by ir/gen_dialect.py from ops.yaml. Do not edit.",
           "// Every dialect op's example (its description shows the same text);",
           "// run by test/lit/ir/examples.mlir.", ""]
    for d in ops:
        ex = d.example()
        if ex is None:
            continue
        operand_part, _, types = ex.rpartition(" : (")
        types = "(" + types
        operand_part = operand_part.split(" {")[0]
        names = re.findall(r"%(\w+)", operand_part)
        ins, _, outs = types.partition(" -> ")
        in_types = gen_ops.split_top(ins.strip()[1:-1])
        if len(in_types) != len(names):
            sys.exit(f"gen_dialect.py: example of {d.name}: {len(names)} operands, "
                     f"{len(in_types)} types")
        out_types = (gen_ops.split_top(outs[1:-1]) if outs.startswith("(")
                     else [outs])
        fn = re.sub(r"\W", "_", d.name)
        params = ", ".join(f"%{n}: {t}" for n, t in zip(names, in_types))
        res = ", ".join(f"%r{i}" for i in range(len(out_types)))
        check = re.sub(r"%\w+", "%OPERAND", ex).replace("[", "{{\\[}}")
        check = check.replace("%OPERAND", "%{{[a-z0-9_]+}}")
        out += [f"// CHECK-LABEL: func.func @{fn}(",
                f"// CHECK-NEXT: ember.{d.name} {check}",
                f"func.func @{fn}({params}) -> ({', '.join(out_types)}) {{",
                f"  {res} = ember.{d.name} {ex}",
                f"  return {res} : {', '.join(out_types)}",
                "}", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--yaml", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(a.yaml) as f:
        entries = yaml.safe_load(f)
    ops = [DialectOp(o) for o in gen_ops.expand(entries) if o.dispatched]
    seen = set()
    for d in ops:
        if d.cls in seen:
            sys.exit(f"gen_dialect.py: two ops map to the C++ class {d.cls}")
        seen.add(d.cls)
    td = ["// Generated by ir/gen_dialect.py from eager/ops/ops.yaml. Do not edit.",
          "// One op per dispatched op of the op table (ir/EmberOps.td includes this).",
          "", "#ifndef EMBER_GENERATED_OPS", "#define EMBER_GENERATED_OPS", ""]
    td += [d.td() for d in ops]
    td.append("#endif // EMBER_GENERATED_OPS")
    files = {"EmberGeneratedOps.td": "\n".join(td) + "\n",
             "EmberOpExamples.mlir": example_test(ops)}
    gen_ops.write_files(os.path.join(a.out, "ir"), files)


if __name__ == "__main__":
    main()
