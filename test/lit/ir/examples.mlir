// Every op of the ember dialect, by the example in its description
// (generated with the ops from ops.yaml by ir/gen_dialect.py): it parses,
// verifies against the shape rules, prints and parses back, in the custom
// and in the generic form. An op added to ops.yaml is covered here at once
// (test_ir's coverage test names an op that lacks an example).

// RUN: ember-opt %ember_gen/ir/EmberOpExamples.mlir | ember-opt | FileCheck %ember_gen/ir/EmberOpExamples.mlir
// RUN: ember-opt --mlir-print-op-generic %ember_gen/ir/EmberOpExamples.mlir | ember-opt | FileCheck %ember_gen/ir/EmberOpExamples.mlir
