// The decoder family's float32 ops on the CPU backend (backend/cpu/rmsnorm.cc, rope.cc, swiglu.cc,
// gqa_attention.cc) against the float64 reference (reference/reference_decoder.h), forward and
// backward, on shapes chosen to be awkward: T not a multiple of any tile, one kv head (multi-query),
// as many kv heads as query heads (multi-head), groups of three, a head_dim unrelated to any hidden
// size, several sequences, several query tiles. Tolerances are fast_vs_reference_test.cc's: float32
// sums of a few dozen terms keep a norm-wise relative error near 1e-7, so 1e-6 forward and 1e-5
// for gradients (two products deep). Measured (2026-12-07): 2e-7 at worst, a kv head's gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fixtures.h"
#include "reference/reference_decoder.h"

namespace fsdp {
namespace {

using test::random_vector;
using test::relative_error;

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

/** The reference's per-head RMSNorm: G calls of C columns each, rows `stride` apart; rstd as the backend orders it. */
void rmsnorm_heads(std::vector<double>& out, std::vector<double>& rstd, const std::vector<double>& x,
                   const std::vector<double>& w, long base, long N, long G, long C, long stride, double eps) {
  std::vector<double> r(N);
  for (long g = 0; g < G; ++g) {
    reference::rmsnorm_forward(out.data() + base + g * C, r.data(), x.data() + base + g * C, w.data(), N, C, eps,
                               stride);
    for (long n = 0; n < N; ++n) rstd[n * G + g] = r[n];
  }
}
void rmsnorm_heads_backward(std::vector<double>& dx, std::vector<double>& dw, const std::vector<double>& dout,
                            const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& rstd,
                            long base, long N, long G, long C, long stride) {
  std::vector<double> r(N);
  for (long g = 0; g < G; ++g) {
    for (long n = 0; n < N; ++n) r[n] = rstd[n * G + g];
    reference::rmsnorm_backward(dx.data() + base + g * C, dw.data(), dout.data() + base + g * C,
                                x.data() + base + g * C, w.data(), r.data(), N, C, stride);
  }
}

// --- the cases ------------------------------------------------------------------------------

TEST(DecoderOps, RmsNormOfTheResidualStreamAccumulatesItsGradients) {
  CpuBackend be;
  const long N = 37, C = 40;
  const double eps = 1e-6;
  const auto x = random_vector(N * C, 21, 3.0), w = random_vector(C, 22), dout = random_vector(N * C, 23),
             dx0 = random_vector(N * C, 24), dw0 = random_vector(C, 25);
  std::vector<double> out(N * C), rstd(N), dx = dx0, dw = dw0;
  reference::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, eps);
  reference::rmsnorm_backward(dx.data(), dw.data(), dout.data(), x.data(), w.data(), rstd.data(), N, C);

  auto fx = to_float(x), fw = to_float(w), fdout = to_float(dout), fdx = to_float(dx0), fdw = to_float(dw0);
  std::vector<float> fout(N * C), frstd(N);
  be.rmsnorm_forward(fout.data(), frstd.data(), fx.data(), fw.data(), N, 1, C, C, static_cast<float>(eps));
  be.rmsnorm_backward(fdx.data(), true, fdw.data(), fdout.data(), fx.data(), fw.data(), frstd.data(), N, 1, C, C);
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(frstd, rstd), 1e-6);
  EXPECT_LT(relative_error(fdx, dx), 1e-5);
  EXPECT_LT(relative_error(fdw, dw), 1e-5);
}

TEST(DecoderOps, PerHeadRmsNormInsidePackedQkvTouchesOnlyItsHeads) {
  // Qwen3's q_norm over the H query heads and k_norm over the one kv head of qkv[N, (H + 2) D].
  CpuBackend be;
  const long N = 2 * 7, H = 3, KV = 1, D = 10, W = (H + 2 * KV) * D;
  const double eps = 1e-6;
  const auto qkv = random_vector(N * W, 31, 2.0), wq = random_vector(D, 32), wk = random_vector(D, 33),
             dout = random_vector(N * W, 34);
  std::vector<double> out = qkv, rq(N * H), rk(N * KV);
  rmsnorm_heads(out, rq, qkv, wq, 0, N, H, D, W, eps);
  rmsnorm_heads(out, rk, qkv, wk, H * D, N, KV, D, W, eps);
  std::vector<double> dx(N * W, 0.0), dwq(D, 0.0), dwk(D, 0.0);
  rmsnorm_heads_backward(dx, dwq, dout, qkv, wq, rq, 0, N, H, D, W);
  rmsnorm_heads_backward(dx, dwk, dout, qkv, wk, rk, H * D, N, KV, D, W);

  // In place, as the model runs them: out over a copy of qkv, dx over dout (overwritten).
  auto fqkv = to_float(qkv), fout = to_float(qkv), fwq = to_float(wq), fwk = to_float(wk), fdx = to_float(dout);
  std::vector<float> frq(N * H), frk(N * KV), fdwq(D, 0.0f), fdwk(D, 0.0f);
  be.rmsnorm_forward(fout.data(), frq.data(), fout.data(), fwq.data(), N, H, D, W, static_cast<float>(eps));
  be.rmsnorm_forward(fout.data() + H * D, frk.data(), fout.data() + H * D, fwk.data(), N, KV, D, W,
                     static_cast<float>(eps));
  be.rmsnorm_backward(fdx.data(), false, fdwq.data(), fdx.data(), fqkv.data(), fwq.data(), frq.data(), N, H, D, W);
  be.rmsnorm_backward(fdx.data() + H * D, false, fdwk.data(), fdx.data() + H * D, fqkv.data() + H * D, fwk.data(),
                      frk.data(), N, KV, D, W);
  // v is neither normalised nor given a gradient: it keeps qkv's and dout's values exactly.
  for (long n = 0; n < N; ++n)
    for (long e = (H + KV) * D; e < W; ++e) {
      ASSERT_EQ(fout[n * W + e], static_cast<float>(qkv[n * W + e])) << "v of token " << n;
      ASSERT_EQ(fdx[n * W + e], static_cast<float>(dout[n * W + e])) << "dv of token " << n;
      dx[n * W + e] = dout[n * W + e];
    }
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(frq, rq), 1e-6);
  EXPECT_LT(relative_error(frk, rk), 1e-6);
  EXPECT_LT(relative_error(fdx, dx), 1e-5);
  EXPECT_LT(relative_error(fdwq, dwq), 1e-5);
  EXPECT_LT(relative_error(fdwk, dwk), 1e-5);
}

TEST(DecoderOps, RopeTurnsQAndKAndItsBackwardIsTheTranspose) {
  CpuBackend be;
  const long B = 2, T = 37, H = 4, KV = 2, D = 12, W = (H + 2 * KV) * D;
  const auto inv_freq = reference::rope_inv_freq(reference::Rope{}, D);
  const std::vector<float> finv(inv_freq.begin(), inv_freq.end());
  const std::vector<double> inv(finv.begin(), finv.end());  // the reference turns by what the backend reads
  const auto qkv = random_vector(B * T * W, 41), dout = random_vector(B * T * W, 42);
  std::vector<double> out(B * T * W), dx(B * T * W);
  reference::rope_forward(out.data(), qkv.data(), inv.data(), B, T, H, KV, D);
  reference::rope_backward(dx.data(), dout.data(), inv.data(), B, T, H, KV, D);

  auto fout = to_float(qkv), fdx = to_float(dout);
  be.rope_forward(fout.data(), finv.data(), B, T, H, KV, D);
  be.rope_backward(fdx.data(), finv.data(), B, T, H, KV, D);
  // The backend rounds each angle t · inv_freq to float32 as transformers does, the reference does
  // not: half an ulp of t · inv_freq[0] = t at most (1.9e-6 at t = 36) on the longest-wave pairs
  // only, which norm-wise stays far below 1e-6 (5e-8 measured).
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(fdx, dx), 1e-6);
  for (long r = 0; r < B * T; ++r)
    for (long e = (H + KV) * D; e < W; ++e) {
      ASSERT_EQ(fout[r * W + e], static_cast<float>(qkv[r * W + e])) << "v of row " << r;
      ASSERT_EQ(fdx[r * W + e], static_cast<float>(dout[r * W + e])) << "dv of row " << r;
    }
  // The transpose of a rotation is its inverse: back from the turned q and k to the start.
  be.rope_backward(fout.data(), finv.data(), B, T, H, KV, D);
  EXPECT_LT(relative_error(fout, qkv), 1e-6);
}

TEST(DecoderOps, RopeRoundsTheAngleToFloat32AsTransformersDoes) {
  // transformers forms the angle as inv_freq (float32) times the position (float32) in float32;
  // at long positions that rounding moves the output by more than float32's own error, so the
  // tables must be taken from the rounded angle. One pair per head, q and k all ones.
  CpuBackend be;
  const long T = 4096, H = 1, KV = 1, D = 4, W = (H + 2 * KV) * D;
  const std::vector<float> inv_freq{1.0f, 0.01f};
  std::vector<float> qkv(T * W, 1.0f);
  be.rope_forward(qkv.data(), inv_freq.data(), 1, T, H, KV, D);
  double worst = 0;
  for (long t = 0; t < T; ++t) {
    const double angle = static_cast<float>(t) * inv_freq[1];  // rounded to float32 first
    const double c = std::cos(angle), s = std::sin(angle);
    for (long h = 0; h < H + KV; ++h) {
      worst = std::max(worst, std::fabs(qkv[t * W + h * D + 1] - (c - s)));
      worst = std::max(worst, std::fabs(qkv[t * W + h * D + 3] - (c + s)));
    }
  }
  // Two float32 products of values below 1.5: a few 1e-7; the unrounded angle would be off by up
  // to half an ulp of 41 (1.9e-6) times sqrt(2).
  EXPECT_LT(worst, 5e-7);
}

TEST(DecoderOps, RopeRefusesAnOddHeadDim) {
  CpuBackend be;
  std::vector<float> qkv(3 * 5), inv_freq(2);
  EXPECT_THROW(be.rope_forward(qkv.data(), inv_freq.data(), 1, 1, 1, 1, 5), std::invalid_argument);
}

TEST(DecoderOps, SwiGluForwardAndBackward) {
  CpuBackend be;
  const long N = 13, F = 27;
  const auto gate_up = random_vector(N * 2 * F, 51, 3.0), dh = random_vector(N * F, 52);
  std::vector<double> h(N * F), dgu(N * 2 * F);
  reference::swiglu_forward(h.data(), gate_up.data(), N, F);
  reference::swiglu_backward(dgu.data(), dh.data(), gate_up.data(), N, F);
  auto fgu = to_float(gate_up), fdh = to_float(dh);
  std::vector<float> fh(N * F), fdgu(N * 2 * F);
  be.swiglu_forward(fh.data(), fgu.data(), N, F);
  be.swiglu_backward(fdgu.data(), fdh.data(), fgu.data(), N, F);
  EXPECT_LT(relative_error(fh, h), 1e-6);
  EXPECT_LT(relative_error(fdgu, dgu), 1e-6);
}

/** One shape of grouped-query attention, forward, state recompute and backward, against the reference. */
void check_gqa(long B, long T, long H, long KV, long D) {
  SCOPED_TRACE(testing::Message() << "B " << B << " T " << T << " H " << H << " KV " << KV << " D " << D);
  CpuBackend be;
  const long W = (H + 2 * KV) * D;
  const auto qkv = random_vector(B * T * W, 61 + T, 1.5), dy = random_vector(B * T * H * D, 62 + T);
  std::vector<double> y(B * T * H * D), probs(B * H * T * T), dqkv(B * T * W);
  reference::gqa_attention_forward(y.data(), probs.data(), qkv.data(), B, T, H, KV, D);
  reference::gqa_attention_backward(dqkv.data(), dy.data(), probs.data(), qkv.data(), B, T, H, KV, D);

  auto fqkv = to_float(qkv), fdy = to_float(dy);
  std::vector<float> fy(B * T * H * D), state(be.gqa_attention_state_size(B, T, H, KV, D)), again(state.size()),
      scratch(be.gqa_attention_scratch_size(B, T, H, KV, D));
  std::vector<float> fdqkv(B * T * W, NAN);  // overwritten whole: no NaN may survive
  be.gqa_attention_forward(fy.data(), state.data(), fqkv.data(), B, T, H, KV, D, nullptr);
  be.gqa_attention_state(again.data(), fqkv.data(), B, T, H, KV, D);
  be.gqa_attention_backward(fdqkv.data(), scratch.data(), fdy.data(), fqkv.data(), fy.data(), state.data(), B, T, H, KV,
                            D, nullptr);
  EXPECT_EQ(again, state) << "the recomputed state differs from the forward's";
  EXPECT_LT(relative_error(state, probs), 1e-6);  // the CPU's state is the probabilities
  EXPECT_LT(relative_error(fy, y), 1e-6);
  EXPECT_LT(relative_error(fdqkv, dqkv), 1e-5);
}

TEST(DecoderOps, GroupedQueryAttentionWithOneKvHead) {
  check_gqa(2, 13, 4, 1, 8);
}
TEST(DecoderOps, GroupedQueryAttentionWithAsManyKvHeadsAsQueryHeads) {
  check_gqa(1, 10, 3, 3, 16);
}
TEST(DecoderOps, GroupedQueryAttentionWithGroupsOfThreeAndAnOddHeadDim) {
  check_gqa(3, 7, 6, 2, 5);
}
TEST(DecoderOps, GroupedQueryAttentionAtAQwen3LikeShape) {
  // head_dim 2·C/H as Qwen3 0.6B's (C 1024, H 16, D 128), scaled down: C 32, H 4, D 16; KV 2.
  check_gqa(2, 17, 4, 2, 16);
}

TEST(DecoderOps, GroupedQueryAttentionOverSeveralQueryTiles) {
  // The CPU goes by tiles of 64 queries, each reading the keys up to its last: a ragged last tile
  // (150 = 2 · 64 + 22) and an exact multiple.
  check_gqa(1, 150, 4, 2, 8);
  check_gqa(2, 128, 3, 1, 6);
}

TEST(DecoderOps, GroupedQueryAttentionRefusesHeadsThatDoNotGroup) {
  CpuBackend be;
  std::vector<float> y(6), state(be.gqa_attention_state_size(1, 1, 3, 2, 1)), qkv(7);
  EXPECT_THROW(be.gqa_attention_forward(y.data(), state.data(), qkv.data(), 1, 1, 3, 2, 1, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace fsdp
