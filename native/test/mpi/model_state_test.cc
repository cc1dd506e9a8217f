// The model states above the collectives, with real ranks on CPU buffers: every strategy trains
// bit for bit the same whether its buffers go through MPI directly or through host staging (what
// a GPU without NCCL, or ranks sharing a GPU, use); gradients are reduced in reduce_dtype (a bf16
// reduction really rounds in bf16); sharded parameters are gathered in param_dtype (the model
// reads the masters rounded, never float32 bits as bf16); the control world carries host values
// while the model's buffers go through the device collectives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "fixtures.h"
#include "memory/memory_plan.h"
#include "model/gpt.h"
#include "model/init.h"
#include "optim/adamw.h"
#include "parallel/process_groups.h"
#include "parallel/sharded_state.h"
#include "parallel/staged_collectives.h"
#include "parallel/strategy.h"
#include "runtime/half.h"
#include "test/mpi/mpi_world.h"
#include "test_config.h"

namespace fsdp::test {
namespace {

RunConfig config_for(const char* strategy, int world) {
  nlohmann::json j = tiny_config_json(16, 2, 2, 32, 8, 2);
  j["fsdp"] = {{"sharding_strategy", strategy}, {"forward_prefetch", true}};
  if (world >= 4) j["fsdp"]["ranks_per_node"] = 2;  // HYBRID_SHARD: two "nodes" of two ranks
  j["launch"] = {{"nproc_per_node", world}};
  j["model"]["dropout"] = 0.1;
  return parse_or_die(j);
}

/** Three AdamW steps of the tiny GPT on this rank's batches; the rank's owned parameters after them. */
std::vector<float> train_three_steps(const RunConfig& config, Collectives& control, Collectives& data) {
  CpuBackend be;
  const ParamLayout layout = ParamLayout::of(ModelShape::of(config.model));
  const MemoryPlan plan = plan_memory(config);
  auto state = make_model_state(be, layout, config, plan, control, data);
  for (int u = 0; u < state->unit_count(); ++u) {
    const LocalShard sh = state->local(u);
    init_unit_range(layout.units[u], sh.offset, sh.count, sh.params, 3, 0.2, layout.shape.L);
  }
  state->publish_params();
  Gpt gpt(be, layout, *state, static_cast<float>(config.model.dropout), plan.policy);
  AdamW adamw(be, layout, config.training);
  const int W = control.size(), r = control.rank();
  for (long step = 1; step <= 3; ++step) {
    state->zero_grads();
    RandomTokens tokens(2, 8, 32, 100 * step + r);
    Batch b = tokens.batch();
    b.first_sequence = 2 * r;
    gpt.forward_backward(b, 1.0f / W, static_cast<std::uint64_t>(step));
    const double norm = state->grad_norm(be);
    EXPECT_FALSE(adamw.step(*state, step, 1e-2, 1.0f, norm).has_value());
  }
  std::vector<float> out;
  for (int u = 0; u < state->unit_count(); ++u) {
    const LocalShard sh = state->owned(u);
    out.insert(out.end(), sh.params, sh.params + sh.count);
  }
  return out;
}

class EveryStrategy : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryStrategy, TrainsBitForBitTheSameThroughHostStagingAsOverMpiDirectly) {
  Collectives& world = mpi_world();
  const RunConfig config = config_for(GetParam(), world.size());
  const std::vector<float> direct = train_three_steps(config, world, world);
  auto staging = std::make_shared<MemcpyStaging>();
  StagedCollectives staged(world, staging);
  const std::vector<float> through_host = train_three_steps(config, world, staged);
  ASSERT_EQ(direct.size(), through_host.size());
  EXPECT_EQ(0, std::memcmp(direct.data(), through_host.data(), sizeof(float) * direct.size())) << GetParam();
  // Every strategy communicates the model's buffers with several ranks, and only through the staging.
  EXPECT_GT(staging->to_host_bytes, 0u);
  EXPECT_GT(staging->to_device_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Strategies, EveryStrategy,
                         ::testing::Values("NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD",
                                           "HYBRID_SHARD"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

/** Rank q's gradient value at element i of unit u. */
float grad_value(int q, int u, std::size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(q) + 0.11f * u) * (1.0f + q);
}

/** The bound (or, at 2 ranks, the exact value) of a bf16 reduction of every rank's grad_value. */
void expect_bf16_sum(float got, int W, int u, std::size_t i) {
  if (W == 2) {
    const float a = bf16_to_float(float_to_bf16(grad_value(0, u, i))),
                b = bf16_to_float(float_to_bf16(grad_value(1, u, i)));
    ASSERT_EQ(got, bf16_to_float(float_to_bf16(a + b))) << "unit " << u << " element " << i;
    return;
  }
  double exact = 0, magnitude = 0;
  for (int q = 0; q < W; ++q) exact += grad_value(q, u, i), magnitude += std::fabs(grad_value(q, u, i));
  ASSERT_LE(std::fabs(got - exact), W * magnitude / 256.0) << "unit " << u << " element " << i;
  ASSERT_EQ(got, bf16_to_float(float_to_bf16(got))) << "not a bf16 value: the reduction ran in float32";
}

TEST(ReduceDtype, ReplicatedGradientsAreAllReducedInBfloat16) {
  Collectives& world = mpi_world();
  const int W = world.size(), r = world.rank();
  CpuBackend be;
  const ParamLayout layout = ParamLayout::of(small_shape(11, 8, 2, 2, 6));
  ReplicatedState state(be, layout, true, &world, false, &world, DType::bf16);
  for (int u = 0; u < state.unit_count(); ++u) {
    float* g = state.grads(u);
    for (std::size_t i = 0; i < layout.units[u].numel; ++i) g[i] = grad_value(r, u, i);
    state.post_backward(u);
    for (std::size_t i = 0; i < layout.units[u].numel; ++i) expect_bf16_sum(g[i], W, u, i);
  }
}

TEST(ReduceDtype, ShardedGradientsAreReduceScatteredInBfloat16) {
  Collectives& world = mpi_world();
  const int W = world.size(), r = world.rank();
  for (bool params_sharded : {false, true}) {
    CpuBackend be;
    const ParamLayout layout = ParamLayout::of(small_shape(11, 8, 2, 2, 6));
    ShardingSpec spec;
    spec.grads = true, spec.params = params_sharded, spec.reduce_dtype = DType::bf16;
    ShardedState state(be, layout, world, whole_world_groups(world), spec);
    // Units in backward order, as the model runs them (the tied head's wte gradient is reduced with the embeddings).
    for (int u = state.unit_count() - 1; u >= 0; --u) {
      state.pre_backward(u);
      float* g = state.grads(u);
      for (std::size_t i = 0; i < layout.units[u].numel; ++i) g[i] = grad_value(r, u, i);
      state.post_backward(u);
      const LocalShard sh = state.local(u);
      for (std::size_t k = 0; k < sh.count; ++k) expect_bf16_sum(sh.grads[k], W, u, sh.offset + k);
    }
  }
}

TEST(ParamDtype, ShardedUnitsAreGatheredInBfloat16FromTheMasters) {
  Collectives& world = mpi_world();
  CpuBackend be;
  const ParamLayout layout = ParamLayout::of(small_shape(11, 8, 2, 2, 6));
  for (bool params_sharded : {true, false}) {
    ShardingSpec spec;
    spec.grads = true, spec.params = params_sharded, spec.param_dtype = DType::bf16;
    ShardedState state(be, layout, world, whole_world_groups(world), spec);
    auto master = [](int u, std::size_t i) {
      return 0.001f * static_cast<float>(i) - 0.37f * static_cast<float>(u) + 1e-4f / (1.0f + static_cast<float>(i));
    };
    for (int round = 0; round < 2; ++round) {
      // Masters written through local() (as the optimizer, initialisation and checkpoints write them), then published.
      for (int u = 0; u < state.unit_count(); ++u) {
        const LocalShard sh = state.local(u);
        for (std::size_t k = 0; k < sh.count; ++k)
          sh.params[k] = master(u, sh.offset + k) * static_cast<float>(round + 1);
      }
      state.publish_params();
      for (int u = 0; u < state.unit_count(); ++u) {
        state.pre_forward(u);
        const auto* bits = static_cast<const std::uint16_t*>(state.compute_params(u));
        for (std::size_t i = 0; i < layout.units[u].numel; ++i)
          ASSERT_EQ(bits[i], float_to_bf16(master(u, i) * static_cast<float>(round + 1)))
              << (params_sharded ? "gathered" : "copy") << " unit " << u << " element " << i;
        if (params_sharded)
          EXPECT_THROW(state.params(u), std::logic_error) << "a bf16 unit has no float32 parameters to read";
        state.post_forward(u);
      }
    }
  }
}

TEST(ControlAndDevice, HostValuesGoThroughTheControlWorldAndBuffersThroughTheDeviceCollectives) {
  Collectives& world = mpi_world();
  CpuBackend be;
  const ParamLayout layout = ParamLayout::of(small_shape(11, 8, 2, 2, 6));
  auto staging = std::make_shared<MemcpyStaging>();
  StagedCollectives device(world, staging);
  ShardingSpec spec;
  spec.grads = spec.params = true;
  ShardedState state(be, layout, world, whole_world_groups(device), spec);
  EXPECT_EQ(&state.collectives(), &world);
  EXPECT_EQ(state.device(), nullptr) << "the CPU backend's memory is host memory: checkpoints read it directly";
  state.publish_params();
  state.pre_forward(1);
  state.post_forward(1);
  const std::size_t staged = staging->to_host_bytes;
  EXPECT_GT(staged, 0u) << "the gather went through the device collectives";
  const double norm = state.grad_norm(be);  // a host double: over the control world, never staged
  EXPECT_EQ(norm, 0.0);
  EXPECT_EQ(staging->to_host_bytes, staged);
}

}  // namespace
}  // namespace fsdp::test
