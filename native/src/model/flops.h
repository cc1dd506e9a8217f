// Model FLOPs, the numerator of MFU and the cost measure of activation checkpointing policies.
// Matrix products count 2 FLOPs per multiply-add; elementwise work is not counted.
#pragma once
#include "model/param_layout.h"

namespace fsdp {

/**
 * Forward FLOPs per token of the matrix products in one block: qkv (C x (H + 2 KV) D), the output
 * projection (H D x C) and the MLP — GPT-2's fc and fc2 (2CF), the Llama family's gate_up and down
 * (3CF). For GPT-2 (KV = H, D = C / H) that is 2 (4C^2 + 2CF).
 */
inline double block_matmul_flops_per_token(const ModelShape& s) {
  // GPT-2's from C alone: shapes built by hand (tests) leave KV and D unset.
  if (!s.llama_family()) return 2.0 * (4.0 * s.C * s.C + 2.0 * s.C * s.F);
  const double qkv = static_cast<double>(s.C) * (s.H + 2 * s.KV) * s.D, proj = static_cast<double>(s.H) * s.D * s.C;
  return 2.0 * (qkv + proj + 3.0 * s.C * s.F);
}

/** Forward FLOPs per token of causal attention (QK^T and AV over the tokens before it) at length T. */
inline double attention_flops_per_token(const ModelShape& s, long long T) {
  return 2.0 * (s.llama_family() ? static_cast<double>(s.H) * s.D : static_cast<double>(s.C)) * static_cast<double>(T);
}

/**
 * Training FLOPs per token (forward + backward = 3x forward), recomputation excluded:
 * 6 (L (4C^2 + 2CF) + V C) + 6 L T C for GPT-2 (the family: its block's products above). The LM head counts (it is a V
 * x C product); the embedding lookup does not. Attention counts the causal half it computes (PaLM's 12 L T C counts the
 * full square).
 */
inline double training_flops_per_token(const ModelShape& s, long long T) {
  return 3.0 * (s.L * (block_matmul_flops_per_token(s) + attention_flops_per_token(s, T)) + 2.0 * s.V * s.C);
}

}  // namespace fsdp
