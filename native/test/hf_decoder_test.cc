// The decoder family's weights from and to Hugging Face folders (checkpoint/hf_decoder.h), on tiny
// random models transformers itself saved (test/fixtures/hf-decoder/make_fixtures.py): a Llama with
// GQA and biases in float32, one file; a Qwen3 with head_dim apart from d_model / heads and q/k norm,
// tied, in bfloat16, sharded with its index. q/k/v land stacked by rows in attn.qkv and gate/up in
// mlp.gate_up as decoder-layout.md says; an import exported again gives back every tensor bit for
// bit; a folder of another shape or family, a missing tensor and a shard outside the folder are
// refused naming the file and the tensor.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "checkpoint/hf_decoder.h"
#include "checkpoint/safetensors.h"
#include "file_fixtures.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;

// The fixtures sit in the repository beside this test's sources (compiled with absolute paths).
const fs::path kFixtures =
    fs::path(__FILE__).parent_path().parent_path().parent_path() / "test" / "fixtures" / "hf-decoder";

ModelShape llama_biases() {
  ModelShape s;
  s.arch = Architecture::llama;
  s.V = 64, s.C = 16, s.L = 2, s.H = 4, s.KV = 2, s.D = 4, s.F = 24, s.S = 128;
  s.tied = false, s.attention_bias = true, s.mlp_bias = true;
  return s;
}

ModelShape qwen3_tied() {
  ModelShape s;
  s.arch = Architecture::qwen3;
  s.V = 64, s.C = 16, s.L = 2, s.H = 4, s.KV = 2, s.D = 8, s.F = 24, s.S = 128;
  s.tied = true;
  return s;
}

/** The run config's model for a fixture (what core/config/hf-model-folder.ts reads from its config.json). */
ModelConfig model_of(const ModelShape& s) {
  ModelConfig m;
  m.architecture = s.arch;
  m.vocab_size = static_cast<int>(s.V), m.d_model = static_cast<int>(s.C), m.n_layers = static_cast<int>(s.L);
  m.n_heads = static_cast<int>(s.H), m.n_kv_heads = static_cast<int>(s.KV), m.head_dim = static_cast<int>(s.D);
  m.intermediate_size = static_cast<int>(s.F), m.max_seq_len = static_cast<int>(s.S);
  m.tie_embeddings = s.tied, m.attention_bias = s.attention_bias, m.mlp_bias = s.mlp_bias;
  m.rms_norm_eps = 1e-6;
  return m;
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

/** Every tensor of a folder (one file or shards) by Hugging Face name, as float32. */
std::map<std::string, std::vector<float>> all_tensors(const fs::path& dir) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") continue;
    const SafetensorsFile file(entry.path().string());
    for (const auto& [name, t] : file.tensors()) out[name] = file.floats(name);
  }
  return out;
}

std::vector<float> rows(const std::vector<float>& v, std::size_t cols, std::size_t first, std::size_t n) {
  return {v.begin() + first * cols, v.begin() + (first + n) * cols};
}

TEST(HfDecoder, LlamaTensorsStackQkvAndGateUpByRowsAsTheLayoutSays) {
  const ModelShape s = llama_biases();
  const DecoderTensors t = read_hf_decoder((kFixtures / "llama-biases").string(), s);
  const auto hf = all_tensors(kFixtures / "llama-biases");
  // One entry per layout parameter: embedding, 2 blocks of 10 (with both biases), final norm, head.
  EXPECT_EQ(t.size(), 1u + 2 * 10 + 2);
  const std::string at = "model.layers.1.self_attn.";
  const std::vector<float>& qkv = t.at("blocks.1.attn.qkv.weight");
  ASSERT_EQ(qkv.size(), static_cast<std::size_t>((4 + 2 * 2) * 4 * 16));
  EXPECT_EQ(rows(qkv, 16, 0, 16), hf.at(at + "q_proj.weight"));
  EXPECT_EQ(rows(qkv, 16, 16, 8), hf.at(at + "k_proj.weight"));
  EXPECT_EQ(rows(qkv, 16, 24, 8), hf.at(at + "v_proj.weight"));
  const std::vector<float>& qkv_bias = t.at("blocks.1.attn.qkv.bias");
  EXPECT_EQ(rows(qkv_bias, 1, 16, 8), hf.at(at + "k_proj.bias"));
  const std::vector<float>& gate_up = t.at("blocks.0.mlp.gate_up.weight");
  EXPECT_EQ(rows(gate_up, 16, 0, 24), hf.at("model.layers.0.mlp.gate_proj.weight"));
  EXPECT_EQ(rows(gate_up, 16, 24, 24), hf.at("model.layers.0.mlp.up_proj.weight"));
  EXPECT_EQ(t.at("blocks.0.mlp.down.bias"), hf.at("model.layers.0.mlp.down_proj.bias"));
  EXPECT_EQ(t.at("lm_head.weight"), hf.at("lm_head.weight"));
  EXPECT_EQ(t.at("final_ln.weight"), hf.at("model.norm.weight"));
}

TEST(HfDecoder, TheTensorsAreParamLayoutsSegmentsOneForOne) {
  for (const ModelShape& s : {llama_biases(), qwen3_tied()}) {
    SCOPED_TRACE(s.qk_norm() ? "qwen3" : "llama");
    std::map<std::string, std::int64_t> layout, hf;
    for (const UnitLayout& u : ParamLayout::of(s).units)
      for (const ParamSegment& seg : u.segments) layout[seg.name] = static_cast<std::int64_t>(seg.numel);
    for (const HfDecoderTensor& t : hf_decoder_tensors(s)) {
      std::int64_t n = 1;
      for (std::int64_t d : t.shape) n *= d;
      hf[t.name] = n;
    }
    EXPECT_EQ(hf, layout);
  }
}

TEST(HfDecoder, AnImportExportedAgainGivesBackEveryTensorBitForBit) {
  for (const auto& [folder, shape] : std::vector<std::pair<std::string, ModelShape>>{
           {"llama-biases", llama_biases()}, {"qwen3-bf16-sharded", qwen3_tied()}}) {
    SCOPED_TRACE(folder);
    test::TempFolder out;
    write_hf_decoder((out.path / "hf").string(), shape, read_hf_decoder((kFixtures / folder).string(), shape));
    // bfloat16 widens to float32 exactly, so the float32 export holds the same numbers.
    const auto original = all_tensors(kFixtures / folder);
    const auto written = all_tensors(out.path / "hf");
    EXPECT_EQ(written, original);
    // And the export reads back as the same layout tensors.
    EXPECT_EQ(read_hf_decoder((out.path / "hf").string(), shape),
              read_hf_decoder((kFixtures / folder).string(), shape));
  }
}

TEST(HfDecoder, AFolderImportedAsACheckpointExportsAsTheSameFolder) {
  for (const auto& [folder, shape] : std::vector<std::pair<std::string, ModelShape>>{
           {"llama-biases", llama_biases()}, {"qwen3-bf16-sharded", qwen3_tied()}}) {
    SCOPED_TRACE(folder);
    test::TempFolder dir;
    const ModelConfig model = model_of(shape);
    const SavedCheckpoint saved =
        import_hf_decoder((kFixtures / folder).string(), model, {{"step", 0}}, (dir.path / "ckpt").string());
    EXPECT_EQ(saved.step, 0);
    export_hf_decoder(saved.path, model, (dir.path / "hf").string());
    EXPECT_EQ(all_tensors(dir.path / "hf"), all_tensors(kFixtures / folder));
    // config.json says the same model as the one transformers wrote.
    const nlohmann::json ours = read_json(dir.path / "hf" / "config.json");
    const nlohmann::json theirs = read_json(kFixtures / folder / "config.json");
    for (const char* key : {"architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size",
                            "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                            "max_position_embeddings", "rms_norm_eps", "tie_word_embeddings", "attention_bias"})
      EXPECT_EQ(ours[key], theirs[key]) << key;
    EXPECT_EQ(ours["rope_theta"], theirs["rope_parameters"]["rope_theta"]);
    EXPECT_TRUE(ours["rope_scaling"].is_null());
  }
}

TEST(HfDecoder, Qwen3ReadsQkNormAndHeadDimApartFromTheWidth) {
  const ModelShape s = qwen3_tied();
  const DecoderTensors t = read_hf_decoder((kFixtures / "qwen3-bf16-sharded").string(), s);
  EXPECT_EQ(t.at("blocks.1.attn.q_norm.weight").size(), 8u);
  EXPECT_EQ(t.at("blocks.1.attn.qkv.weight").size(), static_cast<std::size_t>((4 + 2 * 2) * 8 * 16));
  EXPECT_EQ(t.at("blocks.1.attn.proj.weight").size(), static_cast<std::size_t>(16 * 4 * 8));
  EXPECT_EQ(t.count("lm_head.weight"), 0u);
}

TEST(HfDecoder, RefusesAFolderThatIsNotTheRunConfigsModelNamingFileAndTensor) {
  const std::string llama = (kFixtures / "llama-biases").string();
  const std::string qwen = (kFixtures / "qwen3-bf16-sharded").string();
  ModelShape more_kv = llama_biases();
  more_kv.KV = 4;
  std::string e = error_of([&] { read_hf_decoder(llama, more_kv); });
  EXPECT_NE(e.find(llama + "/model.safetensors: tensor model.layers.0.self_attn.k_proj.weight has shape [8,16], the "
                           "run config's model needs [16,16]"),
            std::string::npos)
      << e;
  ModelShape deeper = llama_biases();
  deeper.L = 3;
  e = error_of([&] { read_hf_decoder(llama, deeper); });
  EXPECT_NE(e.find("holds no tensor model.layers.2.input_layernorm.weight"), std::string::npos) << e;
  ModelShape no_bias = llama_biases();
  no_bias.attention_bias = false;
  e = error_of([&] { read_hf_decoder(llama, no_bias); });
  EXPECT_NE(e.find("tensor model.layers.0.self_attn.k_proj.bias is not a parameter of the run config's llama model"),
            std::string::npos)
      << e;
  ModelShape as_llama = qwen3_tied();
  as_llama.arch = Architecture::llama;
  e = error_of([&] { read_hf_decoder(qwen, as_llama); });
  EXPECT_NE(e.find("k_norm.weight is not a parameter of the run config's llama model"), std::string::npos) << e;
  ModelShape gpt2 = llama_biases();
  gpt2.arch = Architecture::gpt2;
  EXPECT_NE(error_of([&] { read_hf_decoder(llama, gpt2); }).find("not gpt2's"), std::string::npos);
}

TEST(HfDecoder, RefusesAShardIndexNamingAFileOutsideTheFolderOrATensorItsShardLacks) {
  test::TempFolder dir;
  fs::copy(kFixtures / "qwen3-bf16-sharded", dir.path / "m");
  const fs::path index = dir.path / "m" / "model.safetensors.index.json";
  const auto write_index = [&](const std::string& text) {
    fs::remove(index);
    std::ofstream(index) << text;
  };
  write_index(R"({"weight_map": {"model.embed_tokens.weight": "../outside.safetensors"}})");
  std::string e = error_of([&] { read_hf_decoder((dir.path / "m").string(), qwen3_tied()); });
  EXPECT_NE(e.find(index.string() + ": weight_map.model.embed_tokens.weight is \"../outside.safetensors\", not the "
                                    "name of a file in the folder"),
            std::string::npos)
      << e;
  write_index(R"({"weight_map": {"model.norm.weight": "model-00001-of-00004.safetensors"}})");
  e = error_of([&] { read_hf_decoder((dir.path / "m").string(), qwen3_tied()); });
  EXPECT_NE(e.find("weight_map puts model.norm.weight in model-00001-of-00004.safetensors, which holds no such tensor"),
            std::string::npos)
      << e;
  fs::remove(index);
  e = error_of([&] { read_hf_decoder((dir.path / "m").string(), qwen3_tied()); });
  EXPECT_NE(e.find("holds neither model.safetensors nor model.safetensors.index.json"), std::string::npos) << e;
}

TEST(HfDecoder, ATiedModelsStoredHeadMustBeItsEmbedding) {
  test::TempFolder dir;
  const ModelShape s = qwen3_tied();
  DecoderTensors t = read_hf_decoder((kFixtures / "qwen3-bf16-sharded").string(), s);
  ModelShape untied = s;
  untied.tied = false;
  t["lm_head.weight"] = t.at("embedding.wte");
  write_hf_decoder((dir.path / "same").string(), untied, t);
  EXPECT_EQ(error_of([&] { read_hf_decoder((dir.path / "same").string(), s); }), "");
  t["lm_head.weight"][3] += 1.0f;
  write_hf_decoder((dir.path / "other").string(), untied, t);
  const std::string e = error_of([&] { read_hf_decoder((dir.path / "other").string(), s); });
  EXPECT_NE(e.find("lm_head.weight differs from model.embed_tokens.weight"), std::string::npos) << e;
}

}  // namespace
}  // namespace fsdp
