#!/usr/bin/env python3
"""The seed corpus and the dictionary of ember-opt-fuzz (Note [Fuzzing
ember-opt] in cmake/Fuzz.cmake).

  make_corpus.py --out DIR [--examples EmberOpExamples.mlir]

writes DIR/seeds/ (one file per test case: every .mlir under test/lit, split
on `// -----` as -split-input-file splits it, and each function of the
generated op examples, which use every op of the dialect once; and 64
inputs of the target's module generator, a NUL byte and random bytes, Note
[Generated modules] in test/fuzz/ember-opt-fuzz.cpp) and
DIR/ember.dict (libFuzzer's -dict: the dialect's op names and attribute
names from the op table, as ir/gen_dialect.py derives them, and the syntax
of ember's IR).
"""
import argparse
import hashlib
import os
import random
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "ir"))
import gen_dialect  # noqa: E402  (it imports eager/ops/gen_ops.py)

# The syntax around the ops: types, attributes, the hand-written ops.
KEYWORDS = [
    "func.func", "func.return", "return", "module", "arith.constant",
    "ember.constant", "wrapped_number", "ember.fusion", "ember.yield",
    "ember.eager_call", "ember.reuse", "ember.input", "ember.name",
    "ember.mutations", "#ember.operand<0>", "#ember.operand<1>", "#ember.none",
    '#ember.device<"cuda:0">', '#ember.device<"cpu">', "#ember.generator<0>",
    "args = [", "tensor<", "tensor<f64>", "tensor<i64>", "tensor<i1>",
    "tensor<4xf32>", "tensor<2x3xf32>", "tensor<0xf32>", "x", "?x", "dense<",
    "dense<[", "dense<0.000000e+00>", "dense<1>", "dense<true>",
    "array<i64: ", "array<f64: ", "array<i64>", "f32", "f64", "f16", "bf16",
    "i64", "i32", "i16", "i8", "ui8", "i1", "true", "false", "none",
    ": f64", ": i64", "-1", "0", "9223372036854775807",
    "-9223372036854775808", "0x7FF0000000000000", "nan", "inf", "^bb0(",
    "%arg0", "%arg1", "%0", "%1", " -> ", "loc(", '"ember.', '"(', ")",
    "{", "}", "<", ">", "[", "]", "// -----",
]


def dialect_ops():
    with open(os.path.join(ROOT, "eager", "ops", "ops.yaml")) as f:
        entries = yaml.safe_load(f)
    return [gen_dialect.DialectOp(o)
            for o in gen_dialect.gen_ops.expand(entries) if o.dispatched]


def dictionary(ops):
    words = set(KEYWORDS)
    for d in ops:
        words.add("ember." + d.name)
        for a in d.schema.args:
            if a.type.rstrip("?") not in gen_dialect.TENSOR_KINDS:
                words.add(a.name + " = ")
            elif a.type == "Tensor[]":
                words.add(a.name + "_none")
    def escape(w):
        return "".join(c if 32 <= ord(c) < 127 and c not in '"\\'
                       else "\\x%02x" % ord(c) for c in w)
    return "".join(f'"{escape(w)}"\n' for w in sorted(words))


def cases():
    """(name, text) of every test case under test/lit and of the examples."""
    for dirpath, _, files in sorted(os.walk(os.path.join(ROOT, "test", "lit"))):
        for fn in sorted(files):
            if not fn.endswith(".mlir"):
                continue
            with open(os.path.join(dirpath, fn)) as f:
                text = f.read()
            for i, part in enumerate(re.split(r"^// -----.*$", text, flags=re.M)):
                yield f"{fn}:{i}", part


def example_cases(path):
    with open(path) as f:
        text = f.read()
    for i, m in enumerate(re.finditer(r"^func\.func .*?^}$", text,
                                      flags=re.M | re.S)):
        yield f"examples:{i}", m.group(0) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", help="the build tree's "
                    "gen/ir/EmberOpExamples.mlir (ir/gen_dialect.py)")
    a = ap.parse_args()
    seeds = os.path.join(a.out, "seeds")
    os.makedirs(seeds, exist_ok=True)
    all_cases = list(cases())
    if a.examples:
        all_cases += list(example_cases(a.examples))
    n = 0
    for _, text in all_cases:
        # Comments (RUN and CHECK lines) are no input to the parser.
        body = "\n".join(l for l in text.splitlines()
                         if not l.lstrip().startswith("//")).strip() + "\n"
        if not body.strip():
            continue
        data = body.encode()
        with open(os.path.join(seeds, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
        n += 1
    rng = random.Random(1)
    for _ in range(64):
        data = b"\0" + bytes(rng.randrange(256) for _ in range(256))
        with open(os.path.join(seeds, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
        n += 1
    with open(os.path.join(a.out, "ember.dict"), "w") as f:
        f.write(dictionary(dialect_ops()))
    print(f"make_corpus.py: {n} seeds in {seeds}, dictionary {a.out}/ember.dict")


if __name__ == "__main__":
    main()
