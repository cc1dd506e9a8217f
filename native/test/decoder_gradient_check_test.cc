// Finite-difference gradient checks, in float64, of the decoder family's reference ops
// (reference/reference_decoder.h: RMSNorm, RoPE, SwiGLU, grouped-query attention) and of whole tiny
// decoders of both families: the analytic gradient must match central differences within 1e-6
// relative error, gradient_check_test.cc's tolerance.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "reference/reference_decoder.h"

namespace fsdp {
namespace {

using test::numeric_gradient;
using test::random_vector;
using test::relative_error;
using Vec = std::vector<double>;

constexpr double kTolerance = 1e-6;

/** The objective sum(out * w) for a fixed random w, so d(objective)/d(out) = w. */
double weighted(const Vec& out, const Vec& w) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += out[i] * w[i];
  return s;
}

/**
 * Llama 3's scaling with an original context short enough that a head of 6 (inverse frequencies
 * 1, 0.046, 0.0022: wavelengths 6.3, 135, 2900) has all three bands: kept (< 512 / 8), interpolated,
 * divided by the factor (> 512 / 1).
 */
reference::Rope llama3_rope() {
  reference::Rope r;
  r.theta = 10000, r.llama3 = true, r.factor = 8, r.low_freq_factor = 1, r.high_freq_factor = 8;
  r.original_max_position_embeddings = 512;
  return r;
}

TEST(DecoderGradientCheck, RmsNorm) {
  const long N = 3, C = 6;
  Vec x = random_vector(N * C, 1), w = random_vector(C, 2), dout = random_vector(N * C, 3), out(N * C), rstd(N);
  auto f = [&] {
    reference::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
    return weighted(out, dout);
  };
  f();
  Vec dx(N * C, 0.0), dw(C, 0.0);
  reference::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);
  EXPECT_LT(relative_error(dx, numeric_gradient(x, f)), kTolerance);
  EXPECT_LT(relative_error(dw, numeric_gradient(w, f)), kTolerance);
}

// The per-head use inside packed qkv: rows of D every `stride` elements; what lies between is untouched.
TEST(DecoderGradientCheck, RmsNormWithRowStride) {
  const long N = 4, D = 4, stride = 10, at = 3;
  Vec x = random_vector(N * stride, 4), w = random_vector(D, 5), dout = random_vector(N * stride, 6);
  Vec out(N * stride, 0.0), rstd(N);
  auto f = [&] {
    reference::rmsnorm_forward(out.data() + at, rstd.data(), x.data() + at, w.data(), N, D, 1e-6, stride);
    return weighted(out, dout);
  };
  f();
  Vec dx(N * stride, 0.0), dw(D, 0.0);
  reference::rmsnorm_backward(dx.data() + at, dw.data(), dout.data() + at, x.data() + at, w.data(), rstd.data(), N, D,
                              stride);
  EXPECT_LT(relative_error(dx, numeric_gradient(x, f)), kTolerance);
  EXPECT_LT(relative_error(dw, numeric_gradient(w, f)), kTolerance);
  for (long n = 0; n < N; ++n)
    for (long c = 0; c < stride; ++c)
      if (c < at || c >= at + D) EXPECT_EQ(out[n * stride + c], 0.0) << "row " << n << " column " << c;
}

TEST(DecoderGradientCheck, RopeOnPackedQkv) {
  for (const bool llama3 : {false, true}) {
    const long B = 2, T = 5, H = 4, KV = 2, D = 6, W = (H + 2 * KV) * D;
    reference::Rope rope = llama3 ? llama3_rope() : reference::Rope{};
    const std::vector<double> inv = reference::rope_inv_freq(rope, D);
    Vec qkv = random_vector(B * T * W, 7), dout = random_vector(B * T * W, 8), out(B * T * W);
    auto f = [&] {
      reference::rope_forward(out.data(), qkv.data(), inv.data(), B, T, H, KV, D);
      return weighted(out, dout);
    };
    Vec dqkv(B * T * W);
    reference::rope_backward(dqkv.data(), dout.data(), inv.data(), B, T, H, KV, D);
    EXPECT_LT(relative_error(dqkv, numeric_gradient(qkv, f)), kTolerance) << (llama3 ? "llama3" : "default");
  }
}

// The rotation of HF's rotate_half: position 0 is the identity, pairs are (j, j + D/2), v is never turned.
TEST(DecoderGradientCheck, RopePairsAndPositions) {
  const long T = 3, H = 1, KV = 1, D = 4, W = 3 * D;
  const std::vector<double> inv = reference::rope_inv_freq(reference::Rope{}, D);
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_DOUBLE_EQ(inv[1], 0.01);  // 10000^(-2/4)
  Vec qkv = random_vector(T * W, 9), out(T * W);
  reference::rope_forward(out.data(), qkv.data(), inv.data(), 1, T, H, KV, D);
  for (long i = 0; i < W; ++i) EXPECT_DOUBLE_EQ(out[i], qkv[i]) << "position 0, element " << i;
  const long t = 2;
  const double a = qkv[t * W + 1], b = qkv[t * W + 3];  // q's pair (1, 3)
  EXPECT_NEAR(out[t * W + 1], a * std::cos(t * 0.01) - b * std::sin(t * 0.01), 1e-15);
  EXPECT_NEAR(out[t * W + 3], b * std::cos(t * 0.01) + a * std::sin(t * 0.01), 1e-15);
  for (long i = 2 * D; i < W; ++i) EXPECT_EQ(out[t * W + i], qkv[t * W + i]) << "v element " << i;
}

// transformers' _compute_llama3_parameters, value by value on the three bands of llama3_rope().
TEST(DecoderGradientCheck, Llama3InverseFrequencies) {
  const std::vector<double> inv = reference::rope_inv_freq(llama3_rope(), 6);
  ASSERT_EQ(inv.size(), 3u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);                              // wavelength 6.3 < 512 / 8: kept
  EXPECT_DOUBLE_EQ(inv[2], std::pow(10000.0, -4.0 / 6) / 8);  // 2900 > 512 / 1: divided by the factor
  const double f = std::pow(10000.0, -2.0 / 6), smooth = (512 / (2 * M_PI / f) - 1) / (8 - 1);
  EXPECT_GT(smooth, 0.0);
  EXPECT_LT(smooth, 1.0);
  EXPECT_DOUBLE_EQ(inv[1], (1 - smooth) * f / 8 + smooth * f);  // 135: between, interpolated
}

TEST(DecoderGradientCheck, SwiGlu) {
  const long N = 3, F = 5;
  Vec gu = random_vector(N * 2 * F, 10, 2.0), dout = random_vector(N * F, 11), h(N * F);
  auto f = [&] {
    reference::swiglu_forward(h.data(), gu.data(), N, F);
    return weighted(h, dout);
  };
  Vec dgu(N * 2 * F);
  reference::swiglu_backward(dgu.data(), dout.data(), gu.data(), N, F);
  EXPECT_LT(relative_error(dgu, numeric_gradient(gu, f)), kTolerance);
}

TEST(DecoderGradientCheck, GroupedQueryAttention) {
  // KV = H (multi-head), 1 < KV < H (grouped), KV = 1 (multi-query).
  for (const long KV : {4L, 2L, 1L}) {
    const long B = 2, T = 4, H = 4, D = 3, W = (H + 2 * KV) * D;
    Vec qkv = random_vector(B * T * W, 12), dout = random_vector(B * T * H * D, 13), out(B * T * H * D),
        probs(B * H * T * T);
    auto f = [&] {
      reference::gqa_attention_forward(out.data(), probs.data(), qkv.data(), B, T, H, KV, D);
      return weighted(out, dout);
    };
    f();
    Vec dqkv(B * T * W);
    reference::gqa_attention_backward(dqkv.data(), dout.data(), probs.data(), qkv.data(), B, T, H, KV, D);
    EXPECT_LT(relative_error(dqkv, numeric_gradient(qkv, f)), kTolerance) << "KV " << KV;
  }
}

// With one kv head per query head, grouped-query attention is the GPT reference's multi-head attention.
TEST(DecoderGradientCheck, GroupedQueryAttentionWithKvEqualHIsMultiHead) {
  const long B = 1, T = 5, H = 3, D = 4, C = H * D;
  const Vec qkv = random_vector(B * T * 3 * C, 14);
  Vec a(B * T * C), b(B * T * C), pa(B * H * T * T), pb(B * H * T * T);
  reference::gqa_attention_forward(a.data(), pa.data(), qkv.data(), B, T, H, H, D);
  reference::attention_forward(b.data(), pb.data(), qkv.data(), B, T, C, H);
  EXPECT_EQ(a, b);
}

/** A tiny Llama: 4 query heads of C / H = 6 on 2 key-value heads, llama3 RoPE scaling. */
reference::DecoderSpec tiny_llama(bool tied, bool biases) {
  reference::DecoderSpec s;
  s.V = 11, s.C = 24, s.L = 2, s.H = 4, s.KV = 2, s.D = 6, s.F = 16, s.tied = tied;
  s.attention_bias = s.mlp_bias = biases;
  s.eps = 1e-5, s.rope = llama3_rope();
  return s;
}

/** A tiny Qwen3: q/k norms, head_dim 6 while C / H is 2, 4 query heads on 2 key-value heads. */
reference::DecoderSpec tiny_qwen3(bool tied, bool biases) {
  reference::DecoderSpec s;
  s.V = 11, s.C = 8, s.L = 2, s.H = 4, s.KV = 2, s.D = 6, s.F = 12, s.tied = tied;
  s.qk_norm = true, s.attention_bias = biases, s.mlp_bias = biases;
  s.eps = 1e-6, s.rope.theta = 1000000;
  return s;
}

/** Random parameters: matrices N(0, 0.3²), norm weights around 1 and biases around 0 so every op matters. */
Vec random_params(const reference::DecoderSpec& s, std::uint64_t seed) {
  Vec p(reference::decoder_param_count(s));
  const Vec r = random_vector(p.size(), seed);
  for (const auto& seg : reference::decoder_params(s)) {
    const bool norm = seg.name.find("norm") != std::string::npos || seg.name.find("ln") != std::string::npos;
    for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i)
      p[i] = norm ? 1.0 + 0.2 * r[i] : seg.decay ? 0.3 * r[i] : 0.1 * r[i];
  }
  return p;
}

/** Every parameter tensor of the whole model. */
void check_whole_decoder(const reference::DecoderSpec& s) {
  Vec params = random_params(s, 21);
  const test::RandomTokens tok(2, 5, s.V, 99);
  Vec grads(params.size(), 0.0);
  reference::decoder_forward_backward(s, params, tok.tokens(), &grads);
  auto f = [&] { return reference::decoder_forward_backward<double>(s, params, tok.tokens(), nullptr); };
  for (const auto& seg : reference::decoder_params(s)) {
    Vec x(params.begin() + seg.offset, params.begin() + seg.offset + seg.numel);
    auto g = [&] {
      std::copy(x.begin(), x.end(), params.begin() + seg.offset);
      return f();
    };
    const Vec numeric = numeric_gradient(x, g);
    std::copy(x.begin(), x.end(), params.begin() + seg.offset);
    const Vec analytic(grads.begin() + seg.offset, grads.begin() + seg.offset + seg.numel);
    EXPECT_LT(relative_error(analytic, numeric), kTolerance) << seg.name;
  }
}

TEST(DecoderGradientCheck, WholeLlamaGqaLlama3ScalingTied) {
  check_whole_decoder(tiny_llama(true, false));
}
TEST(DecoderGradientCheck, WholeLlamaGqaUntiedWithBiases) {
  check_whole_decoder(tiny_llama(false, true));
}
TEST(DecoderGradientCheck, WholeQwen3QkNormHeadDimUntied) {
  check_whole_decoder(tiny_qwen3(false, false));
}
TEST(DecoderGradientCheck, WholeQwen3QkNormTiedWithBiases) {
  check_whole_decoder(tiny_qwen3(true, true));
}

// The check itself must be able to fail: an RMSNorm backward that forgets the normaliser's own
// dependence on x (treating rstd as a constant) is off by far more than the tolerance.
TEST(DecoderGradientCheck, RejectsAWrongDerivative) {
  const long N = 3, C = 6;
  Vec x = random_vector(N * C, 1), w = random_vector(C, 2), dout = random_vector(N * C, 3), out(N * C), rstd(N);
  auto f = [&] {
    reference::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-5);
    return weighted(out, dout);
  };
  f();
  Vec wrong(N * C);
  for (long n = 0; n < N; ++n)
    for (long c = 0; c < C; ++c) wrong[n * C + c] = rstd[n] * dout[n * C + c] * w[c];
  EXPECT_GT(relative_error(wrong, numeric_gradient(x, f)), 1e-3);
}

}  // namespace
}  // namespace fsdp
