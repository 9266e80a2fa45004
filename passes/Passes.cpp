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
  Option<bool> remat{
      *this, "remat",
      llvm::cl::desc(
          "partition joint forward/backward functions (ember-remat)"),
      llvm::cl::init(false)};
  Option<int64_t> memory_budget{
      *this, "memory-budget",
      llvm::cl::desc("ember-remat's budget in bytes (-1: the minimum cut)"),
      llvm::cl::init(-1)};
  Option<bool> combo_kernels{
      *this, "combo-kernels",
      llvm::cl::desc("run independent pointwise fusions of the arguments as "
                     "one kernel (ember-fuse-horizontal)"),
      llvm::cl::init(true)};
};
} // namespace

std::vector<std::string> build_pipeline(mlir::OpPassManager &pm, int level,
                                        bool inplace_buffers,
                                        const std::string &target, bool remat,
                                        int64_t memory_budget,
                                        bool combo_kernels) {
  EMBER_CHECK_VALUE(level >= 0 && level <= kMaxOptLevel,
                    "optimisation level must be 0 to ", kMaxOptLevel, ", got ",
                    level);
  std::vector<std::string> names;
  auto add = [&](std::unique_ptr<mlir::Pass> pass) {
    names.push_back(pass->getArgument().str());
    pm.addPass(std::move(pass));
  };
  auto add_on_functions = [&](std::unique_ptr<mlir::Pass> pass) {
    names.push_back(pass->getArgument().str());
    pm.addNestedPass<mlir::func::FuncOp>(std::move(pass));
  };
  if (level >= 1) {
    add(mlir::createCanonicalizerPass());
    add(mlir::createCSEPass());
  }
  if (remat)
    add(createRemat(RematOptions{memory_budget}));
  if (level >= 2) {
    // Decomposed ops fuse with their neighbours: decompose, clean up what
    // the bodies made redundant, then fuse.
    add_on_functions(createDecompose());
    add(mlir::createCanonicalizerPass());
    add(mlir::createCSEPass());
    add_on_functions(createFuseElementwise(FuseElementwiseOptions{target}));
    if (combo_kernels)
      add_on_functions(createFuseHorizontal());
    if (inplace_buffers)
      add_on_functions(createPlanMemory());
  }
  return names;
}

void register_passes() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::register_upstream_passes();
    registerEmberPasses();
    mlir::PassPipelineRegistration<PipelineOptions>(
        "ember-pipeline", "ember's passes at an optimisation level",
        [](mlir::OpPassManager &pm, const PipelineOptions &o) {
          build_pipeline(pm, o.level, o.inplace_buffers, o.target, o.remat,
                         o.memory_budget, o.combo_kernels);
        });
  });
}

} // namespace ember::passes
