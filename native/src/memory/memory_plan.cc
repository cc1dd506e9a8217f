#include "memory/memory_plan.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "backend/cpu/bf16_gemm.h"
#include "backend/cuda/padded_vocab.h"
#include "memory/activation_choice.h"
#include "model/param_layout.h"

namespace fsdp {

using u64 = std::uint64_t;

namespace {

u64 ceil_div(u64 a, u64 b) {
  return (a + b - 1) / b;
}

// The CUDA backend's scratch in backward (backend/cuda/cuda_backend.cc), by the kernels' row
// blocking: the bias gradient's partial sums (kernels/elementwise.cu, 256 rows a block), LayerNorm
// backward's partial dw/db (kernels/layernorm.cu, 128 rows a block), the embedding gradient's
// token index (3N + 1 int32). The GPU tests compare the measured peaks with these.
constexpr u64 kBiasRows = 256;
constexpr u64 kLayerNormRows = 128;
// cuBLASLt's workspace (backend/cuda/cublaslt_matmul.cc), held outside the counting allocator.
constexpr u64 kCublasLtWorkspace = u64{32} << 20;

}  // namespace

std::uint64_t head_vocab(const RunConfig& c) {
  return static_cast<u64>(plans_cuda(c) ? padded_vocab(c.model.vocab_size) : c.model.vocab_size);
}

ActivationSizes activation_sizes(const RunConfig& c) {
  const ModelShape s = ModelShape::of(c.model);
  const u64 B = c.training.batch_size_per_gpu, T = c.data.seq_len, N = B * T;
  const u64 C = s.C, F = s.F, H = s.H, Vh = head_vocab(c);
  const u64 a = dtype_bytes(c.mixed_precision.buffer_dtype);
  const u64 p = dtype_bytes(c.mixed_precision.param_dtype);
  ActivationSizes z;
  z.residual = a * N * C;
  z.block_selective = a * (5 * N * C + N * F);  // qkv, atty, res2, fch
  // lnf_out, its stats and the losses, the classifier's state: float32 probabilities on the CPU; on
  // CUDA the logits in the compute dtype, rows padded to a multiple of 128 (backend/cuda/classifier.cc).
  z.head = a * N * C + 12 * N + (plans_cuda(c) ? p : 4) * N * Vh;
  z.batch = 8 * N;  // int32 inputs and targets
  if (s.llama_family() && !plans_cuda(c)) {
    // The Llama family's decoder block (model/decoder_block.h), float32 on the CPU: ln1_out, res2,
    // ln2_out (3NC); packed qkv (N W, W = (H + 2 KV) D), and for Qwen3 qkv before its q/k norms
    // too with their rstd (4 N (H + KV)); attention's y (N H D) and probabilities (B H T^2);
    // gate_up and h (3NF); the two RMSNorms' rstd (8N). Selective keeps qkv (both for Qwen3), y,
    // res2 and gate_up. The head: ln_f's output, its rstd and the losses, the classifier's
    // probabilities. (The family is refused on CUDA: no plan is made for it there.)
    const u64 D = s.D, KV = s.KV, W = (H + 2 * KV) * D, HD = H * D;
    const u64 qkv = (s.qk_norm() ? 2 : 1) * N * W, qk_rstd = s.qk_norm() ? 4 * N * (H + KV) : 0;
    z.block = a * (3 * N * C + qkv + N * HD + 3 * N * F + B * H * T * T) + 8 * N + qk_rstd;
    z.block_selective = a * (qkv + N * HD + N * C + 2 * N * F) + qk_rstd;
    z.head = a * N * C + 8 * N + 4 * N * Vh;
    // DecoderWorkspace (d_res, d_norm, dy, dqkv, dgate_up, dh, attention's scratch B H T^2) and,
    // in the embedding's backward, the position gradient the family drops (float32 T C).
    z.workspace = a * (2 * N * C + N * HD + N * W + 3 * N * F) + 4 * B * H * T * T + 4 * T * C;
    z.batches = static_cast<u64>(c.data.prefetch_batches + 1) * z.batch;
    z.tables = 4 * (D / 2);
    return z;
  }
  if (!plans_cuda(c)) {
    // ln1_out, qkv (3), atty, res2, ln2_out: 7NC; fch, fcg: 2NF; attention probabilities B H T^2;
    // LayerNorm means and reciprocal std devs of ln1 and ln2 in float32: 16N.
    z.block = a * (7 * N * C + 2 * N * F + B * H * T * T) + 16 * N;
    z.workspace = a * (6 * N * C + N * F + B * H * T * T);
    z.batches = static_cast<u64>(c.data.prefetch_batches + 1) * z.batch;
    return z;
  }
  // CUDA: the attention keeps each row's float32 log-sum-exp, B H T, and its backward a float32
  // row term of the same size; the data loader's ring is pinned host memory and the device holds
  // the one batch being computed.
  z.block = a * (7 * N * C + 2 * N * F) + 4 * B * H * T + 16 * N;
  const u64 base = a * (6 * N * C + N * F) + 4 * B * H * T;
  // The classifier's tail of the vocabulary (V mod 128 rows) in backward: W's rows zero-padded to 128
  // (param_dtype) and their float32 gradient rows (backend/cuda/classifier.cc).
  const u64 tail = Vh - static_cast<u64>(c.model.vocab_size) / kVocabAlignment * kVocabAlignment;
  const u64 classifier = (p + 4) * tail * C;
  const u64 bias = 4 * ceil_div(N, kBiasRows) * std::max(3 * C, F);
  const u64 layernorm = 4 * ceil_div(N, kLayerNormRows) * 2 * C;
  const u64 embedding = 4 * (3 * N + 1);
  z.workspace = base + std::max({classifier, bias, layernorm, embedding});
  z.batches = z.batch;
  return z;
}

std::string plan_size_problem(const RunConfig& c) {
  using F = long double;
  const ModelShape s = ModelShape::of(c.model);
  const F B = c.training.batch_size_per_gpu, T = c.data.seq_len, N = B * T, C = s.C, Fd = s.F, H = s.H, L = s.L,
          S = s.S;
  const F V = static_cast<F>(head_vocab(c));
  // Generous multiples of MEMORY.md's terms: parameters with their gradients, Adam moments and
  // copies (at most 32 bytes a parameter), and every block's activations, the head and the
  // workspace at 4 bytes an element and up to 8 tensors of each size.
  const F params = (L + 1) * (4 * C * C + 2 * C * Fd + 16 * C) + (V + S) * C;
  const F activations = (L + 2) * (N * (C + Fd + 1) + B * H * T * T) + N * V;
  const F bound = 64 * (params + activations) + 16 * (c.data.prefetch_batches + 2) * N;
  constexpr F kLimit = static_cast<F>(std::uint64_t{1} << 62);
  if (bound < kLimit) return "";
  return "the memory plan of this config is beyond 2^62 bytes (4 EiB) per rank (batch x sequence: " +
         std::to_string(c.training.batch_size_per_gpu) + " x " + std::to_string(c.data.seq_len) + " tokens, " +
         std::to_string(c.model.n_layers) + " layers of d_model " + std::to_string(c.model.d_model) +
         "): no machine holds it; lower training.batch_size_per_gpu, data.seq_len or the model's sizes";
}

namespace {

int shard_degree(const RunConfig& c) {
  const int W = c.world_size();
  switch (c.fsdp.sharding_strategy) {
    case ShardingStrategy::NO_SHARD:
      return 1;
    case ShardingStrategy::HYBRID_SHARD:
      return c.fsdp.ranks_per_node > 0 ? c.fsdp.ranks_per_node : c.launch.nproc_per_node;
    default:
      return W;
  }
}

}  // namespace

MemoryPlan plan_memory(const RunConfig& c, const ActivationPolicy& policy) {
  // Every caller validates first; this keeps a config that skipped it from wrapping byte counts.
  if (const std::string problem = plan_size_problem(c); !problem.empty()) throw std::runtime_error(problem);
  MemoryPlan plan;
  plan.policy = policy;
  const ParamLayout layout = ParamLayout::of(ModelShape::of(c.model));
  const int L = c.model.n_layers;
  const u64 W = c.world_size();
  const u64 D = std::max(1, shard_degree(c));
  // The CPU keeps its weights in float32 whatever param_dtype says: bf16 there is only the rounded
  // operands of each matrix product (backend/cpu/bf16_gemm.h), held outside the allocator below.
  const u64 p = plans_cuda(c) ? dtype_bytes(c.mixed_precision.param_dtype) : 4;
  const u64 r = dtype_bytes(c.mixed_precision.reduce_dtype);
  plan.world_size = static_cast<int>(W);
  plan.shard_degree = static_cast<int>(D);
  plan.n_params = layout.total;
  plan.backend = plans_cuda(c) ? "cuda" : "cpu";
  plan.library_workspace = plans_cuda(c) ? kCublasLtWorkspace : 0;
  if (!plans_cuda(c) && c.mixed_precision.param_dtype == Dtype::bfloat16) {
    // The CPU's bf16 operands: the calling thread's, capped per product, and each (batch, head)
    // pair's in the attention loop (T x T probabilities and a T x D operand), on its own thread.
    const ModelShape s = ModelShape::of(c.model);
    const u64 B = c.training.batch_size_per_gpu, T = c.data.seq_len;
    const u64 pair = std::min<u64>(2 * (T * T + T * s.D), kBf16OperandBytesPerThread);
    plan.library_workspace = kBf16OperandBytesPerThread + B * static_cast<u64>(s.H) * pair;
  }

  // With one shard there is nothing to shard: every strategy behaves as NO_SHARD (as PyTorch does).
  const ShardingStrategy st = D == 1 ? ShardingStrategy::NO_SHARD : c.fsdp.sharding_strategy;
  plan.effective_strategy = strategy_name(st);
  const bool opt_sharded = st != ShardingStrategy::NO_SHARD;
  const bool grads_sharded = st == ShardingStrategy::SHARD_GRAD_OP || st == ShardingStrategy::FULL_SHARD ||
                             st == ShardingStrategy::HYBRID_SHARD;
  const bool params_sharded = st == ShardingStrategy::FULL_SHARD || st == ShardingStrategy::HYBRID_SHARD;
  const bool offload = c.fsdp.cpu_offload;

  // Per unit: numel P_u, shard S_u = ceil(P_u / D), padded Pp_u = D S_u.
  const std::size_t U = layout.units.size();
  std::vector<u64> P(U), S(U), Pp(U);
  u64 sumP = 0, sumS = 0;
  for (std::size_t u = 0; u < U; ++u) {
    P[u] = layout.units[u].numel;
    S[u] = ceil_div(P[u], D);
    Pp[u] = S[u] * D;
    sumP += P[u], sumS += S[u];
  }
  const int emb = 0, head = static_cast<int>(U) - 1;
  const bool tied = c.model.tie_embeddings;

  // Parameters: float32 masters (full or a shard), a compute copy when param_dtype is narrower,
  // and for sharded parameters the gathered units in param_dtype.
  const u64 master = 4 * (params_sharded ? sumS : sumP);
  const u64 compute_copy = (!params_sharded && p < 4) ? p * sumP : 0;
  u64 gathered_fwd = 0, gathered_bwd = 0;
  if (params_sharded) {
    auto live = [&](int u, int prefetch) {
      std::vector<int> set{u};
      if (prefetch >= 0 && prefetch < static_cast<int>(U)) set.push_back(prefetch);
      if (u == head && tied) set.push_back(emb);
      std::sort(set.begin(), set.end());
      set.erase(std::unique(set.begin(), set.end()), set.end());
      u64 sum = 0;
      for (int v : set) sum += Pp[v];
      return sum;
    };
    for (int u = 0; u < static_cast<int>(U); ++u) {
      gathered_fwd = std::max(gathered_fwd, live(u, c.fsdp.forward_prefetch ? u + 1 : -1));
      gathered_bwd = std::max(gathered_bwd, live(u, c.fsdp.backward_prefetch != "NONE" ? u - 1 : -1));
    }
    gathered_fwd *= p, gathered_bwd *= p;
  }
  const u64 master_device = (params_sharded && offload) ? 0 : master;
  const u64 params_persistent = master_device + compute_copy;

  // Gradients: float32, full or a shard; sharded gradients are first computed into full-unit
  // float32 buffers that live from a unit's backward to its reduce-scatter (the tied wte's from
  // the head's backward to the embedding's). Under gradient accumulation nothing is reduced
  // before the final micro-step (no_sync), so every unit's buffer lives from the first
  // micro-step's backward to the final one's reduce-scatter, through the forwards between.
  const u64 grads_held = 4 * (grads_sharded ? sumS : sumP);
  const u64 grads_persistent = (params_sharded && offload) ? 0 : grads_held;
  u64 grads_transient = 0, grads_unsynced = 0;
  if (grads_sharded && c.training.gradient_accumulation_steps > 1) {
    for (std::size_t u = 0; u < U; ++u) grads_unsynced += 4 * Pp[u];
    grads_transient = grads_unsynced;
  } else if (grads_sharded) {
    u64 g = 0;
    for (std::size_t u = 1; u < U; ++u) g = std::max(g, Pp[u]);
    grads_transient = 4 * (tied ? Pp[emb] + g : std::max(g, Pp[emb]));
  }

  const u64 optimizer = 8 * (opt_sharded ? sumS : sumP);
  const u64 optimizer_device = offload ? 0 : optimizer;

  // Activations along the forward/backward timeline (MEMORY.md, "Activations").
  const ActivationSizes z = activation_sizes(c);
  std::vector<u64> keep(L);
  u64 kept = (static_cast<u64>(L) + 1) * z.residual;
  for (int i = 0; i < L; ++i) {
    keep[i] = policy.blocks[i] == BlockRecompute::none        ? z.block
              : policy.blocks[i] == BlockRecompute::selective ? z.block_selective
                                                              : 0;
    kept += keep[i];
  }
  const u64 last_keep = keep[L - 1];
  const u64 act_fwd = kept + std::max(z.head, z.block - last_keep);
  const u64 act_bwd = std::max(kept + z.head, kept - z.residual - last_keep + z.block);

  // Communication buffers (none with one rank), unit by unit along the timeline: a unit's
  // reduction holds its reduce_dtype cast (when narrower than float32) and, for sharded gradients,
  // the reduce-scatter's output; a sharded unit's gather sends its shard from a comm buffer when it
  // is cast to param_dtype or, offloaded on a GPU, copied to the device — and a prefetched gather
  // holds its send buffer while the previous unit's gradients are reduced.
  u64 comm_bwd = 0, comm_fwd = 0;
  if (W > 1) {
    const u64 send = params_sharded && (p < 4 || (offload && plans_cuda(c))) ? p : 0;
    const bool backward_prefetch = c.fsdp.backward_prefetch != "NONE";
    auto reduction = [&](std::size_t u) {
      return grads_sharded ? (r < 4 ? r * Pp[u] : 0) + r * S[u] : (r < 4 ? r * P[u] : 0);
    };
    for (std::size_t u = 0; u < U; ++u) {
      comm_fwd = std::max(comm_fwd, send * S[u]);
      const u64 prefetched = backward_prefetch && u >= 1 && params_sharded ? send * S[u - 1] : 0;
      comm_bwd = std::max({comm_bwd, reduction(u) + prefetched, send * S[u]});
    }
  }

  const u64 other = z.batches + z.tables;

  plan.forward = params_persistent + gathered_fwd + grads_persistent + grads_unsynced + optimizer_device + act_fwd +
                 comm_fwd + other;
  plan.backward = params_persistent + gathered_bwd + grads_persistent + grads_transient + optimizer_device + act_bwd +
                  z.workspace + comm_bwd + other;
  plan.optimizer = params_persistent + grads_persistent + optimizer_device + other;

  auto& d = plan.device.bytes;
  d[static_cast<int>(MemoryCategory::params)] = params_persistent + std::max(gathered_fwd, gathered_bwd);
  d[static_cast<int>(MemoryCategory::grads)] = grads_persistent + grads_transient;
  d[static_cast<int>(MemoryCategory::optimizer)] = optimizer_device;
  d[static_cast<int>(MemoryCategory::activations)] = act_fwd;
  d[static_cast<int>(MemoryCategory::workspace)] = z.workspace;
  d[static_cast<int>(MemoryCategory::comm)] = std::max(comm_fwd, comm_bwd);
  d[static_cast<int>(MemoryCategory::other)] = other;
  plan.device.total = std::max({plan.forward, plan.backward, plan.optimizer});

  auto& h = plan.host.bytes;
  h[static_cast<int>(MemoryCategory::params)] = master - master_device;
  h[static_cast<int>(MemoryCategory::grads)] = grads_held - grads_persistent;
  h[static_cast<int>(MemoryCategory::optimizer)] = optimizer - optimizer_device;
  for (u64 b : h) plan.host.total += b;
  return plan;
}

MemoryPlan plan_memory(const RunConfig& c) {
  return plan_memory(c, resolve_activation_policy(c));
}

nlohmann::json MemoryPlan::to_json() const {
  auto categories = [](const MemoryUsage& m) {
    nlohmann::json j;
    for (int i = 0; i < kMemoryCategories; ++i) j[category_name(static_cast<MemoryCategory>(i))] = m.bytes[i];
    j["total"] = m.total;
    return j;
  };
  nlohmann::json j = categories(device);
  j["host"] = categories(host);
  j["phases"] = {{"forward", forward}, {"backward", backward}, {"optimizer", optimizer}};
  j["activation_checkpointing"] = {{"policy", policy.name}, {"every_n_layers", policy.every_n_layers}};
  j["world"] = {{"size", world_size}, {"shard_degree", shard_degree}, {"strategy", effective_strategy}};
  j["n_params"] = n_params;
  j["backend"] = backend;
  j["outside_allocator"] = {{"library_workspace", library_workspace}};
  return j;
}

}  // namespace fsdp
