// Reading run configs: schema defaults, aliases, and errors that name the key.
#include <gtest/gtest.h>

#include "validation/validate.h"
#include "test_config.h"

namespace fsdp {
namespace {

TEST(RunConfig, FillsSchemaDefaultsForAbsentKeys) {
  const RunConfig c = test::parse_or_die(test::tiny_config_json());
  EXPECT_EQ(c.model.mlp_ratio, 4);
  EXPECT_TRUE(c.model.tie_embeddings);
  EXPECT_EQ(c.training.schedule, "warmup_cosine");
  EXPECT_DOUBLE_EQ(c.training.beta2, 0.95);
  EXPECT_EQ(c.data.prefetch_batches, 2);
  EXPECT_EQ(c.stability.spike_window, 50);
  EXPECT_FALSE(c.debug.inject_nan.enabled);
  EXPECT_TRUE(c.resolved["checkpointing"].contains("keep_last_n"));
}

TEST(RunConfig, DefaultsSeqLenToMaxSeqLenAndFoldsZeroStage) {
  auto j = test::tiny_config_json();
  j["data"].erase("seq_len");
  j["fsdp"] = {{"zero_stage", 2}};
  const RunConfig c = test::parse_or_die(j);
  EXPECT_EQ(c.data.seq_len, 8);
  EXPECT_EQ(c.fsdp.sharding_strategy, ShardingStrategy::SHARD_GRAD_OP);
}

TEST(RunConfig, NamesTheKeyOfATypeError) {
  auto j = test::tiny_config_json();
  j["model"]["d_model"] = "wide";
  const ParsedConfig p = parse_run_config(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.problems[0].path, "model.d_model");
  EXPECT_NE(p.problems[0].message.find("expected an integer"), std::string::npos);
}

TEST(Validate, ChecksRelationsBetweenKeys) {
  auto j = test::tiny_config_json(16, 2, 3);
  j["data"]["seq_len"] = 9;
  j["mixed_precision"] = {{"param_dtype", "bfloat16"}};
  const auto problems = check_run_config(j, "", {false, false});
  std::vector<std::string> paths;
  for (const auto& p : problems) paths.push_back(p.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"model.n_heads", "data.seq_len", "mixed_precision.param_dtype"}));
}

TEST(Validate, ReportsAMissingDataFileWithItsPath) {
  auto j = test::tiny_config_json();
  j["data"]["train"] = "/nonexistent/train.tok";
  const auto problems = check_run_config(j, "", {true, false});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "data.train");
  EXPECT_NE(problems[0].message.find("/nonexistent/train.tok"), std::string::npos);
}

TEST(Validate, RollbackNeedsCheckpoints) {
  auto j = test::tiny_config_json();
  j["stability"] = {{"on_nan", "rollback"}};
  const auto problems = check_run_config(j, "", {false, false});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "stability.on_nan");
}

}  // namespace
}  // namespace fsdp
