// Initialisation is a function of (seed, parameter, index): a shard initialised alone equals the
// same slice of the whole unit, so sharded ranks start from the single-process values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/init.h"
#include "model/param_layout.h"

namespace fsdp {
namespace {

TEST(Init, AShardEqualsTheSliceOfTheWholeUnit) {
  ModelShape s;
  s.V = 50, s.C = 16, s.L = 3, s.H = 2, s.F = 64, s.S = 8;
  const ParamLayout layout = ParamLayout::of(s);
  const UnitLayout& unit = layout.units[2];
  std::vector<float> whole(unit.numel);
  init_unit_range(unit, 0, unit.numel, whole.data(), 5, 0.02, s.L);
  for (std::size_t offset : {std::size_t{0}, std::size_t{1}, std::size_t{777}, unit.numel / 3}) {
    const std::size_t count = std::min<std::size_t>(1001, unit.numel - offset);
    std::vector<float> shard(count);
    init_unit_range(unit, offset, count, shard.data(), 5, 0.02, s.L);
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(shard[i], whole[offset + i]) << "offset " << offset << " index " << i;
  }
}

TEST(Init, FollowsGpt2Statistics) {
  ModelShape s;
  s.V = 64, s.C = 64, s.L = 8, s.H = 4, s.F = 256, s.S = 16;
  const ParamLayout layout = ParamLayout::of(s);
  const UnitLayout& block = layout.units[1];
  std::vector<float> p(block.numel);
  init_unit_range(block, 0, block.numel, p.data(), 1, 0.02, s.L);
  auto std_of = [&](const char* name) {
    const ParamSegment& seg = block.segment(name);
    double sq = 0;
    for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i) sq += double(p[i]) * p[i];
    return std::sqrt(sq / seg.numel);
  };
  EXPECT_NEAR(std_of("attn.qkv.weight"), 0.02, 0.001);
  EXPECT_NEAR(std_of("mlp.fc2.weight"), 0.02 / std::sqrt(16.0), 0.0005);  // residual projections: / sqrt(2 L)
  EXPECT_EQ(p[block.segment("ln1.weight").offset], 1.0f);
  EXPECT_EQ(p[block.segment("attn.qkv.bias").offset], 0.0f);
}

}  // namespace
}  // namespace fsdp
