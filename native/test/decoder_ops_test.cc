// The decoder family's float32 ops on the CPU backend (backend/cpu/rmsnorm.cc, rope.cc, swiglu.cc,
// gqa_attention.cc) against plain float64 loops of the same math, forward and backward, on shapes
// chosen to be awkward: T not a multiple of any tile, one kv head (multi-query), as many kv heads
// as query heads (multi-head), a head_dim unrelated to any hidden size, several sequences.
// Tolerances are fast_vs_reference_test.cc's: float32 sums of a few dozen terms keep a relative
// error (norm-wise) near 1e-7, so 1e-6 forward and 1e-5 for gradients (two products deep).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fixtures.h"

namespace fsdp {
namespace {

using test::random_vector;
using test::relative_error;

std::vector<float> to_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

// --- float64 loops of the ops' math -----------------------------------------------------------

/** RMSNorm of row (n, g) at base + n·stride + g·C; dx += its gradient, dw += w's. */
void rmsnorm_ref(std::vector<double>& out, std::vector<double>& rstd, const std::vector<double>& x,
                 const std::vector<double>& w, long base, long N, long G, long C, long stride, double eps) {
  for (long r = 0; r < N * G; ++r) {
    const long off = base + (r / G) * stride + (r % G) * C;
    double ss = 0;
    for (long c = 0; c < C; ++c) ss += x[off + c] * x[off + c];
    rstd[r] = 1.0 / std::sqrt(ss / C + eps);
    for (long c = 0; c < C; ++c) out[off + c] = x[off + c] * rstd[r] * w[c];
  }
}

void rmsnorm_grad_ref(std::vector<double>& dx, std::vector<double>& dw, const std::vector<double>& dout,
                      const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& rstd,
                      long base, long N, long G, long C, long stride) {
  for (long r = 0; r < N * G; ++r) {
    const long off = base + (r / G) * stride + (r % G) * C;
    const double rs = rstd[r];
    double dot = 0;
    for (long c = 0; c < C; ++c) dot += dout[off + c] * w[c] * x[off + c];
    for (long c = 0; c < C; ++c) {
      dx[off + c] += rs * dout[off + c] * w[c] - x[off + c] * rs * rs * rs * dot / C;
      dw[c] += dout[off + c] * x[off + c] * rs;
    }
  }
}

/** Turns the q and k heads of qkv by sign · t · inv_freq[j] (pairs j, j + D/2). */
void rope_ref(std::vector<double>& qkv, const std::vector<float>& inv_freq, long B, long T, long H, long KV, long D,
              double sign) {
  const long half = D / 2, W = (H + 2 * KV) * D;
  for (long b = 0; b < B; ++b)
    for (long t = 0; t < T; ++t)
      for (long h = 0; h < H + KV; ++h) {
        double* x = qkv.data() + (b * T + t) * W + h * D;
        for (long j = 0; j < half; ++j) {
          // The angle as transformers rounds it: float32 position times float32 inv_freq.
          const double angle = static_cast<float>(t) * inv_freq[j];
          const double c = std::cos(angle), s = sign * std::sin(angle);
          const double x1 = x[j], x2 = x[j + half];
          x[j] = x1 * c - x2 * s;
          x[j + half] = x2 * c + x1 * s;
        }
      }
}

double sigmoid(double g) {
  return 1.0 / (1.0 + std::exp(-g));
}

/** Grouped-query attention: forward into y, then (with dy) dqkv = its gradient. */
struct GqaRef {
  long B, T, H, KV, D;
  long W() const { return (H + 2 * KV) * D; }
  long kv(long h) const { return h / (H / KV); }

  void run(std::vector<double>& y, std::vector<double>& dqkv, const std::vector<double>& qkv,
           const std::vector<double>& dy) const {
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    for (long b = 0; b < B; ++b)
      for (long h = 0; h < H; ++h)
        for (long t = 0; t < T; ++t) {
          const double* q = &qkv[(b * T + t) * W() + h * D];
          std::vector<double> p(t + 1), dp(t + 1);
          double max = -INFINITY, sum = 0;
          for (long u = 0; u <= t; ++u) {
            const double* k = &qkv[(b * T + u) * W() + (H + kv(h)) * D];
            double s = 0;
            for (long e = 0; e < D; ++e) s += q[e] * k[e];
            p[u] = s * scale;
            max = std::max(max, p[u]);
          }
          for (long u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - max));
          for (long u = 0; u <= t; ++u) p[u] /= sum;
          const double* d = &dy[(b * T + t) * H * D + h * D];
          double pdp = 0;
          for (long u = 0; u <= t; ++u) {
            const long v = (b * T + u) * W() + (H + KV + kv(h)) * D;
            for (long e = 0; e < D; ++e) {
              y[(b * T + t) * H * D + h * D + e] += p[u] * qkv[v + e];
              dp[u] += d[e] * qkv[v + e];
              dqkv[v + e] += p[u] * d[e];
            }
            pdp += p[u] * dp[u];
          }
          for (long u = 0; u <= t; ++u) {
            const double ds = p[u] * (dp[u] - pdp) * scale;
            const long k = (b * T + u) * W() + (H + kv(h)) * D, qi = (b * T + t) * W() + h * D;
            for (long e = 0; e < D; ++e) {
              dqkv[qi + e] += ds * qkv[k + e];
              dqkv[k + e] += ds * qkv[qi + e];
            }
          }
        }
  }
};

// --- the cases ------------------------------------------------------------------------------

TEST(DecoderOps, RmsNormOfTheResidualStreamAccumulatesItsGradients) {
  CpuBackend be;
  const long N = 37, C = 40;
  const double eps = 1e-6;
  const auto x = random_vector(N * C, 21, 3.0), w = random_vector(C, 22), dout = random_vector(N * C, 23),
             dx0 = random_vector(N * C, 24), dw0 = random_vector(C, 25);
  std::vector<double> out(N * C), rstd(N), dx = dx0, dw = dw0;
  rmsnorm_ref(out, rstd, x, w, 0, N, 1, C, C, eps);
  rmsnorm_grad_ref(dx, dw, dout, x, w, rstd, 0, N, 1, C, C);

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
  rmsnorm_ref(out, rq, qkv, wq, 0, N, H, D, W, eps);
  rmsnorm_ref(out, rk, qkv, wk, H * D, N, KV, D, W, eps);
  std::vector<double> dx(N * W, 0.0), dwq(D, 0.0), dwk(D, 0.0);
  rmsnorm_grad_ref(dx, dwq, dout, qkv, wq, rq, 0, N, H, D, W);
  rmsnorm_grad_ref(dx, dwk, dout, qkv, wk, rk, H * D, N, KV, D, W);

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
  std::vector<float> inv_freq(D / 2);
  for (long j = 0; j < D / 2; ++j)
    inv_freq[j] = static_cast<float>(1.0 / std::pow(10000.0, static_cast<double>(2 * j) / D));
  const auto qkv = random_vector(B * T * W, 41), dout = random_vector(B * T * W, 42);
  std::vector<double> out = qkv, dx = dout;
  rope_ref(out, inv_freq, B, T, H, KV, D, 1.0);
  rope_ref(dx, inv_freq, B, T, H, KV, D, -1.0);

  auto fout = to_float(qkv), fdx = to_float(dout);
  be.rope_forward(fout.data(), inv_freq.data(), B, T, H, KV, D);
  be.rope_backward(fdx.data(), inv_freq.data(), B, T, H, KV, D);
  EXPECT_LT(relative_error(fout, out), 1e-6);
  EXPECT_LT(relative_error(fdx, dx), 1e-6);
  for (long r = 0; r < B * T; ++r)
    for (long e = (H + KV) * D; e < W; ++e) ASSERT_EQ(fout[r * W + e], static_cast<float>(qkv[r * W + e]));
  // The transpose of a rotation is its inverse: back from the turned q and k to the start.
  be.rope_backward(fout.data(), inv_freq.data(), B, T, H, KV, D);
  EXPECT_LT(relative_error(fout, qkv), 1e-6);
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
  for (long i = 0; i < N; ++i)
    for (long j = 0; j < F; ++j) {
      const double g = gate_up[i * 2 * F + j], u = gate_up[i * 2 * F + F + j], s = sigmoid(g), d = dh[i * F + j];
      h[i * F + j] = g * s * u;
      dgu[i * 2 * F + j] = d * u * s * (1 + g * (1 - s));
      dgu[i * 2 * F + F + j] = d * g * s;
    }
  auto fgu = to_float(gate_up), fdh = to_float(dh);
  std::vector<float> fh(N * F), fdgu(N * 2 * F);
  be.swiglu_forward(fh.data(), fgu.data(), N, F);
  be.swiglu_backward(fdgu.data(), fdh.data(), fgu.data(), N, F);
  EXPECT_LT(relative_error(fh, h), 1e-6);
  EXPECT_LT(relative_error(fdgu, dgu), 1e-6);
}

/** One shape of grouped-query attention, forward, state recompute and backward, against GqaRef. */
void check_gqa(long B, long T, long H, long KV, long D) {
  SCOPED_TRACE(testing::Message() << "B " << B << " T " << T << " H " << H << " KV " << KV << " D " << D);
  CpuBackend be;
  const GqaRef ref{B, T, H, KV, D};
  const auto qkv = random_vector(B * T * ref.W(), 61 + T, 1.5), dy = random_vector(B * T * H * D, 62 + T);
  std::vector<double> y(B * T * H * D, 0.0), dqkv(B * T * ref.W(), 0.0);
  ref.run(y, dqkv, qkv, dy);

  auto fqkv = to_float(qkv), fdy = to_float(dy);
  std::vector<float> fy(B * T * H * D), state(be.gqa_attention_state_size(B, T, H, KV, D)), again(state.size()),
      scratch(be.gqa_attention_scratch_size(B, T, H, KV, D));
  std::vector<float> fdqkv(B * T * ref.W(), NAN);  // overwritten whole: no NaN may survive
  be.gqa_attention_forward(fy.data(), state.data(), fqkv.data(), B, T, H, KV, D, nullptr);
  be.gqa_attention_state(again.data(), fqkv.data(), B, T, H, KV, D);
  be.gqa_attention_backward(fdqkv.data(), scratch.data(), fdy.data(), fqkv.data(), fy.data(), state.data(), B, T, H, KV,
                            D, nullptr);
  EXPECT_EQ(again, state) << "the recomputed state differs from the forward's";
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

TEST(DecoderOps, GroupedQueryAttentionRefusesHeadsThatDoNotGroup) {
  CpuBackend be;
  std::vector<float> y(6), state(be.gqa_attention_state_size(1, 1, 3, 2, 1)), qkv(7);
  EXPECT_THROW(be.gqa_attention_forward(y.data(), state.data(), qkv.data(), 1, 1, 3, 2, 1, nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace fsdp
