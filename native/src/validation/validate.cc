#include "validation/validate.h"

#include <string>

#include "backend/cpu/bf16_gemm.h"
#include "data/token_file.h"
#include "model/ops.h"
#include "memory/activation_choice.h"
#include "memory/memory_plan.h"

namespace fsdp {

namespace {

std::string str(long long v) {
  return std::to_string(v);
}

void check_data_file(const RunConfig& c, const std::string& key, const std::string& path,
                     std::vector<ConfigProblem>& out) {
  TokenFileHeader h;
  try {
    h = read_token_file_header(path);
  } catch (const std::exception& e) {
    out.push_back({key, std::string(e.what()) + " (prepare it with: node --import tsx samples/prepare-data.ts)"});
    return;
  }
  if (h.vocab_size > static_cast<std::uint32_t>(c.model.vocab_size)) {
    out.push_back({key, path + " holds token ids up to " + str(h.vocab_size - 1) + " (" + h.tokenizer +
                            " tokenizer) but model.vocab_size is " + str(c.model.vocab_size)});
  }
  const std::uint64_t need = static_cast<std::uint64_t>(c.training.batch_size_per_gpu) * c.data.seq_len + 1;
  if (h.token_count < need) {
    out.push_back({key, path + " has " + str(static_cast<long long>(h.token_count)) +
                            " tokens, fewer than one batch needs (" + str(c.training.batch_size_per_gpu) + " x " +
                            str(c.data.seq_len) + " + 1)"});
  }
}

}  // namespace

std::vector<ConfigProblem> validate_run_config(const RunConfig& c, const ValidateOptions& o) {
  std::vector<ConfigProblem> out;
  const auto& m = c.model;
  // n_heads dividing d_model (and n_kv_heads n_heads) is the schema's x-checks, read by
  // parse_run_config: stated once for the editor, fsdp-train and the runtime.
  if (c.data.seq_len > m.max_seq_len)
    out.push_back({"data.seq_len", str(c.data.seq_len) + " exceeds model.max_seq_len (" + str(m.max_seq_len) + ")"});

  const bool cuda = c.launch.device == "cuda";
  if (cuda && !o.cuda_built)
    out.push_back({"launch.device",
                   "cuda: this build of the runtime has no CUDA backend (it is built only where a CUDA toolkit with "
                   "cuBLAS is found)"});
  if (cuda && m.llama_family())
    out.push_back({"launch.device",
                   std::string("cuda: model.architecture ") + architecture_name(m.architecture) +
                       ": the Llama family's ops (RMSNorm, RoPE, SwiGLU, grouped-query attention) are not in the CUDA "
                       "backend yet (issue 35 item 7); train it on launch.device: cpu"});
  const std::pair<const char*, Dtype> dtypes[] = {{"mixed_precision.param_dtype", c.mixed_precision.param_dtype},
                                                  {"mixed_precision.reduce_dtype", c.mixed_precision.reduce_dtype},
                                                  {"mixed_precision.buffer_dtype", c.mixed_precision.buffer_dtype}};
  for (const auto& [key, d] : dtypes) {
    if (d == Dtype::float32 || cuda) continue;
    // The CPU's one mixed precision: bf16 operands for every matrix product, float32 for the rest
    // (backend/cpu/bf16_gemm.h) — so gradients are reduced and activations kept in float32.
    if (d == Dtype::bfloat16 && key == std::string("mixed_precision.param_dtype")) {
      if (const std::string refusal = cpu_bf16_refusal(); !refusal.empty())
        out.push_back({key, "bfloat16 on launch.device: cpu: " + refusal});
      continue;
    }
    out.push_back({key, std::string(dtype_name(d)) +
                            (d == Dtype::bfloat16
                                 ? " needs launch.device: cuda (the CPU backend keeps this in float32: on the CPU "
                                   "only param_dtype may be bfloat16, for the matrix products)"
                                 : " needs launch.device: cuda (the CPU backend computes in float32, or bfloat16 "
                                   "for its matrix products)")});
  }
  if (cuda && c.mixed_precision.buffer_dtype != c.mixed_precision.param_dtype) {
    // The CUDA backend keeps activations in the compute dtype, as the memory plan's buffer_dtype counts them.
    out.push_back({"mixed_precision.buffer_dtype", std::string(dtype_name(c.mixed_precision.buffer_dtype)) +
                                                       " differs from param_dtype (" +
                                                       dtype_name(c.mixed_precision.param_dtype) +
                                                       "): the CUDA backend computes activations in param_dtype"});
  }
  if (cuda && m.n_heads > 0 && (m.llama_family() || m.d_model % m.n_heads == 0)) {
    const int hs = m.llama_family() ? m.head_dim : m.d_model / m.n_heads;
    if (hs != 32 && hs != 64 && hs != 128) {
      out.push_back({m.llama_family() && m.head_dim != m.d_model / m.n_heads ? "model.head_dim" : "model.n_heads",
                     "head size " + str(hs) +
                         (m.llama_family() ? " (model.head_dim or d_model / n_heads)" : " (d_model / n_heads)") +
                         ": the CUDA attention kernels are compiled for 32, 64 and 128"});
    }
  }

  if (c.launch.collectives == "nccl" && !cuda) {
    out.push_back({"launch.collectives", "nccl needs launch.device: cuda (the CPU backend's buffers go through MPI)"});
  } else if (c.launch.collectives == "nccl" && o.cuda_built && !o.nccl_built) {
    out.push_back(
        {"launch.collectives",
         "nccl: this build of the runtime has no NCCL (CMake found no nccl.h, see native/CUDA.md); use mpi, or auto"});
  }
  if (c.world_size() > 1 && !o.mpi_built) {
    out.push_back({c.launch.nnodes > 1 ? "launch.nnodes" : "launch.nproc_per_node",
                   str(c.world_size()) +
                       " ranks need MPI, which this build of the runtime was made without: install "
                       "libopenmpi-dev and rebuild (node scripts/setup/native.mjs --force), or use 1"});
  }
  if (c.fsdp.sharding_strategy == ShardingStrategy::HYBRID_SHARD && c.fsdp.ranks_per_node > 0 &&
      c.world_size() % c.fsdp.ranks_per_node != 0) {
    out.push_back({"fsdp.ranks_per_node",
                   str(c.fsdp.ranks_per_node) + " does not divide the world size (" + str(c.world_size()) + ")"});
  }

  // Before anything makes a plan: its byte counts must fit 64 bits.
  const std::string too_large = plan_size_problem(c);
  if (!too_large.empty()) out.push_back({"training.batch_size_per_gpu", too_large});

  const auto& ac = c.activation_checkpointing;
  if (too_large.empty() && ac.enabled && ac.policy == CheckpointPolicy::automatic) {
    std::string problem;
    resolve_activation_policy(c, &problem);
    if (!problem.empty()) out.push_back({"activation_checkpointing.memory_budget_gb", problem});
  }
  if (ac.enabled && ac.policy == CheckpointPolicy::every_n && ac.every_n_layers > m.n_layers) {
    out.push_back(
        {"activation_checkpointing.every_n_layers",
         str(ac.every_n_layers) + " exceeds model.n_layers (" + str(m.n_layers) + "): no block is checkpointed", true});
  }

  if (c.stability.on_nan == "rollback" && c.checkpointing.save_every_n_steps == 0 &&
      c.checkpointing.save_every_minutes == 0) {
    out.push_back(
        {"stability.on_nan",
         "rollback needs checkpoints to roll back to: set checkpointing.save_every_n_steps or save_every_minutes"});
  }
  if (c.training.warmup_steps > c.training.max_steps) {
    out.push_back({"training.warmup_steps",
                   str(c.training.warmup_steps) + " exceeds training.max_steps (" + str(c.training.max_steps) +
                       "): the peak learning rate is never reached",
                   true});
  }
  if (c.logging.eval_every_n_steps > 0 && c.data.val.empty()) {
    out.push_back({"logging.eval_every_n_steps", "no data.val: nothing to evaluate on", true});
  }

  const auto& inj = c.debug.inject_nan;
  if (inj.enabled) {
    if (inj.layer >= m.n_layers)
      out.push_back(
          {"debug.inject_nan.layer", str(inj.layer) + " is not a block (model.n_layers is " + str(m.n_layers) + ")"});
    if (!inj.op.empty()) {
      // The ops of this architecture's blocks (the Llama family's are named apart from GPT-2's).
      const auto names = ops::block_ops(m.architecture, inj.phase == "optimizer");
      bool known = false;
      for (auto op : names) known |= op == inj.op;
      if (!known) {
        std::string list;
        for (auto op : names) list += (list.empty() ? "" : ", ") + std::string(op);
        out.push_back({"debug.inject_nan.op",
                       "\"" + inj.op + "\" is not an op of a block in the " + inj.phase + " phase; one of " + list});
      }
    }
    if (inj.step > c.training.max_steps)
      out.push_back(
          {"debug.inject_nan.step",
           str(inj.step) + " is after training.max_steps (" + str(c.training.max_steps) + "): nothing is planted",
           true});
  }

  if (o.check_files) {
    check_data_file(c, "data.train", c.data.train, out);
    if (!c.data.val.empty()) check_data_file(c, "data.val", c.data.val, out);
  }
  return out;
}

std::vector<ConfigProblem> check_run_config(const nlohmann::json& value, const std::string& base_dir,
                                            const ValidateOptions& options, RunConfig* out) {
  ParsedConfig parsed = parse_run_config(value, base_dir);
  if (!parsed.ok()) return parsed.problems;
  auto problems = validate_run_config(parsed.config, options);
  if (out) *out = std::move(parsed.config);
  return problems;
}

}  // namespace fsdp
