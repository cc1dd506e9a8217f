// Model FLOPs, the numerator of MFU and the cost measure of activation checkpointing policies.
// Matrix products count 2 FLOPs per multiply-add; elementwise work is not counted.
#pragma once
#include "model/param_layout.h"

namespace fsdp {

/** Forward FLOPs per token of the matrix products in one block. */
inline double block_matmul_flops_per_token(const ModelShape& s) {
  return 2.0 * (4.0 * s.C * s.C + 2.0 * s.C * s.F);
}

/** Forward FLOPs per token of causal attention (QK^T and AV over the tokens before it) at length T. */
inline double attention_flops_per_token(const ModelShape& s, long long T) {
  return 2.0 * s.C * static_cast<double>(T);
}

/**
 * Training FLOPs per token (forward + backward = 3x forward), recomputation excluded:
 * 6 (L (4C^2 + 2CF) + V C) + 6 L T C. The LM head counts (it is a V x C product); the embedding
 * lookup does not. Attention counts the causal half it computes (PaLM's 12 L T C counts the full square).
 */
inline double training_flops_per_token(const ModelShape& s, long long T) {
  return 3.0 * (s.L * (block_matmul_flops_per_token(s) + attention_flops_per_token(s, T)) + 2.0 * s.V * s.C);
}

}  // namespace fsdp
