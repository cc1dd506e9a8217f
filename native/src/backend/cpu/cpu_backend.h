// The CPU backend: OpenBLAS for matrix products, OpenMP loops for everything else. Each group of
// kernels lives in its own file (forward and backward side by side): gemm.cc, embedding.cc,
// layernorm.cc, attention.cc, gelu.cc, dropout.cc, loss.cc, reductions.cc, adamw.cc.
#pragma once
#include "backend/backend.h"

namespace fsdp {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Allocator& allocator() override { return allocator_; }

  void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda, const float* b, long ldb,
            float beta, float* c, long ldc) override;
  void bias_fill(float* out, const float* b, long N, long O) override;
  void bias_backward(float* db, const float* dout, long N, long O) override;

  void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, long B, long T, long C) override;
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, long B, long T, long C) override;

  void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, long N, long C) override;
  void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w, const float* mean,
                          const float* rstd, long N, long C) override;

  void attention_probs(float* probs, const float* qkv, long B, long T, long C, long H) override;
  void attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H) override;
  void attention_values_backward(float* dprobs, float* dqkv, const float* dout, const float* probs, const float* qkv, long B, long T, long C,
                                 long H) override;
  void attention_probs_backward(float* dqkv, float* dprobs, const float* probs, const float* qkv, long B, long T, long C, long H) override;

  void gelu_forward(float* out, const float* in, std::size_t n) override;
  void gelu_backward(float* d, const float* in, std::size_t n) override;

  void dropout_residual(float* out, const float* residual, const float* x, std::size_t n, float p, std::uint64_t key) override;
  void dropout(float* out, const float* x, std::size_t n, float p, std::uint64_t key) override;

  void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) override;
  void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) override;

  void fill(float* x, std::size_t n, float value) override;
  void copy(float* dst, const float* src, std::size_t n) override;
  double sum(const float* x, std::size_t n) override;
  double sum_squares(const float* x, std::size_t n) override;
  TensorStats stats(const float* x, std::size_t n) override;

  std::uint64_t adamw_check(const AdamWArgs& a) override;
  void adamw_apply(const AdamWArgs& a) override;

 private:
  HostAllocator allocator_;
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
