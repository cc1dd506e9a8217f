// Activation checkpointing as the model applies it: which blocks keep what for backward. Policies
// (schema activation_checkpointing): none; every_n — every n-th block (blocks n-1, 2n-1, …, as
// torchtitan's ac_freq) keeps only its input and recomputes its internals in backward; selective —
// every block keeps its matrix-product outputs and recomputes LayerNorm, softmax and GELU. Which
// policy a run gets (auto: chosen by the memory plan) is memory/activation_choice.h's decision.
#pragma once
#include <string>
#include <vector>

#include "model/param_layout.h"

namespace fsdp {

enum class BlockRecompute { none, full, selective };

struct ActivationPolicy {
  std::string name = "none";  // none | every_n | selective
  int every_n_layers = 0;     // for every_n
  std::vector<BlockRecompute> blocks;

  static ActivationPolicy none(int n_layers);
  static ActivationPolicy every_n(int n_layers, int n);
  static ActivationPolicy selective(int n_layers);

  /** Forward FLOPs recomputed per token in backward. */
  double recompute_flops_per_token(const ModelShape& s, long long T) const;
  std::string describe() const;  // "every_n (n=2)", "selective", "none"
};

}  // namespace fsdp
