// Learning-rate schedules and AdamW's parameter groups.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fixtures.h"
#include "optim/adamw.h"
#include "optim/schedule.h"

namespace fsdp {
namespace {

TrainingConfig schedule(const char* name, int warmup, int steps = 100) {
  TrainingConfig t;
  t.schedule = name;
  t.learning_rate = 1.0;
  t.min_lr_ratio = 0.1;
  t.warmup_steps = warmup;
  t.max_steps = steps;
  t.decay_ratio = 0.2;
  return t;
}

TEST(Schedule, WarmupRisesLinearlyToThePeak) {
  const auto t = schedule("warmup_cosine", 10);
  EXPECT_DOUBLE_EQ(scheduled_lr(t, 1), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr(t, 5), 0.5);
  EXPECT_DOUBLE_EQ(scheduled_lr(t, 10), 1.0);
}

TEST(Schedule, CosineEndsAtTheFloorHalfwayAtTheMidpoint) {
  const auto t = schedule("warmup_cosine", 10);
  EXPECT_NEAR(scheduled_lr(t, 55), 0.55, 1e-12);  // halfway through the decay: (1 + 0.1) / 2
  EXPECT_NEAR(scheduled_lr(t, 100), 0.1, 1e-12);
}

TEST(Schedule, WsdHoldsThePeakThenDecaysOverTheLastFifth) {
  const auto t = schedule("wsd", 10);
  EXPECT_DOUBLE_EQ(scheduled_lr(t, 11), 1.0);
  EXPECT_DOUBLE_EQ(scheduled_lr(t, 80), 1.0);
  EXPECT_NEAR(scheduled_lr(t, 90), 0.55, 1e-12);
  EXPECT_NEAR(scheduled_lr(t, 100), 0.1, 1e-12);
}

TEST(Schedule, OneCycleStartsAtATwentyFifthAndPeaksAfterWarmup) {
  const auto t = schedule("one_cycle", 20);
  EXPECT_NEAR(scheduled_lr(t, 0), 1.0 / 25, 1e-12);
  EXPECT_NEAR(scheduled_lr(t, 20), 1.0, 1e-12);
  EXPECT_NEAR(scheduled_lr(t, 100), 0.1, 1e-12);
  EXPECT_LT(scheduled_lr(t, 10), 1.0);
}

TEST(Schedule, LinearAndConstant) {
  EXPECT_NEAR(scheduled_lr(schedule("linear", 0), 50), 1.0 - 0.9 * 0.5, 1e-12);
  EXPECT_NEAR(scheduled_lr(schedule("linear", 0), 100), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(scheduled_lr(schedule("constant", 5), 3), 0.6);
  EXPECT_DOUBLE_EQ(scheduled_lr(schedule("constant", 5), 99), 1.0);
}

/** One AdamW step with zero gradients: only weight decay moves parameters. */
TEST(AdamWGroups, DecaysMatrixWeightsOnlyAndScalesRatesByLayer) {
  test::FastModel fast(test::small_shape(11, 8, 3, 2, 6, false));
  TrainingConfig t;
  t.weight_decay = 0.5;
  t.layer_lr_decay = 0.5;
  AdamW adamw(fast.be, fast.layout, t);
  std::vector<std::vector<float>> before;
  for (int u = 0; u < fast.state->unit_count(); ++u)
    before.emplace_back(fast.state->params(u), fast.state->params(u) + fast.layout.units[u].numel);
  ASSERT_FALSE(adamw.step(*fast.state, 1, 0.1, 1.0f, 1.0).has_value());
  const double L = 3;
  for (int u = 0; u < fast.state->unit_count(); ++u) {
    const UnitLayout& unit = fast.layout.units[u];
    const double scale = unit.kind == UnitKind::embedding ? std::pow(0.5, L + 1)
                         : unit.kind == UnitKind::block   ? std::pow(0.5, L - unit.layer)
                                                          : 1.0;
    for (const auto& seg : unit.segments) {
      const std::size_t i = seg.offset;  // the first element of each tensor
      const double expected = seg.decay ? before[u][i] * (1.0 - 0.1 * scale * 0.5) : before[u][i];
      EXPECT_NEAR(fast.state->params(u)[i], expected, 1e-7 * std::fabs(before[u][i]) + 1e-12) << seg.name;
    }
  }
}

TEST(AdamWGroups, RefusesAnUpdateThatIsNotFiniteAndNamesTheParameter) {
  test::FastModel fast(test::small_shape());
  for (int u = 0; u < fast.state->unit_count(); ++u)
    fast.be.fill(fast.state->grads(u), fast.layout.units[u].numel, 0.01f);
  const std::vector<float> before(fast.state->params(2), fast.state->params(2) + fast.layout.units[2].numel);
  TrainingConfig t;
  AdamW adamw(fast.be, fast.layout, t);
  const UpdatePoison poison{2, "mlp.fc.weight"};
  const auto bad = adamw.step(*fast.state, 1, 0.1, 1.0f, 1.0, &poison);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->param, "blocks.1.mlp.fc.weight");
  EXPECT_EQ(bad->count, 1u);
  // Nothing was written: not even the finite part of the update.
  EXPECT_EQ(0, std::memcmp(before.data(), fast.state->params(2), before.size() * sizeof(float)));
  EXPECT_FALSE(adamw.step(*fast.state, 1, 0.1, 1.0f, 1.0).has_value());
  EXPECT_NE(0, std::memcmp(before.data(), fast.state->params(2), before.size() * sizeof(float)));
}

}  // namespace
}  // namespace fsdp
