// The CPU backend: OpenBLAS for matrix products, OpenMP loops for everything else, float32 only —
// but for mixed precision's matrix products, whose operands it rounds to bf16 for oneDNN's bf16
// GEMM (bf16_gemm.h) while everything else, the weights included, stays float32.
// Its primitives each live in their own file (forward and backward side by side): gemm.cc,
// embedding.cc, layernorm.cc, attention.cc, gelu.cc, dropout.cc, loss.cc, reductions.cc, adamw.cc;
// layers.cc composes the Backend interface's layer operations from them (attention keeps the
// probabilities: the CPU path materialises the T×T matrix). The decoder family's ops implement
// the interface directly, one file each: rmsnorm.cc, rope.cc, swiglu.cc, gqa_attention.cc.
#pragma once
#include "backend/backend.h"

namespace fsdp {

class CpuBackend final : public Backend {
 public:
  /** With `bf16_gemm`, every matrix product rounds its operands to bf16 (bf16_gemm.h); throws where it cannot run. */
  explicit CpuBackend(bool bf16_gemm = false);
  /** Whether the matrix products take bf16 operands (mixed_precision.param_dtype: bfloat16). */
  bool bf16_gemm() const { return bf16_gemm_; }
  std::string name() const override { return "cpu"; }
  Allocator& allocator() override { return allocator_; }
  void cast_from_f32(void* dst, const float* src, std::size_t n) override;

  void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda, const float* b,
            long ldb, float beta, float* c, long ldc) override;

  // --- the Backend interface's layer operations (layers.cc) ---
  void linear_forward(void* out, DType out_dtype, const void* in, const void* w, const void* b, long N, long I,
                      long O) override;
  void linear_gelu_forward(void* g, void* h, const void* in, const void* w, const void* b, long N, long I,
                           long O) override;
  void linear_backward(void* din, bool accumulate_din, float* dw, float* db, const void* dout, DType dout_dtype,
                       const void* in, const void* w, long N, long I, long O) override;
  void embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B, long T,
                         long C) override;
  void embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* tokens, long B, long T,
                          long C) override;
  void layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b, long N,
                         long C) override;
  void layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                          const float* mean, const float* rstd, long N, long C) override;
  void residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual, const void* x,
                                  float p, std::uint64_t key, const void* w, const void* b, long N, long C) override;
  std::size_t attention_state_size(long B, long T, long H) const override;
  std::size_t attention_scratch_size(long B, long T, long H) const override;
  void attention_forward(void* y, float* state, const void* qkv, long B, long T, long C, long H,
                         AttentionTap* tap) override;
  void attention_state(float* state, const void* qkv, long B, long T, long C, long H) override;
  void attention_backward(void* dqkv, float* scratch, const void* dy, const void* qkv, const void* y,
                          const float* state, long B, long T, long C, long H, AttentionTap* tap) override;
  void gelu_forward(void* out, const void* in, std::size_t n) override;
  void gelu_backward(void* d, const void* in, std::size_t n) override;
  void dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p,
                        std::uint64_t key) override;
  void dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key) override;

  // --- the decoder family (rmsnorm.cc, rope.cc, swiglu.cc, gqa_attention.cc) ---
  void rmsnorm_forward(void* out, float* rstd, const void* x, const void* w, long N, long G, long C, long stride,
                       float eps) override;
  void rmsnorm_backward(void* dx, bool accumulate_dx, float* dw, const void* dout, const void* x, const void* w,
                        const float* rstd, long N, long G, long C, long stride) override;
  void rope_forward(void* qkv, const float* inv_freq, long B, long T, long H, long KV, long D) override;
  void rope_backward(void* dqkv, const float* inv_freq, long B, long T, long H, long KV, long D) override;
  void swiglu_forward(void* h, const void* gate_up, long N, long F) override;
  void swiglu_backward(void* dgate_up, const void* dh, const void* gate_up, long N, long F) override;
  std::size_t gqa_attention_state_size(long B, long T, long H, long KV, long D) const override;
  std::size_t gqa_attention_scratch_size(long B, long T, long H, long KV, long D) const override;
  void gqa_attention_forward(void* y, float* state, const void* qkv, long B, long T, long H, long KV, long D,
                             AttentionTap* tap) override;
  void gqa_attention_state(float* state, const void* qkv, long B, long T, long H, long KV, long D) override;
  void gqa_attention_backward(void* dqkv, float* scratch, const void* dy, const void* qkv, const void* y,
                              const float* state, long B, long T, long H, long KV, long D, AttentionTap* tap) override;

  // --- float32 primitives (the files named above) ---
  void bias_fill(float* out, const float* b, long N, long O);
  /** db[O] += column sums of dout[N, O]. */
  void bias_backward(float* db, const float* dout, long N, long O);
  void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, long B, long T,
                         long C);
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, long B, long T,
                          long C);
  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, long N,
                         long C);
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                          const float* mean, const float* rstd, long N, long C);
  /** probs[B, H, T, T] = softmax(q k^T / sqrt(C/H)) over positions <= the query's (zero above). */
  void attention_probs(float* probs, const float* qkv, long B, long T, long C, long H);
  /** out[B*T, C] = probs v, per head. */
  void attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H);
  /** dprobs = dout v^T (overwritten); the v part of dqkv = probs^T dout (overwritten). */
  void attention_values_backward(float* dprobs, float* dqkv, const float* dout, const float* probs, const float* qkv,
                                 long B, long T, long C, long H);
  /** The q and k parts of dqkv (overwritten) from dprobs; dprobs is used as scratch. */
  void attention_probs_backward(float* dqkv, float* dprobs, const float* probs, const float* qkv, long B, long T,
                                long C, long H);
  void gelu_forward(float* out, const float* in, std::size_t n);
  void gelu_backward(float* d, const float* in, std::size_t n);
  void dropout_residual(float* out, const float* residual, const float* x, std::size_t n, float p, std::uint64_t key);
  void dropout(float* out, const float* x, std::size_t n, float p, std::uint64_t key);

  void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) override;
  void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) override;

  void fill(float* x, std::size_t n, float value) override;
  void zero(void* x, std::size_t bytes) override;
  void copy(float* dst, const float* src, std::size_t n) override;
  double sum(const float* x, std::size_t n) override;
  double sum_squares(const float* x, std::size_t n) override;
  TensorStats stats(const float* x, std::size_t n) override;
  TensorStats stats(const void* x, DType dtype, std::size_t n) override;
  void set_element(void* x, DType dtype, std::size_t index, float value) override;

  std::uint64_t adamw_check(const AdamWArgs& a) override;
  void adamw_apply(const AdamWArgs& a) override;

 private:
  HostAllocator allocator_;
  bool bf16_gemm_ = false;
};

/** Finite test on the bits, so it holds under any floating-point compile flags. */
inline bool is_finite(float x) {
  union {
    float f;
    unsigned u;
  } bits{x};
  return (bits.u & 0x7f800000u) != 0x7f800000u;
}

}  // namespace fsdp
