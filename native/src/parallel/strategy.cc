#include "parallel/strategy.h"

#include "parallel/replicated_state.h"
#include "parallel/sharded_state.h"
#include "backend/backend_options.h"

namespace fsdp {

std::unique_ptr<ModelState> make_model_state(Backend& be, const ParamLayout& layout, const RunConfig& config,
                                             const MemoryPlan& plan, Collectives& control, Collectives& data) {
  const FsdpConfig& f = config.fsdp;
  const DType reduce = to_dtype(config.mixed_precision.reduce_dtype);
  if (plan.effective_strategy == strategy_name(ShardingStrategy::NO_SHARD))
    return std::make_unique<ReplicatedState>(be, layout, true, &control, f.cpu_offload, &data, reduce);
  const ShardingStrategy st = f.sharding_strategy;
  ShardingSpec spec;
  spec.grads = st == ShardingStrategy::SHARD_GRAD_OP || st == ShardingStrategy::FULL_SHARD ||
               st == ShardingStrategy::HYBRID_SHARD;
  spec.params = st == ShardingStrategy::FULL_SHARD || st == ShardingStrategy::HYBRID_SHARD;
  spec.offload = f.cpu_offload;
  spec.forward_prefetch = f.forward_prefetch;
  spec.backward_prefetch = f.backward_prefetch == "NONE"            ? BackwardPrefetch::none
                           : f.backward_prefetch == "BACKWARD_POST" ? BackwardPrefetch::post
                                                                    : BackwardPrefetch::pre;
  spec.param_dtype = be.compute_dtype();
  spec.reduce_dtype = reduce;
  ProcessGroups groups = st == ShardingStrategy::HYBRID_SHARD
                             ? hybrid_groups(control, data, f.ranks_per_node, config.launch.nproc_per_node)
                             : whole_world_groups(data);
  return std::make_unique<ShardedState>(be, layout, control, std::move(groups), spec);
}

}  // namespace fsdp
