#include "backend/cuda/cuda_memory.h"

#include <cuda_runtime.h>

namespace fsdp::cuda {

void* CudaAllocator::system_allocate(std::size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // out of memory: the caller throws std::bad_alloc
    return nullptr;
  }
  return p;
}

void CudaAllocator::system_free(void* p) {
  cudaFree(p);
}

void* PinnedHostAllocator::system_allocate(std::size_t bytes) {
  void* p = nullptr;
  // Portable: the data loader's thread may allocate with no device made current on it.
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void PinnedHostAllocator::system_free(void* p) {
  cudaFreeHost(p);
}

}  // namespace fsdp::cuda
