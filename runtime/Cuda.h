#pragma once
/// Whether a CUDA device can be used. The driver (libcuda.so.1) is loaded at
/// run time, so one build runs with or without a GPU (DESIGN.md, Devices).

namespace ember::cuda {

/// True when the CUDA driver loads and reports at least one device.
bool is_available();
/// Number of CUDA devices (0 without a driver).
int device_count();

} // namespace ember::cuda
