#include "backend/device_probe.h"

#include <omp.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#ifdef FSDP_WITH_CUDA
#include "backend/cuda/cuda_backend_factory.h"
#endif

namespace fsdp {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

}  // namespace

DeviceProbe probe_devices() {
  DeviceProbe p;
  p.cpu.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  p.cpu.omp_max_threads = omp_get_max_threads();
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0)
    p.cpu.memory_bytes = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
  p.cpu.model_name = cpu_model_name();
  p.blas_kernels = current_blas_kernels();
  p.blas = p.blas_kernels.library;
#ifdef FSDP_WITH_CUDA
  p.cuda_built = true;
  p.gpus = probe_gpus();
#endif
  return p;
}

}  // namespace fsdp
