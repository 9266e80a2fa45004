#include "passes/Passes.h"

#include "runtime/Error.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

namespace ember::passes {

namespace {
#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

struct PipelineOptions : mlir::PassPipelineOptions<PipelineOptions> {
  Option<int> level{*this, "level",
                    llvm::cl::desc("optimisation level (0 to 2)"),
                    llvm::cl::init(kMaxOptLevel)};
  Option<bool> inplace_buffers{
      *this, "inplace-buffers",
      llvm::cl::desc("plan fusion results into dying inputs' buffers"),
      llvm::cl::init(true)};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("the fusion target (Note [Per-op capability])"),
      llvm::cl::init("cpu")};
};
} // namespace

void build_pipeline(mlir::OpPassManager &pm, int level, bool inplace_buffers,
                    const std::string &target) {
  EMBER_CHECK_VALUE(level >= 0 && level <= kMaxOptLevel,
                    "optimisation level must be 0 to ", kMaxOptLevel, ", got ",
                    level);
  if (level >= 1) {
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  if (level >= 2) {
    // Decomposed ops fuse with their neighbours: decompose, clean up what
    // the bodies made redundant, then fuse.
    pm.addNestedPass<mlir::func::FuncOp>(createDecompose());
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
    pm.addNestedPass<mlir::func::FuncOp>(
        createFuseElementwise(FuseElementwiseOptions{target}));
    if (inplace_buffers)
      pm.addNestedPass<mlir::func::FuncOp>(createPlanMemory());
  }
}

void register_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_upstream_passes();
    registerEmberPasses();
    mlir::PassPipelineRegistration<PipelineOptions>(
        "ember-pipeline", "ember's passes at an optimisation level",
        [](mlir::OpPassManager &pm, const PipelineOptions &o) {
          build_pipeline(pm, o.level, o.inplace_buffers, o.target);
        });
  });
}

} // namespace ember::passes
