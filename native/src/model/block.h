// A pre-LN transformer block: x2 = x + dropout(attention(ln1(x))); out = x2 + dropout(mlp(ln2(x2))).
// What it keeps for backward depends on its activation checkpointing (model/activation_policy.h):
// everything, the matrix-product outputs only (selective), or nothing but its input (full
// recompute). Recomputation replays the same dropout masks (counter-based keys).
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "model/attention.h"
#include "model/dims.h"
#include "model/layernorm.h"
#include "model/mlp.h"
#include "model/param_layout.h"
#include "model/probe.h"
#include "model/activation_policy.h"

namespace fsdp {

/** A block's parameter tensors (T = const void: the weights, in the backend's compute dtype) or their gradients (T =
 * float). */
template <class T>
struct BlockParams {
  T *ln1_w, *ln1_b;
  AttentionParams<T> attn;
  T *ln2_w, *ln2_b;
  MlpParams<T> mlp;
};
using BlockWeights = BlockParams<const void>;
using BlockGrads = BlockParams<float>;

/** Each tensor of a block unit, where `at(name)` says it is. */
template <class T, class At>
BlockParams<T> block_params_at(At at) {
  return {at("ln1.weight"),
          at("ln1.bias"),
          {at("attn.qkv.weight"), at("attn.qkv.bias"), at("attn.proj.weight"), at("attn.proj.bias")},
          at("ln2.weight"),
          at("ln2.bias"),
          {at("mlp.fc.weight"), at("mlp.fc.bias"), at("mlp.fc2.weight"), at("mlp.fc2.bias")}};
}

/** Where each tensor of a block unit is in a flat float32 buffer laid out as `unit` (parameters or gradients). */
template <class T>
BlockParams<T> block_params(const UnitLayout& unit, T* base) {
  return block_params_at<T>([&](const char* name) { return base + unit.segment(name).offset; });
}

/** The weights in a unit's compute-dtype copy (UnitStorage::compute_params). */
inline BlockWeights block_weights(const UnitLayout& unit, const void* compute, DType dtype) {
  return block_params_at<const void>([&](const char* name) -> const void* {
    return static_cast<const char*>(compute) + unit.segment(name).offset * dtype_bytes(dtype);
  });
}

/** A block's saved internals (I in MEMORY.md). */
struct BlockSaved {
  LayerNormSaved ln1;
  AttentionSaved attn;
  Buffer res2;  // the mid-block residual x2
  LayerNormSaved ln2;
  MlpSaved mlp;
  void reset();
};

/** Backward scratch shared by every block and the head (the workspace of MEMORY.md). */
struct BackwardWorkspace {
  // In compute dtype, but dprobs: the backend's attention scratch (float32).
  Buffer d_res;   // [N, C] gradient of the residual stream
  Buffer tmp_a;   // [N, C]
  Buffer tmp_b;   // [N, C]
  Buffer dqkv;    // [N, 3C]
  Buffer dprobs;  // CPU: [B, H, T, T]
  Buffer dh;      // [N, F]
  BackwardWorkspace(Backend& be, const Dims& d);
};

struct BlockRun {
  Backend& be;
  Dims d;
  float dropout;
  std::uint64_t attn_key, mlp_key;  // dropout keys of the two residual branches
  LayerProbe probe;
};

/** Runs the block and returns its output; `saved` keeps what `keep` says. */
Buffer block_forward(const BlockRun& run, BlockSaved& saved, const void* in, const BlockWeights& w,
                     BlockRecompute keep);

/** Brings `saved` back to all internals after a forward with `keep` (no-op for none). */
void block_recompute(const BlockRun& run, BlockSaved& saved, const void* in, const BlockWeights& w,
                     BlockRecompute keep);

/** ws.d_res holds d(out) on entry and d(in) on return; parameter gradients accumulate. */
void block_backward(const BlockRun& run, BackwardWorkspace& ws, const BlockSaved& saved, const void* in,
                    const BlockWeights& w, const BlockGrads& g);

}  // namespace fsdp
