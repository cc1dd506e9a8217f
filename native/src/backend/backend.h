// The compute primitives the model and the optimizer are written in. A backend is chosen at run
// time from launch.device: "cpu" (backend/cpu/) or "cuda" (backend/cuda/, compiled only where a
// CUDA toolkit with cuBLAS is found). Pointers are to the backend's own memory (from allocator()):
// host memory on the CPU, device memory on a GPU; upload()/download() cross between the two.
//
// Precision: parameters, gradients and optimizer state are float32 everywhere. Activations, and
// the copies of the weights the matrix products read, are in the backend's compute_dtype():
// float32 on the CPU, mixed_precision.param_dtype on CUDA (bfloat16/float16 with float32 masters).
// Pointers to such tensors are `void*` (as in cuBLAS and NCCL) and the comment says which dtype.
// LayerNorm statistics, logits, losses and the attention's softmax state stay float32.
//
// The layer-level operations (linear, layernorm, attention, ...) are what a backend may fuse: the
// CUDA backend runs attention as one flash-style kernel that never forms the T×T matrix, while the
// CPU backend composes them from its own primitives (backend/cpu/cpu_backend.h) and keeps the
// probabilities, so its numbers do not depend on this interface.
//
// Conventions: row-major; weights in PyTorch's (out, in) layout; N rows of C channels; "+=" in a
// comment means the function accumulates into that output. Every kernel is deterministic for a
// fixed thread count: reductions have a fixed order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/allocator.h"

namespace fsdp {

/** Element types of tensors a backend computes on. */
enum class DType : std::uint8_t { f32, bf16, f16 };
std::size_t dtype_bytes(DType t);
const char* dtype_name(DType t);

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
  float grad_scale;                          // clipping factor applied to the gradients
  float bias_correction1, bias_correction2;  // 1 - beta^t
  std::int64_t poison = -1;                  // debug.inject_nan: index whose update is made NaN
};

/**
 * A look inside an attention while it runs (the NaN locator's "attn.softmax" and "attn.out"):
 * forward, the softmax state right after it is computed and before the values use it; backward,
 * the gradient that flows into the softmax. A tap may plant a NaN there. The state is what the
 * backend keeps: the probabilities [B, H, T, T] on the CPU, the rows' log-sum-exp [B, H, T] on CUDA.
 */
class AttentionTap {
 public:
  virtual ~AttentionTap() = default;
  virtual void softmax_state(float* state, std::size_t n) = 0;
  virtual void softmax_grad(float* grad, std::size_t n) = 0;
};

/**
 * A look inside the classifier (the LM head's product and the softmax cross-entropy) while it runs:
 * the NaN locator's "lm_head" and "softmax_xent". Forward, the logits [N, V] before the softmax
 * and then the per-token losses; backward, the logits' gradient [N, V] before the LM head's
 * products read it. Each may plant a NaN. Whatever layout a backend keeps (the CUDA backend pads
 * the vocabulary), the tap sees [N, V] rows in the dtype given, and what it writes is used.
 */
class ClassifierTap {
 public:
  virtual ~ClassifierTap() = default;
  virtual void logits(void* x, std::size_t n, DType dtype) = 0;
  virtual void losses(float* x, std::size_t n) = 0;
  virtual void logits_grad(void* d, std::size_t n, DType dtype) = 0;
};

/** What a GPU reports about itself with every step (NVML and the runtime's own bookkeeping). */
struct DeviceReadings {
  std::optional<double> util_percent, temperature_c;
  std::optional<std::uint64_t> mem_used, mem_total;  // the whole device, as NVML sees it
  std::uint64_t context_bytes = 0;                   // the CUDA context, outside the allocator
  std::uint64_t library_workspace_bytes = 0;         // cuBLAS(Lt) workspace, outside the allocator
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

  // --- where memory lives ---------------------------------------------------------------------
  /** True when allocator() hands out host memory (the CPU backend). */
  virtual bool host_memory() const { return true; }
  /**
   * Memory the data loader fills on the host: allocator() itself on the CPU (the plan counts the
   * batches there, "other"), pinned host memory on a GPU (the model copies each batch over).
   */
  virtual Allocator& batch_allocator() { return allocator(); }
  virtual void upload(void* device_dst, const void* host_src, std::size_t bytes);
  virtual void download(void* host_dst, const void* device_src, std::size_t bytes);
  /** Waits until every queued operation is done (for timing). */
  virtual void synchronize() {}
  /** n elements of x (in dtype) as float32 on the host. */
  std::vector<float> to_host_f32(const void* x, DType dtype, std::size_t n);

  // --- precision --------------------------------------------------------------------------------
  virtual DType compute_dtype() const { return DType::f32; }
  /** dst[n] (compute dtype) = src[n] (float32), rounded to nearest even. */
  virtual void cast_from_f32(void* dst, const float* src, std::size_t n) = 0;
  /**
   * dst[n] in `to` = src[n] (float32), rounded to nearest even; a copy when `to` is float32. With
   * to_f32 below: gradients reduced in a 16-bit reduce_dtype, parameters gathered in param_dtype.
   * Either pointer may be this backend's host_allocator() memory (cpu_offload).
   */
  virtual void from_f32(void* dst, DType to, const float* src, std::size_t n);
  /** dst[n] (float32) = src[n] in `from`. */
  virtual void to_f32(float* dst, const void* src, DType from, std::size_t n);
  /** Peak FLOP/s of the device in compute_dtype() for MFU; 0 when unknown (the trainer measures). */
  virtual double nominal_peak_flops() const { return 0; }
  /** Device readings for step events; none on the CPU. */
  virtual std::optional<DeviceReadings> readings() { return std::nullopt; }
  /**
   * The kernels attention runs on for B sequences of a model with d_model C and H heads, in words,
   * for the run's start event: a GPU backend names its path and why (a fallback is never silent).
   */
  virtual std::string attention_kernels(long /*B*/, long /*C*/, long /*H*/) const {
    return name() + " kernels (" + dtype_name(compute_dtype()) + ")";
  }

  // --- what collectives need of a device ----------------------------------------------------------
  /** The queue the backend computes on, for collectives to order their work after (a cudaStream_t on CUDA); null on the
   * CPU. */
  virtual void* compute_queue() { return nullptr; }
  /** The device this backend drives, unique on its host (a GPU's PCI bus id); "" on the CPU. */
  virtual std::string device_id() const { return ""; }

  // --- float32 matrix products: C = alpha op(A) op(B) + beta C ----------------------------------
  virtual void gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda,
                    const float* b, long ldb, float beta, float* c, long ldc) = 0;

  // --- linear layers: out[N, O] = in[N, I] W[O, I]^T + b[O] (b may be null) ---------------------
  /** in, W, b in compute dtype; out in out_dtype (the compute dtype, or float32 for the bias-free logits). */
  virtual void linear_forward(void* out, DType out_dtype, const void* in, const void* w, const void* b, long N, long I,
                              long O) = 0;
  /** h = in W^T + b and g = GELU(h), all compute dtype: the MLP's first layer (fused on CUDA). */
  virtual void linear_gelu_forward(void* g, void* h, const void* in, const void* w, const void* b, long N, long I,
                                   long O) = 0;
  /**
   * din[N, I] = dout W (overwritten, or added when accumulate_din; skipped when null; compute dtype);
   * dw[O, I] += dout^T in and db[O] += column sums of dout (float32; db skipped when null).
   * dout is in dout_dtype (compute dtype, or float32 for the logits' gradient).
   */
  virtual void linear_backward(void* din, bool accumulate_din, float* dw, float* db, const void* dout, DType dout_dtype,
                               const void* in, const void* w, long N, long I, long O) = 0;

  // --- embedding (tokens in this backend's memory; wte, wpe in compute dtype) --------------------
  /** out[B*T, C] = wte[token] + wpe[t]. */
  virtual void embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B,
                                 long T, long C) = 0;
  /** dwte[token] += dout, dwpe[t] += dout (float32). */
  virtual void embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* tokens, long B,
                                  long T, long C) = 0;

  // --- layer normalisation (eps 1e-5); x, out, w, b in compute dtype; mean, rstd float32 ---------
  virtual void layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b,
                                 long N, long C) = 0;
  /** dx += ... (compute dtype), dw += ..., db += ... (float32). */
  virtual void layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                                  const float* mean, const float* rstd, long N, long C) = 0;
  /** sum = residual + dropout(x), then out = layernorm(sum): the middle of a pre-LN block. */
  virtual void residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual,
                                          const void* x, float p, std::uint64_t key, const void* w, const void* b,
                                          long N, long C) = 0;

  // --- causal multi-head attention core (qkv[B*T, 3C] = q | k | v, heads of C/H channels) ----
  /** float32 elements of the softmax state one attention keeps for backward (see AttentionTap). */
  virtual std::size_t attention_state_size(long B, long T, long H) const = 0;
  /** float32 elements of scratch attention_backward needs. */
  virtual std::size_t attention_scratch_size(long B, long T, long H) const = 0;
  /** y[B*T, C] = softmax(q k^T / sqrt(C/H), causal) v per head; writes the softmax state. */
  virtual void attention_forward(void* y, float* state, const void* qkv, long B, long T, long C, long H,
                                 AttentionTap* tap) = 0;
  /** Only the softmax state of attention_forward, recomputed from a kept qkv (selective checkpointing). */
  virtual void attention_state(float* state, const void* qkv, long B, long T, long C, long H) = 0;
  /** dqkv[B*T, 3C] (overwritten) from dy, the saved qkv, y and state; scratch as sized above. */
  virtual void attention_backward(void* dqkv, float* scratch, const void* dy, const void* qkv, const void* y,
                                  const float* state, long B, long T, long C, long H, AttentionTap* tap) = 0;

  // --- the decoder family (Llama 3, Qwen3, Mistral, SmolLM2: issue 35), transformers' math -------
  // x, out, qkv, y, gate_up, h and their gradients in compute dtype; rstd, inv_freq, the softmax
  // state and the weights' gradients float32. A backend without them (CUDA, until issue 35 item 7)
  // keeps these defaults, which throw std::runtime_error naming the op and the backend.

  /**
   * RMSNorm of N·G rows of C channels: out = x / sqrt(mean(x²) + eps) · w, rstd[N·G] = the rows'
   * 1 / sqrt(mean(x²) + eps). Row (n, g) starts at n · stride + g · C in x and in out (out may
   * alias x): G = 1, stride = C for the residual stream; G heads of C = D inside packed qkv rows of
   * `stride` = (H + 2 KV) D for Qwen3's per-head q / k norms.
   */
  virtual void rmsnorm_forward(void* out, float* rstd, const void* x, const void* w, long N, long G, long C,
                               long stride, float eps);
  /**
   * dx (same layout as x) from dout and the saved x, rstd: added when accumulate_dx, else
   * overwritten (then dx may alias dout); dw[C] += the gradient of w (float32).
   */
  virtual void rmsnorm_backward(void* dx, bool accumulate_dx, float* dw, const void* dout, const void* x, const void* w,
                                const float* rstd, long N, long G, long C, long stride);

  /**
   * Rotary position embedding of the q and k heads of packed qkv[B*T, (H + 2 KV) D], in place
   * (v untouched): HF's rotate_half pairs (j, j + D/2) turn by the angle t · inv_freq[j] (float32,
   * as transformers forms it), t = 0..T-1 the position in the sequence. inv_freq[D/2] is float32
   * in this backend's memory, computed once by the model (rope_theta, llama3 scaling).
   */
  virtual void rope_forward(void* qkv, const float* inv_freq, long B, long T, long H, long KV, long D);
  /** The gradient through rope_forward: dqkv's q and k parts turned back (the transpose), in place. */
  virtual void rope_backward(void* dqkv, const float* inv_freq, long B, long T, long H, long KV, long D);

  /** h[N, F] = silu(gate) · up, each row of gate_up[N, 2F] being gate (F) then up (F). */
  virtual void swiglu_forward(void* h, const void* gate_up, long N, long F);
  /** d(gate_up)[N, 2F] (overwritten) from dh[N, F] and the saved gate_up. */
  virtual void swiglu_backward(void* dgate_up, const void* dh, const void* gate_up, long N, long F);

  /** float32 elements of the softmax state one grouped-query attention keeps (see AttentionTap). */
  virtual std::size_t gqa_attention_state_size(long B, long T, long H, long KV, long D) const;
  /** float32 elements of scratch gqa_attention_backward needs. */
  virtual std::size_t gqa_attention_scratch_size(long B, long T, long H, long KV, long D) const;
  /**
   * Causal grouped-query attention over packed qkv[B*T, (H + 2 KV) D] = q (H heads) | k (KV) | v
   * (KV): y[B*T, H D] = softmax(q k^T / sqrt(D), causal) v, query head h reading kv head
   * h / (H / KV); writes the softmax state.
   */
  virtual void gqa_attention_forward(void* y, float* state, const void* qkv, long B, long T, long H, long KV, long D,
                                     AttentionTap* tap);
  /** Only the softmax state of gqa_attention_forward, recomputed from a kept qkv (selective checkpointing). */
  virtual void gqa_attention_state(float* state, const void* qkv, long B, long T, long H, long KV, long D);
  /**
   * dqkv[B*T, (H + 2 KV) D] (overwritten) from dy[B*T, H D], the saved qkv, y and state; a kv
   * head's gradient sums its query heads' in head order. scratch as sized above.
   */
  virtual void gqa_attention_backward(void* dqkv, float* scratch, const void* dy, const void* qkv, const void* y,
                                      const float* state, long B, long T, long H, long KV, long D, AttentionTap* tap);

  // --- GELU (tanh approximation, as GPT-2), compute dtype --------------------------------------
  virtual void gelu_forward(void* out, const void* in, std::size_t n) = 0;
  /** d = d * gelu'(in), in place. */
  virtual void gelu_backward(void* d, const void* in, std::size_t n) = 0;

  // --- dropout, by a counter-based mask keyed by `key` (runtime/rng.h), compute dtype -------------
  /** out = residual + dropout(x); out may alias x. p = 0 is a plain sum. */
  virtual void dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p,
                                std::uint64_t key) = 0;
  /** out = dropout(x) with the same mask (out may alias x). */
  virtual void dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key) = 0;

  // --- softmax cross-entropy (float32 logits) ---------------------------------------------------
  /** logits[N, V] become probabilities in place; losses[N] = -log p[target]. */
  virtual void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V) = 0;
  /** probs[N, V] become dlogits = (probs - onehot(target)) * scale, in place. */
  virtual void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale) = 0;

  // --- the classifier: logits = x W^T, softmax cross-entropy against the targets ---------------
  // A layer-level operation a backend may fuse (as attention): the CPU composes it from
  // linear_forward/softmax_xent_* above and keeps the float32 probabilities; the CUDA backend keeps
  // the logits in the compute dtype with the vocabulary padded to a multiple of 128 (its products
  // then take aligned tensor-core kernels) and writes the logits' gradient in the softmax's pass.
  /** Bytes of the state one classifier keeps from forward to backward for N rows of V classes. */
  virtual std::size_t classifier_state_bytes(long N, long V) const {
    return sizeof(float) * static_cast<std::size_t>(N) * static_cast<std::size_t>(V);
  }
  /**
   * losses[N] = -log softmax(x W^T)[target] for x[N, C], W[V, C] (compute dtype); `state` holds
   * classifier_state_bytes for backward. With logits_copy (host memory), the float32 logits [N, V].
   */
  virtual void classifier_forward(void* state, float* losses, const void* x, const void* w, const std::int32_t* targets,
                                  long N, long C, long V, ClassifierTap* tap, float* logits_copy);
  /** dx[N, C] = ... (overwritten, compute dtype), dw[V, C] += ...: the gradient of scale * sum(losses). */
  virtual void classifier_backward(void* dx, float* dw, void* state, const void* x, const void* w,
                                   const std::int32_t* targets, long N, long C, long V, float scale,
                                   ClassifierTap* tap);

  // --- whole-buffer helpers (float32 unless a dtype is given) -----------------------------------
  virtual void fill(float* x, std::size_t n, float value) = 0;
  /** bytes of x set to zero (0.0 in every dtype). */
  virtual void zero(void* x, std::size_t bytes) = 0;
  virtual void copy(float* dst, const float* src, std::size_t n) = 0;
  /** Sum in double with a fixed order. */
  virtual double sum(const float* x, std::size_t n) = 0;
  virtual double sum_squares(const float* x, std::size_t n) = 0;
  /** Mean, std and max |x| over the finite values, and the count of the others (diagnostics). */
  virtual TensorStats stats(const float* x, std::size_t n) = 0;
  /** Statistics of a tensor in any dtype (activations in compute dtype). */
  virtual TensorStats stats(const void* x, DType dtype, std::size_t n) = 0;
  /** x[index] = value (debug.inject_nan plants its NaN with this). */
  virtual void set_element(void* x, DType dtype, std::size_t index, float value) = 0;

  // --- optimizer --------------------------------------------------------------------------------
  /** Count of parameters whose update would not be finite; writes nothing. */
  virtual std::uint64_t adamw_check(const AdamWArgs& a) = 0;
  virtual void adamw_apply(const AdamWArgs& a) = 0;

 private:
  /** Throws std::runtime_error: `op` is not on this backend (the decoder family's defaults). */
  [[noreturn]] void missing_op(const char* op) const;

  HostAllocator host_memory_;
};

/** Bytes of n elements in the backend's compute dtype (an activation tensor). */
inline std::size_t compute_bytes(const Backend& be, std::size_t n) {
  return dtype_bytes(be.compute_dtype()) * n;
}

/** How a backend is set up: from mixed_precision.param_dtype, launch.tf32 and the rank's GPU. */
struct BackendOptions {
  DType compute = DType::f32;
  bool tf32 = false;     // float32 matrix products on TF32 tensor cores (CUDA)
  int device_index = 0;  // which GPU (CUDA)
};

/** The backend for launch.device ("cpu", or "cuda" in a CUDA build); throws std::runtime_error for one this build
 * lacks. */
std::unique_ptr<Backend> make_backend(const std::string& device, const BackendOptions& options = {});

/** Whether this build has the CUDA backend (CMake found a toolkit with cuBLAS). */
bool cuda_backend_built();

}  // namespace fsdp
