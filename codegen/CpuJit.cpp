#include "codegen/CpuJit.h"

#include "runtime/DiskCache.h"
#include "runtime/Env.h"
#include "runtime/Error.h"
#include "runtime/Logging.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unistd.h>

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
  if constexpr (std::is_reference_v<T>)
    return *e;
  else
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
  Bitcode lib = scalar_library(v3_);
  std::string hash = disk_cache::hex(
      disk_cache::fnv1a(reinterpret_cast<const char *>(lib.data), lib.size));
  target_ = tm_->getTargetTriple().str() + " " + cpu_ + " " + features_ + " " +
            lib.name + " " + hash + " LLVM " LLVM_VERSION_STRING;
}

namespace {
/// Note [Quiet LLVM]
/// LLVM prints its diagnostics on stderr unless the context has a handler:
/// "loop not vectorized: runtime pointer checks needed" is a warning it
/// emits without being asked (an optimization-failure remark), which would
/// land in the middle of a user's output. Every diagnostic of a kernel's
/// context goes to the `kernels` log topic instead (EMBER_LOGS=kernels);
/// an error still fails the compile through the API that reports it.
/// The kernel this thread compiles (diagnostics arrive while it does).
thread_local const std::string *tls_compiling = nullptr;

void route_llvm_diagnostic(const llvm::DiagnosticInfo *info, void *) {
  if (!logging::enabled(logging::Topic::kernels))
    return;
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DiagnosticPrinterRawOStream printer(os);
  info->print(printer);
  logging::log(logging::Topic::kernels,
               "LLVM (" + (tls_compiling ? *tls_compiling : "a kernel") +
                   "): " + os.str());
}
} // namespace

KernelModule CpuJit::new_module(const std::string &name) {
  KernelModule k;
  k.ctx = std::make_unique<llvm::LLVMContext>();
  k.ctx->setDiagnosticHandlerCallBack(route_llvm_diagnostic);
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

void *CpuJit::add_object(const std::string &entry, const char *data,
                         size_t size) {
  // Each kernel in its own JITDylib: the same kernel can be loaded again
  // (from the disk cache, in a test) without clashing symbols.
  llvm::orc::JITDylib &jd =
      take(jit_->createJITDylib(entry + "#" + std::to_string(dylibs_++)),
           "creating a JITDylib");
  check(jit_->addObjectFile(jd, llvm::MemoryBuffer::getMemBufferCopy(
                                    llvm::StringRef(data, size), entry)),
        "adding a kernel's object to the JIT");
  auto sym = take(jit_->lookup(jd, entry), "looking up a compiled kernel");
  return sym.toPtr<void *>();
}

void *CpuJit::load_cached(const std::string &key, const std::string &entry,
                          std::string *why) {
  // Note [Disk kernel cache] (runtime/DiskCache.h)
  std::optional<std::string> object = disk_cache::load(entry, key, why);
  if (!object)
    return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return add_object(entry, object->data(), object->size());
}

// Note [Streaming stores]
// A kernel writing a large fresh buffer pays for each cache line twice
// over: a store to a line not in cache first reads it from memory (to own
// it), then writes it back. A streaming (non-temporal) store writes the
// line without reading it: y = 2x over 64 MiB of floats, 2 threads on the
// 2-core VM, 4.7-5.0 ms with stores, 2.9-3.9 ms streaming (bench/results/
// rows.md has the kernels' numbers). So the emitters name the
// outputs worth it (KernelModule::streamed: a full output written once,
// not in place of an input nor holding a row cache, of at least
// kStreamBytes, too large for the caches to give it back to the next
// kernel), and after O3 each vector store into one of them in the
// vectorized loops becomes
//   if (address % vector bytes == 0) streaming store, else the store,
// since x86's streaming vector stores fault on unaligned addresses and
// LLVM cannot prove the alignment of rows and thread chunks. In the
// steady state every store takes the same side, so the branch costs about
// nothing. Streaming stores are weakly ordered: the kernel ends with an
// sfence, so the thread that ran it publishes finished data when it
// signals the pool. Only x86 hosts; elsewhere kernels store as before.
namespace {
/// The `ptrs` slot (the entry's first argument) `p` was loaded from, or -1.
int slot_of(llvm::Value *p, llvm::Function &f, const llvm::DataLayout &dl) {
  auto *base = llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(p));
  if (!base)
    return -1;
  int64_t offset = 0;
  llvm::Value *slots = llvm::GetPointerBaseWithConstantOffset(
      base->getPointerOperand(), offset, dl);
  if (slots != f.getArg(0) || offset % 8 != 0)
    return -1;
  return int(offset / 8);
}

void stream_stores(llvm::Function &f, const std::vector<int> &streamed) {
  const llvm::DataLayout &dl = f.getParent()->getDataLayout();
  std::vector<llvm::StoreInst *> stores;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &i : bb)
      if (auto *st = llvm::dyn_cast<llvm::StoreInst>(&i);
          st && st->getValueOperand()->getType()->isVectorTy() &&
          std::find(streamed.begin(), streamed.end(),
                    slot_of(st->getPointerOperand(), f, dl)) != streamed.end())
        stores.push_back(st);
  if (stores.empty())
    return;
  llvm::LLVMContext &ctx = f.getContext();
  llvm::MDNode *nt = llvm::MDNode::get(
      ctx, llvm::ConstantAsMetadata::get(
               llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), 1)));
  for (llvm::StoreInst *st : stores) {
    uint64_t bytes = dl.getTypeStoreSize(st->getValueOperand()->getType());
    if (bytes != 16 && bytes != 32 && bytes != 64)
      continue;
    if (st->getAlign().value() >= bytes) {
      st->setMetadata(llvm::LLVMContext::MD_nontemporal, nt);
      continue;
    }
    llvm::IRBuilder<> b(st);
    llvm::Value *addr =
        b.CreatePtrToInt(st->getPointerOperand(), b.getInt64Ty());
    llvm::Value *aligned =
        b.CreateICmpEQ(b.CreateAnd(addr, b.getInt64(bytes - 1)), b.getInt64(0));
    llvm::Instruction *then_term = nullptr, *else_term = nullptr;
    llvm::SplitBlockAndInsertIfThenElse(aligned, st, &then_term, &else_term);
    auto *streaming = llvm::cast<llvm::StoreInst>(st->clone());
    streaming->setAlignment(llvm::Align(bytes));
    streaming->setMetadata(llvm::LLVMContext::MD_nontemporal, nt);
    streaming->insertBefore(then_term);
    st->moveBefore(else_term);
  }
  llvm::Function *sfence = llvm::Intrinsic::getDeclaration(
      f.getParent(), llvm::Intrinsic::x86_sse_sfence);
  for (llvm::BasicBlock &bb : f)
    if (auto *ret = llvm::dyn_cast<llvm::ReturnInst>(bb.getTerminator()))
      llvm::CallInst::Create(sfence, "", ret);
}
} // namespace

void *CpuJit::compile(KernelModule k, const std::string &entry,
                      const std::string &key, std::string *ir) {
  const std::string *outer = tls_compiling;
  tls_compiling = &entry;
  struct Restore {
    const std::string *outer;
    ~Restore() { tls_compiling = outer; }
  } restore{outer};
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
  if (!k.streamed.empty() && tm_->getTargetTriple().isX86())
    if (llvm::Function *f = m.getFunction(entry))
      stream_stores(*f, k.streamed);
  if (ir) {
    llvm::raw_string_ostream os(*ir);
    m.print(os, nullptr);
  }

  std::lock_guard<std::mutex> lock(mu_);
  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    EMBER_CHECK(!tm_->addPassesToEmitFile(pm, os, nullptr,
                                          llvm::CodeGenFileType::ObjectFile),
                "codegen: the target cannot emit object files");
    pm.run(m);
  }
  disk_cache::store(entry, key, object.data(), object.size());

  return add_object(entry, object.data(), object.size());
}

} // namespace ember::codegen
