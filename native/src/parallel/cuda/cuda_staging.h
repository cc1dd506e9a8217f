// HostStaging (parallel/staged_collectives.h) for a CUDA device: pinned host buffers, copies on the
// backend's compute stream, so a copy to the host sees every kernel queued before it and the
// kernels queued after a copy to the device see its data. Needs only the CUDA runtime.
#pragma once
#include <cuda_runtime.h>

#include "parallel/staged_collectives.h"

namespace fsdp::cuda {

class CudaStaging final : public HostStaging {
 public:
  explicit CudaStaging(cudaStream_t compute) : stream_(compute) {}
  void* allocate_host(std::size_t bytes) override;
  void free_host(void* p) override;
  void to_host(void* host, const void* device, std::size_t bytes) override;
  void to_device(void* device, const void* host, std::size_t bytes) override;

 private:
  cudaStream_t stream_;
};

}  // namespace fsdp::cuda
