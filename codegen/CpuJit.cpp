#include "codegen/CpuJit.h"

#include "runtime/Error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

namespace ember::codegen {

namespace {
/// An llvm::Error or Expected as an ember::Error (LLVM is built without
/// exceptions: its errors are values, turned into exceptions only here, in
/// ember's own frames).
template <class T> T take(llvm::Expected<T> e, const char *what) {
  if (!e) {
    std::string msg = llvm::toString(e.takeError());
    EMBER_CHECK(false, "codegen: ", what, ": ", msg);
  }
  return std::move(*e);
}
void check(llvm::Error e, const char *what) {
  if (e) {
    std::string msg = llvm::toString(std::move(e));
    EMBER_CHECK(false, "codegen: ", what, ": ", msg);
  }
}
} // namespace

CpuJit &CpuJit::get() {
  static CpuJit jit;
  return jit;
}

CpuJit::CpuJit() {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();
  auto jtmb = take(llvm::orc::JITTargetMachineBuilder::detectHost(),
                   "detecting the host CPU");
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  cpu_ = jtmb.getCPU();
  features_ = jtmb.getFeatures().getString();
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  v3_ = host.lookup("avx2") && host.lookup("fma") && host.lookup("f16c");
  tm_ = take(jtmb.createTargetMachine(), "creating the target machine");
  jit_ =
      take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(jtmb).create(),
           "creating the JIT");
  target_ = tm_->getTargetTriple().str() + " " + cpu_ + " " + features_ +
            (v3_ ? " library=v3" : " library=baseline");
}

KernelModule CpuJit::new_module(const std::string &name) {
  KernelModule k;
  k.ctx = std::make_unique<llvm::LLVMContext>();
  Bitcode bc = scalar_library(v3_);
  auto buf = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(bc.data), bc.size),
      bc.name, /*RequiresNullTerminator=*/false);
  k.module = take(llvm::parseBitcodeFile(buf->getMemBufferRef(), *k.ctx),
                  "reading the scalar library");
  k.module->setModuleIdentifier(name);
  k.module->setDataLayout(tm_->createDataLayout());
  k.module->setTargetTriple(tm_->getTargetTriple().str());
  return k;
}

void CpuJit::set_host_attributes(llvm::Function &f) const {
  f.addFnAttr("target-cpu", cpu_);
  f.addFnAttr("target-features", features_);
}

void *CpuJit::compile(KernelModule k, const std::string &entry,
                      std::string *ir) {
  llvm::Module &m = *k.module;
  // The library's functions serve this kernel only: internal and inlined,
  // so that O3 folds them into its loop and drops the rest.
  for (llvm::Function &f : m) {
    if (f.isDeclaration() || f.getName() == entry)
      continue;
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.removeFnAttr(llvm::Attribute::NoInline);
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  std::string err;
  llvm::raw_string_ostream es(err);
  EMBER_CHECK(!llvm::verifyModule(m, &es),
              "codegen: the kernel module is invalid (a bug in ember): ", err);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm_.get(), pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
  if (ir) {
    llvm::raw_string_ostream os(*ir);
    m.print(os, nullptr);
  }

  std::lock_guard<std::mutex> lock(mu_);
  check(jit_->addIRModule(
            llvm::orc::ThreadSafeModule(std::move(k.module), std::move(k.ctx))),
        "adding a kernel to the JIT");
  auto sym = take(jit_->lookup(entry), "looking up a compiled kernel");
  return sym.toPtr<void *>();
}

} // namespace ember::codegen
