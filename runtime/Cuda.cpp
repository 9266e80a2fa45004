#include "runtime/Cuda.h"

#include <dlfcn.h>

namespace ember::cuda {

namespace {
// Note [Loading the CUDA driver]
// Linking -lcuda would make every binary fail to start on machines without a
// driver (TOOLCHAIN.md). The driver API is instead opened with dlopen on first
// use; its absence, or cuInit failing (no device, driver too old), simply
// means "no CUDA".
int probeDeviceCount() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return 0;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0)
    n = 0;
  return n; // the library stays loaded for later users
}
} // namespace

int device_count() {
  static const int n = probeDeviceCount();
  return n;
}

bool is_available() { return device_count() > 0; }

} // namespace ember::cuda
