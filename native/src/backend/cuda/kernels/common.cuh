// What every kernel file shares: element types and their float32 conversions, 16-byte vector
// packs, warp and block reductions, and the launch error check.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <stdexcept>
#include <string>

#include "backend/backend.h"

namespace fsdp::cuda {

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

__device__ __forceinline__ float to_f(float x) {
  return x;
}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_f(__half x) {
  return __half2float(x);
}

template <class T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

/** 16 bytes of T: one vectorised load or store (LDG.128 / STG.128). */
template <class T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
  __device__ __forceinline__ static Pack load(const T* p) {
    Pack r;
    *reinterpret_cast<int4*>(r.v) = *reinterpret_cast<const int4*>(p);
    return r;
  }
  __device__ __forceinline__ void store(T* p) const { *reinterpret_cast<int4*>(p) = *reinterpret_cast<const int4*>(v); }
};

/** Whether every pointer is 16-byte aligned and n fills whole packs: the vector path applies. */
inline bool packable(std::size_t n, std::size_t elem_bytes, std::initializer_list<const void*> ptrs) {
  if ((n * elem_bytes) % 16 != 0) return false;
  for (const void* p : ptrs)
    if (p && reinterpret_cast<std::uintptr_t>(p) % 16 != 0) return false;
  return true;
}

__device__ __forceinline__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

__device__ __forceinline__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

/** Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result. */
__device__ __forceinline__ float block_sum(float x, float* shared32) {
  x = warp_sum(x);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) shared32[warp] = x;
  __syncthreads();
  float r = lane < warps ? shared32[lane] : 0.0f;
  return warp_sum(r);
}

__device__ __forceinline__ float block_max(float x, float* shared32) {
  x = warp_max(x);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();
  if (lane == 0) shared32[warp] = x;
  __syncthreads();
  float r = lane < warps ? shared32[lane] : -INFINITY;
  return warp_max(r);
}

/**
 * Runs the statements with T the C++ type of dtype t (float, __nv_bfloat16, __half). A macro, not a
 * generic lambda: extended __device__ lambdas may not be defined inside a generic lambda.
 */
#define FSDP_DISPATCH(t, T, ...) \
  switch (t) {                   \
    case ::fsdp::DType::f32: {   \
      using T = float;           \
      __VA_ARGS__;               \
    } break;                     \
    case ::fsdp::DType::bf16: {  \
      using T = __nv_bfloat16;   \
      __VA_ARGS__;               \
    } break;                     \
    case ::fsdp::DType::f16: {   \
      using T = __half;          \
      __VA_ARGS__;               \
    } break;                     \
  }

inline unsigned blocks_for(std::size_t n, unsigned threads, unsigned max_blocks = 65535u * 8u) {
  const std::size_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

}  // namespace fsdp::cuda
