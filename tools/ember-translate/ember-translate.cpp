// ember-translate: the code generator's stages from a .mlir file, for
// FileCheck (test/lit/codegen/) and for reading what a fusion becomes.
//
//   ember-translate graph.mlir --emit=kernels   each fusion's KernelSpec
//   ember-translate graph.mlir --emit=llvm      each kernel's LLVM IR (O3)
//   ember-opt graph.mlir --ember-pipeline | ember-translate --emit=kernels
//
// Every ember.fusion of every function is lowered (codegen/Lower.h) in
// order; a fusion the CPU generator does not take prints why instead.
// Inputs are taken contiguous, as compile() first compiles them.
#include "codegen/Kernel.h"
#include "codegen/Lower.h"
#include "ir/Dialect.h"
#include "ir/Import.h"
#include "ir/Queries.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>
#include <vector>

namespace {

enum class Emit { Kernels, Llvm };

llvm::cl::opt<std::string> input(llvm::cl::Positional,
                                 llvm::cl::desc("<input .mlir>"),
                                 llvm::cl::init("-"));
llvm::cl::opt<Emit> emit(
    "emit", llvm::cl::desc("what to print for each fusion"),
    llvm::cl::values(clEnumValN(Emit::Kernels, "kernels",
                                "the typed kernel description (KernelSpec)"),
                     clEnumValN(Emit::Llvm, "llvm",
                                "the kernel's optimized LLVM IR")),
    llvm::cl::init(Emit::Kernels));

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "ember-translate: ember.fusion -> kernels and LLVM IR\n");
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
        if (!malformed.empty()) {
          std::cout << "// not compiled by the CPU generator: " << malformed
                    << "\n";
          continue;
        }
        if (kernels.empty())
          kernels.push_back(&op);
        for (size_t i = 0; i < kernels.size(); ++i) {
          if (kernels[i] != &op)
            std::cout << "// part " << i + 1 << " of " << kernels.size()
                      << " of a combined kernel\n";
          ember::codegen::KernelSpec spec;
          std::string why = ember::codegen::lower_fusion(kernels[i], spec);
          if (!why.empty()) {
            std::cout << "// not compiled by the CPU generator: " << why
                      << "\n";
            continue;
          }
          if (emit == Emit::Kernels) {
            std::cout << spec.str();
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
  } catch (const ember::Error &e) {
    llvm::errs() << "ember-translate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
