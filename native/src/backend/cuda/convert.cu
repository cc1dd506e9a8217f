#include "backend/cuda/convert.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fsdp::cuda {

namespace {

template <class T>
__device__ __forceinline__ float widen(T x);
template <>
__device__ __forceinline__ float widen<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
template <>
__device__ __forceinline__ float widen<__half>(__half x) {
  return __half2float(x);
}

template <class T>
__global__ void to_f32_kernel(float* dst, const T* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = widen(src[i]);
}

}  // namespace

void to_f32(float* dst, const void* src, DType t, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  if (t == DType::f32) {
    const cudaError_t e = cudaMemcpyAsync(dst, src, sizeof(float) * n, cudaMemcpyDefault, s);
    if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA to_f32 copy: ") + cudaGetErrorString(e));
    return;
  }
  constexpr unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + threads - 1) / threads, 65535));
  if (t == DType::bf16)
    to_f32_kernel<<<blocks, threads, 0, s>>>(dst, static_cast<const __nv_bfloat16*>(src), n);
  else
    to_f32_kernel<<<blocks, threads, 0, s>>>(dst, static_cast<const __half*>(src), n);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel to_f32: ") + cudaGetErrorString(e));
}

}  // namespace fsdp::cuda
