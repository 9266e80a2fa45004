#pragma once
/// The CUDA driver API as ember uses it, loaded at run time (Note [Loading
/// the CUDA driver] in runtime/Cuda.cpp). Internal to runtime/ and the CUDA
/// kernels of eager/: users see runtime/Cuda.h.
///
/// The types and constants are the driver's ABI (cuda.h), declared here so
/// that ember builds without the CUDA toolkit's headers.

#include "runtime/Error.h"

#include <cstddef>
#include <cstdint>

namespace ember::cuda::driver {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 1;

// name, return, arguments: the symbols ember opens (the _v2 names are the
// ones current drivers export for the unsuffixed API).
#define EMBER_FORALL_CUDA_DRIVER(_)                                            \
  _(cuInit, unsigned)                                                          \
  _(cuDriverGetVersion, int *)                                                 \
  _(cuDeviceGetCount, int *)                                                   \
  _(cuDeviceGet, CUdevice *, int)                                              \
  _(cuDeviceGetName, char *, int, CUdevice)                                    \
  _(cuDeviceGetAttribute, int *, int, CUdevice)                                \
  _(cuDeviceTotalMem_v2, size_t *, CUdevice)                                   \
  _(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)                           \
  _(cuCtxSetCurrent, CUcontext)                                                \
  _(cuCtxSynchronize)                                                          \
  _(cuGetErrorName, CUresult, const char **)                                   \
  _(cuGetErrorString, CUresult, const char **)                                 \
  _(cuMemAlloc_v2, CUdeviceptr *, size_t)                                      \
  _(cuMemFree_v2, CUdeviceptr)                                                 \
  _(cuMemGetInfo_v2, size_t *, size_t *)                                       \
  _(cuMemHostAlloc, void **, size_t, unsigned)                                 \
  _(cuMemFreeHost, void *)                                                     \
  _(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, size_t, CUstream)         \
  _(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, size_t, CUstream)               \
  _(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, size_t, CUstream)          \
  _(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)             \
  _(cuStreamCreateWithPriority, CUstream *, unsigned, int)                     \
  _(cuCtxGetStreamPriorityRange, int *, int *)                                 \
  _(cuStreamSynchronize, CUstream)                                             \
  _(cuStreamQuery, CUstream)                                                   \
  _(cuStreamWaitEvent, CUstream, CUevent, unsigned)                            \
  _(cuEventCreate, CUevent *, unsigned)                                        \
  _(cuEventRecord, CUevent, CUstream)                                          \
  _(cuEventQuery, CUevent)                                                     \
  _(cuEventSynchronize, CUevent)                                               \
  _(cuEventElapsedTime, float *, CUevent, CUevent)                             \
  _(cuEventDestroy_v2, CUevent)                                                \
  _(cuModuleLoadData, CUmodule *, const void *)                                \
  _(cuModuleGetFunction, CUfunction *, CUmodule, const char *)                 \
  _(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, CUstream, void **, void **)

/// The driver's entry points; every one is present when api() is not null.
struct Api {
#define EMBER_CU_FIELD(name, ...) CUresult (*name)(__VA_ARGS__) = nullptr;
  EMBER_FORALL_CUDA_DRIVER(EMBER_CU_FIELD)
#undef EMBER_CU_FIELD
};

/// The loaded and initialised driver, or null (no libcuda.so.1, a missing
/// symbol, or cuInit failing: no device, driver too old).
const Api *api();
/// api(), or raises ember::Error saying CUDA is unavailable and why.
const Api &checked_api();

/// Raises ember::Error naming the failed call and the driver's message.
[[noreturn]] void fail(CUresult r, const char *call);
inline void check(CUresult r, const char *call) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    fail(r, call);
}

/// Opens a library of the CUDA toolkit (NVRTC, cuBLAS) by dlopen: `stem`
/// ("libnvrtc") with the major versions ember knows (.so.13, .so.12), then
/// unversioned, then from $CUDA_HOME/lib64, $CUDA_PATH/lib64 and
/// /usr/local/cuda/lib64. Null when none loads (it needs no GPU).
void *open_toolkit_library(const char *stem);

/// Makes device `index`'s primary context current on this thread (once per
/// thread and device switch); every driver call that touches a device's
/// memory or streams does this first.
void set_context(int index);
/// The compute capability (e.g. 90 for sm_90) and multiprocessor count.
int compute_capability(int index);
int multiprocessor_count(int index);

} // namespace ember::cuda::driver

/// Calls a driver entry point and raises on failure: EMBER_CU(cuMemFree_v2, p).
#define EMBER_CU(name, ...)                                                    \
  ::ember::cuda::driver::check(                                                \
      ::ember::cuda::driver::checked_api().name(__VA_ARGS__), #name)
