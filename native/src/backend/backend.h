// The compute primitives the model and the optimizer are written in. A backend is chosen at run
// time from launch.device; only "cpu" exists so far (backend/cpu/), a CUDA one will implement the
// same interface. Pointers are to the backend's own memory (from allocator()).
//
// Conventions: row-major; weights in PyTorch's (out, in) layout; N rows of C channels; "+=" in a
// comment means the function accumulates into that output. Every kernel is deterministic for a
// fixed thread count: reductions have a fixed order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/allocator.h"

namespace fsdp {

struct TensorStats {
  double mean = 0, std = 0, max_abs = 0;
  std::uint64_t nonfinite = 0;
};

/** One AdamW update of a flat range of parameters that share hyperparameters. */
struct AdamWArgs {
  float* params;
  const float* grads;
  float* m;
  float* v;
  std::size_t n;
  float lr, beta1, beta2, eps, weight_decay;
  float grad_scale;                    // clipping factor applied to the gradients
  float bias_correction1, bias_correction2;  // 1 - beta^t
  std::int64_t poison = -1;            // debug.inject_nan: index whose update is made NaN
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual Allocator& allocator() = 0;
  /**
   * Host memory for what fsdp.cpu_offload keeps off the device (MEMORY.md "host"), counted apart
   * from allocator(). On the CPU backend it is the same kind of memory, reported apart all the
   * same; a GPU backend gives pinned memory here.
   */
  virtual Allocator& host_allocator() { return host_memory_; }

  // --- matrix products: C = alpha op(A) op(B) + beta C --------------------------------------
  virtual void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda,
                    const float* b, long ldb, float beta, float* c, long ldc) = 0;
  /** out[N, O] = b broadcast over rows (the start of a linear layer's output). */
  virtual void bias_fill(float* out, const float* b, long N, long O) = 0;
  /** db[O] += column sums of dout[N, O]. */
  virtual void bias_backward(float* db, const float* dout, long N, long O) = 0;

  // --- embedding ------------------------------------------------------------------------------
  /** out[B*T, C] = wte[token] + wpe[t]. */
  virtual void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, long B, long T, long C) = 0;
  /** dwte[token] += dout, dwpe[t] += dout. */
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, long B, long T, long C) = 0;

  // --- layer normalisation (eps 1e-5) ---------------------------------------------------------
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, long N, long C) = 0;
  /** dx += ..., dw += ..., db += ... */
  virtual void layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                                  const float* mean, const float* rstd, long N, long C) = 0;

  // --- causal multi-head attention core (qkv[B*T, 3C] = q | k | v, heads of C/H channels) ----
  /** probs[B, H, T, T] = softmax(q k^T / sqrt(C/H)) over positions <= the query's (zero above). */
  virtual void attention_probs(float* probs, const float* qkv, long B, long T, long C, long H) = 0;
  /** out[B*T, C] = probs v, per head. */
  virtual void attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H) = 0;
  /** dprobs = dout v^T (overwritten); the v part of dqkv = probs^T dout (overwritten). */
  virtual void attention_values_backward(float* dprobs, float* dqkv, const float* dout, const float* probs, const float* qkv, long B, long T,
                                         long C, long H) = 0;
  /** The q and k parts of dqkv (overwritten) from dprobs; dprobs is used as scratch. */
  virtual void attention_probs_backward(float* dqkv, float* dprobs, const float* probs, const float* qkv, long B, long T, long C, long H) = 0;

  // --- GELU (tanh approximation, as GPT-2) ----------------------------------------------------
  virtual void gelu_forward(float* out, const float* in, std::size_t n) = 0;
  /** d = d * gelu'(in), in place. */
  virtual void gelu_backward(float* d, const float* in, std::size_t n) = 0;

  // --- dropout, by a counter-based mask keyed by `key` (runtime/rng.h) --------------------------
  /** out = residual + dropout(x); out may alias x. p = 0 is a plain sum. */
  virtual void dropout_residual(float* out, const float* residual, const float* x, std::size_t n, float p, std::uint64_t key) = 0;
  /** out = dropout(x) with the same mask (out may alias x). */
  virtual void dropout(float* out, const float* x, std::size_t n, float p, std::uint64_t key) = 0;

  // --- softmax cross-entropy -------------------------------------------------------------------
  /** logits[N, V] become probabilities in place; losses[N] = -log p[target]. */
  virtual void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) = 0;
  /** probs[N, V] become dlogits = (probs - onehot(target)) * scale, in place. */
  virtual void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) = 0;

  // --- whole-buffer helpers ---------------------------------------------------------------------
  virtual void fill(float* x, std::size_t n, float value) = 0;
  virtual void copy(float* dst, const float* src, std::size_t n) = 0;
  /** Sum in double with a fixed order. */
  virtual double sum(const float* x, std::size_t n) = 0;
  virtual double sum_squares(const float* x, std::size_t n) = 0;
  /** Mean, std and max |x| over the finite values, and the count of the others (diagnostics). */
  virtual TensorStats stats(const float* x, std::size_t n) = 0;

  // --- optimizer --------------------------------------------------------------------------------
  /** Count of parameters whose update would not be finite; writes nothing. */
  virtual std::uint64_t adamw_check(const AdamWArgs& a) = 0;
  virtual void adamw_apply(const AdamWArgs& a) = 0;

 private:
  HostAllocator host_memory_;
};

/** The backend for launch.device ("cpu"); throws std::runtime_error for one this build lacks. */
std::unique_ptr<Backend> make_backend(const std::string& device);

}  // namespace fsdp
