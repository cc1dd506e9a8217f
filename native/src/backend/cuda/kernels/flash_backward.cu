// Launches the tensor-core attention backward (flash_backward.cuh) for bfloat16 and float16 at
// head sizes 32, 64 and 128: the dK/dV kernel, then the dQ kernel, on one stream.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/kernels/mma.cuh"  // first: the instructions the kernels are written in
#include "backend/cuda/kernels/flash_backward.cuh"

namespace fsdp::cuda {

namespace {

template <class T, int D>
void launch_backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta,
                     const flash::Shape& sh, cudaStream_t s) {
  T* out = static_cast<T*>(dqkv);
  const T* dyt = static_cast<const T*>(dy);
  const T* in = static_cast<const T*>(qkv);
  const unsigned heads = static_cast<unsigned>(sh.B * sh.H);
  const std::size_t kv_bytes = dkdv_shared_bytes<D>(), q_bytes = dq_shared_bytes<D>();
  cudaFuncSetAttribute(flash_dkdv_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(kv_bytes));
  cudaFuncSetAttribute(flash_dq_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(q_bytes));
  flash_dkdv_kernel<T, D>
      <<<dim3(static_cast<unsigned>(flash::tile_count(sh.T, flash::kKeyTile)), heads), flash::kThreads, kv_bytes, s>>>(
          out, dyt, in, lse, delta, sh);
  check_launch("flash_attention_backward (dK, dV)");
  flash_dq_kernel<T, D>
      <<<dim3(static_cast<unsigned>(flash::tile_count(sh.T, flash::kQueryTile)), heads), flash::kThreads, q_bytes, s>>>(
          out, dyt, in, lse, delta, sh);
}

}  // namespace

void flash_attention_backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta, long B,
                              long T, long C, long H, DType t, cudaStream_t s) {
  if (!flash_attention_supports(t, C / H, B * H))
    throw std::invalid_argument("flash attention: unsupported dtype or head size");
  const flash::Shape sh = flash::Shape::of(B, T, C, H);
  flash::with_head_size(C / H, [&](auto hs) {
    constexpr int D = decltype(hs)::value;
    if (t == DType::bf16)
      launch_backward<__nv_bfloat16, D>(dqkv, dy, qkv, lse, delta, sh, s);
    else
      launch_backward<__half, D>(dqkv, dy, qkv, lse, delta, sh, s);
  });
  check_launch("flash_attention_backward (dQ)");
}

}  // namespace fsdp::cuda
