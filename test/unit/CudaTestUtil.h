#pragma once
// What the CUDA tests share: skipping, with the reason printed, where there
// is no GPU (every CI machine) or no NVRTC.

#include "runtime/Cuda.h"
#include "runtime/Nvrtc.h"

#include <gtest/gtest.h>

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    if (!::ember::cuda::is_available())                                        \
      GTEST_SKIP() << "no CUDA driver or GPU on this machine";                 \
  } while (0)

#define REQUIRE_NVRTC()                                                        \
  do {                                                                         \
    if (!::ember::cuda::nvrtc::is_available())                                 \
      GTEST_SKIP() << "NVRTC (the CUDA toolkit) is not installed";             \
  } while (0)
