// The watchdog on collectives (issue 19): a frozen rank (SIGSTOP, a debugger, a hung device or
// file system) leaves every other rank spinning in a collective forever — the dead-rank watch
// (train/job_watch.h) sees only ranks that are gone. Each rank's watchdog thread looks at its own
// CollectiveClock (parallel/watched_collectives.h); when this rank has waited in one collective
// longer than the timeout, it finds which rank did not arrive — on this host from /proc (stopped,
// gone) and from the state every rank's watchdog publishes in /dev/shm (which collective it is
// in, and whether it is alive to say so) — and ends the job naming it.
//
// The timeout: launch.collective_timeout_s, or (0, the default) 20 times the longest step so far
// and at least 300 s, so that a slow checkpoint save or a first step is never taken for a hang.
// Rank 0 acts first (it writes run_end); the others act after twice the time, in case it is rank 0
// that does not arrive.
//
// The heartbeat (issue 26): what a rank publishes four times a second is also its sign of life,
// written by this thread whatever the main thread does. A rank on this host whose heartbeat is
// older than launch.heartbeat_timeout_s (20 s) is frozen — a SIGSTOP or a debugger stops every
// thread — and the job ends naming it, without waiting for the collective timeout; a long
// collective of live ranks (their heartbeats fresh) runs on. The lowest live rank on the host acts,
// the others 10 s later if it did not. A rank that was itself stopped (the whole job under a
// terminal's Ctrl-Z, then fg) gives the others a few seconds to beat again before it judges them.
#pragma once
#include <atomic>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "parallel/watched_collectives.h"
#include "parallel/job_rank.h"

namespace fsdp {

class CollectiveWatchdog {
 public:
  /**
   * on_stuck runs on the watchdog's thread, once, with the reason; it is expected not to return.
   * timeout_s: launch.collective_timeout_s (0: automatic); heartbeat_s: launch.heartbeat_timeout_s (0: off).
   */
  CollectiveWatchdog(const std::vector<JobRank>& ranks, int me, CollectiveClock& clock, double timeout_s,
                     double heartbeat_s, std::function<void(const std::string&)> on_stuck);
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog&) = delete;
  CollectiveWatchdog& operator=(const CollectiveWatchdog&) = delete;

  /** A step took this long (the automatic timeout follows the longest). */
  void step_took(double seconds);
  void stop();

  /** The timeout now, in seconds. */
  double timeout() const;

 private:
  void watch();
  void publish(double now) const;
  std::string who_did_not_arrive(double now) const;
  /** The reason to end the job when a rank on this host has been silent too long and this rank is the one to say so; ""
   * otherwise. */
  std::string silent_rank(double now);
  std::string state_file(int rank) const;

  std::vector<JobRank> ranks_;
  int me_;
  CollectiveClock& clock_;
  double configured_, heartbeat_;
  std::function<void(const std::string&)> on_stuck_;
  double started_ = 0, last_look_ = 0,
         judge_after_ = 0;  // unix times: this thread's start, its last look, when it may judge heartbeats again
  std::set<int> seen_;      // ranks whose heartbeat this watchdog has read (one that is gone since left the job)
  std::string dir_;         // /dev/shm/fsdp-collectives-HOST-PID: the job's ranks on this host publish here
  std::atomic<double> longest_step_{0.0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace fsdp
