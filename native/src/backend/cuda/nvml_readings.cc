#include "backend/cuda/nvml_readings.h"

#include <dlfcn.h>

namespace fsdp::cuda {

namespace {

// The few NVML entry points used, as its documentation declares them (nvml.h): every function
// returns nvmlReturn_t, 0 on success; a device is an opaque pointer.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlMemory {
  unsigned long long total, free, used;
};
constexpr int kTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

NvmlReadings::NvmlReadings(const std::string& pci_bus_id) {
  library_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library_) return;
  auto init = symbol<NvmlReturn (*)()>(library_, "nvmlInit_v2");
  auto by_bus = symbol<NvmlReturn (*)(const char*, NvmlDevice*)>(library_, "nvmlDeviceGetHandleByPciBusId_v2");
  NvmlDevice device = nullptr;
  if (!init || !by_bus || init() != 0 || by_bus(pci_bus_id.c_str(), &device) != 0) return;
  device_ = device;
}

NvmlReadings::~NvmlReadings() {
  if (!library_) return;
  if (device_) {
    if (auto shutdown = symbol<NvmlReturn (*)()>(library_, "nvmlShutdown")) shutdown();
  }
  dlclose(library_);
}

NvmlSample NvmlReadings::sample() const {
  NvmlSample s;
  if (!device_) return s;
  NvmlUtilization u{};
  if (auto f = symbol<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>(library_, "nvmlDeviceGetUtilizationRates");
      f && f(device_, &u) == 0)
    s.util_percent = u.gpu;
  NvmlMemory m{};
  if (auto f = symbol<NvmlReturn (*)(NvmlDevice, NvmlMemory*)>(library_, "nvmlDeviceGetMemoryInfo");
      f && f(device_, &m) == 0) {
    s.mem_used = m.used;
    s.mem_total = m.total;
  }
  unsigned int temp = 0;
  if (auto f = symbol<NvmlReturn (*)(NvmlDevice, int, unsigned int*)>(library_, "nvmlDeviceGetTemperature");
      f && f(device_, kTemperatureGpu, &temp) == 0)
    s.temperature_c = temp;
  return s;
}

}  // namespace fsdp::cuda
