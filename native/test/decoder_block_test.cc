// The decoder family's block (model/decoder_block.cc) on the CPU backend against the same block
// composed in float64 from the reference's ops (reference/reference_decoder.h, reference_gpt.h's
// linear): output, the input's gradient and every parameter's, with and without Qwen3's q/k norms
// and the optional biases; and activation checkpointing (full, selective) giving the very numbers
// of keeping everything. The unit's segments are laid out here in decoder-layout's order, so the
// test reads only the block.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fixtures.h"
#include "model/decoder_block.h"
#include "reference/reference_decoder.h"

namespace fsdp {
namespace {

using test::random_vector;
using test::relative_error;

struct Config {
  DecoderDims d;
  bool attention_bias = false, mlp_bias = false;
};

/** A block unit's segments in decoder-layout's order (blocks.0.<name>). */
UnitLayout block_unit(const Config& c) {
  const DecoderDims& d = c.d;
  UnitLayout u;
  u.name = "blocks.0";
  u.layer = 0;
  auto add = [&](const char* name, long numel) {
    u.segments.push_back({std::string("blocks.0.") + name, "", u.numel, static_cast<std::size_t>(numel)});
    u.numel += static_cast<std::size_t>(numel);
  };
  add("ln1.weight", d.C);
  add("attn.qkv.weight", d.W() * d.C);
  if (c.attention_bias) add("attn.qkv.bias", d.W());
  if (d.qk_norm) add("attn.q_norm.weight", d.D), add("attn.k_norm.weight", d.D);
  add("attn.proj.weight", d.C * d.H * d.D);
  if (c.attention_bias) add("attn.proj.bias", d.C);
  add("ln2.weight", d.C);
  add("mlp.gate_up.weight", 2 * d.F * d.C);
  if (c.mlp_bias) add("mlp.gate_up.bias", 2 * d.F);
  add("mlp.down.weight", d.C * d.F);
  if (c.mlp_bias) add("mlp.down.bias", d.C);
  return u;
}

/** Random parameters: norms' weights near 1, the rest small. */
std::vector<double> random_params(const UnitLayout& u, std::uint64_t seed) {
  std::vector<double> p(u.numel);
  for (const auto& s : u.segments) {
    const bool norm = s.name.find("norm") != std::string::npos || s.name.find(".ln") != std::string::npos;
    const auto r = random_vector(s.numel, seed++, norm ? 0.1 : 0.2);
    for (std::size_t i = 0; i < s.numel; ++i) p[s.offset + i] = (norm ? 1.0 : 0.0) + r[i];
  }
  return p;
}

/** The block in float64: out from x, then (dout given) d(x) and the parameters' gradients. */
struct ReferenceBlock {
  const Config& c;
  const UnitLayout& unit;
  const std::vector<double>& p;
  const std::vector<double>& inv_freq;

  const double* w(const char* name) const {
    const ParamSegment* s = find_segment(unit, name);
    return s ? p.data() + s->offset : nullptr;
  }
  static double* g(std::vector<double>& grads, const UnitLayout& unit, const char* name) {
    const ParamSegment* s = find_segment(unit, name);
    return s ? grads.data() + s->offset : nullptr;
  }

  void run(std::vector<double>& out, std::vector<double>& dx, std::vector<double>& grads, const std::vector<double>& x,
           const std::vector<double>& dout) const {
    const DecoderDims& d = c.d;
    const long N = d.N(), C = d.C, W = d.W(), HD = d.H * d.D, F = d.F;
    using reference::linear_backward;
    using reference::linear_forward;
    std::vector<double> ln1(N * C), r1(N), qkv_in(N * W), qkv_n(N * W), qkv(N * W), rq(N * (d.H + d.KV)),
        probs(d.B * d.H * d.T * d.T), y(N * HD), x2(N * C), ln2(N * C), r2(N), gu(N * 2 * F), h(N * F);
    reference::rmsnorm_forward(ln1.data(), r1.data(), x.data(), w("ln1.weight"), N, C, d.eps);
    linear_forward(qkv_in.data(), ln1.data(), w("attn.qkv.weight"), w("attn.qkv.bias"), N, C, W);
    qkv_n = qkv_in;
    if (d.qk_norm)
      for (long head = 0; head < d.H + d.KV; ++head)
        reference::rmsnorm_forward(qkv_n.data() + head * d.D, rq.data() + head * N, qkv_in.data() + head * d.D,
                                   w(head < d.H ? "attn.q_norm.weight" : "attn.k_norm.weight"), N, d.D, d.eps, W);
    reference::rope_forward(qkv.data(), qkv_n.data(), inv_freq.data(), d.B, d.T, d.H, d.KV, d.D);
    reference::gqa_attention_forward(y.data(), probs.data(), qkv.data(), d.B, d.T, d.H, d.KV, d.D);
    linear_forward(x2.data(), y.data(), w("attn.proj.weight"), w("attn.proj.bias"), N, HD, C);
    for (long i = 0; i < N * C; ++i) x2[i] += x[i];
    reference::rmsnorm_forward(ln2.data(), r2.data(), x2.data(), w("ln2.weight"), N, C, d.eps);
    linear_forward(gu.data(), ln2.data(), w("mlp.gate_up.weight"), w("mlp.gate_up.bias"), N, C, 2 * F);
    reference::swiglu_forward(h.data(), gu.data(), N, F);
    linear_forward(out.data(), h.data(), w("mlp.down.weight"), w("mlp.down.bias"), N, F, C);
    for (long i = 0; i < N * C; ++i) out[i] += x2[i];

    auto G = [&](const char* name) { return g(grads, unit, name); };
    std::vector<double> dh(N * F), dgu(N * 2 * F), dln(N * C), dx2 = dout, dy(N * HD), dqkv(N * W), dqkv_n(N * W),
                                                               dqkv_in(N * W, 0.0);
    linear_backward(dh.data(), G("mlp.down.weight"), G("mlp.down.bias"), dout.data(), h.data(), w("mlp.down.weight"), N,
                    F, C);
    reference::swiglu_backward(dgu.data(), dh.data(), gu.data(), N, F);
    linear_backward(dln.data(), G("mlp.gate_up.weight"), G("mlp.gate_up.bias"), dgu.data(), ln2.data(),
                    w("mlp.gate_up.weight"), N, C, 2 * F);
    reference::rmsnorm_backward(dx2.data(), G("ln2.weight"), dln.data(), x2.data(), w("ln2.weight"), r2.data(), N, C);
    linear_backward(dy.data(), G("attn.proj.weight"), G("attn.proj.bias"), dx2.data(), y.data(), w("attn.proj.weight"),
                    N, HD, C);
    reference::gqa_attention_backward(dqkv.data(), dy.data(), probs.data(), qkv.data(), d.B, d.T, d.H, d.KV, d.D);
    reference::rope_backward(dqkv_n.data(), dqkv.data(), inv_freq.data(), d.B, d.T, d.H, d.KV, d.D);
    if (d.qk_norm) {
      for (long n = 0; n < N; ++n)
        for (long e = (d.H + d.KV) * d.D; e < W; ++e) dqkv_in[n * W + e] = dqkv_n[n * W + e];
      for (long head = 0; head < d.H + d.KV; ++head) {
        const bool q = head < d.H;
        reference::rmsnorm_backward(dqkv_in.data() + head * d.D, G(q ? "attn.q_norm.weight" : "attn.k_norm.weight"),
                                    dqkv_n.data() + head * d.D, qkv_in.data() + head * d.D,
                                    w(q ? "attn.q_norm.weight" : "attn.k_norm.weight"), rq.data() + head * N, N, d.D,
                                    W);
      }
    } else {
      dqkv_in = dqkv_n;
    }
    linear_backward(dln.data(), G("attn.qkv.weight"), G("attn.qkv.bias"), dqkv_in.data(), ln1.data(),
                    w("attn.qkv.weight"), N, C, W);
    dx = dx2;
    reference::rmsnorm_backward(dx.data(), G("ln1.weight"), dln.data(), x.data(), w("ln1.weight"), r1.data(), N, C);
  }
};

struct FastResult {
  std::vector<float> out, dx, grads;
};

/** The block on the CPU backend, forward with `keep`, recompute, backward. */
FastResult run_fast(const Config& c, const UnitLayout& unit, const std::vector<float>& params,
                    const std::vector<float>& inv_freq, const std::vector<float>& x, const std::vector<float>& dout,
                    BlockRecompute keep) {
  CpuBackend be;
  const long NC = c.d.N() * c.d.C;
  FastResult r{std::vector<float>(NC), std::vector<float>(NC), std::vector<float>(unit.numel, 0.0f)};
  const DecoderBlockRun run{be, c.d, inv_freq.data(), LayerProbe(nullptr, 0, &unit, r.grads.data())};
  const DecoderBlockWeights w = decoder_block_weights(unit, params.data(), DType::f32);
  DecoderBlockSaved saved;
  Buffer out = decoder_block_forward(run, saved, x.data(), w, keep);
  std::copy(out.f32(), out.f32() + NC, r.out.begin());
  DecoderWorkspace ws(be, c.d);
  std::copy(dout.begin(), dout.end(), ws.d_res.f32());
  decoder_block_recompute(run, saved, x.data(), w, keep);
  decoder_block_backward(run, ws, saved, x.data(), w, decoder_block_params(unit, r.grads.data()));
  std::copy(ws.d_res.f32(), ws.d_res.f32() + NC, r.dx.begin());
  return r;
}

/** Compares the block with the reference; returns the fast results of `keep` none for further checks. */
FastResult check_block(const Config& c) {
  const DecoderDims& d = c.d;
  const UnitLayout unit = block_unit(c);
  const auto params = random_params(unit, 71);
  reference::Rope rope;
  rope.theta = 500000.0, rope.llama3 = true, rope.factor = 32.0, rope.original_max_position_embeddings = 64.0;
  const auto inv_freq = reference::rope_inv_freq(rope, d.D);
  const std::vector<float> finv(inv_freq.begin(), inv_freq.end());
  const std::vector<double> inv(finv.begin(), finv.end());
  const auto x = random_vector(d.N() * d.C, 72), dout = random_vector(d.N() * d.C, 73);

  std::vector<double> out(d.N() * d.C), dx, grads(unit.numel, 0.0);
  ReferenceBlock{c, unit, params, inv}.run(out, dx, grads, x, dout);
  const std::vector<float> fparams(params.begin(), params.end()), fx(x.begin(), x.end()),
      fdout(dout.begin(), dout.end());
  FastResult fast = run_fast(c, unit, fparams, finv, fx, fdout, BlockRecompute::none);
  // A block is a dozen float32 ops deep (five products, softmax, three norms): 1e-6 for the output
  // and 1e-5 for gradients, ten times fast_vs_reference_test.cc's per-op bounds; measured
  // (2026-12-07) 1.5e-7 and 5e-7 at worst (q_norm's weight).
  EXPECT_LT(relative_error(fast.out, out), 1e-6) << "out";
  EXPECT_LT(relative_error(fast.dx, dx), 1e-5) << "d(in)";
  for (const auto& s : unit.segments) {
    const std::vector<float> fg(fast.grads.begin() + s.offset, fast.grads.begin() + s.offset + s.numel);
    const std::vector<double> rg(grads.begin() + s.offset, grads.begin() + s.offset + s.numel);
    EXPECT_LT(relative_error(fg, rg), 1e-5) << s.name;
  }
  for (BlockRecompute keep : {BlockRecompute::full, BlockRecompute::selective}) {
    const FastResult again = run_fast(c, unit, fparams, finv, fx, fdout, keep);
    EXPECT_EQ(again.out, fast.out) << "recompute " << static_cast<int>(keep);
    EXPECT_EQ(again.dx, fast.dx) << "recompute " << static_cast<int>(keep);
    EXPECT_EQ(again.grads, fast.grads) << "recompute " << static_cast<int>(keep);
  }
  return fast;
}

TEST(DecoderBlock, LlamaShapedBlockMatchesTheReference) {
  // SmolLM2-like proportions: groups of 3 query heads per kv head, D = C / H, no biases.
  Config c;
  c.d = {2, 9, 24, 6, 2, 4, 40, 1e-5f, false};
  check_block(c);
}

TEST(DecoderBlock, Qwen3ShapedBlockWithQkNormAndBiasesMatchesTheReference) {
  // head_dim apart from C / H (16 / 4 = 4, D = 8), one kv head, q/k norms, every optional bias.
  Config c;
  c.d = {2, 11, 16, 4, 1, 8, 24, 1e-6f, true};
  c.attention_bias = c.mlp_bias = true;
  check_block(c);
}

TEST(DecoderBlock, MultiHeadBlockWithQkNormMatchesTheReference) {
  Config c;
  c.d = {1, 13, 20, 2, 2, 6, 36, 1e-6f, true};
  check_block(c);
}

}  // namespace
}  // namespace fsdp
