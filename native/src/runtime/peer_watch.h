// Watches the processes a rank's job depends on — the other ranks on this host, and the launcher
// that started the job — from a thread of its own, and calls back once when one of them is gone.
// A rank that dies leaves the others blocked in a collective that never completes; MPI then
// neither returns nor says which rank it was. The watch says it, so the job stops with an error
// naming the rank instead of hanging or dying silently (mpirun kills the rest a moment later).
#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace fsdp {

struct WatchedProcess {
  std::string what;  // e.g. "rank 2 (pid 4242 on host gpu1)"
  int pid = 0;
};

class PeerWatch {
 public:
  /** on_gone runs on the watch's thread, at most once. */
  PeerWatch(std::vector<WatchedProcess> watched, std::function<void(const WatchedProcess&)> on_gone,
            double interval_s = 0.2);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  /** Stops watching (before the job's ranks exit normally, one after the other). */
  void stop();

 private:
  std::vector<WatchedProcess> watched_;
  std::function<void(const WatchedProcess&)> on_gone_;
  double interval_s_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/** The process exists and is not a zombie (a rank killed but not yet reaped by mpirun counts as gone). */
bool process_alive(int pid);

/** pid is this process's parent, or its parent's parent, and so on (Linux /proc; false elsewhere). */
bool is_ancestor(int pid);

}  // namespace fsdp
