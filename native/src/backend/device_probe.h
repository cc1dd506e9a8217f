// What compute this machine offers: CPU cores and memory, and CUDA devices when built with CUDA.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/blas_kernels.h"

namespace fsdp {

struct CpuInfo {
  int logical_cores = 0;
  int omp_max_threads = 0;
  std::uint64_t memory_bytes = 0;  // physical memory of the host
  std::string model_name;          // from /proc/cpuinfo where available
};

struct GpuInfo {
  int index = 0;
  std::string name;
  std::uint64_t memory_bytes = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct DeviceProbe {
  CpuInfo cpu;
  std::vector<GpuInfo> gpus;
  bool cuda_built = false;   // the CUDA backend was compiled into this build
  std::string blas;          // BLAS library and its configuration
  BlasKernels blas_kernels;  // which kernels its products run, and why
};

DeviceProbe probe_devices();

}  // namespace fsdp
