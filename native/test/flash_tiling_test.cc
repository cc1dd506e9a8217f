// The tiling logic of the tensor-core attention kernels (backend/cuda/kernels/flash_tiling.h), on
// its own: the schedules visit every causal (query, key) pair exactly once and no other, a tile
// declared mask-free has every pair visible, the online softmax over tiles equals the two-pass
// softmax (rows with nothing visible included); and the host rounding to bfloat16 and float16 the
// kernel tests use is to nearest even. The kernels built on it are run in flash_emulated_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cuda/kernels/flash_tiling.h"
#include "half_rounding.h"
#include "runtime/rng.h"

namespace fsdp::test {
namespace {

/** Counts how often a schedule visits each (query, key) pair; checks the mask flag on the way. */
struct Coverage {
  long T;
  std::vector<int> visits;
  explicit Coverage(long t) : T(t), visits(static_cast<std::size_t>(t * t), 0) {}
  void tile(long q0, int rows, long k0, int cols) {
    const bool masked = flash::needs_mask(q0, rows, k0, cols, T);
    for (long q = q0; q < q0 + rows; ++q)
      for (long k = k0; k < k0 + cols; ++k) {
        const bool seen = !masked || flash::visible(q, k, T);
        if (!masked)
          ASSERT_TRUE(flash::visible(q, k, T))
              << "tile (" << q0 << ", " << k0 << ") skips the mask but (" << q << ", " << k << ") is not visible";
        if (seen) ++visits[static_cast<std::size_t>(q * T + k)];
      }
  }
  void expect_each_causal_pair_once() const {
    for (long q = 0; q < T; ++q)
      for (long k = 0; k < T; ++k)
        ASSERT_EQ(visits[static_cast<std::size_t>(q * T + k)], k <= q ? 1 : 0)
            << "T " << T << " pair (" << q << ", " << k << ")";
  }
};

const long kLengths[] = {1, 2, 31, 63, 64, 65, 100, 127, 128, 129, 200, 256};

TEST(FlashTiling, ForwardAndDqVisitEveryCausalPairOnceByQueryTiles) {
  for (long T : kLengths) {
    Coverage c(T);
    for (long i = 0; i < flash::tile_count(T, flash::kQueryTile); ++i) {
      const long q0 = i * flash::kQueryTile;
      for (long j = 0; j < flash::key_tile_end(q0, flash::kQueryTile, T); ++j)
        c.tile(q0, flash::kQueryTile, j * flash::kKeyTile, flash::kKeyTile);
    }
    c.expect_each_causal_pair_once();
  }
}

TEST(FlashTiling, DkDvVisitsEveryCausalPairOnceByKeyTilesAtEitherQueryTile) {
  for (int head_size : {32, 64, 128}) {
    const int rows = flash::dkdv_query_tile(head_size);
    for (long T : kLengths) {
      Coverage c(T);
      for (long k = 0; k < flash::tile_count(T, flash::kKeyTile); ++k) {
        const long k0 = k * flash::kKeyTile;
        for (long i = flash::query_tile_begin(k0, rows); i < flash::tile_count(T, rows); ++i)
          c.tile(i * rows, rows, k0, flash::kKeyTile);
      }
      c.expect_each_causal_pair_once();
    }
  }
}

TEST(FlashTiling, OnlySkippedTilesAreEntirelyInvisible) {
  // The schedules stop at the diagonal: every tile they leave out has no visible pair.
  for (long T : kLengths) {
    for (long q0 = 0; q0 < T; q0 += flash::kQueryTile)
      for (long j = flash::key_tile_end(q0, flash::kQueryTile, T); j * flash::kKeyTile < T; ++j)
        for (long q = q0; q < q0 + flash::kQueryTile; ++q)
          for (long k = j * flash::kKeyTile; k < (j + 1) * flash::kKeyTile; ++k) ASSERT_FALSE(flash::visible(q, k, T));
  }
}

/** The online softmax of one row, streamed in tiles of `tile` scores as the kernels do, against the two-pass one. */
void expect_online_equals_two_pass(const std::vector<float>& s_log2, int tile) {
  flash::RowSoftmax st;
  for (std::size_t k0 = 0; k0 < s_log2.size(); k0 += static_cast<std::size_t>(tile)) {
    float mx = -INFINITY;
    for (std::size_t k = k0; k < k0 + static_cast<std::size_t>(tile) && k < s_log2.size(); ++k)
      mx = std::max(mx, s_log2[k]);
    const float correction = flash::rescale(st, mx);
    ASSERT_FALSE(std::isnan(correction));
    float sum = 0;
    for (std::size_t k = k0; k < k0 + static_cast<std::size_t>(tile) && k < s_log2.size(); ++k)
      sum += flash::probability(s_log2[k], st.m);
    st.l = st.l * correction + sum;
  }
  double mx = -INFINITY, sum = 0;
  for (float s : s_log2) mx = std::max(mx, static_cast<double>(s));
  if (mx == -INFINITY) {
    EXPECT_EQ(st.m, -INFINITY);  // nothing visible (a padding row): no NaN anywhere, lse -inf
    EXPECT_EQ(st.l, 0.0f);
    return;
  }
  for (float s : s_log2) sum += std::exp2(s - mx);
  const double lse = (mx + std::log2(sum)) * std::log(2.0);
  EXPECT_NEAR(flash::log_sum_exp(st.m, st.l), lse, 1e-5 * std::max(1.0, std::fabs(lse)));
}

TEST(FlashTiling, OnlineSoftmaxOverTilesEqualsTheTwoPassSoftmax) {
  const CounterRng rng(3);
  for (int n : {1, 5, 64, 65, 300}) {
    std::vector<float> s(static_cast<std::size_t>(n));
    // Scores rising along the row (the maximum moves tile after tile), and random ones.
    for (int i = 0; i < n; ++i) s[i] = 0.05f * static_cast<float>(i) + 4.0f * (rng.uniform(i) - 0.5f);
    expect_online_equals_two_pass(s, flash::kKeyTile);
    for (int i = 0; i < n; ++i) s[i] = 30.0f * (rng.uniform(1000 + i) - 0.5f);
    expect_online_equals_two_pass(s, flash::kKeyTile);
    // The causal mask's -inf after the row's own position, and a first tile entirely masked.
    for (int i = n / 2; i < n; ++i) s[i] = -INFINITY;
    expect_online_equals_two_pass(s, 16);
    std::vector<float> late(s);
    for (int i = 0; i < std::min(n, 16); ++i) late[i] = -INFINITY;
    expect_online_equals_two_pass(late, 16);
  }
  expect_online_equals_two_pass(std::vector<float>(70, -INFINITY), flash::kKeyTile);
}

TEST(FlashTiling, Bfloat16RoundsToNearestEven) {
  auto bits = [](float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
  };
  EXPECT_EQ(round_bf16(1.0f), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even (1). 1 + 3 * 2^-8 is halfway up: to 1 + 2^-6.
  EXPECT_EQ(round_bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);
  EXPECT_EQ(round_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(round_bf16(-2.5f), -2.5f);
  EXPECT_TRUE(std::isnan(round_bf16(NAN)));
  EXPECT_EQ(round_bf16(INFINITY), INFINITY);
  const CounterRng rng(4);
  for (int i = 0; i < 1000; ++i) {
    const float x = 100.0f * (rng.uniform(i) - 0.5f);
    const float r = round_bf16(x);
    EXPECT_EQ(bits(r) & 0xffffu, 0u);
    EXPECT_LE(std::fabs(r - x), std::ldexp(std::fabs(x), -8));  // within half a unit in the last of 8 bits
  }
}

TEST(FlashTiling, Float16RoundsToNearestEvenWithSubnormalsAndOverflow) {
  // The host rounding the float16 kernel tests build their inputs and references with (half_rounding.h).
  EXPECT_EQ(round_f16(1.0f + std::ldexp(1.0f, -11)), 1.0f);                             // halfway: to even
  EXPECT_EQ(round_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));  // halfway: up to even
  EXPECT_EQ(round_f16(65504.0f), 65504.0f);
  EXPECT_EQ(round_f16(65520.0f), INFINITY);
  EXPECT_EQ(round_f16(std::ldexp(1.0f, -25)), 0.0f);                       // half a subnormal unit: to even (0)
  EXPECT_EQ(round_f16(3 * std::ldexp(1.0f, -25)), std::ldexp(1.0f, -23));  // one and a half: to two units
  EXPECT_EQ(round_f16(-2.5f), -2.5f);
  EXPECT_TRUE(std::isnan(round_f16(NAN)));
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
}

}  // namespace
}  // namespace fsdp::test
