// Who may write a run folder: an OS file lock (flock) on DIR/run.lock, held for the run's life and
// taken before anything is written, so that a second trainer on the same folder is refused instead
// of deleting the first one's checkpoint in progress. The kernel releases the lock when its holder
// dies, so a stale lock of a killed trainer is taken over without anyone's help; the file keeps
// the holder's pid, host and start time for the refusal's message.
//
// The lock belongs to the trainer, the process that writes the checkpoints (rank 0 of a job): it
// takes it before it writes anything and holds it until it exits, whoever started it. fsdp-train
// only looks first (`fsdp-train-native --lock-run-folder FD PID` on a file it opened, let go at
// once) so that it refuses a folder in use before it writes config.json and run.json; a killed
// fsdp-train therefore never leaves a trainer running without the lock.
//
// Under its owner, the supervisor (python/fsdp_studio/supervise.py --native), the lock is the
// owner's: it takes it before it starts anything of the attempt and holds it until every process
// of the attempt is gone (a trainer that ended first, as rank 0 on a full disk did while the other
// ranks and mpirun lived on, used to let it go, and a resume was accepted beside the old attempt).
// The trainer then finds the lock held by the pid its environment names (FSDP_RUN_LOCK_OWNER) on
// its own host, and runs under it.
#pragma once
#include <string>

namespace fsdp {

/** The environment variable naming the pid of the run's owner, which holds the lock for the trainer. */
inline constexpr const char* kRunLockOwnerEnv = "FSDP_RUN_LOCK_OWNER";

class RunFolderLock {
 public:
  /** Takes dir/run.lock for this process; throws naming the holder when another holds it. */
  explicit RunFolderLock(const std::string& dir);
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

  /** The lock file's path. */
  static std::string path_in(const std::string& dir);

 private:
  int fd_ = -1;
};

/**
 * Locks the open lock file `fd` (its open file description, which the caller keeps) for the
 * process `holder_pid`: true when taken, false when another holds it (`holder` then says who).
 */
bool lock_run_folder_fd(int fd, int holder_pid, std::string* holder);

}  // namespace fsdp
