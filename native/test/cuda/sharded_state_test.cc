// The sharded model state on a GPU (one process; the multi-rank runs are scripts/gpu/check_runs.py's):
// its device collectives are MPI through pinned host memory, as launch.collectives: mpi makes them.
// A sharded unit is gathered in bfloat16 from the float32 masters (compute_params), a sharded
// checkpoint of GPU buffers is written and read through the host (device()) and loads on the CPU,
// cpu_offload keeps the shards in pinned host memory and trains bit for bit as on the device, and
// gradients reduced in bfloat16 come back as float32.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "checkpoint/checkpoint.h"
#include "fixtures.h"
#include "model/gpt.h"
#include "model/init.h"
#include "optim/adamw.h"
#include "parallel/device_collectives.h"
#include "parallel/process_groups.h"
#include "parallel/replicated_state.h"
#include "parallel/sharded_state.h"
#include "parallel/single_process.h"
#include "runtime/half.h"

namespace fsdp::test {
namespace {

ModelShape shape() {
  return small_shape(/*V=*/256, /*C=*/64, /*L=*/2, /*H=*/2, /*S=*/32);
}

std::unique_ptr<Backend> gpu(DType compute) {
  BackendOptions o;
  o.compute = compute;
  return make_backend("cuda", o);
}

/** A GPU model state of FULL_SHARD over one rank, its buffers through pinned host staging. */
struct GpuSharded {
  std::unique_ptr<Backend> be;
  SingleProcess world;
  DeviceCollectives data;
  ParamLayout layout = ParamLayout::of(shape());
  std::unique_ptr<ShardedState> state;
  GpuSharded(DType compute, bool offload, DType reduce = DType::f32) : be(gpu(compute)) {
    data = device_collectives(*be, world, "mpi");
    ShardingSpec spec;
    spec.grads = spec.params = true;
    spec.offload = offload;
    spec.param_dtype = compute;
    spec.reduce_dtype = reduce;
    state = std::make_unique<ShardedState>(*be, layout, world, whole_world_groups(*data.world), spec);
    for (int u = 0; u < state->unit_count(); ++u) {
      const LocalShard sh = state->local(u);
      init_unit_range_on(*be, layout.units[u], sh.offset, sh.count, sh.params, 5, 0.2, layout.shape.L);
    }
    state->publish_params();
  }
  std::vector<float> masters() {
    std::vector<float> out;
    for (int u = 0; u < state->unit_count(); ++u) {
      const LocalShard sh = state->local(u);
      std::vector<float> part(sh.count);
      be->download(part.data(), sh.params, sizeof(float) * sh.count);
      out.insert(out.end(), part.begin(), part.end());
    }
    return out;
  }
  double train_step(long t) {
    Gpt gpt(*be, layout, *state, 0.0f, ActivationPolicy::none(static_cast<int>(layout.shape.L)));
    AdamW adamw(*be, layout, TrainingConfig{});
    state->zero_grads();
    const RandomTokens tokens(2, 16, shape().V, 40 + t);
    const double loss = gpt.forward_backward(tokens.batch(), 1.0f, 0);
    EXPECT_FALSE(adamw.step(*state, t, 1e-3, 1.0f, state->grad_norm(*be)).has_value());
    return loss;
  }
};

TEST(CudaShardedState, GathersUnitsInBfloat16FromTheFloat32Masters) {
  GpuSharded m(DType::bf16, false);
  EXPECT_EQ(m.data.kind, "mpi (pinned host staging)");
  const std::vector<float> masters = m.masters();
  std::size_t at = 0;
  for (int u = 0; u < m.state->unit_count(); ++u) {
    m.state->pre_forward(u);
    const std::size_t n = m.layout.units[u].numel;
    std::vector<std::uint16_t> bits(n);
    m.be->download(bits.data(), m.state->compute_params(u), sizeof(std::uint16_t) * n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(bits[i], float_to_bf16(masters[at + i])) << "unit " << u << " element " << i;
    m.state->post_forward(u);
    at += n;
  }
}

TEST(CudaShardedState, ACheckpointOfGpuShardsLoadsOnTheGpuAndOnTheCpu) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("fsdp-cuda-ckpt-" + std::to_string(::getpid()))).string();
  GpuSharded a(DType::bf16, false);
  a.train_step(1);
  ASSERT_NE(a.state->device(), nullptr) << "a GPU state must say its ranges are device memory";
  const SavedCheckpoint saved = save_checkpoint(dir, 1, {{"step", 1}}, a.layout, *a.state);
  GpuSharded b(DType::bf16, false);
  load_checkpoint(saved.path, b.layout, *b.state);
  EXPECT_EQ(a.masters(), b.masters());
  // Resharding onto the CPU: one process, whole units.
  CpuBackend cpu;
  ReplicatedState on_cpu(cpu, a.layout);
  load_checkpoint(saved.path, a.layout, on_cpu);
  std::vector<float> cpu_params;
  for (int u = 0; u < on_cpu.unit_count(); ++u)
    cpu_params.insert(cpu_params.end(), on_cpu.params(u), on_cpu.params(u) + a.layout.units[u].numel);
  EXPECT_EQ(cpu_params, a.masters());
  std::filesystem::remove_all(dir);
}

TEST(CudaShardedState, CpuOffloadTrainsInPinnedHostMemoryBitForBitAsOnTheDevice) {
  GpuSharded device(DType::f32, false), offloaded(DType::f32, true);
  EXPECT_GT(offloaded.be->host_allocator().live().total, 0u) << "the shards and moments live in host memory";
  EXPECT_EQ(offloaded.be->host_allocator().live().bytes[static_cast<int>(MemoryCategory::params)],
            device.be->allocator().live().bytes[static_cast<int>(MemoryCategory::params)]);
  for (long t = 1; t <= 3; ++t) EXPECT_EQ(device.train_step(t), offloaded.train_step(t)) << "step " << t;
  EXPECT_EQ(device.masters(), offloaded.masters());
}

TEST(CudaShardedState, GradientsReducedInBfloat16ComeBackAsTheirBfloat16Values) {
  GpuSharded m(DType::bf16, false, DType::bf16);
  const int u = 1;
  const std::size_t n = m.layout.units[u].numel;
  m.state->pre_backward(u);
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = 1.0f + 1e-3f * static_cast<float>(i % 1000);
  m.be->upload(m.state->grads(u), g.data(), sizeof(float) * n);
  m.state->post_backward(u);
  const LocalShard sh = m.state->local(u);
  std::vector<float> back(sh.count);
  m.be->download(back.data(), sh.grads, sizeof(float) * sh.count);
  for (std::size_t i = 0; i < sh.count; ++i) ASSERT_EQ(back[i], bf16_to_float(float_to_bf16(g[i]))) << "element " << i;
}

}  // namespace
}  // namespace fsdp::test
