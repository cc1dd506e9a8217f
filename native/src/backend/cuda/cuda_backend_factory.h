// The CUDA backend as backend.cc creates it, and the GPUs probe_devices() lists; declared apart
// from the backend's class so the CPU code includes no CUDA header.
#pragma once
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/device_probe.h"

namespace fsdp {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

/** The GPUs CUDA sees (empty when there is no driver or no device). */
std::vector<GpuInfo> probe_gpus();

}  // namespace fsdp
