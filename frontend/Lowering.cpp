#include "frontend/Lowering.h"

#include "ir/Builder.h"
#include "ir/Dialect.h"
#include "ir/Import.h"

#include <mutex>

namespace ember::frontend {

namespace {
// One MLIR context for every compiled graph of the process (creating one
// costs milliseconds); compiles are serialized on it.
std::mutex g_mu;
mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx = ir::make_context();
  return *ctx;
}
} // namespace

Lowered lower(const ir::Trace &trace) {
  std::lock_guard<std::mutex> lock(g_mu);
  mlir::MLIRContext &ctx = context();
  mlir::OwningOpRef<mlir::ModuleOp> module = ir::build_module(ctx, {&trace});
  ir::verify_module(*module);
  std::string text = ir::print_module(*module, /*with_locations=*/false);
  std::string with_locs = ir::print_module(*module, /*with_locations=*/true);
  auto func = module->lookupSymbol<mlir::func::FuncOp>(trace.name);
  EMBER_INTERNAL_ASSERT(func);
  ir::Trace imported = ir::import_func(func);
  // The importer names values in definition order; the trace's input names
  // and kinds come back through the function's argument attributes.
  return Lowered{Program(std::move(imported)), std::move(text),
                 std::move(with_locs)};
}

} // namespace ember::frontend
