#include "frontend/Lowering.h"

#include "codegen/CpuFusion.h"
#include "codegen/CudaFusion.h"
#include "codegen/Lower.h"
#include "eager/OpTraits.h"
#include "ir/Builder.h"
#include "ir/Dialect.h"
#include "ir/Import.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "passes/Passes.h"
#include "runtime/Env.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <functional>
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

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Records each pass's time and, when asked, the module after it. Pass
/// managers nested on functions (adaptors, which have no argument) are not
/// passes of their own: the passes inside them are recorded.
class PassRecorder : public mlir::PassInstrumentation {
public:
  PassRecorder(std::vector<PassRun> &runs, mlir::ModuleOp module, bool keep_ir)
      : runs_(runs), module_(module), keep_ir_(keep_ir) {}
  void runBeforePass(mlir::Pass *, mlir::Operation *) override {
    starts_.push_back(Clock::now());
  }
  void runAfterPass(mlir::Pass *pass, mlir::Operation *) override {
    Clock::time_point t0 = starts_.back();
    starts_.pop_back();
    if (pass->getArgument().empty())
      return;
    PassRun r;
    r.name = pass->getArgument().str();
    r.seconds = since(t0);
    if (keep_ir_)
      r.ir_after = ir::print_module(module_, false);
    runs_.push_back(std::move(r));
  }
  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override {
    runAfterPass(pass, op);
  }

private:
  std::vector<PassRun> &runs_;
  mlir::ModuleOp module_;
  bool keep_ir_;
  std::vector<Clock::time_point> starts_;
};
} // namespace

namespace {
/// Runs the passes of `options` on `module` (with g_mu held), recording each
/// pass in `runs`.
void run_pipeline(mlir::ModuleOp module, const ir::Trace &trace,
                  const LowerOptions &options, std::vector<PassRun> &runs) {
  bool joint = trace.is_joint();
  if (options.opt_level <= 0 && !joint)
    return;
  mlir::MLIRContext &ctx = *module->getContext();
  codegen::register_fusion_targets();
  mlir::PassManager pm(&ctx);
  // Note [Verifying once]
  // MLIR verifies the whole module after every pass by default: on a
  // large graph that is most of the compile time (each ember op's verifier
  // runs its shape rule on fake tensors). compile() verifies the module it
  // built and the module the pipeline made; EMBER_VERIFY_PASSES=1 (set for
  // the tests, and ember-opt always) verifies after every pass.
  bool verify_each = env::get("EMBER_VERIFY_PASSES").value_or("") == "1";
  pm.enableVerifier(verify_each);
  // A graph of CUDA values fuses for each op's device ("auto": the CUDA
  // generator for CUDA values, the CPU one for the rest).
  bool cuda = false;
  module->walk([&](mlir::Operation *op) {
    cuda = cuda || codegen::on_cuda(op);
    return cuda ? mlir::WalkResult::interrupt() : mlir::WalkResult::advance();
  });
  passes::build_pipeline(pm, options.opt_level, options.inplace_buffers,
                         cuda ? "auto" : "cpu", joint, options.memory_budget,
                         options.combo_kernels);
  pm.addInstrumentation(
      std::make_unique<PassRecorder>(runs, module, options.keep_pass_ir));
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  EMBER_CHECK(mlir::succeeded(pm.run(module)), "compile: the passes failed on ",
              trace.name, " (a bug in ember):\n", diagnostics);
  if (!verify_each)
    ir::verify_module(module);
}
} // namespace

ModuleText module_text(const ir::Trace &trace, const LowerOptions &options) {
  std::lock_guard<std::mutex> lock(g_mu);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ir::build_module(context(), {&trace});
  ir::verify_module(*module);
  ModuleText out;
  out.ir = ir::print_module(*module, false);
  LowerOptions o = options;
  o.keep_pass_ir = false;
  std::vector<PassRun> runs;
  run_pipeline(*module, trace, o, runs);
  out.ir_optimized = ir::print_module(*module, false);
  return out;
}

namespace {
/// Why an op of a kind that does not fuse runs its eager kernel, for
/// explain(): a view moves no data, a matrix product is a BLAS call on
/// either device, and any other op has no code generator.
std::string why_eager(mlir::Operation *op) {
  const bool cuda = codegen::on_cuda(op);
  if (op->hasTrait<ir::OpTrait::View>())
    return "a view: it moves no data";
  if (const OperatorHandle *h = ir::table_op(op))
    if (contraction_arg(*h) >= 0)
      return cuda ? "a matrix product: cuBLAS computes it"
                  : "a matrix product: BLAS computes it";
  return cuda ? "no CUDA code generator takes this kind of op"
              : "no CPU code generator takes this kind of op";
}

/// Compiles the fusions of `func` (each a CPU kernel, or its ops run
/// eagerly, and why; each op outside the fusions: why the CPU generator
/// does not take it) and imports it.
ir::Trace compile_func(mlir::func::FuncOp func, const LowerOptions &options,
                       Lowered &out, const std::string &program = "") {
  auto t0 = Clock::now();
  std::vector<codegen::FusionCompile> compiled;
  std::vector<std::string> unsupported; // per op, in the importer's order
  std::vector<mlir::Operation *> cuda_fusions;
  for (mlir::Operation &op : func.getBody().front())
    if (llvm::isa<ir::FusionOp>(op) && codegen::on_cuda(&op))
      cuda_fusions.push_back(&op);
  codegen::precompile_cuda_fusions(cuda_fusions);
  for (mlir::Operation &op : func.getBody().front()) {
    if (llvm::isa<ir::ConstantOp, mlir::func::ReturnOp>(op))
      continue;
    if (llvm::isa<ir::FusionOp>(op)) {
      // The generator of the fusion's device.
      compiled.push_back(
          codegen::on_cuda(&op)
              ? codegen::compile_cuda_fusion(&op)
              : codegen::compile_cpu_fusion(&op, options.keep_kernel_ir));
      unsupported.push_back(compiled.back().why_not);
    } else if (ir::fusion_domain(&op)) {
      // An op of a kind that fuses, which its device's generator refused.
      unsupported.push_back(codegen::on_cuda(&op)
                                ? codegen::cuda_unsupported(&op)
                                : codegen::cpu_unsupported(&op));
    } else {
      unsupported.push_back(why_eager(&op));
    }
  }
  out.codegen_seconds += since(t0);

  ir::Trace imported = ir::import_func(func);
  EMBER_INTERNAL_ASSERT(imported.nodes.size() == unsupported.size());
  size_t fusion = 0;
  for (size_t i = 0; i < imported.nodes.size(); ++i) {
    ir::Node &n = imported.nodes[i];
    n.fallback_reason = unsupported[i];
    if (!n.body)
      continue;
    codegen::FusionCompile &c = compiled[fusion++];
    n.kernel = c.kernel;
    KernelInfo k;
    k.name = c.kernel ? c.kernel->name() : "";
    k.why_not = c.why_not;
    // (a fusion of fusions, Note [Combined kernels]: the inner ones' ops)
    std::function<void(const ir::Trace &)> list = [&](const ir::Trace &t) {
      for (const ir::Node &op : t.nodes) {
        if (op.body)
          list(*op.body);
        else
          k.ops.push_back(op.label() + (op.loc.empty() ? "" : " at " + op.loc));
      }
    };
    list(*n.body);
    k.spec = c.spec;
    k.llvm_ir = std::move(c.llvm_ir);
    k.compile_seconds = c.compile_seconds;
    k.origin = c.origin;
    k.program = program;
    out.kernels.push_back(std::move(k));
  }
  return imported;
}

/// The forward ember-remat made of a joint graph: its results are the
/// graph's outputs, its mutations' values and the saved tensors; the
/// mutations become the program's (written back after it runs), the saved
/// tensors plain outputs after the graph's.
void lower_joint(mlir::ModuleOp module, const ir::Trace &trace,
                 const LowerOptions &options, Lowered &out) {
  auto fwd = module.lookupSymbol<mlir::func::FuncOp>(trace.name + "_forward");
  auto bwd = module.lookupSymbol<mlir::func::FuncOp>(trace.name + "_backward");
  EMBER_INTERNAL_ASSERT(fwd && bwd);
  size_t nout = trace.outputs.size(), nmut = trace.mutations.size();
  for (unsigned i = unsigned(nout + nmut); i < fwd.getNumResults(); ++i) {
    SavedTensor s;
    if (auto what = fwd.getResultAttrOfType<mlir::StringAttr>(i, "ember.saved"))
      s.what = what.getValue().str();
    ir::ValueType type = ir::value_type(fwd.getResultTypes()[i]);
    s.sizes = std::move(type.sizes);
    s.dtype = type.dtype;
    out.saved.push_back(std::move(s));
  }
  if (auto a = fwd->getAttrOfType<mlir::IntegerAttr>("ember.saved_bytes"))
    out.saved_bytes = a.getInt();
  out.over_budget = fwd->hasAttr("ember.over_budget");
  if (auto a = bwd->getAttrOfType<mlir::IntegerAttr>("ember.recompute_flops"))
    out.recompute_flops = a.getInt();
  if (auto a = bwd->getAttrOfType<mlir::ArrayAttr>("ember.recomputed"))
    for (mlir::Attribute n : a)
      out.recomputed.push_back(
          llvm::cast<mlir::StringAttr>(n).getValue().str());

  ir::Trace f = compile_func(fwd, options, out, "forward");
  // The forward's arguments are the joint graph's inputs but the tangents,
  // which come last: the same input numbers.
  for (size_t j = 0; j < nmut; ++j)
    f.mutations.push_back({trace.mutations[j].input, f.outputs[nout + j]});
  f.outputs.erase(f.outputs.begin() + long(nout),
                  f.outputs.begin() + long(nout + nmut));
  f.output_strides = trace.output_strides; // the outputs' (not the saved)
  out.program = Program(std::move(f));
  out.program.set_plain_outputs_from(nout);
  auto backward =
      std::make_shared<Program>(compile_func(bwd, options, out, "backward"));
  // Gradients keep the layout the program gives them (eager's formulas
  // hand back transposed products too); only sharing memory is copied.
  backward->set_any_layout();
  out.backward = std::move(backward);
}
} // namespace

Lowered lower(const ir::Trace &trace, const LowerOptions &options) {
  std::lock_guard<std::mutex> lock(g_mu);
  mlir::MLIRContext &ctx = context();
  mlir::OwningOpRef<mlir::ModuleOp> module = ir::build_module(ctx, {&trace});
  ir::verify_module(*module);
  Lowered out{Program(ir::Trace())};
  if (options.keep_module_text) {
    out.ir = ir::print_module(*module, false);
    out.ir_with_locations = ir::print_module(*module, true);
  }

  auto t0 = Clock::now();
  run_pipeline(*module, trace, options, out.pass_runs);
  if (options.keep_module_text)
    out.ir_optimized = ir::print_module(*module, false);
  out.passes_seconds = since(t0);

  if (trace.is_joint()) {
    lower_joint(*module, trace, options, out);
    return out;
  }
  auto func = module->lookupSymbol<mlir::func::FuncOp>(trace.name);
  EMBER_INTERNAL_ASSERT(func);
  ir::Trace imported = compile_func(func, options, out);
  imported.output_strides = trace.output_strides; // not part of the IR
  out.program = Program(std::move(imported));
  return out;
}

} // namespace ember::frontend

namespace ember {

std::vector<std::string>
pipeline_passes(int64_t opt_level, bool inplace_buffers, bool combo_kernels) {
  std::lock_guard<std::mutex> lock(frontend::g_mu);
  mlir::PassManager pm(&frontend::context());
  return passes::build_pipeline(pm, int(opt_level), inplace_buffers, "cpu",
                                false, -1, combo_kernels);
}

} // namespace ember
