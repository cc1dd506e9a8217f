#include "parallel/strategy.h"

#include "parallel/replicated_state.h"
#include "parallel/sharded_state.h"

namespace fsdp {

std::unique_ptr<ModelState> make_model_state(Backend& be, const ParamLayout& layout, const RunConfig& config, const MemoryPlan& plan,
                                             Collectives& world) {
  const FsdpConfig& f = config.fsdp;
  if (plan.effective_strategy == strategy_name(ShardingStrategy::NO_SHARD)) return std::make_unique<ReplicatedState>(be, layout, true, &world, f.cpu_offload);
  const ShardingStrategy st = f.sharding_strategy;
  ShardingSpec spec;
  spec.grads = st == ShardingStrategy::SHARD_GRAD_OP || st == ShardingStrategy::FULL_SHARD || st == ShardingStrategy::HYBRID_SHARD;
  spec.params = st == ShardingStrategy::FULL_SHARD || st == ShardingStrategy::HYBRID_SHARD;
  spec.offload = f.cpu_offload;
  spec.forward_prefetch = f.forward_prefetch;
  spec.backward_prefetch = f.backward_prefetch == "NONE" ? BackwardPrefetch::none : f.backward_prefetch == "BACKWARD_POST" ? BackwardPrefetch::post : BackwardPrefetch::pre;
  ProcessGroups groups = st == ShardingStrategy::HYBRID_SHARD ? hybrid_groups(world, f.ranks_per_node, config.launch.nproc_per_node) : whole_world_groups(world);
  return std::make_unique<ShardedState>(be, layout, std::move(groups), spec);
}

}  // namespace fsdp
