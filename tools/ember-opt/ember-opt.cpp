// ember-opt: mlir-opt for ember's IR. Reads any module of the ember, func and
// arith dialects (the dumps of EMBER_LOGS=ir, the lit tests), verifies it and
// runs passes on it:
//
//   ember-opt graph.mlir --canonicalize --cse
//   ember-opt graph.mlir --mlir-print-op-generic
//   ember-opt graph.mlir --ember-pipeline=level=2
//
// The CPU code generator is registered as ember-fuse-elementwise's target
// "cpu" (its default), so the fusions formed here are those compile() forms.
//
// It links libember.so: the dialect, the dispatcher (ember.eager_call checks
// its callee there) and MLIR itself exist once.
#include "codegen/Lower.h"
#include "ir/Dialect.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  ember::ir::register_dialects(registry);
  ember::passes::register_passes();
  ember::codegen::register_fusion_targets(); // ember-fuse-elementwise's "cpu"
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ember-opt: the ember dialect and its passes\n", registry));
}
