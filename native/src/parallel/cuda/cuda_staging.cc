#include "parallel/cuda/cuda_staging.h"

#include <new>
#include <stdexcept>
#include <string>

namespace fsdp::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA host staging ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

void* CudaStaging::allocate_host(std::size_t bytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    throw std::bad_alloc();
  }
  return p;
}

void CudaStaging::free_host(void* p) {
  cudaFreeHost(p);
}

void CudaStaging::to_host(void* host, const void* device, std::size_t bytes) {
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDefault, stream_), "copy to host");
  check(cudaStreamSynchronize(stream_), "copy to host");  // MPI reads the buffer next
}

void CudaStaging::to_device(void* device, const void* host, std::size_t bytes) {
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyDefault, stream_), "copy to device");
  // The host buffer goes back to the pool on return and may be overwritten by the next operation.
  check(cudaStreamSynchronize(stream_), "copy to device");
}

}  // namespace fsdp::cuda
