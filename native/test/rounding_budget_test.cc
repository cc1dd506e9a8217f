// The composition rule of rounding_budget.h, checked on the CPU with real roundings: a GPT-shaped
// residual network (the parity test's shape: C 128, 4 heads, 2 blocks, T 64) built from the CPU
// backend's own operations, once in float32 and once with every output rounded to bfloat16 or
// float16 where the CUDA backend rounds it (a 2-rounding operation rounds its intermediate too; the
// attention's inner P rounding, which the CPU kernel cannot expose, is left out of both the
// simulation and its count). Its logits' relative L2 error stays under the bound 2u sqrt(Σ k²),
// near the expected u sqrt(Σ k² / 3), and far under the linear sum of the roundings — the bound
// parity_test.cc used before (8 (L + 1) u). And the parity test's numbers, derived from the model's
// path: tighter than before at the parity shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "fixtures.h"
#include "half_rounding.h"
#include "rounding_budget.h"
#include "runtime/rng.h"

namespace fsdp::test {
namespace {

constexpr long kB = 4, kT = 64, kC = 128, kH = 4, kV = 384, kL = 2, kN = kB * kT;

std::vector<float> normal(std::size_t n, std::uint64_t seed, float scale) {
  const CounterRng rng(seed);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(rng.normal(i));
  return v;
}

struct Weights {
  std::vector<float> wte = normal(kV * kC, 1, 0.02f), wpe = normal(kT * kC, 2, 0.02f),
                     ones = std::vector<float>(4 * kC, 1.0f), zeros = std::vector<float>(4 * kC, 0.0f);
  std::vector<std::vector<float>> qkv, proj, fc, fc2;
  Weights() {
    const float residual_scale = 0.02f / std::sqrt(2.0f * kL);  // GPT-2's scaled residual projections
    for (long i = 0; i < kL; ++i) {
      qkv.push_back(normal(3 * kC * kC, 10 + i, 0.02f));
      proj.push_back(normal(kC * kC, 20 + i, residual_scale));
      fc.push_back(normal(4 * kC * kC, 30 + i, 0.02f));
      fc2.push_back(normal(4 * kC * kC, 40 + i, residual_scale));
    }
  }
};

/** The network's logits; with `round` every output rounded as the CUDA backend rounds it, counting the roundings into
 * `path`. */
std::vector<float> logits(const Weights& w, const std::vector<std::int32_t>& tokens, float (*round)(float),
                          rounding::Path* path) {
  CpuBackend be;
  auto r = [&](std::vector<float>& x, const char* op) {
    if (!round) return;
    for (float& v : x) v = round(v);
    if (path) path->add(op, 1);
  };
  std::vector<float> res(kN * kC), ln(kN * kC), mean(kN), rstd(kN), qkv(kN * 3 * kC), y(kN * kC), branch(kN * kC),
      h(kN * 4 * kC), g(kN * 4 * kC);
  std::vector<float> state(be.attention_state_size(kB, kT, kH));
  be.embedding_forward(res.data(), tokens.data(), w.wte.data(), w.wpe.data(), kB, kT, kC);
  r(res, "embedding");
  for (long i = 0; i < kL; ++i) {
    be.layernorm_forward(ln.data(), mean.data(), rstd.data(), res.data(), w.ones.data(), w.zeros.data(), kN, kC);
    r(ln, "ln1");
    be.linear_forward(qkv.data(), DType::f32, ln.data(), w.qkv[i].data(), w.zeros.data(), kN, kC, 3 * kC);
    r(qkv, "qkv");
    be.attention_forward(y.data(), state.data(), qkv.data(), kB, kT, kC, kH, nullptr);
    r(y, "attention");
    be.linear_forward(branch.data(), DType::f32, y.data(), w.proj[i].data(), w.zeros.data(), kN, kC, kC);
    r(branch, "proj");
    for (long k = 0; k < kN * kC; ++k) res[k] += branch[k];
    r(res, "residual (before ln2)");
    be.layernorm_forward(ln.data(), mean.data(), rstd.data(), res.data(), w.ones.data(), w.zeros.data(), kN, kC);
    r(ln, "ln2");
    be.linear_forward(h.data(), DType::f32, ln.data(), w.fc[i].data(), w.zeros.data(), kN, kC, 4 * kC);
    r(h, "fc pre-activation");
    be.gelu_forward(g.data(), h.data(), g.size());
    r(g, "GELU");
    be.linear_forward(branch.data(), DType::f32, g.data(), w.fc2[i].data(), w.zeros.data(), kN, 4 * kC, kC);
    r(branch, "fc2");
    for (long k = 0; k < kN * kC; ++k) res[k] += branch[k];
    r(res, "residual");
  }
  be.layernorm_forward(ln.data(), mean.data(), rstd.data(), res.data(), w.ones.data(), w.zeros.data(), kN, kC);
  r(ln, "ln_f");
  std::vector<float> out(kN * kV);
  be.linear_forward(out.data(), DType::f32, ln.data(), w.wte.data(), nullptr, kN, kC, kV);
  r(out, "logits");
  return out;
}

TEST(RoundingBudget, IndependentRoundingsComposeAsTheRootSumSquareWellUnderTheBoundAndFarUnderTheLinearSum) {
  const Weights w;
  for (DType t : {DType::bf16, DType::f16}) {
    const double u = rounding::unit_roundoff(t);
    for (std::uint64_t seed : {5u, 6u}) {
      std::vector<std::int32_t> tokens(kN);
      const CounterRng rng(seed);
      for (long i = 0; i < kN; ++i) tokens[i] = static_cast<std::int32_t>(rng.bits(i) % kV);
      rounding::Path path;
      const std::vector<float> exact = logits(w, tokens, nullptr, nullptr);
      const std::vector<float> rounded = logits(w, tokens, t == DType::bf16 ? round_bf16 : round_f16, &path);
      const double err = relative_error(exact, rounded), expected = u * path.root_sum_square() / std::sqrt(3.0);
      SCOPED_TRACE(std::string(dtype_name(t)) + " seed " + std::to_string(seed) + ": error " + std::to_string(err / u) +
                   " u over " + std::to_string(path.ops.size()) + " roundings, expected " +
                   std::to_string(expected / u) + " u");
      EXPECT_EQ(path.ops.size(), 3u + 10u * kL);
      EXPECT_LE(err, path.bound(t));
      EXPECT_GT(err, expected / 4) << "the roundings did not happen";
      EXPECT_LT(err, 4 * expected) << "errors compound faster than the root-sum-square";
      EXPECT_LT(err, path.linear_sum() * u / 4) << "the linear sum would not be loose";
      std::printf("%s seed %d: logits error %.2f u; expected %.2f u, bound %.2f u, linear sum %d u\n", dtype_name(t),
                  static_cast<int>(seed), err / u, expected / u, path.bound(t) / u, path.linear_sum());
    }
  }
}

TEST(RoundingBudget, TheParityBoundsAreDerivedFromTheModelsPathAndAreTighterThanBefore) {
  const rounding::Path forward = rounding::forward_path(2), gradients = rounding::gradient_path(2);
  // Embedding, 8 operations a block, ln_f and the logits; the gradients add the backward's.
  EXPECT_EQ(forward.ops.size(), 3u + 8u * 2);
  EXPECT_EQ(forward.linear_sum(), 3 + 11 * 2);
  EXPECT_DOUBLE_EQ(forward.root_sum_square(), std::sqrt(3.0 + 17 * 2));
  EXPECT_DOUBLE_EQ(gradients.root_sum_square(), std::sqrt(3.0 + 17 * 2 + 2 + 12 * 2));
  const double before = 8.0 * (2 + 1) / 256;  // 9.4% (logits, loss), 18.75% (gradients)
  EXPECT_LT(forward.bound(DType::bf16), before / 1.9);
  EXPECT_LT(gradients.bound(DType::bf16), 2 * before / 2.9);
  EXPECT_NEAR(forward.bound(DType::bf16), 0.0475, 5e-4);
  EXPECT_NEAR(forward.bound(DType::f16), 0.0475 / 8, 1e-4);
}

}  // namespace
}  // namespace fsdp::test
