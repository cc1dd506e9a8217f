// Reading run configs: schema defaults, aliases, and errors that name the key.
#include <gtest/gtest.h>

#include <algorithm>

#include "memory/memory_plan.h"
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

/** The problems of a config whose training.<key> is the JSON text `raw`, as "path: message". */
std::vector<std::string> problems_with(const std::string& section, const std::string& key, const std::string& raw) {
  auto j = test::tiny_config_json();
  j[section][key] = nlohmann::json::parse(raw);
  std::vector<std::string> out;
  for (const auto& p : parse_run_config(j).problems) out.push_back(p.path + ": " + p.message);
  return out;
}

TEST(RunConfig, RefusesNumbersBeyondTheSchemaRangeInsteadOfTruncatingThem) {
  // Issue 26, item 1: static_cast<int> read 4294967300 as 4, 2^31 as -2^31, 2^53 as 0.
  using V = std::vector<std::string>;
  EXPECT_EQ(problems_with("training", "batch_size_per_gpu", "4294967300"),
            V{"training.batch_size_per_gpu: must be <= 65536, got 4294967300"});
  EXPECT_EQ(problems_with("training", "batch_size_per_gpu", "9007199254740992"),
            V{"training.batch_size_per_gpu: must be <= 65536, got 9007199254740992"});
  EXPECT_EQ(problems_with("training", "max_steps", "2147483648"),
            V{"training.max_steps: must be <= 1000000000, got 2147483648"});
  EXPECT_EQ(problems_with("training", "max_steps", "18446744073709551615"),
            V{"training.max_steps: must be <= 1000000000, got 18446744073709551615"});
  EXPECT_EQ(problems_with("training", "max_steps", "1e300"),
            V{"training.max_steps: must be <= 1000000000, got 1e+300"});
  EXPECT_EQ(problems_with("model", "n_layers", "-4294967295"), V{"model.n_layers: must be >= 1, got -4294967295"});
  EXPECT_EQ(problems_with("training", "max_steps", "12.5"), V{"training.max_steps: expected an integer, got 12.5"});
  EXPECT_EQ(problems_with("training", "seed", "4294967296"), V{"training.seed: must be <= 4294967295, got 4294967296"});
  // Numbers are held to the schema's bounds too, exclusive ones included.
  EXPECT_EQ(problems_with("model", "dropout", "1"), V{"model.dropout: must be < 1, got 1"});
  EXPECT_EQ(problems_with("training", "learning_rate", "0"), V{"training.learning_rate: must be > 0, got 0"});
  EXPECT_EQ(problems_with("training", "betas", "[0.9, 1.5]"), V{"training.betas: must be < 1, got 1.5"});
  // In range: read exactly, whatever JSON type holds it.
  auto j = test::tiny_config_json();
  j["training"]["max_steps"] = 1000000000.0;
  j["training"]["seed"] = 4294967295u;
  const RunConfig c = test::parse_or_die(j);
  EXPECT_EQ(c.training.max_steps, 1000000000);
  EXPECT_EQ(c.training.seed, 4294967295u);
}

TEST(RunConfig, ReadsZeroStageAsAJsonNumberNotItsLow32Bits) {
  auto j = test::tiny_config_json();
  j["fsdp"] = {{"zero_stage", 4294967298u}};
  const ParsedConfig p = parse_run_config(j);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.problems[0].path, "fsdp.zero_stage");
  EXPECT_EQ(p.problems[0].message, "4294967298 is not one of 0, 1, 2, 3");
}

TEST(Validate, RefusesSizesWhoseMemoryPlanExceeds64BitBytes) {
  auto j = test::tiny_config_json(1024, 2, 1024);
  j["model"]["max_seq_len"] = 1048576;
  j["data"]["seq_len"] = 1048576;
  j["training"]["batch_size_per_gpu"] = 65536;
  const auto problems = check_run_config(j, "", {false, false});
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems[0].path, "training.batch_size_per_gpu");
  EXPECT_NE(problems[0].message.find("beyond 2^62 bytes"), std::string::npos) << problems[0].message;
  RunConfig c = test::parse_or_die(j);
  EXPECT_THROW(plan_memory(c), std::runtime_error);
}

TEST(Validate, ChecksRelationsBetweenKeys) {
  auto j = test::tiny_config_json(16, 2, 2);
  j["data"]["seq_len"] = 9;
  // float16 is never the CPU's (bf16 is, for its matrix products, where oneDNN and AMX-BF16 are:
  // CpuBf16 tests), nor is a bf16 reduce_dtype.
  j["mixed_precision"] = {{"param_dtype", "float16"}, {"reduce_dtype", "bfloat16"}};
  const auto problems = check_run_config(j, "", {false, false});
  std::vector<std::string> paths;
  for (const auto& p : problems) paths.push_back(p.path);
  EXPECT_EQ(paths,
            (std::vector<std::string>{"data.seq_len", "mixed_precision.param_dtype", "mixed_precision.reduce_dtype"}));
}

// Issue 35 item 2: the rules between model keys are the schema's (x-checks, x-only-when,
// x-required-when), read generically by check_cross_keys as core/config/schema-cross-keys.ts
// reads them for the editor (test/unit/run-config-family.test.ts holds the same cases there).
nlohmann::json llama_json(const nlohmann::json& extra = nlohmann::json::object()) {
  auto j = test::tiny_config_json(16, 2, 4);
  j["model"]["architecture"] = "llama";
  j["model"]["intermediate_size"] = 40;
  for (const auto& [k, v] : extra.items()) j["model"][k] = v;
  return j;
}

std::vector<std::string> parse_problems(const nlohmann::json& j) {
  std::vector<std::string> out;
  for (const auto& p : parse_run_config(j).problems) out.push_back(p.path + ": " + p.message);
  return out;
}

TEST(RunConfig, ReadsTheLlamaFamilyKeysWithTheirDefaultsAndResolvedHeads) {
  const RunConfig l = test::parse_or_die(llama_json());
  EXPECT_EQ(l.model.architecture, Architecture::llama);
  EXPECT_EQ(l.model.n_kv_heads, 4);  // absent: n_heads
  EXPECT_EQ(l.model.head_dim, 4);    // absent: d_model / n_heads
  EXPECT_EQ(l.model.intermediate_size, 40);
  EXPECT_DOUBLE_EQ(l.model.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(l.model.rope_theta, 10000);
  EXPECT_EQ(l.model.rope_scaling.rope_type, "default");
  EXPECT_FALSE(l.model.attention_bias);
  // gpt2's keys get no default in a llama config, nor the family's in a gpt2 one.
  EXPECT_FALSE(l.resolved["model"].contains("mlp_ratio"));
  EXPECT_FALSE(l.resolved["model"].contains("dropout"));
  const RunConfig g = test::parse_or_die(test::tiny_config_json());
  EXPECT_EQ(g.model.architecture, Architecture::gpt2);
  EXPECT_EQ(g.resolved["model"]["architecture"], "gpt2");
  EXPECT_FALSE(g.resolved["model"].contains("rope_theta"));
  EXPECT_FALSE(g.resolved["model"].contains("rope_scaling"));

  const RunConfig q = test::parse_or_die(llama_json({{"architecture", "qwen3"},
                                                     {"n_heads", 3},
                                                     {"n_kv_heads", 1},
                                                     {"head_dim", 8},
                                                     {"rms_norm_eps", 1e-6},
                                                     {"rope_theta", 1e6},
                                                     {"rope_scaling",
                                                      {{"rope_type", "llama3"},
                                                       {"factor", 32},
                                                       {"low_freq_factor", 1},
                                                       {"high_freq_factor", 4},
                                                       {"original_max_position_embeddings", 8192}}}}));
  EXPECT_EQ(q.model.architecture, Architecture::qwen3);
  EXPECT_EQ(q.model.head_dim, 8);  // 3 heads of 8 in a 16-wide model: stated, so no divisibility rule
  EXPECT_EQ(q.model.n_kv_heads, 1);
  EXPECT_DOUBLE_EQ(q.model.rope_scaling.factor, 32);
  EXPECT_EQ(q.model.rope_scaling.original_max_position_embeddings, 8192);
}

TEST(RunConfig, StatesTheSchemasCrossKeyRulesAtTheKey) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parse_problems(llama_json({{"n_kv_heads", 3}})),
            V{"model.n_kv_heads: 3 does not divide model.n_heads (4): each key-value head serves n_heads / n_kv_heads "
              "query heads (grouped-query attention)"});
  const auto width = parse_problems(test::tiny_config_json(16, 2, 3));
  ASSERT_EQ(width.size(), 1u);
  EXPECT_EQ(width[0].rfind("model.n_heads: 3 does not divide model.d_model (16): ", 0), 0u) << width[0];
  EXPECT_EQ(parse_problems(llama_json({{"n_heads", 3}})).size(), 1u);
  EXPECT_EQ(parse_problems(llama_json({{"n_heads", 3}, {"head_dim", 8}})), V{});
  // A missing n_heads takes its default here (4), and that is held to the rule: it is what would run.
  auto headless = test::tiny_config_json(6);
  headless["model"].erase("n_heads");
  const auto defaulted = parse_problems(headless);
  ASSERT_EQ(defaulted.size(), 1u);
  EXPECT_EQ(defaulted[0].rfind("model.n_heads: 4 does not divide model.d_model (6): ", 0), 0u) << defaulted[0];

  auto gpt = test::tiny_config_json();
  gpt["model"]["n_kv_heads"] = 2;
  EXPECT_EQ(parse_problems(gpt),
            V{"model.n_kv_heads: only for model.architecture llama or qwen3, not gpt2 (the default)"});
  EXPECT_EQ(parse_problems(llama_json({{"mlp_ratio", 4}})),
            V{"model.mlp_ratio: only for model.architecture gpt2, not llama"});
  auto no_ffn = llama_json();
  no_ffn["model"].erase("intermediate_size");
  EXPECT_EQ(parse_problems(no_ffn), V{"model.intermediate_size: is missing (model.architecture llama or qwen3)"});

  // Sorted: the schema's keys are visited in nlohmann::json's (alphabetical) order here.
  auto missing = parse_problems(llama_json({{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8}}}}));
  std::sort(missing.begin(), missing.end());
  EXPECT_EQ(
      missing,
      (V{"model.rope_scaling.high_freq_factor: is missing (model.rope_scaling.rope_type llama3)",
         "model.rope_scaling.low_freq_factor: is missing (model.rope_scaling.rope_type llama3)",
         "model.rope_scaling.original_max_position_embeddings: is missing (model.rope_scaling.rope_type llama3)"}));
  EXPECT_EQ(parse_problems(llama_json({{"rope_scaling", {{"factor", 8}}}})),
            V{"model.rope_scaling.factor: only for model.rope_scaling.rope_type llama3, not default (the default)"});
  const auto order = parse_problems(llama_json({{"rope_scaling",
                                                 {{"rope_type", "llama3"},
                                                  {"factor", 8},
                                                  {"low_freq_factor", 4},
                                                  {"high_freq_factor", 1},
                                                  {"original_max_position_embeddings", 8192}}}}));
  ASSERT_EQ(order.size(), 1u);
  EXPECT_EQ(order[0].rfind(
                "model.rope_scaling.low_freq_factor: 4 is not less than model.rope_scaling.high_freq_factor (1)", 0),
            0u)
      << order[0];
}

TEST(Validate, TakesTheLlamaFamilyOnTheCpuAndRefusesItOnCudaByTheDevice) {
  EXPECT_TRUE(check_run_config(llama_json(), "", {false, false}).empty());
  auto j = llama_json();
  j["launch"]["device"] = "cuda";
  const auto problems = check_run_config(j, "", {false, true});
  // (The tiny head size is refused on CUDA too; the device's problem is the family's.)
  bool named = false;
  for (const auto& p : problems)
    named |= p.path == "launch.device" &&
             p.message.find("cuda: model.architecture llama: the Llama family's ops") != std::string::npos;
  EXPECT_TRUE(named) << problems.size() << " problems, none names the family on launch.device";
}

TEST(Validate, NamesTheFamilysBlockOpsForInjectNan) {
  auto with_op = [](nlohmann::json j, const std::string& phase, const std::string& op) {
    j["debug"]["inject_nan"] = {{"step", 1}, {"layer", 0}, {"phase", phase}, {"op", op}};
    std::vector<std::string> out;
    for (const auto& p : check_run_config(j, "", {false, false})) out.push_back(p.path + ": " + p.message);
    return out;
  };
  const auto qwen3 = llama_json({{"architecture", "qwen3"}});
  EXPECT_TRUE(with_op(llama_json(), "backward", "mlp.down").empty());
  EXPECT_TRUE(with_op(llama_json(), "forward", "attn.rope").empty());
  EXPECT_TRUE(with_op(qwen3, "optimizer", "attn.q_norm").empty());
  const auto gpt_op = with_op(llama_json(), "backward", "mlp.fc2");
  ASSERT_EQ(gpt_op.size(), 1u);
  EXPECT_NE(
      gpt_op[0].find("\"mlp.fc2\" is not an op of a block in the backward phase; one of ln1, attn.qkv, attn.rope"),
      std::string::npos)
      << gpt_op[0];
  // Qwen3's q/k norms are not Llama's.
  EXPECT_EQ(with_op(llama_json(), "optimizer", "attn.q_norm").size(), 1u);
  EXPECT_EQ(with_op(test::tiny_config_json(), "forward", "mlp.swiglu").size(), 1u);
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
