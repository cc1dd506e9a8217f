#include "model/activation_policy.h"

#include "model/flops.h"

namespace fsdp {

ActivationPolicy ActivationPolicy::none(int n_layers) {
  ActivationPolicy p;
  p.blocks.assign(n_layers, BlockRecompute::none);
  return p;
}

ActivationPolicy ActivationPolicy::every_n(int n_layers, int n) {
  ActivationPolicy p;
  p.name = "every_n";
  p.every_n_layers = n;
  p.blocks.assign(n_layers, BlockRecompute::none);
  for (int i = n - 1; i < n_layers; i += n) p.blocks[i] = BlockRecompute::full;
  return p;
}

ActivationPolicy ActivationPolicy::selective(int n_layers) {
  ActivationPolicy p;
  p.name = "selective";
  p.blocks.assign(n_layers, BlockRecompute::selective);
  return p;
}

double ActivationPolicy::recompute_flops_per_token(const ModelShape& s, long long T) const {
  // A full recompute repeats the block's forward except the MLP output product, whose result (the
  // block's output) is already kept; selective recomputes only the attention scores (QK^T).
  const double full = block_matmul_flops_per_token(s) - 2.0 * s.C * s.F + attention_flops_per_token(s, T);
  const double sel = attention_flops_per_token(s, T) / 2;
  double total = 0;
  for (auto b : blocks) total += b == BlockRecompute::full ? full : b == BlockRecompute::selective ? sel : 0;
  return total;
}

std::string ActivationPolicy::describe() const {
  return name == "every_n" ? "every_n (n=" + std::to_string(every_n_layers) + ")" : name;
}

}  // namespace fsdp
