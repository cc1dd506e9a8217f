// Which kernels a CUDA attention call runs on — the tensor-core ones (flash_forward.cu,
// flash_backward.cu: bfloat16/float16 on mma.sync) or the CUDA-core ones of attention.cu — and
// why. One rule, in plain C++: attention.cu dispatches by it (and counts the calls per path,
// kernels.h's attention_calls(), which the GPU tests read), the run's start event names the path
// the model's shape takes (CudaBackend::attention_path), and the CPU tests check the rule itself
// (native/test/attention_path_test.cc). A fallback is never silent: it has a reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/kernels/flash_tiling.h"

namespace fsdp::cuda {

enum class AttentionPath : std::uint8_t { tensor_cores, cuda_cores };

struct AttentionChoice {
  AttentionPath path;
  const char* reason;  // why the CUDA-core kernels run ("" on tensor cores)
};

/** The tensor-core kernels' own limits: a 16-bit dtype, a compiled head size, at most 65535 sequence-heads (the grid's
 * y). */
inline const char* flash_refusal(DType t, long head_size, long batch_heads) {
  if (t != DType::bf16 && t != DType::f16) return "float32 has no tensor-core attention (no TF32 variant)";
  if (!flash::compiled_head_size(head_size)) return "head size not compiled for tensor cores (32, 64, 128)";
  if (batch_heads <= 0 || batch_heads > 65535)
    return "more than 65535 sequence-heads (micro-batch x heads) for the tensor-core grid";
  return nullptr;
}

/**
 * The path of a call with qkv rows of 3C elements of dtype t over B sequences and H heads:
 * tensor cores when flash_refusal has nothing to say and every row and pointer is 16-byte aligned
 * (cp.async and the vector stores); the CUDA-core kernels otherwise. Null pointers are taken as
 * aligned (the allocator's buffers are: cudaMalloc gives 256 bytes), so the run's start can ask.
 */
inline AttentionChoice attention_path(DType t, long C, long H, long B, std::initializer_list<const void*> ptrs = {}) {
  if (H <= 0 || C % H != 0) return {AttentionPath::cuda_cores, "d_model is not a multiple of n_heads"};
  if (const char* refusal = flash_refusal(t, C / H, B * H)) return {AttentionPath::cuda_cores, refusal};
  if ((static_cast<std::size_t>(C) * dtype_bytes(t)) % 16 != 0)
    return {AttentionPath::cuda_cores, "rows are not a multiple of 16 bytes"};
  for (const void* p : ptrs)
    if (p && reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      return {AttentionPath::cuda_cores, "a tensor is not 16-byte aligned"};
  return {AttentionPath::tensor_cores, ""};
}

/** The path in words, as run_start names it: "tensor cores (mma.sync m16n8k16, bfloat16, head size 64)". */
inline std::string attention_path_name(DType t, long C, long H, long B) {
  const AttentionChoice c = attention_path(t, C, H, B);
  const std::string what = std::string(dtype_name(t)) + ", head size " + std::to_string(H > 0 ? C / H : 0);
  if (c.path == AttentionPath::tensor_cores) return "tensor cores (mma.sync m16n8k16, " + what + ")";
  return "CUDA cores (" + what + ": " + c.reason + ")";
}

}  // namespace fsdp::cuda
