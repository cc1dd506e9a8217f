// The groups a sharding strategy talks in. The shard group holds one copy of the sharded state
// between its ranks; the replica group joins the ranks that hold the same shard in different
// shard groups. FULL_SHARD and the ZeRO stages shard over the whole world (replica groups of one);
// HYBRID_SHARD shards within a node and replicates across nodes, where a node is a host name or,
// to emulate several nodes on one machine, a run of fsdp.ranks_per_node consecutive ranks.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "parallel/collectives.h"

namespace fsdp {

/** Groups of the device collectives (what the model state's buffers go through). */
struct ProcessGroups {
  std::unique_ptr<Collectives> shard, replicas;
};

/** Host names of every rank, in rank order (a collective: every rank calls it). */
std::vector<std::string> gather_host_names(Collectives& world);

/** Shard groups of the whole world (FULL_SHARD, SHARD_GRAD_OP, SHARD_OPTIMIZER), split from the device collectives. */
ProcessGroups whole_world_groups(Collectives& data);

/**
 * HYBRID_SHARD's groups, split from the device collectives `data`: consecutive runs of
 * ranks_per_node ranks when it is given (> 0), else the ranks of each host (named through the
 * control world), which must all have `expected` ranks (launch.nproc_per_node). Throws naming the
 * hosts when they do not.
 */
ProcessGroups hybrid_groups(Collectives& control, Collectives& data, int ranks_per_node, int expected);

}  // namespace fsdp
