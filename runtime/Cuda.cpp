#include "runtime/Cuda.h"
#include "runtime/CudaDriver.h"
#include "runtime/Profiler.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace ember::cuda {

namespace driver {
namespace {
// Note [Loading the CUDA driver]
// Linking -lcuda would make every binary fail to start on machines without a
// driver (TOOLCHAIN.md). The driver API is instead opened with dlopen on first
// use; its absence, a missing entry point, or cuInit failing (no device,
// driver too old) simply means "no CUDA", and why is kept for the message.
struct Loaded {
  Api api;
  bool ok = false;
  std::string why;
  int count = 0;
};

const Loaded &loaded() {
  static const Loaded l = [] {
    Loaded r;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      r.why = "no CUDA driver (libcuda.so.1) was found";
      return r;
    }
#define EMBER_CU_LOAD(name, ...)                                               \
  r.api.name = reinterpret_cast<decltype(r.api.name)>(dlsym(lib, #name));      \
  if (!r.api.name) {                                                           \
    r.why = "the CUDA driver has no entry point " #name " (too old?)";         \
    return r;                                                                  \
  }
    EMBER_FORALL_CUDA_DRIVER(EMBER_CU_LOAD)
#undef EMBER_CU_LOAD
    if (CUresult e = r.api.cuInit(0); e != CUDA_SUCCESS) {
      r.why = "the CUDA driver failed to initialise (cuInit returned " +
              std::to_string(e) + "; no GPU, or the driver is too old)";
      return r;
    }
    if (r.api.cuDeviceGetCount(&r.count) != CUDA_SUCCESS || r.count <= 0) {
      r.count = 0;
      r.why = "the CUDA driver reports no GPU";
      return r;
    }
    r.ok = true;
    return r; // the library stays loaded for the life of the process
  }();
  return l;
}

constexpr int kMaxDevices = 64;

struct DeviceState {
  std::once_flag once;
  CUcontext ctx = nullptr;
  int cc = 0, sms = 0;
};
std::array<DeviceState, kMaxDevices> &devices() {
  static std::array<DeviceState, kMaxDevices> d;
  return d;
}

DeviceState &device_state(int index) {
  DeviceState &s = devices()[size_t(index)];
  std::call_once(s.once, [&] {
    const Api &a = checked_api();
    CUdevice dev;
    check(a.cuDeviceGet(&dev, index), "cuDeviceGet");
    check(a.cuDevicePrimaryCtxRetain(&s.ctx, dev), "cuDevicePrimaryCtxRetain");
    int major = 0, minor = 0;
    check(a.cuDeviceGetAttribute(
              &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "cuDeviceGetAttribute");
    check(a.cuDeviceGetAttribute(
              &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "cuDeviceGetAttribute");
    check(a.cuDeviceGetAttribute(&s.sms,
                                 CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
          "cuDeviceGetAttribute");
    s.cc = major * 10 + minor;
  });
  return s;
}

thread_local CUcontext tls_context = nullptr;
} // namespace

const Api *api() { return loaded().ok ? &loaded().api : nullptr; }

const Api &checked_api() {
  const Loaded &l = loaded();
  EMBER_CHECK(l.ok, "CUDA is not available: ", l.why,
              " (ember::cuda::is_available() is false). Use CPU tensors, or "
              "run on a machine with an NVIDIA GPU and driver.");
  return l.api;
}

void fail(CUresult r, const char *call) {
  const char *name = nullptr, *msg = nullptr;
  if (const Api *a = api()) {
    a->cuGetErrorName(r, &name);
    a->cuGetErrorString(r, &msg);
  }
  throw Error(detail::str("CUDA error: ", msg ? msg : "unknown error", " (",
                          name ? name : "CUDA error", ", code ", r, ") in ",
                          call));
}

void *open_toolkit_library(const char *stem) {
  std::string s = stem;
  std::vector<std::string> names = {s + ".so.13", s + ".so.12", s + ".so"};
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *h = std::getenv(var); h && *h)
      names.push_back(std::string(h) + "/lib64/" + s + ".so");
  names.push_back("/usr/local/cuda/lib64/" + s + ".so");
  for (const std::string &n : names)
    if (void *h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
  return nullptr;
}

void set_context(int index) {
  DeviceState &s = device_state(index);
  if (tls_context != s.ctx) {
    check(checked_api().cuCtxSetCurrent(s.ctx), "cuCtxSetCurrent");
    tls_context = s.ctx;
  }
}

int compute_capability(int index) { return device_state(index).cc; }
int multiprocessor_count(int index) { return device_state(index).sms; }

} // namespace driver

using namespace driver;

namespace {
thread_local int tls_device = 0;
} // namespace

int device_count() { return loaded().count; }

bool is_available() { return device_count() > 0; }

int checked_device(int device, const char *fn) {
  checked_api();
  int n = device_count();
  int i = device == -1 ? tls_device : device;
  EMBER_CHECK_INDEX(i >= 0 && i < n, fn, ": invalid CUDA device index ", device,
                    "; this machine has ", n, " CUDA device", n == 1 ? "" : "s",
                    " (indices 0 to ", n - 1,
                    ", or -1 for the current device)");
  return i;
}

int current_device() {
  checked_api();
  return tls_device;
}

void set_device(int device) {
  tls_device = checked_device(device, "ember::cuda::set_device");
  set_context(tls_device);
}

void synchronize(int device) {
  int d = checked_device(device, "ember::cuda::synchronize");
  set_context(d);
  EMBER_CU(cuCtxSynchronize);
}

namespace {
/// torch.get_float32_matmul_precision's level: 0 "highest", 1 "high", 2
/// "medium"; TF32 is allowed above 0.
std::atomic<int> matmul_precision{0};
} // namespace

void set_allow_tf32(bool allow) {
  int was = matmul_precision.load();
  matmul_precision.store(allow ? (was ? was : 1) : 0);
}
bool allow_tf32() { return matmul_precision.load() != 0; }

DeviceProperties get_device_properties(int device) {
  int d = checked_device(device, "ember::cuda::get_device_properties");
  const Api &a = checked_api();
  DeviceProperties p;
  CUdevice dev;
  check(a.cuDeviceGet(&dev, d), "cuDeviceGet");
  char name[256] = {0};
  check(a.cuDeviceGetName(name, int(sizeof name) - 1, dev), "cuDeviceGetName");
  p.name = name;
  p.major = compute_capability(d) / 10;
  p.minor = compute_capability(d) % 10;
  p.multi_processor_count = multiprocessor_count(d);
  check(a.cuDeviceTotalMem_v2(&p.total_memory, dev), "cuDeviceTotalMem");
  return p;
}

std::string get_device_name(int device) {
  return get_device_properties(device).name;
}

// --- streams ----------------------------------------------------------------

namespace {
constexpr int kPoolSize = 32;
struct StreamPool {
  std::once_flag once;
  std::array<CUstream, kPoolSize> streams{};
  std::atomic<uint32_t> next{0};
};
/// Per device: the normal-priority pool, then the high-priority one.
std::array<std::array<StreamPool, 2>, kMaxDevices> &pools() {
  static std::array<std::array<StreamPool, 2>, kMaxDevices> p;
  return p;
}
/// This thread's current stream per device (null: the default stream).
thread_local std::array<CUstream, kMaxDevices> tls_streams{};
} // namespace

bool CUDAStream::query() const {
  set_context(device_);
  CUresult r = checked_api().cuStreamQuery(static_cast<CUstream>(handle_));
  if (r == CUDA_ERROR_NOT_READY)
    return false;
  check(r, "cuStreamQuery");
  return true;
}

void CUDAStream::synchronize() const {
  set_context(device_);
  EMBER_CU(cuStreamSynchronize, static_cast<CUstream>(handle_));
}

CUDAStream getCurrentCUDAStream(int device) {
  int d = checked_device(device, "ember::cuda::getCurrentCUDAStream");
  return CUDAStream(d, tls_streams[size_t(d)]);
}

CUDAStream getDefaultCUDAStream(int device) {
  return CUDAStream(checked_device(device, "ember::cuda::getDefaultCUDAStream"),
                    nullptr);
}

CUDAStream getStreamFromPool(bool isHighPriority, int device) {
  int d = checked_device(device, "ember::cuda::getStreamFromPool");
  StreamPool &p = pools()[size_t(d)][isHighPriority ? 1 : 0];
  std::call_once(p.once, [&] {
    set_context(d);
    int least = 0, greatest = 0; // greatest: the highest priority
    EMBER_CU(cuCtxGetStreamPriorityRange, &least, &greatest);
    for (CUstream &s : p.streams)
      EMBER_CU(cuStreamCreateWithPriority, &s, CU_STREAM_NON_BLOCKING,
               isHighPriority ? greatest : least);
  });
  return CUDAStream(d, p.streams[p.next++ % kPoolSize]);
}

void setCurrentCUDAStream(CUDAStream s) {
  tls_streams[size_t(s.device_index())] = static_cast<CUstream>(s.stream());
}

CUDAGuard::CUDAGuard(int device) : prev_(current_device()) {
  set_device(device);
}
namespace {
int cuda_index(Device device) {
  EMBER_CHECK(device.is_cuda(), "CUDAGuard: expected a CUDA device, got ",
              device);
  return device.index();
}
} // namespace

CUDAGuard::CUDAGuard(Device device) : CUDAGuard(cuda_index(device)) {}
CUDAGuard::~CUDAGuard() { tls_device = prev_; }

CUDAStreamGuard::CUDAStreamGuard(CUDAStream s)
    : prev_stream_(getCurrentCUDAStream(s.device_index())),
      prev_device_(current_device()) {
  set_device(s.device_index());
  setCurrentCUDAStream(s);
}
CUDAStreamGuard::~CUDAStreamGuard() {
  setCurrentCUDAStream(prev_stream_);
  tls_device = prev_device_;
}

// --- events -----------------------------------------------------------------

CUDAEvent::~CUDAEvent() {
  if (handle_ && api()) {
    set_context(device_);
    api()->cuEventDestroy_v2(static_cast<CUevent>(handle_));
  }
}

CUDAEvent::CUDAEvent(CUDAEvent &&o) noexcept
    : enable_timing_(o.enable_timing_), device_(o.device_),
      handle_(std::exchange(o.handle_, nullptr)) {}

CUDAEvent &CUDAEvent::operator=(CUDAEvent &&o) noexcept {
  if (this != &o) {
    CUDAEvent tmp(std::move(o));
    std::swap(enable_timing_, tmp.enable_timing_);
    std::swap(device_, tmp.device_);
    std::swap(handle_, tmp.handle_);
  }
  return *this;
}

void CUDAEvent::record(const CUDAStream &stream) {
  if (!handle_) {
    device_ = stream.device_index();
    set_context(device_);
    CUevent e;
    EMBER_CU(cuEventCreate, &e,
             enable_timing_ ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
    handle_ = e;
  }
  EMBER_CHECK(stream.device_index() == device_, "CUDAEvent::record: the event ",
              "was created on cuda:", device_, " and cannot be recorded on ",
              "a stream of cuda:", stream.device_index());
  set_context(device_);
  EMBER_CU(cuEventRecord, static_cast<CUevent>(handle_),
           static_cast<CUstream>(stream.stream()));
}

void CUDAEvent::record() { record(getCurrentCUDAStream()); }

void CUDAEvent::block(const CUDAStream &stream) const {
  if (!handle_)
    return;
  set_context(stream.device_index());
  EMBER_CU(cuStreamWaitEvent, static_cast<CUstream>(stream.stream()),
           static_cast<CUevent>(handle_), 0);
}

bool CUDAEvent::query() const {
  if (!handle_)
    return true;
  set_context(device_);
  CUresult r = checked_api().cuEventQuery(static_cast<CUevent>(handle_));
  if (r == CUDA_ERROR_NOT_READY)
    return false;
  check(r, "cuEventQuery");
  return true;
}

void CUDAEvent::synchronize() const {
  if (!handle_)
    return;
  set_context(device_);
  EMBER_CU(cuEventSynchronize, static_cast<CUevent>(handle_));
}

float CUDAEvent::elapsed_time(const CUDAEvent &end) const {
  EMBER_CHECK(enable_timing_ && end.enable_timing_,
              "CUDAEvent::elapsed_time: both events must be created with "
              "enable_timing=true");
  EMBER_CHECK(handle_ && end.handle_,
              "CUDAEvent::elapsed_time: both events must be recorded first");
  set_context(device_);
  float ms = 0;
  EMBER_CU(cuEventElapsedTime, &ms, static_cast<CUevent>(handle_),
           static_cast<CUevent>(end.handle_));
  return ms;
}

// --- the profiler's timer ----------------------------------------------------

namespace {
/// CUDA events as the profiler's marks (Note [Device activity]): each
/// device's first mark of a session records a reference event on the idle
/// device at a known CPU time; a mark's time is that CPU time plus the
/// device's elapsed time from the reference.
class CudaTimer final : public profiler::DeviceTimer {
public:
  void *mark(Device device, uint64_t stream) override {
    const int index = checked_device(device.index(), "profiler");
    driver::set_context(index);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!references_.count(index)) {
        EMBER_CU(cuCtxSynchronize);
        CUevent ref = nullptr;
        EMBER_CU(cuEventCreate, &ref, 0u);
        EMBER_CU(cuEventRecord, ref, nullptr);
        EMBER_CU(cuEventSynchronize, ref);
        references_[index] = {ref, profiler::now_ns()};
      }
    }
    CUevent e = nullptr;
    EMBER_CU(cuEventCreate, &e, 0u);
    EMBER_CU(cuEventRecord, e, reinterpret_cast<CUstream>(stream));
    return new Mark{index, e};
  }
  int64_t time_ns(void *m) override {
    std::unique_ptr<Mark> mark(static_cast<Mark *>(m));
    driver::set_context(mark->device);
    Reference ref;
    {
      std::lock_guard<std::mutex> g(mu_);
      ref = references_.at(mark->device);
    }
    EMBER_CU(cuEventSynchronize, mark->event);
    float ms = 0;
    EMBER_CU(cuEventElapsedTime, &ms, ref.event, mark->event);
    EMBER_CU(cuEventDestroy_v2, mark->event);
    return ref.cpu_ns + int64_t(double(ms) * 1e6);
  }
  void release(void *m) override {
    std::unique_ptr<Mark> mark(static_cast<Mark *>(m));
    driver::set_context(mark->device);
    EMBER_CU(cuEventDestroy_v2, mark->event);
  }
  void reset() override {
    std::lock_guard<std::mutex> g(mu_);
    for (auto &[index, ref] : references_) {
      driver::set_context(index);
      EMBER_CU(cuEventDestroy_v2, ref.event);
    }
    references_.clear();
  }

private:
  struct Mark {
    int device;
    CUevent event;
  };
  struct Reference {
    CUevent event = nullptr;
    int64_t cpu_ns = 0;
  };
  std::mutex mu_;
  std::map<int, Reference> references_;
};
} // namespace

profiler::DeviceTimer *profiler_timer() {
  static CudaTimer *timer = new CudaTimer();
  return timer;
}

} // namespace ember::cuda

namespace ember {

void set_float32_matmul_precision(const std::string &precision) {
  EMBER_CHECK(precision == "highest" || precision == "high" ||
                  precision == "medium",
              "set_float32_matmul_precision: invalid precision \"", precision,
              "\"; expected \"highest\", \"high\" or \"medium\"");
  cuda::matmul_precision.store(precision == "highest" ? 0
                               : precision == "high"  ? 1
                                                      : 2);
}

std::string get_float32_matmul_precision() {
  static const char *names[] = {"highest", "high", "medium"};
  return names[cuda::matmul_precision.load()];
}

} // namespace ember
