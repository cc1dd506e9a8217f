// Launches the tensor-core attention forward (flash_forward.cuh) for bfloat16 and float16 at head
// sizes 32, 64 and 128.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/kernels/attention_path.h"
#include "backend/cuda/kernels/mma.cuh"  // first: the instructions the kernels are written in
#include "backend/cuda/kernels/flash_forward.cuh"

namespace fsdp::cuda {

namespace {

template <class T, int D>
void launch_forward(void* y, float* lse, const void* qkv, const flash::Shape& sh, bool given_lse, cudaStream_t s) {
  const std::size_t bytes = forward_shared_bytes<D>();
  // Above 48 KB needs the opt-in (per device, so on every launch; a failure shows as the launch's error).
  cudaFuncSetAttribute(flash_forward_kernel<T, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                       static_cast<int>(bytes));
  const dim3 grid(static_cast<unsigned>(flash::tile_count(sh.T, flash::kQueryTile)),
                  static_cast<unsigned>(sh.B * sh.H));
  flash_forward_kernel<T, D>
      <<<grid, flash::kThreads, bytes, s>>>(static_cast<T*>(y), lse, static_cast<const T*>(qkv), sh, given_lse);
}

}  // namespace

bool flash_attention_supports(DType t, long head_size, long batch_heads) {
  return flash_refusal(t, head_size, batch_heads) == nullptr;
}

void flash_attention_forward(void* y, float* lse, const void* qkv, long B, long T, long C, long H, bool given_lse,
                             DType t, cudaStream_t s) {
  const flash::Shape sh = flash::Shape::of(B, T, C, H);
  if (!flash_attention_supports(t, C / H, B * H))
    throw std::invalid_argument("flash attention: unsupported dtype or head size");
  const bool bf16 = t == DType::bf16;
  flash::with_head_size(C / H, [&](auto hs) {
    constexpr int D = decltype(hs)::value;
    if (bf16)
      launch_forward<__nv_bfloat16, D>(y, lse, qkv, sh, given_lse, s);
    else
      launch_forward<__half, D>(y, lse, qkv, sh, given_lse, s);
  });
  check_launch("flash_attention_forward");
}

}  // namespace fsdp::cuda
