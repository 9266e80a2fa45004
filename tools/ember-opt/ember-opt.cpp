// ember-opt: mlir-opt for ember's IR. Reads any module of the ember, func and
// arith dialects (the dumps of EMBER_LOGS=ir, the lit tests), verifies it and
// runs passes on it:
//
//   ember-opt graph.mlir --canonicalize --cse
//   ember-opt graph.mlir --mlir-print-op-generic
//
// It links libember.so: the dialect, the dispatcher (ember.eager_call checks
// its callee there) and MLIR itself exist once.
#include "ir/Dialect.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  ember::ir::register_dialects(registry);
  ember::passes::register_passes();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "ember-opt: the ember dialect and its passes\n", registry));
}
