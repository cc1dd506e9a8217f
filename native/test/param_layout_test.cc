// The parameter layout: GPT-2's as its checkpoints store it, and the Llama family's as
// /work/team/decoder-layout.md fixed it (issue 35 item 1-3: the HF import, the ops and the model
// all index these segments).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/param_layout.h"
#include "test_config.h"

namespace fsdp {
namespace {

struct Seg {
  std::string name;
  std::size_t numel;
  bool decay;
};

std::vector<Seg> segments_of(const UnitLayout& u) {
  std::vector<Seg> out;
  std::size_t offset = 0;
  for (const auto& s : u.segments) {
    EXPECT_EQ(s.offset, offset) << s.name << ": segments are packed in order";
    offset += s.numel;
    out.push_back({s.name, s.numel, s.decay});
  }
  EXPECT_EQ(offset, u.numel) << u.name;
  return out;
}

void expect_segments(const UnitLayout& u, const std::vector<Seg>& want) {
  const auto got = segments_of(u);
  ASSERT_EQ(got.size(), want.size()) << u.name;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << u.name << " segment " << i;
    EXPECT_EQ(got[i].numel, want[i].numel) << want[i].name;
    EXPECT_EQ(got[i].decay, want[i].decay) << want[i].name;
  }
}

ModelShape family(Architecture arch, bool tied, bool attention_bias, bool mlp_bias) {
  ModelShape s;
  s.arch = arch;
  s.V = 37, s.C = 16, s.L = 2, s.H = 4, s.KV = 2, s.D = arch == Architecture::qwen3 ? 8 : 4, s.F = 40, s.S = 64;
  s.tied = tied, s.attention_bias = attention_bias, s.mlp_bias = mlp_bias;
  return s;
}

TEST(ParamLayout, Gpt2IsUnchangedSegmentForSegment) {
  // The order and sizes are the checkpoint format of every GPT-2 run so far.
  const ModelShape s = ModelShape::of(test::parse_or_die(test::tiny_config_json(16, 2, 2, 32, 8)).model);
  EXPECT_EQ(s.arch, Architecture::gpt2);
  EXPECT_EQ(s.KV, 2);
  EXPECT_EQ(s.D, 8);
  EXPECT_EQ(s.F, 64);
  const ParamLayout l = ParamLayout::of(s);
  ASSERT_EQ(l.units.size(), 4u);
  expect_segments(l.units[0], {{"embedding.wte", 32 * 16, false}, {"embedding.wpe", 8 * 16, false}});
  expect_segments(l.units[1], {{"blocks.0.ln1.weight", 16, false},
                               {"blocks.0.ln1.bias", 16, false},
                               {"blocks.0.attn.qkv.weight", 3 * 16 * 16, true},
                               {"blocks.0.attn.qkv.bias", 3 * 16, false},
                               {"blocks.0.attn.proj.weight", 16 * 16, true},
                               {"blocks.0.attn.proj.bias", 16, false},
                               {"blocks.0.ln2.weight", 16, false},
                               {"blocks.0.ln2.bias", 16, false},
                               {"blocks.0.mlp.fc.weight", 64 * 16, true},
                               {"blocks.0.mlp.fc.bias", 64, false},
                               {"blocks.0.mlp.fc2.weight", 16 * 64, true},
                               {"blocks.0.mlp.fc2.bias", 16, false}});
  expect_segments(l.units[3], {{"final_ln.weight", 16, false}, {"final_ln.bias", 16, false}});
  EXPECT_EQ(l.units[3].borrows, std::vector<int>{0});
}

TEST(ParamLayout, LlamaUntiedWithoutBiases) {
  const ParamLayout l = ParamLayout::of(family(Architecture::llama, false, false, false));
  const std::size_t C = 16, V = 37, QKV = (4 + 2 * 2) * 4, F = 40;
  ASSERT_EQ(l.units.size(), 4u);
  expect_segments(l.units[0], {{"embedding.wte", V * C, false}});  // no position table: RoPE
  expect_segments(l.units[2], {{"blocks.1.ln1.weight", C, false},
                               {"blocks.1.attn.qkv.weight", QKV * C, true},
                               {"blocks.1.attn.proj.weight", C * 4 * 4, true},
                               {"blocks.1.ln2.weight", C, false},
                               {"blocks.1.mlp.gate_up.weight", 2 * F * C, true},
                               {"blocks.1.mlp.down.weight", C * F, true}});
  expect_segments(l.units[3], {{"final_ln.weight", C, false}, {"lm_head.weight", V * C, true}});
  EXPECT_TRUE(l.units[3].borrows.empty());
  const std::size_t block = C + QKV * C + C * 16 + C + 2 * F * C + C * F;
  EXPECT_EQ(l.total, V * C + 2 * block + C + V * C);
  EXPECT_EQ(l.units[1].segment("attn.qkv.weight").op, "attn.qkv");
  EXPECT_EQ(l.units[1].segment("mlp.down.weight").init, ParamInit::normal_residual);
}

TEST(ParamLayout, LlamaBiasesWhereTheConfigSaysAndTiedHead) {
  const ParamLayout l = ParamLayout::of(family(Architecture::llama, true, true, true));
  const std::size_t C = 16, QKV = (4 + 2 * 2) * 4, F = 40;
  expect_segments(l.units[1], {{"blocks.0.ln1.weight", C, false},
                               {"blocks.0.attn.qkv.weight", QKV * C, true},
                               {"blocks.0.attn.qkv.bias", QKV, false},
                               {"blocks.0.attn.proj.weight", C * 16, true},
                               {"blocks.0.attn.proj.bias", C, false},
                               {"blocks.0.ln2.weight", C, false},
                               {"blocks.0.mlp.gate_up.weight", 2 * F * C, true},
                               {"blocks.0.mlp.gate_up.bias", 2 * F, false},
                               {"blocks.0.mlp.down.weight", C * F, true},
                               {"blocks.0.mlp.down.bias", C, false}});
  expect_segments(l.units[3], {{"final_ln.weight", C, false}});
  EXPECT_EQ(l.units[3].borrows, std::vector<int>{0});
  // Only attention biases: the MLP has none.
  const ParamLayout a = ParamLayout::of(family(Architecture::llama, true, true, false));
  EXPECT_EQ(a.units[1].numel, l.units[1].numel - 2 * F - C);
}

TEST(ParamLayout, Qwen3NormsQAndKPerHeadWithHeadDimApartFromWidth) {
  const ParamLayout l = ParamLayout::of(family(Architecture::qwen3, true, false, false));
  const std::size_t C = 16, D = 8, QKV = (4 + 2 * 2) * D, F = 40;
  expect_segments(l.units[1], {{"blocks.0.ln1.weight", C, false},
                               {"blocks.0.attn.qkv.weight", QKV * C, true},
                               {"blocks.0.attn.q_norm.weight", D, false},
                               {"blocks.0.attn.k_norm.weight", D, false},
                               {"blocks.0.attn.proj.weight", C * 4 * D, true},
                               {"blocks.0.ln2.weight", C, false},
                               {"blocks.0.mlp.gate_up.weight", 2 * F * C, true},
                               {"blocks.0.mlp.down.weight", C * F, true}});
  EXPECT_EQ(l.units[1].segment("attn.q_norm.weight").init, ParamInit::ones);
}

TEST(ParamLayout, ShapeOfAFamilyConfigTakesItsKeys) {
  auto j = test::tiny_config_json(16, 2, 4);
  j["model"]["architecture"] = "qwen3";
  j["model"]["n_kv_heads"] = 2;
  j["model"]["head_dim"] = 8;
  j["model"]["intermediate_size"] = 40;
  j["model"]["attention_bias"] = true;
  j["model"]["tie_embeddings"] = false;
  const ModelShape s = ModelShape::of(test::parse_or_die(j).model);
  EXPECT_EQ(s.arch, Architecture::qwen3);
  EXPECT_EQ(s.KV, 2);
  EXPECT_EQ(s.D, 8);
  EXPECT_EQ(s.F, 40);
  EXPECT_TRUE(s.qk_norm());
  EXPECT_TRUE(s.attention_bias);
  EXPECT_FALSE(s.mlp_bias);
  EXPECT_FALSE(s.tied);
}

}  // namespace
}  // namespace fsdp
