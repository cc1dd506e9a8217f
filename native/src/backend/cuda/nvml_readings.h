// GPU utilisation, memory and temperature from NVML, for step events. NVML ships with the NVIDIA
// driver (libnvidia-ml.so.1), not with the toolkit, so it is opened at run time: a machine
// without it gives no readings and nothing fails.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace fsdp::cuda {

struct NvmlSample {
  std::optional<double> util_percent, temperature_c;
  std::optional<std::uint64_t> mem_used, mem_total;
};

class NvmlReadings {
 public:
  /** pci_bus_id: the GPU's, from cudaDeviceGetPCIBusId (NVML's device order may differ from CUDA's). */
  explicit NvmlReadings(const std::string& pci_bus_id);
  ~NvmlReadings();
  NvmlReadings(const NvmlReadings&) = delete;
  NvmlReadings& operator=(const NvmlReadings&) = delete;

  bool available() const { return device_ != nullptr; }
  NvmlSample sample() const;

 private:
  void* library_ = nullptr;
  void* device_ = nullptr;
};

}  // namespace fsdp::cuda
