// Small run configs for the tests, built in code so each test states the shape it needs.
#pragma once
#include <nlohmann/json.hpp>

#include "config/run_config.h"

namespace fsdp::test {

inline nlohmann::json tiny_config_json(int d_model = 16, int n_layers = 2, int n_heads = 2, int vocab = 32, int seq = 8,
                                       int batch = 2) {
  return {
      {"name", "tiny"},
      {"model",
       {{"d_model", d_model},
        {"n_layers", n_layers},
        {"n_heads", n_heads},
        {"vocab_size", vocab},
        {"max_seq_len", seq}}},
      {"data", {{"train", "unused.tok"}, {"seq_len", seq}}},
      {"training", {{"batch_size_per_gpu", batch}, {"max_steps", 10}, {"learning_rate", 1e-3}}},
      {"fsdp", {{"sharding_strategy", "NO_SHARD"}}},
  };
}

inline RunConfig parse_or_die(const nlohmann::json& j) {
  ParsedConfig p = parse_run_config(j);
  if (!p.ok()) throw std::runtime_error(format_problem("test config", p.problems.front()));
  return p.config;
}

}  // namespace fsdp::test
