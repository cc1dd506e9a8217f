// Checkpoints as Hugging Face GPT-2 folders and back (checkpoint/hf_gpt2.h, checkpoint/safetensors.h):
// the tensors GPT-2 names, in its Conv1D layout; an export imported again is the same model, bit for
// bit; and an imported folder is not trusted — a config that is not the run's model is refused with
// every difference named, and a damaged or hostile safetensors file (truncated, a header that lies
// about sizes or ranges, overlapping tensors, a symbolic link, a FIFO, 3,000 mutants of its header)
// is reported naming the file, never read out of bounds. (Logits against transformers itself:
// test/native/hf-export.test.ts.)
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <random>

#include "checkpoint/checkpoint.h"
#include "checkpoint/hf_gpt2.h"
#include "checkpoint/safetensors.h"
#include "file_fixtures.h"
#include "fixtures.h"

namespace fsdp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig model_of(const ModelShape& s) {
  ModelConfig m;
  m.vocab_size = static_cast<int>(s.V), m.d_model = static_cast<int>(s.C), m.n_layers = static_cast<int>(s.L),
  m.n_heads = static_cast<int>(s.H);
  m.max_seq_len = static_cast<int>(s.S), m.mlp_ratio = static_cast<int>(s.F / s.C), m.tie_embeddings = s.tied;
  return m;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/** A model saved as a checkpoint and exported as a Hugging Face folder. */
struct Exported {
  test::TempFolder root;
  test::FastModel model;
  ModelConfig config;
  fs::path checkpoint, hf;
  explicit Exported(const ModelShape& s) : model(s), config(model_of(s)) {
    checkpoint = save_checkpoint((root.path / "ckpt").string(), 5, {{"step", 5}}, model.layout, *model.state).path;
    hf = root.path / "hf";
    export_hf_gpt2(checkpoint.string(), config, hf.string());
  }
  /** What importing the folder threw, or "" when it imported. */
  std::string import_error(const ModelConfig& m) const {
    try {
      import_hf_gpt2(hf.string(), m, {{"step", 0}}, (root.path / "imported").string());
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }
  std::string import_error() const { return import_error(config); }
};

TEST(HfGpt2, ExportsGpt2NamesShapesAndConv1dLayout) {
  Exported e(test::small_shape(11, 8, 2, 2, 6, /*tied=*/true));
  const json cfg = json::parse(read_text(e.hf / "config.json"));
  EXPECT_EQ(cfg["model_type"], "gpt2");
  EXPECT_EQ(cfg["architectures"], json::array({"GPT2LMHeadModel"}));
  EXPECT_EQ(cfg["n_embd"], 8);
  EXPECT_EQ(cfg["n_layer"], 2);
  EXPECT_EQ(cfg["n_positions"], 6);
  EXPECT_EQ(cfg["n_inner"], 32);
  EXPECT_EQ(cfg["activation_function"], "gelu_new");
  EXPECT_EQ(cfg["tie_word_embeddings"], true);
  EXPECT_TRUE(hf_gpt2_differences(cfg, e.config).empty());

  const SafetensorsFile f((e.hf / "model.safetensors").string());
  EXPECT_EQ(f.tensors().size(), 2u + 2 * 12 + 2);  // wte, wpe; 12 per block; ln_f; no lm_head (tied)
  EXPECT_FALSE(f.has("lm_head.weight"));
  EXPECT_EQ(f.tensors().at("transformer.h.1.attn.c_attn.weight").shape, (std::vector<std::int64_t>{8, 24}));
  EXPECT_EQ(f.tensors().at("transformer.h.0.mlp.c_proj.weight").shape, (std::vector<std::int64_t>{32, 8}));
  // Conv1D: GPT-2's [in][out] is the runtime's [out][in].
  const UnitLayout& block1 = e.model.layout.units[e.model.layout.block_unit(1)];
  const float* qkv = e.model.state->params(e.model.layout.block_unit(1)) + block1.segment("attn.qkv.weight").offset;
  const std::vector<float> c_attn = f.floats("transformer.h.1.attn.c_attn.weight");
  for (int out = 0; out < 24; ++out)
    for (int in = 0; in < 8; ++in) ASSERT_EQ(c_attn[in * 24 + out], qkv[out * 8 + in]) << out << "," << in;
  const float* wte = e.model.state->params(0);
  const std::vector<float> exported_wte = f.floats("transformer.wte.weight");
  EXPECT_TRUE(std::equal(exported_wte.begin(), exported_wte.end(), wte));
  // The data starts 8-byte aligned.
  std::uint64_t header = 0;
  std::ifstream(e.hf / "model.safetensors", std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u);
}

TEST(HfGpt2, ImportOfAnExportIsTheSameModelBitForBit) {
  for (bool tied : {true, false}) {
    Exported e(test::small_shape(13, 8, 3, 2, 7, tied));
    ASSERT_EQ(e.import_error(), "");
    test::FastModel again(test::small_shape(13, 8, 3, 2, 7, tied), 0, {}, /*seed=*/99);
    const json trainer =
        load_checkpoint((e.root.path / "imported" / "step-00000000").string(), again.layout, *again.state);
    EXPECT_EQ(trainer["step"], 0);
    for (int u = 0; u < again.state->unit_count(); ++u) {
      const std::size_t n = again.layout.units[u].numel;
      EXPECT_TRUE(std::equal(again.state->params(u), again.state->params(u) + n, e.model.state->params(u)))
          << again.layout.units[u].name << " tied " << tied;
      const LocalShard sh = again.state->local(u);
      EXPECT_TRUE(std::all_of(sh.m, sh.m + sh.count, [](float x) { return x == 0; })) << "AdamW starts over";
    }
  }
}

TEST(HfGpt2, ReadsTheOriginalGpt2NamesAndIgnoresItsMaskBuffers) {
  Exported e(test::small_shape());
  // As the original GPT-2 files: no "transformer." prefix, each block's causal-mask buffer beside its weights.
  const SafetensorsFile f((e.hf / "model.safetensors").string());
  std::vector<std::vector<float>> keep;
  std::vector<TensorToWrite> renamed;
  for (const auto& [name, t] : f.tensors()) {
    keep.push_back(f.floats(name));
    renamed.push_back({name.substr(std::string("transformer.").size()), t.shape, keep.back().data()});
  }
  const std::vector<float> mask(36, 1.0f);
  renamed.push_back({"h.0.attn.bias", {1, 1, 6, 6}, mask.data()});
  write_safetensors((e.hf / "model.safetensors").string(), renamed);
  EXPECT_EQ(e.import_error(), "");
}

TEST(HfGpt2, AFolderOfAnotherModelIsRefusedWithEveryDifferenceNamed) {
  Exported e(test::small_shape());
  ModelConfig other = e.config;
  other.d_model = 16, other.n_layers = 3, other.tie_embeddings = false;
  const std::string error = e.import_error(other);
  EXPECT_NE(error.find("config.json is not the run config's model"), std::string::npos) << error;
  EXPECT_NE(error.find("n_embd is 8, the run config's model.d_model 16"), std::string::npos) << error;
  EXPECT_NE(error.find("n_layer is 2, the run config's model.n_layers 3"), std::string::npos) << error;
  EXPECT_NE(error.find("tie_word_embeddings is true"), std::string::npos) << error;

  json cfg = json::parse(read_text(e.hf / "config.json"));
  cfg["activation_function"] = "gelu";
  cfg["layer_norm_epsilon"] = 1e-6;
  cfg["model_type"] = "llama";
  const auto diffs = hf_gpt2_differences(cfg, e.config);
  ASSERT_EQ(diffs.size(), 3u);
  EXPECT_NE(diffs[0].find("model_type is \"llama\""), std::string::npos);
  EXPECT_NE(diffs[1].find("activation_function is \"gelu\""), std::string::npos);
  EXPECT_NE(diffs[2].find("layer_norm_epsilon"), std::string::npos);
  // Keys left out take GPT2Config's defaults, as transformers reads them: n_embd 768.
  cfg = json::parse(read_text(e.hf / "config.json"));
  cfg.erase("n_embd");
  EXPECT_NE(hf_gpt2_differences(cfg, e.config).at(0).find("n_embd is 768"), std::string::npos);
}

TEST(HfGpt2, MissingMisshapenOrUnknownTensorsAreRefused) {
  Exported e(test::small_shape());
  const fs::path file = e.hf / "model.safetensors";
  const std::string original = read_text(file);
  const auto rewrite =
      [&](const std::function<void(std::vector<TensorToWrite>&, std::vector<std::vector<float>>&)>& edit) {
        test::write_bytes(file, original);
        const SafetensorsFile f(file.string());
        std::vector<std::vector<float>> keep;
        keep.reserve(f.tensors().size() + 1);
        std::vector<TensorToWrite> ts;
        for (const auto& [name, t] : f.tensors())
          keep.push_back(f.floats(name)), ts.push_back({name, t.shape, keep.back().data()});
        edit(ts, keep);
        write_safetensors(file.string(), ts);
      };
  rewrite([](auto& ts, auto&) {
    ts.erase(std::find_if(ts.begin(), ts.end(),
                          [](const TensorToWrite& t) { return t.name == "transformer.h.1.ln_2.bias"; }));
  });
  EXPECT_NE(e.import_error().find("holds no tensor transformer.h.1.ln_2.bias (blocks.1.ln2.bias"), std::string::npos)
      << e.import_error();
  rewrite([](auto& ts, auto&) {
    for (auto& t : ts)
      if (t.name == "transformer.h.0.attn.c_attn.weight") t.shape = {24, 8};  // nn.Linear's layout, not Conv1D's
  });
  EXPECT_NE(e.import_error().find(
                "tensor transformer.h.0.attn.c_attn.weight has shape [24,8], the run config's model needs [8,24]"),
            std::string::npos)
      << e.import_error();
  rewrite([](auto& ts, auto& keep) {
    keep.push_back(std::vector<float>(4, 0.0f));
    ts.push_back({"transformer.h.0.adapter.weight", {2, 2}, keep.back().data()});
  });
  EXPECT_NE(e.import_error().find("tensor transformer.h.0.adapter.weight is not part of a GPT-2 model"),
            std::string::npos)
      << e.import_error();
}

/** What opening the file threw, or "" when its header was accepted. */
std::string open_error(const fs::path& p) {
  try {
    SafetensorsFile f(p.string());
    for (const auto& [name, t] : f.tensors()) f.floats(name);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string with_header(const std::string& header, const std::string& data) {
  const std::uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

TEST(Safetensors, DamagedOrHostileFilesAreReportedNamingTheFile) {
  test::TempFolder root;
  const fs::path p = root.path / "model.safetensors";
  const std::string data(16, '\0');
  const struct {
    std::string bytes, expected;
  } cases[] = {
      {"abc", "too short for a safetensors file"},
      {with_header("{}", "").substr(0, 9), "header of 2 bytes in a file of 9"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}", "header of 9223372036854775807 bytes"},
      {with_header("{not json", data), "the header is not JSON"},
      {with_header("[1,2]", data), "not a JSON object"},
      {with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,32]}})", data),
       "tensor \"a\": bytes [0, 32) outside the file's 16 bytes"},
      {with_header(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[8,4]}})", data), "bytes [8, 4)"},
      {with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data),
       "shape [3] of F32 needs 12 bytes, data_offsets give 16"},
      {with_header(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776,1099511627776],"data_offsets":[0,16]}})",
                   data),
       "needs"},
      {with_header(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", data), "shape holds -1"},
      {with_header(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           data),
       "two tensors share bytes from 4"},
      {with_header(R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", data),
       "tensor a is I64; only F32, F16 and BF16 are read"},
      {with_header(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", data), "dtype is missing"},
      {with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data),
       "data_offsets is missing or not [begin, end]"},
  };
  for (const auto& c : cases) {
    test::write_bytes(p, c.bytes);
    const std::string error = open_error(p);
    EXPECT_NE(error.find(p.string()), std::string::npos) << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\", got: " << error;
  }
  // 16-bit tensors are widened exactly.
  const std::uint16_t halves[2] = {0x3c00, 0xc000};  // F16 1, -2
  const std::uint16_t bf[2] = {0x3f80, 0x4040};      // BF16 1, 3
  test::write_bytes(
      p,
      with_header(
          R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})",
          std::string(reinterpret_cast<const char*>(halves), 4) + std::string(reinterpret_cast<const char*>(bf), 4)));
  const SafetensorsFile f(p.string());
  EXPECT_EQ(f.floats("h"), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.floats("b"), (std::vector<float>{1.0f, 3.0f}));
}

TEST(Safetensors, NeitherASymbolicLinkNorAFifoIsOpened) {
  Exported e(test::small_shape());
  const fs::path file = e.hf / "model.safetensors";
  fs::rename(file, e.root.path / "elsewhere.safetensors");
  fs::create_symlink(e.root.path / "elsewhere.safetensors", file);
  EXPECT_NE(e.import_error().find(file.string()), std::string::npos) << e.import_error();
  fs::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  const std::string error = e.import_error();  // returns at once: a FIFO is refused, not waited on
  EXPECT_NE(error.find(file.string()), std::string::npos) << error;
}

TEST(Safetensors, MutantHeadersNeverReadOutOfBounds) {
  Exported e(test::small_shape());
  const fs::path file = e.hf / "model.safetensors";
  const std::string original = read_text(file);
  std::uint64_t header = 0;
  std::memcpy(&header, original.data(), 8);
  std::mt19937_64 rng(23);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = rng() % (8 + header);  // the size or the JSON
      bytes[at] = static_cast<char>(rng() % 3 == 0 ? "0123456789[]{}\",:-"[rng() % 18] : static_cast<char>(rng()));
    }
    if (rng() % 10 == 0) bytes.resize(rng() % bytes.size());
    test::write_bytes(file, bytes);
    if (!open_error(file).empty()) ++refused;
  }
  EXPECT_GT(refused, 1500);
}

}  // namespace
}  // namespace fsdp
