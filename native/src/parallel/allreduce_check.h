// "FSDP: Check environment"'s all-reduce check, and a first thing to run on a new cluster:
// `mpirun -n N fsdp-train-native --allreduce-check`. Every rank contributes values whose sums are
// known exactly (small integers: any order of summation gives them), and every collective the
// strategies use is run and checked: all-reduce, reduce-scatter (also in place over uneven
// blocks), all-gather (also started asynchronously, and in place), broadcast. Where this build has
// the CUDA backend and the host a GPU, the same checks run on GPU buffers through the device
// collectives a run would use (launch.collectives auto: NCCL with one GPU per rank), with their
// all-reduce bus bandwidth on 128 MB.
#pragma once
#include <nlohmann/json.hpp>

#include "parallel/collectives.h"

namespace fsdp {

/**
 * {ok, world_size, hosts, elements, seconds, all_reduce_gbps, failures: ["rank 2: all_reduce[17] = 5, expected 6", …],
 *  device?: {ok, collectives, device, bytes, all_reduce_seconds, all_reduce_busbw_gbps, failures}}
 * on every rank (the failures of every rank, gathered).
 */
nlohmann::json check_collectives(Collectives& world, std::size_t elements = 1 << 20);

}  // namespace fsdp
