// ember-translate: the code generator's stages from a .mlir file, for
// FileCheck (test/lit/codegen/) and for reading what a fusion becomes.
//
//   ember-translate graph.mlir --emit=kernels   each fusion's KernelSpec
//   ember-translate graph.mlir --emit=llvm      each kernel's LLVM IR (O3)
//   ember-translate graph.mlir --emit=cuda      each kernel's CUDA C
//   ember-translate graph.mlir --emit=cuda --nvrtc-arch=80
//                                 ... and NVRTC compiles them all for sm_80
//   ember-opt graph.mlir --ember-pipeline | ember-translate --emit=kernels
//
// Every ember.fusion of every function is lowered (codegen/Lower.h) in
// order; a fusion the generator does not take prints why instead. The
// generator is the CPU's for --emit=llvm, the CUDA one's for --emit=cuda,
// and for --emit=kernels the one of the device the fusion's results are on.
// Inputs are taken contiguous, as compile() first compiles them.
#include "codegen/CudaFusion.h"
#include "codegen/CudaRender.h"
#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "eager/cuda/Pointwise.h"
#include "ir/Dialect.h"
#include "ir/Import.h"
#include "ir/Queries.h"
#include "ir/Types.h"
#include "runtime/Nvrtc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <vector>

namespace {

enum class Emit { Kernels, Llvm, Cuda };

llvm::cl::opt<std::string> input(llvm::cl::Positional,
                                 llvm::cl::desc("<input .mlir>"),
                                 llvm::cl::init("-"));
llvm::cl::opt<Emit> emit(
    "emit", llvm::cl::desc("what to print for each fusion"),
    llvm::cl::values(clEnumValN(Emit::Kernels, "kernels",
                                "the typed kernel description (KernelSpec)"),
                     clEnumValN(Emit::Llvm, "llvm",
                                "the kernel's optimized LLVM IR"),
                     clEnumValN(Emit::Cuda, "cuda",
                                "the kernel's CUDA C (after the device "
                                "prelude and the op functors)")),
    llvm::cl::init(Emit::Kernels));
llvm::cl::opt<int> nvrtc_arch(
    "nvrtc-arch",
    llvm::cl::desc("with --emit=cuda: compile every kernel of the input as "
                   "one NVRTC program to PTX for sm_<N> (80, 90) and report"),
    llvm::cl::init(0));
llvm::cl::opt<bool> nvrtc_available(
    "nvrtc-available",
    llvm::cl::desc("print whether NVRTC can be loaded (\"nvrtc: yes\" or "
                   "\"nvrtc: no\") and exit"),
    llvm::cl::init(false));

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "ember-translate: ember.fusion -> kernels, LLVM IR and CUDA C\n");
  if (nvrtc_available) {
    std::cout << "nvrtc: "
              << (ember::cuda::nvrtc::is_available() ? "yes" : "no") << "\n";
    return 0;
  }
  if (nvrtc_arch.getNumOccurrences() &&
      (emit != Emit::Cuda || nvrtc_arch <= 0)) {
    llvm::errs() << "ember-translate: --nvrtc-arch takes a compute "
                    "capability such as 80 or 90, with --emit=cuda\n";
    return 1;
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(input);
  if (!buffer) {
    llvm::errs() << "ember-translate: cannot read " << input << ": "
                 << buffer.getError().message() << "\n";
    return 1;
  }
  try {
    std::unique_ptr<mlir::MLIRContext> ctx = ember::ir::make_context();
    mlir::OwningOpRef<mlir::ModuleOp> module =
        ember::ir::parse_module(*ctx, (*buffer)->getBuffer());
    int fusions = 0;
    std::vector<ember::codegen::CudaKernel> cuda_kernels;
    for (auto func : module->getOps<mlir::func::FuncOp>()) {
      if (func.isExternal())
        continue; // a declaration has no fusions
      for (mlir::Operation &op : func.getBody().front()) {
        auto fusion = llvm::dyn_cast<ember::ir::FusionOp>(op);
        if (!fusion)
          continue;
        std::cout << "// fusion " << fusions++ << " of @"
                  << func.getSymName().str() << " at "
                  << ember::ir::loc_string(op.getLoc()) << "\n";
        // A fusion of fusions (ember-fuse-horizontal) is one launch of its
        // inner fusions' kernels (Note [Combined kernels]): each printed.
        std::string malformed;
        std::vector<mlir::Operation *> kernels;
        for (ember::ir::FusionOp inner :
             ember::ir::inner_fusions(fusion, &malformed))
          kernels.push_back(inner);
        // The generator: the CPU's for --emit=llvm, the CUDA one's for
        // --emit=cuda, the fusion's device's for --emit=kernels.
        const ember::codegen::Generator gen =
            emit == Emit::Cuda ||
                    (emit == Emit::Kernels && ember::codegen::on_cuda(&op))
                ? ember::codegen::Generator::Cuda
                : ember::codegen::Generator::Cpu;
        const char *who = gen == ember::codegen::Generator::Cuda
                              ? "the CUDA generator"
                              : "the CPU generator";
        if (!malformed.empty()) {
          std::cout << "// not compiled by " << who << ": " << malformed
                    << "\n";
          continue;
        }
        if (!kernels.empty() && gen == ember::codegen::Generator::Cuda) {
          std::cout << "// not compiled by " << who << ": "
                    << ember::codegen::kCombinedNotOnCuda << "\n";
          continue;
        }
        if (kernels.empty())
          kernels.push_back(&op);
        for (size_t i = 0; i < kernels.size(); ++i) {
          if (kernels[i] != &op)
            std::cout << "// part " << i + 1 << " of " << kernels.size()
                      << " of a combined kernel\n";
          ember::codegen::KernelSpec spec;
          std::string why = ember::codegen::lower_fusion(kernels[i], spec, gen);
          if (!why.empty()) {
            std::cout << "// not compiled by " << who << ": " << why << "\n";
            continue;
          }
          if (emit == Emit::Kernels) {
            std::cout << spec.str();
            continue;
          }
          if (emit == Emit::Cuda) {
            // A reduction with few outputs is the two kernels compile()
            // launches (Note [Split reductions]).
            std::vector<ember::codegen::KernelSpec> specs{spec};
            if (auto split = ember::codegen::split_reduction(
                    spec, ember::codegen::kCudaSplit)) {
              std::cout << "// split reduction in " << split->parts
                        << " parts: a partial kernel, then its combine\n";
              specs = {split->partial, split->combine};
            }
            for (const ember::codegen::KernelSpec &one : specs) {
              ember::codegen::CudaKernel k = ember::codegen::render_cuda(one);
              std::cout << "// kernel " << k.entry << ": block " << k.block
                        << ", blocks " << k.blocks << ", "
                        << (k.index32 ? "32" : "64") << "-bit indices, vector "
                        << k.vector;
              if (k.held)
                std::cout << ", persistent rows (" << k.held
                          << " points a thread)";
              std::cout << "; functors:";
              for (const ember::cuda::Functor *f : k.functors)
                std::cout << " " << f->name;
              std::cout << "\n" << k.kernel;
              cuda_kernels.push_back(std::move(k));
            }
            continue;
          }
          ember::codegen::CompileKernelOptions o;
          o.keep_ir = true;
          std::cout << ember::codegen::compile_kernel(spec, o).llvm_ir << "\n";
        }
      }
    }
    if (fusions == 0)
      std::cout << "// no ember.fusion in the input (run ember-opt "
                   "--ember-fuse-elementwise first)\n";
    if (emit == Emit::Cuda && nvrtc_arch > 0 && !cuda_kernels.empty()) {
      // One program, as a graph's kernels compile (Note [CUDA kernels from
      // the kernel description]); NVRTC's log on failure.
      ember::cuda::nvrtc::Compiled c = ember::cuda::nvrtc::compile(
          ember::codegen::cuda_program(cuda_kernels), "ember_translate.cu",
          nvrtc_arch, /*cubin=*/false);
      std::cout << "// nvrtc sm_" << nvrtc_arch << ": " << cuda_kernels.size()
                << " kernels compiled to PTX\n";
      for (const ember::codegen::CudaKernel &k : cuda_kernels)
        std::cout << "// ptx entry " << k.entry << ": "
                  << (c.binary.find(".entry " + k.entry) != std::string::npos
                          ? "present"
                          : "missing")
                  << "\n";
    }
  } catch (const ember::Error &e) {
    llvm::errs() << "ember-translate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
