// Who may write a run folder: an OS file lock (flock) on DIR/run.lock, held for the run's life and
// taken before anything is written, so that a second trainer on the same folder is refused instead
// of deleting the first one's checkpoint in progress. The kernel releases the lock when its holder
// dies, so a stale lock of a killed trainer is taken over without anyone's help; the file keeps
// the holder's pid, host and start time for the refusal's message.
//
// fsdp-train takes the lock itself before it writes config.json and run.json, and holds it until
// the job ends (through `fsdp-train-native --lock-run-folder FD PID` on a file it opened); the
// runtime it starts, directly or through mpirun, finds the lock held by an ancestor on its host
// and goes on. A runtime started by hand takes the lock itself.
#pragma once
#include <string>

namespace fsdp {

class RunFolderLock {
 public:
  /** Takes dir/run.lock, or finds it held for this process by an ancestor; throws naming the holder otherwise. */
  explicit RunFolderLock(const std::string& dir);
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

  /** The lock file's path. */
  static std::string path_in(const std::string& dir);

 private:
  int fd_ = -1;  // held here; -1 when an ancestor holds it for us
};

/**
 * Locks the open lock file `fd` (its open file description, which the caller keeps) for the
 * process `holder_pid`: true when taken, false when another holds it (`holder` then says who).
 */
bool lock_run_folder_fd(int fd, int holder_pid, std::string* holder);

}  // namespace fsdp
