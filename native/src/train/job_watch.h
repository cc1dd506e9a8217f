// The job's processes, as rank 0 sees and supervises them: every rank's host, pid and resident
// memory (gathered once, at run_start), and a watch of the processes the run depends on — the
// other ranks on rank 0's host and the launcher (fsdp-train) — that ends the run in the run folder
// when one of them is gone, instead of leaving the survivors blocked in a collective. The place
// for other supervision of the job (a collective that never completes, a stalled rank).
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "parallel/collectives.h"
#include "parallel/job_rank.h"
#include "runtime/allocator.h"
#include "runtime/peer_watch.h"
#include "train/run_folder.h"

namespace fsdp {

/** Every rank's record, in rank order, on every rank (a collective). */
std::vector<JobRank> gather_job(Collectives& world, Backend& backend);

/** What rank 0 can watch: the other ranks on its own host, and the launcher (named launcher_name) when launcher_pid >
 * 0. */
std::vector<WatchedProcess> watchable(const std::vector<JobRank>& ranks, int launcher_pid,
                                      const std::string& launcher_name);

class JobWatch {
 public:
  /**
   * Starts watching; when a process is gone, writes run_end (failed, naming it) to the folder and
   * stderr, kills the other ranks on this host (`local_ranks`: no rank outlives the job, even when
   * what is gone is mpirun, which would have stopped them) and exits the process at once (its main
   * thread may be blocked in a collective forever).
   */
  JobWatch(RunFolder& folder, std::vector<WatchedProcess> watched, std::vector<int> local_ranks);
  ~JobWatch();

  /** The step the run has completed, for the run_end the watch may write. */
  void at_step(long step) { step_.store(step); }
  /** Stops watching: the job's ranks are about to leave one by one, which is no longer a failure. */
  void stop();

 private:
  RunFolder& folder_;
  std::atomic<long> step_{0};
  std::unique_ptr<PeerWatch> watch_;
};

}  // namespace fsdp
