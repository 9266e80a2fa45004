#include "codegen/ScalarLibrary.h"

#include "runtime/Error.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"

#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ember::codegen {

namespace detail {
// codegen/embed_bitcode.py, from the two clang builds (CMakeLists.txt).
extern const unsigned char kScalarLibrary_baseline[], kScalarLibrary_v3[];
extern const size_t kScalarLibrary_baseline_size, kScalarLibrary_v3_size;
} // namespace detail

const char *find_dtype_tag(ScalarType t) {
  switch (t) {
#define X(type, tag)                                                           \
  case type:                                                                   \
    return tag;
#include "codegen/ScalarLibraryTags.inc"
#undef X
  default:
    return nullptr;
  }
}

const char *dtype_tag(ScalarType t) {
  const char *tag = find_dtype_tag(t);
  EMBER_CHECK(tag, "codegen: no scalar library type for dtype ", int(t));
  return tag;
}

ScalarType compute_dtype(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16 ? ScalarType::Float
                                                            : t;
}

Bitcode scalar_library(bool v3) {
  if (v3)
    return {detail::kScalarLibrary_v3, detail::kScalarLibrary_v3_size,
            "ScalarLibrary_v3"};
  return {detail::kScalarLibrary_baseline, detail::kScalarLibrary_baseline_size,
          "ScalarLibrary_baseline"};
}

std::string pointwise_cname(const OperatorHandle &op) {
  // "ember::add_.Tensor" -> "add_Tensor": the functional op's C++ name.
  const std::string &qualified = op.name();
  std::string name = qualified.substr(qualified.find("::") + 2);
  std::string overload;
  if (size_t dot = name.find('.'); dot != std::string::npos) {
    overload = name.substr(dot + 1);
    name = name.substr(0, dot);
  }
  if (!name.empty() && name.back() == '_')
    name.pop_back(); // the in-place form computes the same expression
  if (!overload.empty())
    name += "_" + overload;
  return name;
}

std::string pointwise_function(const OperatorHandle &op, ScalarType compute) {
  return "ember_pw_" + pointwise_cname(op) + "_" +
         dtype_tag(compute_dtype(compute));
}

bool has_pointwise_function(const OperatorHandle &op, ScalarType compute) {
  static const std::unordered_set<std::string_view> kFunctions = {
#include "codegen/ScalarLibraryIndex.inc"
  };
  return find_dtype_tag(compute_dtype(compute)) &&
         kFunctions.count(pointwise_function(op, compute)) != 0;
}

namespace {
/// Per library function: its instructions and those of the library
/// functions it calls (each callee once), read from the baseline bitcode.
const std::unordered_map<std::string, int64_t> &function_sizes() {
  static std::unordered_map<std::string, int64_t> sizes;
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::LLVMContext ctx;
    Bitcode lib = scalar_library(false);
    auto buf = llvm::MemoryBuffer::getMemBuffer(
        llvm::StringRef(reinterpret_cast<const char *>(lib.data), lib.size),
        lib.name, /*RequiresNullTerminator=*/false);
    auto module = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
    if (!module) {
      llvm::consumeError(module.takeError());
      return; // every op weighs 1
    }
    // A call the backend cannot inline -- libm's sin behind llvm.sin, a
    // vector of which becomes one scalar call per lane with the moves
    // around them -- costs the kernel's compile far more than an
    // instruction; the intrinsics that are instructions (fabs, fma, sqrt,
    // min/max, rounding) do not.
    constexpr int64_t kOpaqueCall = 32;
    auto opaque = [](const llvm::Function &f) {
      if (!f.isDeclaration())
        return false;
      static const char *const kCheap[] = {
          "llvm.fabs",       "llvm.copysign", "llvm.minnum",
          "llvm.maxnum",     "llvm.minimum",  "llvm.maximum",
          "llvm.fma",        "llvm.fmuladd",  "llvm.floor",
          "llvm.ceil",       "llvm.trunc",    "llvm.rint",
          "llvm.nearbyint",  "llvm.round",    "llvm.roundeven",
          "llvm.sqrt",       "llvm.smax",     "llvm.smin",
          "llvm.umax",       "llvm.umin",     "llvm.abs",
          "llvm.is.fpclass", "llvm.assume",   "llvm.lifetime",
          "llvm.ctpop"};
      for (const char *c : kCheap)
        if (f.getName().starts_with(c))
          return false;
      return true;
    };
    std::unordered_map<const llvm::Function *, int64_t> own;
    for (const llvm::Function &f : **module)
      own[&f] = opaque(f) ? kOpaqueCall : int64_t(f.getInstructionCount());
    for (const llvm::Function &f : **module) {
      if (f.isDeclaration() || !f.getName().starts_with("ember_pw_"))
        continue;
      std::unordered_set<const llvm::Function *> seen{&f};
      std::vector<const llvm::Function *> work{&f};
      int64_t total = 0;
      while (!work.empty()) {
        const llvm::Function *g = work.back();
        work.pop_back();
        total += own[g];
        for (const llvm::BasicBlock &b : *g)
          for (const llvm::Instruction &i : b)
            if (auto *call = llvm::dyn_cast<llvm::CallBase>(&i))
              if (const llvm::Function *c = call->getCalledFunction();
                  c && seen.insert(c).second)
                work.push_back(c);
      }
      sizes[f.getName().str()] = total;
    }
  });
  return sizes;
}
} // namespace

int64_t pointwise_weight(const OperatorHandle &op, ScalarType compute) {
  const auto &sizes = function_sizes();
  auto size = [&](const std::string &name) -> int64_t {
    auto it = sizes.find(name);
    return it == sizes.end() ? 0 : it->second;
  };
  static const OperatorHandle &add =
      Dispatcher::singleton().findSchemaOrThrow("ember::add.Tensor");
  int64_t unit = size(pointwise_function(add, compute));
  int64_t mine = size(pointwise_function(op, compute));
  if (unit <= 0 || mine <= unit)
    return 1;
  return (mine + unit - 1) / unit;
}

} // namespace ember::codegen
