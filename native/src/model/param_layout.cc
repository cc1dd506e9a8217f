#include "model/param_layout.h"

#include <cmath>
#include <stdexcept>

namespace fsdp {

ModelShape ModelShape::of(const ModelConfig& m) {
  ModelShape s;
  s.arch = m.architecture;
  s.V = m.vocab_size;
  s.C = m.d_model;
  s.L = m.n_layers;
  s.H = m.n_heads;
  s.S = m.max_seq_len;
  s.tied = m.tie_embeddings;
  if (m.llama_family()) {
    s.KV = m.n_kv_heads;
    s.D = m.head_dim;
    s.F = m.intermediate_size;
    s.attention_bias = m.attention_bias;
    s.mlp_bias = m.mlp_bias;
  } else {
    s.KV = m.n_heads;
    s.D = m.n_heads > 0 ? m.d_model / m.n_heads : 0;
    s.F = static_cast<long long>(m.mlp_ratio) * m.d_model;
  }
  return s;
}

const ParamSegment& UnitLayout::segment(const std::string& suffix) const {
  for (const auto& s : segments) {
    if (s.name.size() >= suffix.size() && s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return s;
  }
  throw std::out_of_range(name + " has no parameter " + suffix);
}

namespace {

struct UnitBuilder {
  UnitLayout unit;
  void add(const std::string& local, const std::string& op, std::size_t numel, bool decay, ParamInit init) {
    const std::string prefix = unit.kind == UnitKind::block ? unit.name + "." : "";
    unit.segments.push_back({prefix + local, op, unit.numel, numel, decay, init});
    unit.numel += numel;
  }
};

// The Llama family (llama, qwen3): RMSNorms without bias, rotary positions (no position table),
// grouped-query attention with q, k and v stacked in one matrix, a SwiGLU MLP with gate and up
// stacked. Decay as GPT-2's: matrix weights only (wte not, as today).
ParamLayout llama_family_layout(const ModelShape& s) {
  ParamLayout layout;
  layout.shape = s;
  const auto C = static_cast<std::size_t>(s.C), F = static_cast<std::size_t>(s.F);
  const auto D = static_cast<std::size_t>(s.D), H = static_cast<std::size_t>(s.H);
  const std::size_t QKV = (H + 2 * static_cast<std::size_t>(s.KV)) * D;

  UnitBuilder emb{{"embedding", UnitKind::embedding, -1, 0, {}, {}}};
  emb.add("embedding.wte", "embed", static_cast<std::size_t>(s.V) * C, false, ParamInit::normal);
  layout.units.push_back(std::move(emb.unit));

  for (long long i = 0; i < s.L; ++i) {
    UnitBuilder b{{"blocks." + std::to_string(i), UnitKind::block, static_cast<int>(i), 0, {}, {}}};
    b.add("ln1.weight", "ln1", C, false, ParamInit::ones);
    b.add("attn.qkv.weight", "attn.qkv", QKV * C, true, ParamInit::normal);
    if (s.attention_bias) b.add("attn.qkv.bias", "attn.qkv", QKV, false, ParamInit::zeros);
    if (s.qk_norm()) {
      b.add("attn.q_norm.weight", "attn.q_norm", D, false, ParamInit::ones);
      b.add("attn.k_norm.weight", "attn.k_norm", D, false, ParamInit::ones);
    }
    b.add("attn.proj.weight", "attn.proj", C * H * D, true, ParamInit::normal_residual);
    if (s.attention_bias) b.add("attn.proj.bias", "attn.proj", C, false, ParamInit::zeros);
    b.add("ln2.weight", "ln2", C, false, ParamInit::ones);
    b.add("mlp.gate_up.weight", "mlp.gate_up", 2 * F * C, true, ParamInit::normal);
    if (s.mlp_bias) b.add("mlp.gate_up.bias", "mlp.gate_up", 2 * F, false, ParamInit::zeros);
    b.add("mlp.down.weight", "mlp.down", C * F, true, ParamInit::normal_residual);
    if (s.mlp_bias) b.add("mlp.down.bias", "mlp.down", C, false, ParamInit::zeros);
    layout.units.push_back(std::move(b.unit));
  }

  UnitBuilder head{{"head", UnitKind::head, static_cast<int>(s.L), 0, {}, {}}};
  head.add("final_ln.weight", "ln_f", C, false, ParamInit::ones);
  if (!s.tied)
    head.add("lm_head.weight", "lm_head", static_cast<std::size_t>(s.V) * C, true, ParamInit::normal);
  else
    head.unit.borrows.push_back(0);
  layout.units.push_back(std::move(head.unit));

  for (const auto& u : layout.units) layout.total += u.numel;
  return layout;
}

}  // namespace

ParamLayout ParamLayout::of(const ModelShape& s) {
  if (s.llama_family()) return llama_family_layout(s);
  ParamLayout layout;
  layout.shape = s;
  const auto C = static_cast<std::size_t>(s.C), F = static_cast<std::size_t>(s.F);

  // Embeddings are not decayed (as in GPT-2 / nanoGPT practice and the schema's weight_decay).
  UnitBuilder emb{{"embedding", UnitKind::embedding, -1, 0, {}, {}}};
  emb.add("embedding.wte", "embed", static_cast<std::size_t>(s.V) * C, false, ParamInit::normal);
  emb.add("embedding.wpe", "embed", static_cast<std::size_t>(s.S) * C, false, ParamInit::normal);
  layout.units.push_back(std::move(emb.unit));

  // Block parameters in PyTorch's (out, in) layout; the order is part of the checkpoint format.
  for (long long i = 0; i < s.L; ++i) {
    UnitBuilder b{{"blocks." + std::to_string(i), UnitKind::block, static_cast<int>(i), 0, {}, {}}};
    b.add("ln1.weight", "ln1", C, false, ParamInit::ones);
    b.add("ln1.bias", "ln1", C, false, ParamInit::zeros);
    b.add("attn.qkv.weight", "attn.qkv", 3 * C * C, true, ParamInit::normal);
    b.add("attn.qkv.bias", "attn.qkv", 3 * C, false, ParamInit::zeros);
    b.add("attn.proj.weight", "attn.proj", C * C, true, ParamInit::normal_residual);
    b.add("attn.proj.bias", "attn.proj", C, false, ParamInit::zeros);
    b.add("ln2.weight", "ln2", C, false, ParamInit::ones);
    b.add("ln2.bias", "ln2", C, false, ParamInit::zeros);
    b.add("mlp.fc.weight", "mlp.fc", F * C, true, ParamInit::normal);
    b.add("mlp.fc.bias", "mlp.fc", F, false, ParamInit::zeros);
    b.add("mlp.fc2.weight", "mlp.fc2", C * F, true, ParamInit::normal_residual);
    b.add("mlp.fc2.bias", "mlp.fc2", C, false, ParamInit::zeros);
    layout.units.push_back(std::move(b.unit));
  }

  UnitBuilder head{{"head", UnitKind::head, static_cast<int>(s.L), 0, {}, {}}};
  head.add("final_ln.weight", "ln_f", C, false, ParamInit::ones);
  head.add("final_ln.bias", "ln_f", C, false, ParamInit::zeros);
  if (!s.tied)
    head.add("lm_head.weight", "lm_head", static_cast<std::size_t>(s.V) * C, true, ParamInit::normal);
  else
    head.unit.borrows.push_back(0);
  layout.units.push_back(std::move(head.unit));

  for (const auto& u : layout.units) layout.total += u.numel;
  return layout;
}

double ParamLayout::lr_scale(int unit, double layer_lr_decay) const {
  if (layer_lr_decay == 1.0) return 1.0;
  const auto& u = units[unit];
  // Block i of L gets decay^(L - i); embeddings get the lowest rate, decay^(L + 1); the head the full rate.
  const double L = static_cast<double>(shape.L);
  switch (u.kind) {
    case UnitKind::embedding:
      return std::pow(layer_lr_decay, L + 1);
    case UnitKind::block:
      return std::pow(layer_lr_decay, L - u.layer);
    case UnitKind::head:
      return 1.0;
  }
  return 1.0;
}

}  // namespace fsdp
