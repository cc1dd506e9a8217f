// Where every parameter lives: the model's parameters are grouped in flat per-unit buffers, like
// FSDP's flat parameters. Units, in execution order: the embeddings, each block, the head (final
// norm, and the LM head weight when it is not tied). GPT-2's layout is part of its checkpoint
// format; the Llama family's (llama, qwen3) is the one /work/team/decoder-layout.md fixed (HF's
// q/k/v stacked into attn.qkv, gate/up into mlp.gate_up) and native/test/param_layout_test.cc holds. A parallelism
// layer shards, gathers and reduces whole units; the optimizer steps flat ranges of them; checkpoints store them as is.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace fsdp {

/** The model's dimensions, named as in MEMORY.md and team's decoder-layout conventions. */
struct ModelShape {
  Architecture arch = Architecture::gpt2;
  long long V = 0;   // vocabulary
  long long C = 0;   // d_model
  long long L = 0;   // blocks
  long long H = 0;   // query heads
  long long KV = 0;  // key-value heads (H for gpt2; H % KV == 0)
  long long D = 0;   // head_dim (C / H for gpt2; the family may set it apart)
  long long F = 0;   // MLP hidden size: mlp_ratio * C (gpt2), intermediate_size (llama, qwen3)
  long long S = 0;   // max_seq_len: gpt2's rows of the position embedding, the family's longest sequence
  bool tied = true;
  bool attention_bias = false, mlp_bias = false;  // llama, qwen3 (gpt2's linears always have biases)

  static ModelShape of(const ModelConfig& m);
  bool llama_family() const { return arch != Architecture::gpt2; }
  /** Qwen3's per-head RMSNorm of q and k before the rotation. */
  bool qk_norm() const { return arch == Architecture::qwen3; }
};

enum class ParamInit { normal, normal_residual, zeros, ones };

/** One named parameter tensor inside a unit's flat buffer. */
struct ParamSegment {
  std::string name;  // full name, e.g. "blocks.3.attn.qkv.weight"
  std::string op;    // the op that uses it, e.g. "attn.qkv"
  std::size_t offset = 0, numel = 0;
  bool decay = false;  // AdamW weight decay applies (matrix weights only)
  ParamInit init = ParamInit::zeros;
};

enum class UnitKind { embedding, block, head };

struct UnitLayout {
  std::string name;  // "embedding", "blocks.3", "head"
  UnitKind kind = UnitKind::block;
  int layer = -1;  // block index for blocks
  std::size_t numel = 0;
  std::vector<ParamSegment> segments;
  /** Other units whose parameters this unit's compute reads (the head reads the tied wte). */
  std::vector<int> borrows;

  /** The segment whose name ends with `suffix` (e.g. "attn.qkv.weight"). Throws if absent. */
  const ParamSegment& segment(const std::string& suffix) const;
};

struct ParamLayout {
  ModelShape shape;
  std::vector<UnitLayout> units;  // [embedding, blocks.0 … blocks.L-1, head]
  std::size_t total = 0;

  static ParamLayout of(const ModelShape& shape);
  int embedding_unit() const { return 0; }
  int block_unit(int layer) const { return 1 + layer; }
  int head_unit() const { return static_cast<int>(units.size()) - 1; }
  /** Learning-rate multiplier of a unit under layer-wise LR decay (schema: training.layer_lr_decay). */
  double lr_scale(int unit, double layer_lr_decay) const;
};

}  // namespace fsdp
