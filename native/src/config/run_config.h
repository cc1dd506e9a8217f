// The run config as the runtime sees it: core/schemas/run-config.schema.json, read from the
// resolved config JSON that `fsdp-train` writes (or that a user hands to fsdp-train-native on a
// remote host). Absent keys take the schema's defaults, read from the schema itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/problem.h"

namespace fsdp {

enum class Dtype { float32, bfloat16, float16 };
int dtype_bytes(Dtype d);
const char* dtype_name(Dtype d);

enum class ShardingStrategy { NO_SHARD, SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD };
const char* strategy_name(ShardingStrategy s);

enum class CheckpointPolicy { every_n, selective, automatic };

enum class Architecture { gpt2, llama, qwen3 };
const char* architecture_name(Architecture a);

/** model.rope_scaling (llama, qwen3): HF's rope_scaling; the four numbers are read for llama3 only. */
struct RopeScalingConfig {
  std::string rope_type = "default";  // default | llama3
  double factor = 0, low_freq_factor = 0, high_freq_factor = 0;
  int original_max_position_embeddings = 0;
};

struct ModelConfig {
  Architecture architecture = Architecture::gpt2;
  int d_model = 0, n_layers = 0, n_heads = 0, vocab_size = 0, max_seq_len = 0;
  bool tie_embeddings = true;
  double init_std = 0.02;
  // gpt2 only (the schema's x-only-when refuses them for the family).
  int mlp_ratio = 4;
  double dropout = 0;
  // llama and qwen3 only; n_kv_heads and head_dim as resolved (n_heads, d_model / n_heads when absent).
  int n_kv_heads = 0, head_dim = 0, intermediate_size = 0;
  double rms_norm_eps = 1e-5, rope_theta = 10000;
  RopeScalingConfig rope_scaling;
  bool attention_bias = false, mlp_bias = false;

  bool llama_family() const { return architecture != Architecture::gpt2; }
};

struct DataConfig {
  std::string train, val;  // absolute paths once resolved; val may be empty
  int seq_len = 0;
  bool shuffle = true;
  int prefetch_batches = 2;
};

struct TrainingConfig {
  int batch_size_per_gpu = 0, gradient_accumulation_steps = 1, max_steps = 0;
  double learning_rate = 0;
  std::string schedule = "warmup_cosine";
  int warmup_steps = 0;
  double min_lr_ratio = 0.1, decay_ratio = 0.2, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double max_grad_norm = 1.0, layer_lr_decay = 1.0;
  std::uint32_t seed = 1234;
};

struct FsdpConfig {
  ShardingStrategy sharding_strategy = ShardingStrategy::FULL_SHARD;
  bool cpu_offload = false;
  std::string backward_prefetch = "BACKWARD_PRE";
  bool forward_prefetch = false;
  int ranks_per_node = 0;  // 0: not given
};

struct MixedPrecisionConfig {
  Dtype param_dtype = Dtype::float32, reduce_dtype = Dtype::float32, buffer_dtype = Dtype::float32;
};

struct ActivationCheckpointingConfig {
  bool enabled = false;
  CheckpointPolicy policy = CheckpointPolicy::every_n;
  int every_n_layers = 1;
  double memory_budget_gb = 0;  // 0: not given
};

struct CheckpointingConfig {
  std::string dir = "checkpoints";
  int save_every_n_steps = 0;
  double save_every_minutes = 0;
  int keep_last_n = 3;
  bool save_final = true;
};

struct StabilityConfig {
  std::string on_nan = "stop";
  double rollback_lr_factor = 0.5;
  int max_rollbacks = 3;
  double spike_zscore = 6;
  int spike_window = 50;
  std::string on_spike = "report";
};

struct LoggingConfig {
  int every_n_steps = 1, eval_every_n_steps = 0, eval_batches = 8;
  std::string runs_dir = "runs";
  bool tensorboard = true;  // event files next to metrics.jsonl (metrics/tensorboard_writer.h)
};

struct LaunchConfig {
  std::string target = "local", device = "cpu";
  int nproc_per_node = 1, nnodes = 1, threads_per_rank = 0;
  bool tf32 = false;                 // CUDA float32 matrix products on TF32 tensor cores
  std::string collectives = "auto";  // device buffers' collectives: auto | nccl | mpi (parallel/device_collectives.h)
  bool check_memory = true;          // refuse a plan that does not fit this host's memory (train/memory_check.h)
  double collective_timeout_s =
      0;  // a collective waited on longer ends the job (parallel/collective_watchdog.h); 0: automatic
  double heartbeat_timeout_s =
      20;  // a rank on this host silent for longer ends the job (parallel/collective_watchdog.h); 0: off
};

struct InjectNanConfig {
  bool enabled = false;
  int step = 0, layer = 0;
  std::string phase, op;  // op empty: the runtime picks one
  bool once = true;
};

struct DebugConfig {
  InjectNanConfig inject_nan;
  bool check_numerics = false;
};

struct RunConfig {
  std::string name = "run";
  ModelConfig model;
  DataConfig data;
  TrainingConfig training;
  FsdpConfig fsdp;
  MixedPrecisionConfig mixed_precision;
  ActivationCheckpointingConfig activation_checkpointing;
  CheckpointingConfig checkpointing;
  StabilityConfig stability;
  LoggingConfig logging;
  LaunchConfig launch;
  DebugConfig debug;
  nlohmann::json resolved;  // the config with defaults filled in, as reported in run_start

  int world_size() const { return launch.nproc_per_node * launch.nnodes; }
};

struct ParsedConfig {
  RunConfig config;
  std::vector<ConfigProblem> problems;  // type errors; the config is usable only when there are none
  bool ok() const { return !has_errors(problems); }
};

/**
 * Reads a run config object: fills schema defaults for absent keys, folds fsdp.zero_stage into
 * sharding_strategy, defaults data.seq_len to model.max_seq_len. Relative data paths are resolved
 * against `base_dir` (the config file's folder), as resolveRunConfig does.
 */
ParsedConfig parse_run_config(const nlohmann::json& value, const std::string& base_dir = "");

}  // namespace fsdp
