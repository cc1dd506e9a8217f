// A pre-norm decoder block of the Llama family (Llama 3, Qwen3, Mistral, SmolLM2), as transformers'
// LlamaDecoderLayer / Qwen3DecoderLayer:
//   qkv = rmsnorm1(x) Wqkv^T (+ b), Qwen3's per-head q / k RMSNorms, RoPE on q and k,
//   x2 = x + grouped-query attention(qkv) Wproj^T (+ b),
//   out = x2 + (silu(gate) · up) Wdown^T (+ b), gate | up = rmsnorm2(x2) Wgate_up^T (+ b).
// The family trains without dropout. What the block keeps for backward follows activation
// checkpointing as GPT-2's block does (block.h): everything, the matrix-product outputs only
// (selective), or nothing but its input (full recompute).
#pragma once
#include "backend/backend.h"
#include "model/activation_policy.h"
#include "model/param_layout.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

/** The sizes one micro-batch of a decoder block runs with (decoder-layout names). */
struct DecoderDims {
  long B = 0, T = 0, C = 0, H = 0, KV = 0, D = 0, F = 0;
  float eps = 1e-6f;     // rms_norm_eps
  bool qk_norm = false;  // Qwen3
  long N() const { return B * T; }
  long W() const { return (H + 2 * KV) * D; }  // a packed qkv row
};

/**
 * A block's parameter tensors (T = const void: the weights, in the backend's compute dtype) or
 * their gradients (T = float); null where the config has none (biases, q / k norms).
 */
template <class T>
struct DecoderBlockParams {
  T *ln1_w, *qkv_w, *qkv_b, *q_norm_w, *k_norm_w, *proj_w, *proj_b, *ln2_w, *gate_up_w, *gate_up_b, *down_w, *down_b;
};
using DecoderBlockWeights = DecoderBlockParams<const void>;
using DecoderBlockGrads = DecoderBlockParams<float>;

/** Each tensor of a block unit, where `at(name)` says it is (null for a segment the unit lacks). */
template <class T, class At>
DecoderBlockParams<T> decoder_block_params_at(At at) {
  return {at("ln1.weight"),         at("attn.qkv.weight"),  at("attn.qkv.bias"),   at("attn.q_norm.weight"),
          at("attn.k_norm.weight"), at("attn.proj.weight"), at("attn.proj.bias"),  at("ln2.weight"),
          at("mlp.gate_up.weight"), at("mlp.gate_up.bias"), at("mlp.down.weight"), at("mlp.down.bias")};
}

/** The segment of `unit` named "<unit>.<name>", or null. */
const ParamSegment* find_segment(const UnitLayout& unit, const char* name);

/** Where each tensor of a block unit is in a flat float32 buffer laid out as `unit` (parameters or gradients). */
template <class T>
DecoderBlockParams<T> decoder_block_params(const UnitLayout& unit, T* base) {
  return decoder_block_params_at<T>([&](const char* name) -> T* {
    const ParamSegment* s = find_segment(unit, name);
    return s ? base + s->offset : nullptr;
  });
}

/** The weights in a unit's compute-dtype copy (UnitStorage::compute_params). */
inline DecoderBlockWeights decoder_block_weights(const UnitLayout& unit, const void* compute, DType dtype) {
  return decoder_block_params_at<const void>([&](const char* name) -> const void* {
    const ParamSegment* s = find_segment(unit, name);
    return s ? static_cast<const char*>(compute) + s->offset * dtype_bytes(dtype) : nullptr;
  });
}

/** A block's saved internals (compute dtype, but the float32 rstd and softmax state). */
struct DecoderBlockSaved {
  Buffer ln1_out, ln1_rstd;  // [N, C], [N]
  Buffer qkv_in;             // [N, W] before the q / k norms (Qwen3 only: their backward reads it)
  Buffer qk_rstd;            // [N H] of the q norm, then [N KV] of the k norm (Qwen3 only)
  Buffer qkv;                // [N, W] normalised and turned: what attention reads
  Buffer probs, y;           // the backend's softmax state; [N, H D]
  Buffer res2;               // [N, C] the mid-block residual x2
  Buffer ln2_out, ln2_rstd;  // [N, C], [N]
  Buffer gate_up, h;         // [N, 2F], [N, F]
  void reset();
};

/** Backward scratch shared by every decoder block (the workspace of MEMORY.md). */
struct DecoderWorkspace {
  Buffer d_res;     // [N, C] gradient of the residual stream
  Buffer d_norm;    // [N, C] gradient of a norm's output
  Buffer dy;        // [N, H D]
  Buffer dqkv;      // [N, W]
  Buffer dprobs;    // the backend's attention scratch (float32)
  Buffer dgate_up;  // [N, 2F]
  Buffer dh;        // [N, F]
  DecoderWorkspace(Backend& be, const DecoderDims& d);
};

struct DecoderBlockRun {
  Backend& be;
  DecoderDims d;
  const float* inv_freq;  // [D / 2] float32 in the backend's memory (rope_theta, llama3 scaling)
  LayerProbe probe;
};

/** Runs the block and returns its output; `saved` keeps what `keep` says. */
Buffer decoder_block_forward(const DecoderBlockRun& run, DecoderBlockSaved& saved, const void* in,
                             const DecoderBlockWeights& w, BlockRecompute keep);

/** Brings `saved` back to all internals after a forward with `keep` (no-op for none). */
void decoder_block_recompute(const DecoderBlockRun& run, DecoderBlockSaved& saved, const void* in,
                             const DecoderBlockWeights& w, BlockRecompute keep);

/** ws.d_res holds d(out) on entry and d(in) on return; parameter gradients accumulate. */
void decoder_block_backward(const DecoderBlockRun& run, DecoderWorkspace& ws, const DecoderBlockSaved& saved,
                            const void* in, const DecoderBlockWeights& w, const DecoderBlockGrads& g);

}  // namespace fsdp
