// The CUDA backend's own kernels (kernels/*.cu), as host functions that enqueue them on a stream.
// Plain C++: the backend (cuda_backend.cc) includes this without nvcc. Tensors are device
// pointers; `t` is the dtype of the compute-dtype tensors; everything else is float32. Every
// reduction has a fixed order (block partials summed in block order), so results are the same run
// after run.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend.h"

namespace fsdp::cuda {

// --- elementwise.cu ---------------------------------------------------------------------------
void cast_from_f32(void* dst, DType t, const float* src, std::size_t n, cudaStream_t s);
void fill(float* x, std::size_t n, float value, cudaStream_t s);
void set_element(void* x, DType t, std::size_t index, float value, cudaStream_t s);
void gelu_forward(void* out, const void* in, std::size_t n, DType t, cudaStream_t s);
void gelu_backward(void* d, const void* in, std::size_t n, DType t, cudaStream_t s);
/** out = residual + dropout(x) (out may alias x); p = 0 a plain sum. Masks match runtime/rng.h's. */
void dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p, std::uint64_t key,
                      DType t, cudaStream_t s);
void dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key, DType t, cudaStream_t s);
/** dst[r * dst_ld + c] = src[r * src_ld + c] for r < N, c < cols, converting between dtypes (row views of padded
 * tensors). */
void copy_rows(void* dst, long dst_ld, DType dst_t, const void* src, long src_ld, DType src_t, long N, long cols,
               cudaStream_t s);
/** x[n] *= factor. */
void scale(void* x, DType t, std::size_t n, float factor, cudaStream_t s);
/** dst[n] += src[n] (float32). */
void add_to(float* dst, const float* src, std::size_t n, cudaStream_t s);
/** out[N, O] += b (and with gelu_pre: gelu_pre = out + b, out = GELU(gelu_pre)): when cuBLASLt's epilogue is
 * unavailable. */
void bias_act(void* out, void* gelu_pre, const float* b, long N, long O, DType t, cudaStream_t s);
/** db[O] += column sums of dout[N, O]; scratch holds bias_backward_scratch(N, O) floats. */
void bias_backward(float* db, const void* dout, DType dout_t, long N, long O, float* scratch, cudaStream_t s);
std::size_t bias_backward_scratch(long N, long O);

// --- layernorm.cu -------------------------------------------------------------------------------
void layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b, long N, long C,
                       DType t, cudaStream_t s);
/** sum = residual + dropout(x) (sum may alias x), out = layernorm(sum): one pass over the rows. */
void residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual, const void* x,
                                float p, std::uint64_t key, const void* w, const void* b, long N, long C, DType t,
                                cudaStream_t s);
/** dx += ...; dw, db += ...; scratch holds layernorm_backward_scratch(N, C) floats. */
void layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                        const float* mean, const float* rstd, long N, long C, DType t, float* scratch, cudaStream_t s);
std::size_t layernorm_backward_scratch(long N, long C);

// --- embedding.cu -------------------------------------------------------------------------------
void embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B, long T, long C,
                       DType t, cudaStream_t s);
/**
 * dwpe[t] += sum over the batch of dout; dwte[token] += dout at its positions. The positions are
 * grouped by token on the host (`positions` sorted by token, `starts[k]..starts[k+1]` the ones of
 * `bucket_tokens[k]`), so each row of dwte is summed by one block in a fixed order.
 */
void embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* positions,
                        const std::int32_t* starts, const std::int32_t* bucket_tokens, int buckets, long B, long T,
                        long C, DType t, cudaStream_t s);

// --- attention.cu: flash-style, no T×T matrix in memory -----------------------------------------
/** Whether attention supports this head size (the kernels are compiled per head size). */
bool attention_supports(long head_size);
/**
 * y[B*T, C] and lse[B, H, T] (the rows' log-sum-exp of the scaled scores) from qkv[B*T, 3C].
 * With y null only lse is written; with given_lse the scores are normalised by lse as it is
 * (so a NaN planted there reaches y) instead of by the online maximum and sum.
 */
void attention_forward(void* y, float* lse, const void* qkv, long B, long T, long C, long H, bool given_lse, DType t,
                       cudaStream_t s);
/** delta[B, H, T] = rowsum(dy ∘ y) per head: the softmax backward's correction term. */
void attention_backward_delta(float* delta, const void* dy, const void* y, long B, long T, long C, long H, DType t,
                              cudaStream_t s);
/** dqkv[B*T, 3C] (overwritten) from dy, qkv, lse and delta: dK and dV by key tiles, dQ by query tiles. */
void attention_backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta, long B,
                        long T, long C, long H, DType t, cudaStream_t s);
/**
 * attention_forward and attention_backward calls so far in this process, by the kernels they ran
 * on (attention_path.h's rule): a bfloat16/float16 call that fell back to the CUDA cores shows
 * here, and the GPU tests assert the tensor-core path.
 */
struct AttentionCalls {
  unsigned long long tensor_cores = 0, cuda_cores = 0;
};
AttentionCalls attention_calls();

// --- flash_forward.cu, flash_backward.cu: the same attention on tensor cores ------------------
/**
 * Whether the tensor-core kernels take a call: bfloat16 or float16, head size 32, 64 or 128, at
 * most 65535 sequence-heads (the grid's y). attention_forward/backward use them then (and when the
 * tensors are 16-byte aligned: attention_path.h), the CUDA-core kernels otherwise.
 */
bool flash_attention_supports(DType t, long head_size, long batch_heads);
/** attention_forward's contract, on tensor cores (flash_attention_supports must hold). */
void flash_attention_forward(void* y, float* lse, const void* qkv, long B, long T, long C, long H, bool given_lse,
                             DType t, cudaStream_t s);
/** attention_backward's contract, on tensor cores: dK/dV by key tiles, dQ by query tiles, no atomics. */
void flash_attention_backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta, long B,
                              long T, long C, long H, DType t, cudaStream_t s);

// --- loss.cu ------------------------------------------------------------------------------------
/**
 * The classifier's fused pass over logits[N, ld] (dtype t, ld a multiple of 16 bytes' elements,
 * >= V): losses[N] = log-sum-exp of the first V columns minus the target's logit; the row becomes
 * softmax - onehot(target) in place, its columns V..ld zero. The gradient of the summed losses,
 * before any scale (the LM head's products take the scale as alpha).
 */
void classifier_softmax_xent(float* losses, void* logits, const std::int32_t* targets, long N, long V, long ld, DType t,
                             cudaStream_t s);
void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V, cudaStream_t s);
void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale, cudaStream_t s);

// --- adamw.cu -----------------------------------------------------------------------------------
/** With apply false: counts the parameters whose update would not be finite into *bad (device), writes nothing. */
void adamw(const AdamWArgs& a, bool apply, unsigned long long* bad, cudaStream_t s);

// --- reductions.cu ------------------------------------------------------------------------------
/** Partial results per block, then summed in block order: reduction_scratch_doubles() of scratch. */
inline constexpr int kReductionBlocks = 512;
/** out[0] = sum of x, out[1] = sum of squares, in double. */
void sum(double* out, const float* x, std::size_t n, double* scratch, cudaStream_t s);
/** out[0..3] = sum, sum of squares, max |x| over finite values, count of non-finite values. */
void stats(double* out, const void* x, DType t, std::size_t n, double* scratch, cudaStream_t s);
std::size_t reduction_scratch_doubles();

}  // namespace fsdp::cuda
