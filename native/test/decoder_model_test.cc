// The float32 decoder model (model/decoder.h) against the float64 reference decoder
// (reference/reference_decoder.h) on tiny Llama and Qwen3 configs: loss, logits and every
// parameter tensor's gradient under each activation-checkpointing policy, then AdamW steps' losses;
// and against transformers' own numbers (the decoder fixtures).
// The two share decoder-layout.md's flat layout, so the runtime's units concatenated are the
// reference's vector.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "fixtures.h"
#include "model/decoder.h"
#include "model/flops.h"
#include "optim/adamw.h"
#include "parallel/replicated_state.h"
#include "reference/reference_decoder.h"
#include "reference_fixture.h"

namespace fsdp {
namespace {

using test::relative_error;

/** A tiny config of the family: the runtime's shape and math, and the reference's spec of the same model. */
struct TinyDecoder {
  ModelShape shape;
  DecoderMath math;

  reference::DecoderSpec spec() const {
    reference::DecoderSpec s;
    s.V = shape.V, s.C = shape.C, s.L = shape.L, s.H = shape.H, s.KV = shape.KV, s.D = shape.D, s.F = shape.F;
    s.tied = shape.tied, s.attention_bias = shape.attention_bias, s.mlp_bias = shape.mlp_bias;
    s.qk_norm = shape.qk_norm(), s.eps = math.rms_norm_eps;
    s.rope.theta = math.rope_theta;
    s.rope.llama3 = math.rope_scaling.rope_type == "llama3";
    s.rope.factor = math.rope_scaling.factor, s.rope.low_freq_factor = math.rope_scaling.low_freq_factor;
    s.rope.high_freq_factor = math.rope_scaling.high_freq_factor;
    s.rope.original_max_position_embeddings = math.rope_scaling.original_max_position_embeddings;
    return s;
  }
};

/** Llama: 4 query heads on 2 key-value heads, llama3 scaling whose bands the 4 frequencies all fall in. */
TinyDecoder tiny_llama(bool tied, bool biases, long long KV = 2) {
  TinyDecoder t;
  ModelShape& s = t.shape;
  s.arch = Architecture::llama;
  s.V = 37, s.C = 32, s.L = 2, s.H = 4, s.KV = KV, s.D = 8, s.F = 40, s.S = 16, s.tied = tied;
  s.attention_bias = s.mlp_bias = biases;
  t.math.rms_norm_eps = 1e-5, t.math.rope_theta = 10000;
  t.math.rope_scaling = {"llama3", 8, 1, 4, 16};
  return t;
}

/** Qwen3: per-head q/k norms, head_dim 12 while C / H is 8. */
TinyDecoder tiny_qwen3(bool tied) {
  TinyDecoder t;
  ModelShape& s = t.shape;
  s.arch = Architecture::qwen3;
  s.V = 41, s.C = 32, s.L = 2, s.H = 4, s.KV = 2, s.D = 12, s.F = 24, s.S = 16, s.tied = tied;
  t.math.rms_norm_eps = 1e-6, t.math.rope_theta = 1000000;
  return t;
}

/** The float32 model on one process over replicated units, from the given float64 parameters. */
struct FastDecoder {
  CpuBackend be;
  ParamLayout layout;
  std::unique_ptr<ReplicatedState> state;
  std::unique_ptr<Decoder> model;

  FastDecoder(const TinyDecoder& t, const std::vector<double>& params, const ActivationPolicy& policy)
      : layout(ParamLayout::of(t.shape)) {
    state = std::make_unique<ReplicatedState>(be, layout);
    model = std::make_unique<Decoder>(be, layout, *state, t.math, policy);
    std::size_t at = 0;
    for (int u = 0; u < state->unit_count(); ++u)
      for (std::size_t i = 0; i < layout.units[u].numel; ++i) state->params(u)[i] = static_cast<float>(params[at++]);
  }
  std::vector<double> flat_grads() const {
    std::vector<double> g;
    for (int u = 0; u < state->unit_count(); ++u)
      g.insert(g.end(), state->grads(u), state->grads(u) + layout.units[u].numel);
    return g;
  }
};

/** Matrices N(0, 0.3²), norm weights around 1, biases around 0: every op matters. */
std::vector<double> random_params(const reference::DecoderSpec& s, std::uint64_t seed) {
  std::vector<double> p(reference::decoder_param_count(s));
  const std::vector<double> r = test::random_vector(p.size(), seed);
  for (const auto& seg : reference::decoder_params(s)) {
    const bool norm = seg.name.find("norm") != std::string::npos || seg.name.find("ln") != std::string::npos;
    for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i)
      p[i] = norm ? 1.0 + 0.2 * r[i] : seg.decay ? 0.3 * r[i] : 0.1 * r[i];
  }
  return p;
}

TEST(DecoderModel, LayoutIsTheReferenceVector) {
  for (const TinyDecoder& t : {tiny_llama(true, false), tiny_llama(false, true), tiny_qwen3(false)}) {
    const ParamLayout layout = ParamLayout::of(t.shape);
    const auto ref = reference::decoder_params(t.spec());
    std::size_t k = 0, base = 0;
    for (const auto& u : layout.units) {
      for (const auto& seg : u.segments) {
        ASSERT_LT(k, ref.size());
        EXPECT_EQ(seg.name, ref[k].name);
        EXPECT_EQ(base + seg.offset, ref[k].offset) << seg.name;
        EXPECT_EQ(seg.numel, ref[k].numel) << seg.name;
        ++k;
      }
      base += u.numel;
    }
    EXPECT_EQ(k, ref.size());
  }
}

/** Loss, logits and every tensor's gradient, under each activation policy. */
void check_against_reference(const TinyDecoder& t) {
  const reference::DecoderSpec spec = t.spec();
  const std::vector<double> params = random_params(spec, 5);
  const test::RandomTokens tok(3, 11, t.shape.V, 77);
  std::vector<double> ref_grads(params.size(), 0.0), ref_logits;
  const double ref_loss =
      reference::decoder_forward_backward<double>(spec, params, tok.tokens(), &ref_grads, 0.5, &ref_logits);
  const int L = static_cast<int>(t.shape.L);
  for (const ActivationPolicy& policy :
       {ActivationPolicy::none(L), ActivationPolicy::every_n(L, 1), ActivationPolicy::selective(L)}) {
    SCOPED_TRACE(policy.describe());
    FastDecoder fast(t, params, policy);
    std::vector<float> logits(static_cast<std::size_t>(tok.B * tok.T * t.shape.V));
    const double eval_loss = fast.model->evaluate(tok.batch(), logits.data());
    EXPECT_LT(std::fabs(eval_loss - ref_loss) / ref_loss, 1e-5) << "evaluate's loss";
    EXPECT_LT(relative_error(logits, ref_logits), 1e-5) << "logits";
    fast.state->zero_grads();
    const double loss = fast.model->forward_backward(tok.batch(), 0.5f, 0);
    EXPECT_LT(std::fabs(loss - ref_loss) / ref_loss, 1e-5) << "loss";
    const std::vector<double> grads = fast.flat_grads();
    ASSERT_EQ(grads.size(), ref_grads.size());
    for (const auto& seg : reference::decoder_params(spec)) {
      const std::vector<double> a(grads.begin() + seg.offset, grads.begin() + seg.offset + seg.numel);
      const std::vector<double> b(ref_grads.begin() + seg.offset, ref_grads.begin() + seg.offset + seg.numel);
      EXPECT_LT(relative_error(a, b), 1e-4) << seg.name;
    }
  }
}

TEST(DecoderModel, LlamaGqaLlama3ScalingTiedMatchesTheReference) {
  check_against_reference(tiny_llama(true, false));
}
TEST(DecoderModel, LlamaUntiedWithBiasesOneKvHeadMatchesTheReference) {
  check_against_reference(tiny_llama(false, true, 1));
}
TEST(DecoderModel, Qwen3QkNormHeadDimApartUntiedMatchesTheReference) {
  check_against_reference(tiny_qwen3(false));
}
TEST(DecoderModel, Qwen3TiedMatchesTheReference) {
  check_against_reference(tiny_qwen3(true));
}

TEST(DecoderModel, InverseFrequenciesAreTheReferencesInFloat32) {
  const TinyDecoder t = tiny_llama(true, false);
  const std::vector<float> inv = rope_inv_freq(t.math, t.shape.D);
  const std::vector<double> ref = reference::rope_inv_freq(t.spec().rope, t.shape.D);
  ASSERT_EQ(inv.size(), ref.size());
  for (std::size_t j = 0; j < inv.size(); ++j) EXPECT_EQ(inv[j], static_cast<float>(ref[j])) << j;
  EXPECT_THROW(rope_inv_freq(t.math, 7), std::invalid_argument);
}

/**
 * AdamW steps on both paths from the same start: each step's loss. The reference steps with the
 * runtime layout's decay flags (decoder-layout.md: matrix weights; wte not, as GPT-2).
 */
void compare_training(const TinyDecoder& t, int steps) {
  const reference::DecoderSpec spec = t.spec();
  std::vector<double> params = random_params(spec, 9);
  FastDecoder fast(t, params, ActivationPolicy::none(static_cast<int>(t.shape.L)));
  std::vector<bool> decay;
  for (const auto& u : fast.layout.units)
    for (const auto& seg : u.segments) decay.insert(decay.end(), seg.numel, seg.decay);
  std::vector<double> m(params.size(), 0.0), v(params.size(), 0.0);
  TrainingConfig tc;
  tc.weight_decay = 0.1;
  // Adam moves a weight by about lr whatever its gradient's size, so a gradient that is zero up to
  // float32 rounding (|g| ~ 1e-8 here) moves its weight by +lr on one path and -lr on the other
  // when rounding flips its sign, and the two runs part (2026-12-07: OpenBLAS's SkylakeX kernels
  // on an AMD EPYC Zen 4 flipped one such gradient at step 1 and the loss parted by 4e-5 by step
  // 4). An epsilon above that rounding keeps such a weight still on both paths and leaves every
  // other update Adam's (95 % of the nonzero gradients here are over 1e-4, the median 2e-2; the
  // loss then parts by at most 2.4e-6 on those kernels).
  tc.eps = 1e-6;
  AdamW adamw(fast.be, fast.layout, tc);
  const double lr = 3e-3;
  for (int step = 1; step <= steps; ++step) {
    const test::RandomTokens tok(2, 9, t.shape.V, 300 + step);
    fast.state->zero_grads();
    const double fast_loss = fast.model->forward_backward(tok.batch(), 1.0f, 0);
    std::vector<double> grads(params.size(), 0.0);
    const double ref_loss = reference::decoder_forward_backward<double>(spec, params, tok.tokens(), &grads);
    EXPECT_LT(std::fabs(fast_loss - ref_loss) / ref_loss, 1e-5) << "loss at step " << step;
    ASSERT_FALSE(adamw.step(*fast.state, step, lr, 1.0f, 1.0).has_value());
    for (std::size_t i = 0; i < params.size(); ++i) {
      m[i] = tc.beta1 * m[i] + (1 - tc.beta1) * grads[i];
      v[i] = tc.beta2 * v[i] + (1 - tc.beta2) * grads[i] * grads[i];
      const double m_hat = m[i] / (1 - std::pow(tc.beta1, step)), v_hat = v[i] / (1 - std::pow(tc.beta2, step));
      if (decay[i]) params[i] -= lr * tc.weight_decay * params[i];
      params[i] -= lr * m_hat / (std::sqrt(v_hat) + tc.eps);
    }
  }
}

TEST(DecoderModel, FiveAdamWStepsLlamaMatchTheReference) {
  compare_training(tiny_llama(false, true), 5);
}
TEST(DecoderModel, FiveAdamWStepsQwen3MatchTheReference) {
  compare_training(tiny_qwen3(true), 5);
}

TEST(DecoderModel, MakeModelBuildsTheFamilysModelAndGptRefusesItsLayout) {
  const TinyDecoder t = tiny_llama(true, false);
  CpuBackend be;
  const ParamLayout layout = ParamLayout::of(t.shape);
  ReplicatedState state(be, layout);
  ModelConfig m;
  m.architecture = Architecture::llama;
  m.rope_scaling = t.math.rope_scaling;
  const auto model = make_model(be, layout, state, m, ActivationPolicy::none(2));
  EXPECT_NE(dynamic_cast<Decoder*>(model.get()), nullptr);
  EXPECT_THROW(Gpt(be, layout, state, 0.0f, ActivationPolicy::none(2)), std::invalid_argument);
}

}  // namespace
}  // namespace fsdp

namespace fsdp {
namespace {

// MFU's numerator for the family: a block's forward products are 2 FLOPs per multiply-add of each
// matrix weight (qkv, proj, gate_up, down), whatever KV and D are.
TEST(DecoderModel, BlockFlopsAreTwiceTheBlocksMatrixWeights) {
  for (const TinyDecoder& t : {tiny_llama(true, true, 1), tiny_qwen3(false)}) {
    const ParamLayout layout = ParamLayout::of(t.shape);
    double weights = 0;
    for (const auto& seg : layout.units[layout.block_unit(0)].segments)
      if (seg.decay) weights += static_cast<double>(seg.numel);
    EXPECT_EQ(block_matmul_flops_per_token(t.shape), 2 * weights);
    EXPECT_EQ(attention_flops_per_token(t.shape, 10), 2.0 * t.shape.H * t.shape.D * 10);
  }
}

}  // namespace
}  // namespace fsdp

namespace fsdp {
namespace {

// The float32 model against transformers itself: each fixture of test/fixtures/reference/decoder/
// (LlamaForCausalLM / Qwen3ForCausalLM in float64, from test/reference/make_decoder_fixtures.py)
// loaded into the runtime's units; its logits, loss and every gradient within float32 tolerances.
TEST(DecoderModel, Float32MatchesTransformersFixtures) {
  const auto dir = test::reference_fixture_dir() / "decoder";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  ASSERT_GE(files.size(), 2u) << dir;
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const nlohmann::json doc = test::read_reference_file(file, "fsdp-studio/decoder-reference-fixture");
    const nlohmann::json& hf = doc.at("hf_config");
    TinyDecoder t;
    ModelShape& s = t.shape;
    s.arch = doc.at("family") == "qwen3" ? Architecture::qwen3 : Architecture::llama;
    s.V = hf.at("vocab_size"), s.C = hf.at("hidden_size"), s.L = hf.at("num_hidden_layers");
    s.H = hf.at("num_attention_heads"), s.KV = hf.value("num_key_value_heads", s.H), s.F = hf.at("intermediate_size");
    s.D = hf.contains("head_dim") ? hf.at("head_dim").get<long long>() : s.C / s.H;
    s.tied = hf.at("tie_word_embeddings"), s.attention_bias = hf.value("attention_bias", false);
    s.mlp_bias = hf.value("mlp_bias", false), s.S = hf.at("max_position_embeddings");
    t.math.rms_norm_eps = hf.at("rms_norm_eps");
    const nlohmann::json& rope = hf.at("rope_parameters");
    t.math.rope_theta = rope.at("rope_theta");
    if (rope.at("rope_type") == "llama3")
      t.math.rope_scaling = {"llama3", rope.at("factor"), rope.at("low_freq_factor"), rope.at("high_freq_factor"),
                             rope.at("original_max_position_embeddings")};
    const nlohmann::json& batch = doc.at("batch");
    test::RandomTokens tok(batch.at("B"), batch.at("T"), s.V, 0);
    std::size_t k = 0;
    for (const auto& row : batch.at("inputs"))
      for (const auto& id : row) tok.inputs[k++] = id.get<std::int32_t>();
    k = 0;
    for (const auto& row : batch.at("targets"))
      for (const auto& id : row) tok.targets[k++] = id.get<std::int32_t>();

    FastDecoder fast(t, test::decode_array(doc.at("params"), "params"), ActivationPolicy::none(static_cast<int>(s.L)));
    ASSERT_EQ(fast.layout.total, doc.at("n_params").get<std::size_t>());
    std::vector<float> logits(static_cast<std::size_t>(tok.B * tok.T * s.V));
    fast.model->evaluate(tok.batch(), logits.data());
    const std::vector<double> want_logits = test::decode_array(doc.at("logits"), "logits");
    double worst = 0;
    for (std::size_t i = 0; i < logits.size(); ++i) worst = std::max(worst, std::fabs(logits[i] - want_logits[i]));
    EXPECT_LT(worst, 1e-4) << "logits, absolute";
    fast.state->zero_grads();
    const double loss = fast.model->forward_backward(tok.batch(), 1.0f, 0);
    EXPECT_LT(std::fabs(loss - doc.at("loss").get<double>()) / doc.at("loss").get<double>(), 1e-5) << "loss";
    const std::vector<double> grads = fast.flat_grads(), want = test::decode_array(doc.at("grads"), "grads");
    for (const auto& p : doc.at("parameters")) {
      const std::size_t off = p.at("offset"), n = p.at("numel");
      const std::vector<double> a(grads.begin() + off, grads.begin() + off + n),
          b(want.begin() + off, want.begin() + off + n);
      EXPECT_LT(relative_error(a, b), 1e-4) << p.at("name").get<std::string>();
    }
  }
}

}  // namespace
}  // namespace fsdp
