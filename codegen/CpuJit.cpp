#include "codegen/CpuJit.h"

#include "runtime/Env.h"
#include "runtime/Error.h"
#include "runtime/Logging.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
uint64_t fnv1a(const char *data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

// Note [Disk kernel cache]
// One file a kernel, <dir>/<kernel symbol>.ekernel: a header, the full cache
// key (what the kernel computes, the target CPU and features, and a hash of
// the scalar library), then the object file. A load checks the magic, the
// format version, the sizes against the file's, the key (a different ember,
// library or CPU makes the entry stale) and a checksum of the object (a
// corrupt entry); any failure rebuilds the kernel and rewrites the file
// (written to a temporary name, then renamed: readers never see half a
// file).
struct CacheHeader {
  char magic[8];
  uint32_t version;
  uint32_t key_size;
  uint64_t object_size;
  uint64_t checksum;
};
constexpr char kMagic[8] = {'E', 'M', 'B', 'E', 'R', 'K', 'E', 'R'};
constexpr uint32_t kCacheVersion = 1;

/// The cache folder; nullopt when the disk cache is off.
std::optional<std::string> cache_dir() {
  std::string dir;
  bool asked = false;
  if (auto d = env::get("EMBER_CACHE_DIR")) {
    if (d->empty())
      return std::nullopt; // switched off on purpose
    dir = *d;
    asked = true;
  } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::string(x) + "/ember";
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    dir = std::string(h) + "/.cache/ember";
  } else {
    return std::nullopt;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec) {
    // Not usable: no disk cache, compile as usual. A folder the user named
    // says so once; the default folder (under $HOME) stays quiet.
    if (asked)
      logging::warn_once("EMBER_CACHE_DIR",
                         "EMBER_CACHE_DIR=" + dir + " is not usable (" +
                             ec.message() +
                             "); the kernel disk cache is off, kernels are "
                             "compiled in every process. Set it to a "
                             "writable folder, or to \"\" to switch the "
                             "cache off without this warning");
    return std::nullopt;
  }
  return dir;
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
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a(reinterpret_cast<const char *>(lib.data), lib.size)));
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
  std::optional<std::string> dir = cache_dir();
  if (!dir) {
    *why = "the disk cache is off";
    return nullptr;
  }
  std::string path = *dir + "/" + entry + ".ekernel";
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *why = "not in the disk cache";
    return nullptr;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)),
                    std::istreambuf_iterator<char>());
  CacheHeader h;
  if (bytes.size() < sizeof h) {
    *why = "disk cache entry " + path + " is truncated";
    return nullptr;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 ||
      h.version != kCacheVersion) {
    *why = "disk cache entry " + path + " has another format";
    return nullptr;
  }
  if (sizeof h + uint64_t(h.key_size) + h.object_size != bytes.size()) {
    *why = "disk cache entry " + path + " is truncated";
    return nullptr;
  }
  if (bytes.compare(sizeof h, h.key_size, key) != 0 ||
      h.key_size != key.size()) {
    *why = "disk cache entry " + path +
           " is stale (another kernel, target CPU, ember or LLVM)";
    return nullptr;
  }
  const char *obj = bytes.data() + sizeof h + h.key_size;
  if (fnv1a(obj, h.object_size) != h.checksum) {
    *why = "disk cache entry " + path + " is corrupt (checksum mismatch)";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return add_object(entry, obj, h.object_size);
}

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
  if (std::optional<std::string> dir = cache_dir()) {
    CacheHeader h;
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kCacheVersion;
    h.key_size = uint32_t(key.size());
    h.object_size = object.size();
    h.checksum = fnv1a(object.data(), object.size());
    std::string path = *dir + "/" + entry + ".ekernel";
    std::string tmp = path + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char *>(&h), sizeof h);
      f.write(key.data(), std::streamsize(key.size()));
      f.write(object.data(), std::streamsize(object.size()));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec); // a failed write: no cache entry
    if (ec)
      std::filesystem::remove(tmp, ec);
  }
  return add_object(entry, object.data(), object.size());
}

} // namespace ember::codegen
