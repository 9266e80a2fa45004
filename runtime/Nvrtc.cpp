#include "runtime/Nvrtc.h"
#include "runtime/Cuda.h"
#include "runtime/CudaDriver.h"
#include "runtime/DiskCache.h"
#include "runtime/Logging.h"
#include "runtime/Profiler.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace ember::cuda {

namespace nvrtc {
namespace {
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

#define EMBER_FORALL_NVRTC(_)                                                  \
  _(nvrtcVersion, int *, int *)                                                \
  _(nvrtcCreateProgram, nvrtcProgram *, const char *, const char *, int,       \
    const char *const *, const char *const *)                                  \
  _(nvrtcDestroyProgram, nvrtcProgram *)                                       \
  _(nvrtcCompileProgram, nvrtcProgram, int, const char *const *)               \
  _(nvrtcGetProgramLogSize, nvrtcProgram, size_t *)                            \
  _(nvrtcGetProgramLog, nvrtcProgram, char *)                                  \
  _(nvrtcGetPTXSize, nvrtcProgram, size_t *)                                   \
  _(nvrtcGetPTX, nvrtcProgram, char *)                                         \
  _(nvrtcGetCUBINSize, nvrtcProgram, size_t *)                                 \
  _(nvrtcGetCUBIN, nvrtcProgram, char *)                                       \
  _(nvrtcGetNumSupportedArchs, int *)                                          \
  _(nvrtcGetSupportedArchs, int *)

struct Lib {
#define EMBER_NVRTC_FIELD(name, ...) nvrtcResult (*name)(__VA_ARGS__) = nullptr;
  EMBER_FORALL_NVRTC(EMBER_NVRTC_FIELD)
#undef EMBER_NVRTC_FIELD
  const char *(*nvrtcGetErrorString)(nvrtcResult) = nullptr;
  bool ok = false;
  std::string why;
  int version = 0;
  std::vector<int> archs;
};

const Lib &lib() {
  static const Lib l = [] {
    Lib r;
    void *h = driver::open_toolkit_library("libnvrtc");
    if (!h) {
      r.why = "NVRTC (libnvrtc.so) was not found; install the CUDA toolkit "
              "or set CUDA_HOME";
      return r;
    }
#define EMBER_NVRTC_LOAD(name, ...)                                            \
  r.name = reinterpret_cast<decltype(r.name)>(dlsym(h, #name));                \
  if (!r.name) {                                                               \
    r.why = "NVRTC has no entry point " #name " (too old?)";                   \
    return r;                                                                  \
  }
    EMBER_FORALL_NVRTC(EMBER_NVRTC_LOAD)
    EMBER_NVRTC_LOAD(nvrtcGetErrorString)
#undef EMBER_NVRTC_LOAD
    int major = 0, minor = 0;
    r.nvrtcVersion(&major, &minor);
    r.version = major * 1000 + minor * 10;
    int n = 0;
    r.nvrtcGetNumSupportedArchs(&n);
    r.archs.resize(size_t(n));
    if (n > 0)
      r.nvrtcGetSupportedArchs(r.archs.data());
    r.ok = true;
    return r;
  }();
  return l;
}

const Lib &checked() {
  EMBER_CHECK(lib().ok, "CUDA kernels cannot be compiled: ", lib().why);
  return lib();
}

const char *error_string(nvrtcResult r) {
  return lib().ok ? lib().nvrtcGetErrorString(r) : "unknown NVRTC error";
}
} // namespace

bool is_available() { return lib().ok; }
int version() { return checked().version; }

Compiled compile(const std::string &source, const std::string &name, int arch,
                 bool cubin) {
  const Lib &l = checked();
  // Note [Kernels for the device's architecture]
  // A cubin for sm_<arch> when NVRTC knows it (no JIT at load); else PTX of
  // the newest architecture NVRTC knows that is not newer than the device,
  // which the driver compiles when loading it (a device newer than NVRTC).
  int target = 0;
  for (int a : l.archs)
    if (a <= arch && a > target)
      target = a;
  EMBER_CHECK(target > 0, "NVRTC ", l.version / 1000, ".",
              (l.version % 1000) / 10, " cannot compile for sm_", arch,
              " (it knows sm_", l.archs.empty() ? 0 : l.archs.front(),
              " to sm_", l.archs.empty() ? 0 : l.archs.back(), ")");
  bool as_cubin = cubin && target == arch;
  std::string gpu = std::string("--gpu-architecture=") +
                    (as_cubin ? "sm_" : "compute_") + std::to_string(target);
  std::vector<const char *> opts = {gpu.c_str(), "-std=c++17", "--minimal"};
  Compiled out;
  out.cubin = as_cubin;
  for (int attempt = 0; attempt < 2; ++attempt) {
    nvrtcProgram prog = nullptr;
    nvrtcResult r = l.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0,
                                         nullptr, nullptr);
    EMBER_CHECK(r == 0, "nvrtcCreateProgram failed: ", error_string(r));
    r = l.nvrtcCompileProgram(prog, int(opts.size()), opts.data());
    size_t log_size = 0;
    l.nvrtcGetProgramLogSize(prog, &log_size);
    out.log.assign(log_size, '\0');
    if (log_size)
      l.nvrtcGetProgramLog(prog, out.log.data());
    while (!out.log.empty() &&
           (out.log.back() == '\0' || out.log.back() == '\n'))
      out.log.pop_back();
    if (r == 0) {
      size_t size = 0;
      if (as_cubin) {
        l.nvrtcGetCUBINSize(prog, &size);
        out.binary.assign(size, '\0');
        l.nvrtcGetCUBIN(prog, out.binary.data());
      } else {
        l.nvrtcGetPTXSize(prog, &size);
        out.binary.assign(size, '\0');
        l.nvrtcGetPTX(prog, out.binary.data());
      }
    }
    l.nvrtcDestroyProgram(&prog);
    if (r == 0)
      return out;
    // NVRTC before 12.4 has no --minimal: compile again without it.
    if (attempt == 0 && out.log.find("minimal") != std::string::npos) {
      opts.pop_back();
      continue;
    }
    EMBER_CHECK(false, "NVRTC could not compile the CUDA kernel ", name, " (",
                error_string(r), "); this is a bug in ember. The log:\n",
                out.log);
  }
  return out;
}
} // namespace nvrtc

using namespace driver;

namespace {
struct KernelCache {
  std::mutex mu;
  std::map<std::pair<int, std::string>, CUfunction> kernels;
  /// What precompile_kernels compiled or read from the disk cache and no
  /// get_kernel loaded yet, by disk key; with the NVRTC seconds each took
  /// (-1: read from the disk cache, which get_kernel then need not read).
  std::map<std::string, std::pair<std::string, double>> binaries;
  /// The profiler's names of the kernels: the entry, or what name_kernel
  /// gave.
  std::map<void *, std::string> names;
  KernelCacheStats stats;
};
KernelCache &kernel_cache() {
  static auto *c = new KernelCache();
  return *c;
}

CUfunction load(int device, const std::string &binary, const std::string &entry,
                std::string *why) {
  set_context(device);
  CUmodule m = nullptr;
  CUresult r = checked_api().cuModuleLoadData(&m, binary.data());
  if (r != CUDA_SUCCESS) {
    *why = "the driver rejected the module (error " + std::to_string(r) + ")";
    return nullptr;
  }
  CUfunction f = nullptr;
  check(checked_api().cuModuleGetFunction(&f, m, entry.c_str()),
        "cuModuleGetFunction");
  return f;
}

/// The disk cache's key of a kernel for sm_<arch>, and its file's name.
std::string disk_key_of(int arch, const std::string &source,
                        const std::string &entry) {
  return "cuda kernel " + entry + " for sm_" + std::to_string(arch) +
         ", NVRTC " + std::to_string(nvrtc::version()) + "\n" + source;
}
std::string disk_name_of(const std::string &disk_key) {
  return "cuda-" + disk_cache::hex(disk_cache::fnv1a(disk_key));
}

/// NVRTC's binary of a kernel, as the driver loads it (PTX NUL-ended), and
/// the seconds it took.
std::pair<std::string, double>
compile_binary(int arch, const std::string &source, const std::string &entry) {
  auto t0 = std::chrono::steady_clock::now();
  nvrtc::Compiled k = nvrtc::compile(source, entry + ".cu", arch, true);
  if (!k.cubin)
    k.binary.push_back('\0');
  if (logging::enabled(logging::Topic::kernels))
    logging::log(logging::Topic::kernels,
                 "cuda kernel " + entry + " compiled by NVRTC (" +
                     (k.cubin ? "cubin" : "PTX") + " for sm_" +
                     std::to_string(arch) + ")");
  return {std::move(k.binary),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count()};
}
} // namespace

int precompile_kernels(int arch, const std::vector<KernelSource> &kernels,
                       int device) {
  KernelCache &c = kernel_cache();
  // The kernels no cache holds, each once.
  std::vector<std::pair<const KernelSource *, std::string>> todo;
  {
    std::lock_guard<std::mutex> g(c.mu);
    std::set<std::string> seen;
    std::string why;
    for (const KernelSource &k : kernels) {
      if (device >= 0 &&
          c.kernels.count(std::make_pair(device, k.entry + '\n' + k.source)))
        continue;
      std::string key = disk_key_of(arch, k.source, k.entry);
      if (c.binaries.count(key) || !seen.insert(key).second)
        continue;
      if (std::optional<std::string> bin =
              disk_cache::load(disk_name_of(key), key, &why)) {
        c.binaries.emplace(key, std::make_pair(std::move(*bin), -1.0));
        continue;
      }
      todo.emplace_back(&k, std::move(key));
    }
  }
  if (todo.empty())
    return 0;
  std::atomic<size_t> next{0};
  std::atomic<int> compiled{0};
  auto work = [&] {
    for (size_t i; (i = next++) < todo.size();) {
      const KernelSource &k = *todo[i].first;
      const std::string &key = todo[i].second;
      std::pair<std::string, double> b;
      try {
        b = compile_binary(arch, k.source, k.entry);
      } catch (const Error &) {
        continue; // (get_kernel compiles it again and raises with the log)
      }
      disk_cache::store(disk_name_of(key), key, b.first.data(), b.first.size());
      std::lock_guard<std::mutex> g(c.mu);
      c.binaries.emplace(key, std::move(b));
      ++compiled;
    }
  };
  size_t threads = std::min<size_t>(
      todo.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  return compiled;
}

void *get_kernel(int device, const std::string &source,
                 const std::string &entry) {
  KernelCache &c = kernel_cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto key = std::make_pair(device, entry + '\n' + source);
  if (auto it = c.kernels.find(key); it != c.kernels.end()) {
    ++c.stats.from_memory;
    return it->second;
  }
  int arch = compute_capability(device);
  std::string disk_key = disk_key_of(arch, source, entry);
  std::string name = disk_name_of(disk_key);
  std::string why;
  CUfunction f = nullptr;
  if (auto it = c.binaries.find(disk_key); it != c.binaries.end()) {
    // Compiled, or read from the disk cache, by precompile_kernels.
    f = load(device, it->second.first, entry, &why);
    if (f && it->second.second < 0) {
      ++c.stats.from_disk;
    } else if (f) {
      ++c.stats.compiled;
      ++c.stats.precompiled;
      c.stats.nvrtc_seconds += it->second.second;
    }
    c.binaries.erase(it);
  }
  if (!f)
    if (std::optional<std::string> bin =
            disk_cache::load(name, disk_key, &why)) {
      f = load(device, *bin, entry, &why);
      if (f)
        ++c.stats.from_disk;
    }
  if (!f) {
    // A miss, or an entry the driver would not load: compile, store, load.
    auto [binary, seconds] = compile_binary(arch, source, entry);
    f = load(device, binary, entry, &why);
    EMBER_CHECK(f, "CUDA kernel ", entry, ": ", why);
    disk_cache::store(name, disk_key, binary.data(), binary.size());
    ++c.stats.compiled;
    c.stats.nvrtc_seconds += seconds;
  }
  c.kernels.emplace(std::move(key), f);
  c.names.emplace(f, entry);
  return f;
}

void name_kernel(void *fn, const std::string &name) {
  KernelCache &c = kernel_cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.names[fn] = name;
}

namespace {
/// The profiler's name of a kernel (Note [Device activity]).
std::string kernel_name(void *fn) {
  KernelCache &c = kernel_cache();
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.names.find(fn);
  return it != c.names.end() ? it->second : std::string("ember kernel");
}
} // namespace

void launch_kernel(int device, void *fn, unsigned grid, unsigned block,
                   void **args, size_t shared_bytes) {
  set_context(device);
  CUstream stream =
      static_cast<CUstream>(getCurrentCUDAStream(device).stream());
  std::optional<profiler::record_device> timed;
  if (EMBER_UNLIKELY(profiler::active()))
    timed.emplace(kernel_name(fn), Device(kCUDA, device),
                  reinterpret_cast<uint64_t>(stream));
  EMBER_CU(cuLaunchKernel, static_cast<CUfunction>(fn), grid, 1, 1, block, 1, 1,
           unsigned(shared_bytes), stream, args, nullptr);
}

KernelCacheStats kernel_cache_stats() {
  KernelCache &c = kernel_cache();
  std::lock_guard<std::mutex> g(c.mu);
  return c.stats;
}

} // namespace ember::cuda
