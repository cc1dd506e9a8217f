// Causal self-attention: qkv = x Wqkv^T + b, probs = softmax(q k^T / sqrt(hs)) per head (causal),
// y = probs v, out = y Wproj^T + b. Saves qkv, the probabilities and y.
#pragma once
#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

/** The layer's parameter tensors (T = const float) or their gradients (T = float). */
template <class T>
struct AttentionParams {
  T *qkv_w, *qkv_b, *proj_w, *proj_b;
};
using AttentionWeights = AttentionParams<const float>;
using AttentionGrads = AttentionParams<float>;

struct AttentionSaved {
  Buffer qkv, probs, y;
};

/** Allocates `saved`; writes the projection output to out[N, C] (allocated by the caller). */
void attention_forward(Backend& be, AttentionSaved& saved, float* out, const float* x, const AttentionWeights& w, const Dims& d,
                       const LayerProbe& probe);

/** Recomputes only the probabilities from the kept qkv (selective checkpointing). */
void attention_recompute_probs(Backend& be, AttentionSaved& saved, const Dims& d);

/** Scratch from the backward workspace. */
struct AttentionScratch {
  float* dy;      // [N, C]
  float* dqkv;    // [N, 3C]
  float* dprobs;  // [B, H, T, T]
};

/** dx[N, C] = ... (overwritten); parameter gradients accumulated. dout is d(out). */
void attention_backward(Backend& be, float* dx, const AttentionGrads& g, const float* dout, const float* x, const AttentionSaved& saved,
                        const AttentionWeights& w, const AttentionScratch& s, const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
