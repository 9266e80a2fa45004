#pragma once
/// The process's LLVM JIT for CPU kernels (ORC LLJIT, the host CPU at O3).
/// Only codegen/ includes this header (it pulls in LLVM's).

#include "codegen/ScalarLibrary.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
namespace orc {
class LLJIT;
}
} // namespace llvm

namespace ember::codegen {

/// A module being built: its own context, the scalar library parsed into it
/// (the kernel calls the library's functions, which it defines).
struct KernelModule {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
  /// The slots of the entry's `ptrs` (its first argument) whose buffers
  /// are written with streaming stores where aligned (Note [Streaming
  /// stores] in CpuJit.cpp).
  std::vector<int> streamed;
};

class CpuJit {
public:
  /// The one JIT of the process (created on first use).
  static CpuJit &get();

  /// "x86_64-pc-linux-gnu icelake-server +avx2,+fma,... library=v3 <hash>":
  /// what kernels are compiled for and with (part of every cache key).
  const std::string &target() const { return target_; }

  /// A fresh module holding the scalar library, with the host's data layout
  /// and triple.
  KernelModule new_module(const std::string &name);

  /// The kernel `entry` from the disk cache (EMBER_CACHE_DIR), if a valid
  /// entry for `key` is there: its address; else null and `*why` says why
  /// (missing, or what was wrong with the entry: it is then rebuilt, never
  /// run).
  void *load_cached(const std::string &key, const std::string &entry,
                    std::string *why);

  /// Internalizes everything in `m` but `entry`, optimizes at O3 for the
  /// host, compiles it to an object (stored in the disk cache under `key`)
  /// and returns the address of `entry`; the optimized IR goes to `*ir`
  /// when it is not null.
  void *compile(KernelModule m, const std::string &entry,
                const std::string &key, std::string *ir = nullptr);

  /// Sets the host CPU's attributes on a kernel function (so that the
  /// vectorizer knows the vector width, and the library inlines into it).
  void set_host_attributes(llvm::Function &f) const;

private:
  CpuJit();
  void *add_object(const std::string &entry, const char *data, size_t size);

  std::unique_ptr<llvm::TargetMachine> tm_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string target_;
  std::string cpu_, features_;
  bool v3_ = false;
  std::mutex mu_;
  int dylibs_ = 0;
};

} // namespace ember::codegen
