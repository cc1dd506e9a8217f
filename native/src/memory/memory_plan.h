// The byte plan of one rank, made from the config before anything is allocated. Every formula is
// written out in native/MEMORY.md; this file is their one implementation, and the runtime allocates
// exactly along it (the tests compare the measured peaks with it, category by category).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "config/run_config.h"
#include "runtime/allocator.h"
#include "model/activation_policy.h"

namespace fsdp {

/**
 * Sizes of the activation and workspace pieces (bytes), named as in MEMORY.md. They depend on the
 * backend (launch.device): the CPU keeps the attention's B·H·T² probabilities, the CUDA kernels
 * B·H·T log-sum-exps, and the CUDA backend has scratch of its own in backward.
 */
struct ActivationSizes {
  std::uint64_t residual = 0;         // R: one residual-stream tensor
  std::uint64_t block = 0;            // I: a block's saved internals
  std::uint64_t block_selective = 0;  // K_sel: what selective keeps of them
  std::uint64_t head = 0;             // Hd: final LayerNorm, logits and per-token losses
  std::uint64_t workspace = 0;        // Wb: backward scratch (on CUDA with the backend's largest transient scratch)
  std::uint64_t batch = 0;            // one batch of input and target token ids
  std::uint64_t batches =
      0;  // the batches the device holds (other): the data loader's ring on the CPU, the staged one on a GPU
  std::uint64_t tables = 0;  // what the model holds for its life (other): the Llama family's RoPE inv_freq
};
ActivationSizes activation_sizes(const RunConfig& c);

/** The vocabulary the LM head's logits have: model.vocab_size, on CUDA padded to a multiple of 128. */
std::uint64_t head_vocab(const RunConfig& c);

/** Whether the plan is made for the CUDA backend (launch.device: cuda). */
inline bool plans_cuda(const RunConfig& c) {
  return c.launch.device == "cuda";
}

struct MemoryPlan {
  MemoryUsage device;                                      // per category: planned peak; total: the peak phase
  MemoryUsage host;                                        // what CPU offload keeps in host memory
  std::uint64_t forward = 0, backward = 0, optimizer = 0;  // planned peak within each phase
  ActivationPolicy policy;
  std::string effective_strategy;  // NO_SHARD when the shard degree is 1
  int world_size = 1, shard_degree = 1;
  std::uint64_t n_params = 0;
  std::string backend = "cpu";  // launch.device the plan is for
  // Memory held outside the allocator, not in total: cuBLASLt's workspace on CUDA; on the CPU in
  // bf16, the matrix products' rounded operands (backend/cpu/bf16_gemm.h).
  std::uint64_t library_workspace = 0;

  /** The MemoryPlan object of core/schemas/metrics-event.schema.json (plus the policy and world). */
  nlohmann::json to_json() const;
};

/**
 * Why the plan of this config cannot be made in 64-bit byte counts, or "" when it can. Each key
 * is within its schema range, yet their products need not be (batch 65536 x heads 1024 x a
 * 2^20-token sequence squared is 2^66 attention probabilities): a bound above every term of the
 * plan, and so of every allocation it counts, is computed in long double and kept below 2^62
 * bytes. Checked before any plan is made (validation/validate.cc).
 */
std::string plan_size_problem(const RunConfig& c);

/** The plan for a config with an explicit activation policy (used by auto to try candidates). */
MemoryPlan plan_memory(const RunConfig& c, const ActivationPolicy& policy);
/** The plan for a config, its activation policy resolved (auto chosen). */
MemoryPlan plan_memory(const RunConfig& c);

}  // namespace fsdp
