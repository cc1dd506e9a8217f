// The collectives a rank's model state communicates its buffers through, beside the control world
// (MPI or the world of one, host memory: votes, host names, losses, norms). On the CPU backend the
// buffers are host memory and the control world carries them too. On a GPU, launch.collectives:
//   nccl  NCCL on the backend's stream (parallel/cuda/nccl_collectives.h); one GPU per rank.
//   mpi   MPI through pinned host memory (parallel/staged_collectives.h): machines without NCCL,
//         and ranks that share a GPU (tests on one GPU).
//   auto  NCCL where this build has it and no two ranks share a GPU; else mpi.
// A wrapper around the returned Collectives (every device operation passes through it) is where a
// watchdog on collectives that never complete belongs.
#pragma once
#include <memory>
#include <string>

#include "backend/backend.h"
#include "parallel/collectives.h"

namespace fsdp {

struct DeviceCollectives {
  std::unique_ptr<Collectives> owned;  // empty when `world` is the control world itself
  Collectives* world = nullptr;
  std::string kind;  // "host" (CPU buffers over the control world), "nccl", "mpi (pinned host staging)"
};

/**
 * The device collectives for `be` over the ranks of `control`, as launch.collectives (`choice`:
 * auto, nccl, mpi) asks. A collective: every rank calls it; all of them throw (the same message)
 * when the choice cannot be honoured — nccl in a build without NCCL, or with ranks sharing a GPU.
 */
DeviceCollectives device_collectives(Backend& be, Collectives& control, const std::string& choice);

/** Whether this build has NCCL. */
bool nccl_built();

/** The CommType of a backend dtype (what 16-bit gathers and reductions send). */
CommType comm_type(DType t);

}  // namespace fsdp
