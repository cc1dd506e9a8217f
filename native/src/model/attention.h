// Causal self-attention: qkv = x Wqkv^T + b, y = softmax(q k^T / sqrt(hs)) v per head (causal),
// out = y Wproj^T + b. Saves qkv, y and the softmax state the backend keeps (the probabilities on
// the CPU, the rows' log-sum-exp on CUDA: see Backend::attention_forward).
#pragma once
#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

/** The layer's parameter tensors (T = const void: the weights, in the backend's compute dtype) or their gradients (T =
 * float). */
template <class T>
struct AttentionParams {
  T *qkv_w, *qkv_b, *proj_w, *proj_b;
};
using AttentionWeights = AttentionParams<const void>;
using AttentionGrads = AttentionParams<float>;

struct AttentionSaved {
  Buffer qkv, probs, y;  // probs: the backend's softmax state (float32)
};

/** Allocates `saved`; writes the projection output to out[N, C] (allocated by the caller). */
void attention_forward(Backend& be, AttentionSaved& saved, void* out, const void* x, const AttentionWeights& w,
                       const Dims& d, const LayerProbe& probe);

/** Recomputes only the softmax state from the kept qkv (selective checkpointing). */
void attention_recompute_probs(Backend& be, AttentionSaved& saved, const Dims& d);

/** Scratch from the backward workspace. */
struct AttentionScratch {
  void* dy;       // [N, C]
  void* dqkv;     // [N, 3C]
  float* dprobs;  // the backend's attention scratch
};

/** dx[N, C] = ... (overwritten); parameter gradients accumulated. dout is d(out). */
void attention_backward(Backend& be, void* dx, const AttentionGrads& g, const void* dout, const void* x,
                        const AttentionSaved& saved, const AttentionWeights& w, const AttentionScratch& s,
                        const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
