// The decoder family's float64 reference path against transformers: each fixture of
// test/fixtures/reference/decoder/ (made by test/reference/make_decoder_fixtures.py from the pinned
// transformers' LlamaForCausalLM / Qwen3ForCausalLM in float64; format in
// test/fixtures/reference/decoder/README.md) is replayed by reference/reference_decoder.h from its
// weights and batch: the parameter layout, RoPE's inverse frequencies, the logits, the loss, every
// parameter's gradient and a few AdamW steps must equal transformers'. The worst error of each
// quantity is recorded as a test property.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "reference/reference_decoder.h"
#include "reference_fixture.h"

namespace fsdp {
namespace {

using nlohmann::json;

inline constexpr const char* kFormat = "fsdp-studio/decoder-reference-fixture";
// float64 on both sides, the same math in a different order: the 1e-10 relative.
constexpr double kTolerance = 1e-10;
// transformers computes inv_freq in float32 (the reference in double): float32 rounding of a power.
constexpr double kInvFreqTolerance = 1e-6;

std::vector<std::filesystem::path> decoder_fixture_files() {
  std::vector<std::filesystem::path> files;
  const auto dir = test::reference_fixture_dir() / "decoder";
  if (!std::filesystem::is_directory(dir)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

/** The reference's spec from a config.json's keys, as transformers reads them. */
reference::DecoderSpec spec_of(const json& hf, const std::string& family) {
  reference::DecoderSpec s;
  s.V = hf.at("vocab_size"), s.C = hf.at("hidden_size"), s.L = hf.at("num_hidden_layers");
  s.H = hf.at("num_attention_heads"), s.KV = hf.value("num_key_value_heads", s.H), s.F = hf.at("intermediate_size");
  s.D = hf.contains("head_dim") ? hf.at("head_dim").get<long>() : s.C / s.H;
  s.tied = hf.at("tie_word_embeddings"), s.attention_bias = hf.value("attention_bias", false);
  s.mlp_bias = hf.value("mlp_bias", false), s.qk_norm = family == "qwen3", s.eps = hf.at("rms_norm_eps");
  const json& rope = hf.at("rope_parameters");
  s.rope.theta = rope.at("rope_theta");
  const std::string type = rope.at("rope_type");
  if (type == "llama3") {
    s.rope.llama3 = true, s.rope.factor = rope.at("factor"), s.rope.low_freq_factor = rope.at("low_freq_factor");
    s.rope.high_freq_factor = rope.at("high_freq_factor");
    s.rope.original_max_position_embeddings = rope.at("original_max_position_embeddings");
  } else if (type != "default") {
    throw std::runtime_error("rope_type " + type + " is neither default nor llama3");
  }
  return s;
}

/** Keeps the worst error of each quantity, and fails each comparison over its tolerance. */
class Agreement {
 public:
  void check(const std::string& quantity, double error, double tolerance, const std::string& where) {
    EXPECT_LE(error, tolerance) << quantity << " at " << where;
    auto& w = worst_[quantity];
    if (error >= w.first) w = {error, where};
  }
  void record(const std::string& fixture) const {
    for (const auto& [quantity, w] : worst_) {
      char text[64];
      std::snprintf(text, sizeof text, "%.3g", w.first);
      ::testing::Test::RecordProperty("worst_" + quantity, std::string(text) + " at " + w.second);
      std::printf("  %s: worst %s %s at %s\n", fixture.c_str(), quantity.c_str(), text, w.second.c_str());
    }
  }

 private:
  std::map<std::string, std::pair<double, std::string>> worst_;
};

double relative(double a, double b) {
  return b == 0 ? std::fabs(a) : std::fabs(a - b) / std::fabs(b);
}

struct DecoderFixture {
  std::string name;
  json doc;
  reference::DecoderSpec spec;
  std::vector<std::int32_t> inputs, targets;
  long B = 0, T = 0;
  reference::Tokens tokens() const { return {inputs.data(), targets.data(), B, T}; }
};

DecoderFixture load(const std::filesystem::path& path) {
  DecoderFixture f;
  f.doc = test::read_reference_file(path, kFormat);
  f.name = f.doc.at("name");
  f.spec = spec_of(f.doc.at("hf_config"), f.doc.at("family"));
  const json& batch = f.doc.at("batch");
  f.B = batch.at("B"), f.T = batch.at("T");
  for (const char* key : {"inputs", "targets"})
    for (const auto& row : batch.at(key))
      for (const auto& id : row)
        (std::string(key) == "inputs" ? f.inputs : f.targets).push_back(id.get<std::int32_t>());
  if (static_cast<long>(f.inputs.size()) != f.B * f.T || static_cast<long>(f.targets.size()) != f.B * f.T)
    throw std::runtime_error(path.filename().string() + ": batch is not B x T");
  return f;
}

std::vector<double> slice(const std::vector<double>& v, const reference::DecoderParam& p) {
  return {v.begin() + p.offset, v.begin() + p.offset + p.numel};
}

std::string test_name(const ::testing::TestParamInfo<std::filesystem::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

class DecoderFixtureTest : public ::testing::TestWithParam<std::filesystem::path> {};

// transformers' named parameters, stacked as decoder-layout.md says, are the reference's, in its order.
TEST_P(DecoderFixtureTest, LayoutIsTransformersParametersInOurOrder) {
  const DecoderFixture f = load(GetParam());
  const auto ours = reference::decoder_params(f.spec);
  const json& theirs = f.doc.at("parameters");
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    EXPECT_EQ(ours[i].name, theirs[i].at("name").get<std::string>()) << "parameter " << i;
    EXPECT_EQ(ours[i].offset, theirs[i].at("offset").get<std::size_t>()) << ours[i].name;
    EXPECT_EQ(ours[i].numel, theirs[i].at("numel").get<std::size_t>()) << ours[i].name;
  }
  EXPECT_EQ(reference::decoder_param_count(f.spec), f.doc.at("n_params").get<std::size_t>());
}

// The runtime's ParamLayout (model/param_layout.cc) lays the family out as the reference does: the
// same names, order, sizes and decay groups, units end to end — so both match transformers' tensors.
TEST_P(DecoderFixtureTest, RuntimeParamLayoutIsTheReferences) {
  const DecoderFixture f = load(GetParam());
  ModelShape shape;
  shape.arch = f.doc.at("family") == "qwen3" ? Architecture::qwen3 : Architecture::llama;
  shape.V = f.spec.V, shape.C = f.spec.C, shape.L = f.spec.L, shape.H = f.spec.H, shape.KV = f.spec.KV;
  shape.D = f.spec.D, shape.F = f.spec.F, shape.S = f.T, shape.tied = f.spec.tied;
  shape.attention_bias = f.spec.attention_bias, shape.mlp_bias = f.spec.mlp_bias;
  const ParamLayout layout = ParamLayout::of(shape);
  const auto ours = reference::decoder_params(f.spec);
  std::size_t i = 0, unit_start = 0;
  for (const auto& unit : layout.units) {
    for (const auto& seg : unit.segments) {
      ASSERT_LT(i, ours.size()) << "the runtime has more parameters, from " << seg.name;
      EXPECT_EQ(seg.name, ours[i].name);
      EXPECT_EQ(unit_start + seg.offset, ours[i].offset) << seg.name;
      EXPECT_EQ(seg.numel, ours[i].numel) << seg.name;
      EXPECT_EQ(seg.decay, ours[i].decay) << seg.name;
      ++i;
    }
    unit_start += unit.numel;
  }
  EXPECT_EQ(i, ours.size());
  EXPECT_EQ(layout.total, reference::decoder_param_count(f.spec));
}

TEST_P(DecoderFixtureTest, InverseFrequenciesMatchTransformersFloat32) {
  const DecoderFixture f = load(GetParam());
  const auto want = test::decode_array(f.doc.at("transformers_inv_freq"), f.name + " transformers_inv_freq");
  const auto got = reference::rope_inv_freq(f.spec.rope, f.spec.D);
  ASSERT_EQ(got.size(), want.size());
  Agreement a;
  for (std::size_t j = 0; j < got.size(); ++j)
    a.check("inv_freq", relative(got[j], want[j]), kInvFreqTolerance, "j " + std::to_string(j));
  a.record(f.name);
}

TEST_P(DecoderFixtureTest, Float64LogitsLossAndGradientsMatchTransformers) {
  const DecoderFixture f = load(GetParam());
  const auto params = test::decode_array(f.doc.at("params"), f.name + " params");
  ASSERT_EQ(params.size(), reference::decoder_param_count(f.spec));
  std::vector<double> grads(params.size(), 0.0), logits;
  const double loss = reference::decoder_forward_backward(f.spec, params, f.tokens(), &grads, 1.0, &logits);
  Agreement a;
  a.check("loss", relative(loss, f.doc.at("loss")), kTolerance, "step 0");
  a.check("logits", test::relative_error(logits, test::decode_array(f.doc.at("logits"), f.name + " logits")),
          kTolerance, "all");
  const auto want = test::decode_array(f.doc.at("grads"), f.name + " grads");
  for (const auto& p : reference::decoder_params(f.spec))
    a.check("grad", test::relative_error(slice(grads, p), slice(want, p)), kTolerance, p.name);
  a.record(f.name);
}

TEST_P(DecoderFixtureTest, Float64AdamWStepsMatchTorch) {
  const DecoderFixture f = load(GetParam());
  const json& adamw = f.doc.at("adamw");
  auto params = test::decode_array(f.doc.at("params"), f.name + " params");
  std::vector<double> m(params.size(), 0.0), v(params.size(), 0.0);
  Agreement a;
  const long steps = adamw.at("steps");
  for (long t = 1; t <= steps; ++t) {
    std::vector<double> grads(params.size(), 0.0);
    const double loss = reference::decoder_forward_backward(f.spec, params, f.tokens(), &grads);
    a.check("loss", relative(loss, adamw.at("losses").at(t - 1)), kTolerance, "step " + std::to_string(t));
    reference::decoder_adamw_step(f.spec, params, grads, m, v, t, adamw.at("lr"), adamw.at("betas").at(0),
                                  adamw.at("betas").at(1), adamw.at("eps"), adamw.at("weight_decay"), 1.0);
  }
  const auto want = test::decode_array(adamw.at("final_params"), f.name + " adamw.final_params");
  for (const auto& p : reference::decoder_params(f.spec))
    a.check("final_weights", test::relative_error(slice(params, p), slice(want, p)), kTolerance, p.name);
  a.record(f.name);
}

INSTANTIATE_TEST_SUITE_P(Transformers, DecoderFixtureTest, ::testing::ValuesIn(decoder_fixture_files()), test_name);

TEST(DecoderFixtures, BothFamiliesAreCommitted) {
  std::map<std::string, int> families;
  for (const auto& path : decoder_fixture_files()) ++families[load(path).doc.at("family").get<std::string>()];
  EXPECT_GE(families["llama"], 2) << "in " << test::reference_fixture_dir() / "decoder"
                                  << "; make them with test/reference/make_decoder_fixtures.py";
  EXPECT_GE(families["qwen3"], 2);
}

}  // namespace
}  // namespace fsdp
