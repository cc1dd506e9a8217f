// Where fsdp.sharding_strategy becomes a ModelState: the effective strategy of the memory plan
// (NO_SHARD when the shard degree is 1), its process groups and what it shards.
#pragma once
#include <memory>

#include "backend/backend.h"
#include "config/run_config.h"
#include "memory/memory_plan.h"
#include "model/param_layout.h"
#include "parallel/model_state.h"

namespace fsdp {

/**
 * The rank's model state for the config's strategy: `control` is every rank (host values; its size
 * is the config's world size), `data` the device collectives over the same ranks
 * (parallel/device_collectives.h; the control world itself on the CPU).
 */
std::unique_ptr<ModelState> make_model_state(Backend& be, const ParamLayout& layout, const RunConfig& config,
                                             const MemoryPlan& plan, Collectives& control, Collectives& data);

}  // namespace fsdp
