// The collective watchdog's heartbeat (issue 26, item 2): a rank on this host that stops beating is
// named after launch.heartbeat_timeout_s, whatever the collective timeout; a long collective of
// ranks that all beat runs on. Two watchdogs in this process stand for two ranks on one host: one
// waits in a collective, the other beats until it is stopped (as SIGSTOP stops a rank's threads).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "parallel/collective_watchdog.h"
#include "runtime/files.h"

namespace fsdp {
namespace {

/** What a watchdog's on_stuck was called with, if it was. */
struct Verdict {
  std::mutex mu;
  std::optional<std::string> reason;
  void set(const std::string& r) {
    std::lock_guard<std::mutex> lock(mu);
    if (!reason) reason = r;
  }
  std::optional<std::string> get() {
    std::lock_guard<std::mutex> lock(mu);
    return reason;
  }
};

std::vector<JobRank> two_ranks_here() {
  // Both "ranks" are this process: its own /proc state is running, so only the heartbeat can tell.
  const std::string host = "watchdog-test-" + std::to_string(::getpid());
  return {JobRank{0, host, ::getpid(), {}, {}}, JobRank{1, host, ::getpid(), {}, {}}};
}

std::optional<std::string> wait_for(Verdict& v, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    if (auto r = v.get()) return r;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return v.get();
}

std::string state_file_of(const std::vector<JobRank>& ranks, int rank) {
  return "/dev/shm/fsdp-collectives-" + ranks[0].host + "-" + std::to_string(ranks[0].pid) + "/rank-" +
         std::to_string(rank);
}

/**
 * Waits until the watchdog that publishes `state` has looked at `after` (unix time) or later and
 * finished judging that look (it publishes before it judges, so a later look published means the
 * earlier one was judged), or until `v` is set. So "no alarm" means the watchdog judged at a time
 * when it should have spoken, not that some seconds of a loaded machine's wall clock went by.
 * The bound is only for a watchdog that never looks at all.
 */
bool looked_after(const std::string& state, double after, Verdict& v) {
  const auto bound = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  double judged = 0;
  while (std::chrono::steady_clock::now() < bound) {
    if (v.get()) return true;
    std::ifstream in(state);
    double entered = 0, waiting_since = 0, at = 0;
    if (in >> entered >> waiting_since >> at && at >= after) {
      if (judged == 0)
        judged = at;
      else if (at > judged)
        return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST(CollectiveWatchdog, NamesARankWhoseHeartbeatStoppedLongBeforeTheCollectiveTimeout) {
  const auto ranks = two_ranks_here();
  CollectiveClock waiting, other;
  // Rank 0 has been in a collective for 40 s: long, but under its 600 s timeout.
  waiting.entered = 7;
  waiting.waiting_since = unix_time() - 40;
  Verdict v0, v1;
  const double started = unix_time();
  CollectiveWatchdog rank0(ranks, 0, waiting, 600, 5, [&](const std::string& r) { v0.set(r); });
  auto rank1 = std::make_unique<CollectiveWatchdog>(ranks, 1, other, 600, 5, [&](const std::string& r) { v1.set(r); });
  // Both beat: the long collective runs on. Rank 0 has judged rank 1 past the 5 s heartbeat timeout
  // (a rank silent since the start would be named then) and said nothing.
  ASSERT_TRUE(looked_after(state_file_of(ranks, 0), started + 6, v0));
  EXPECT_FALSE(v0.get()) << *v0.get();
  EXPECT_FALSE(v1.get());
  // Rank 1 freezes: its state stays, its beats stop.
  const std::string state = state_file_of(ranks, 1);
  std::string kept;
  {
    ReadOnlyFile f(state);
    kept.resize(f.size());
    f.read_at(0, kept.data(), kept.size());
  }
  rank1->stop();  // removes the state file; put the last beat back, as a frozen rank leaves it
  write_file_atomically(state, kept);
  const auto reason = wait_for(v0, 30.0);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->rfind(
                "rank 1 (pid " + std::to_string(::getpid()) + " on " + ranks[0].host + ") has not answered for ", 0),
            0u)
      << *reason;
  EXPECT_NE(reason->find("(frozen) (no heartbeat; launch.heartbeat_timeout_s is 5 s)"), std::string::npos) << *reason;
  rank0.stop();
}

TEST(CollectiveWatchdog, WhenRankZeroIsSilentTheLowestLiveRankSaysSo) {
  const auto ranks = two_ranks_here();
  CollectiveClock c0, c1;
  Verdict v0, v1;
  const double started = unix_time();
  auto rank0 = std::make_unique<CollectiveWatchdog>(ranks, 0, c0, 600, 5, [&](const std::string& r) { v0.set(r); });
  CollectiveWatchdog rank1(ranks, 1, c1, 600, 5, [&](const std::string& r) { v1.set(r); });
  ASSERT_TRUE(looked_after(state_file_of(ranks, 1), started + 1, v1));
  EXPECT_FALSE(v1.get()) << *v1.get();
  const std::string state = state_file_of(ranks, 0);
  std::string kept;
  {
    ReadOnlyFile f(state);
    kept.resize(f.size());
    f.read_at(0, kept.data(), kept.size());
  }
  rank0->stop();
  write_file_atomically(state, kept);
  const auto reason = wait_for(v1, 40.0);
  ASSERT_TRUE(reason);
  EXPECT_EQ(reason->rfind("rank 0 (pid ", 0), 0u) << *reason;
  rank1.stop();
}

TEST(CollectiveWatchdog, AHeartbeatTimeoutOfZeroLeavesOnlyTheCollectiveTimeout) {
  const auto ranks = two_ranks_here();
  CollectiveClock waiting;
  waiting.waiting_since = unix_time() - 40;
  Verdict v0;
  const double started = unix_time();
  CollectiveWatchdog rank0(ranks, 0, waiting, 600, 0, [&](const std::string& r) { v0.set(r); });
  // Rank 1 never beats at all; rank 0 judges for a while (the 600 s collective timeout is far) and
  // says nothing.
  ASSERT_TRUE(looked_after(state_file_of(ranks, 0), started + 2.5, v0));
  EXPECT_FALSE(v0.get()) << *v0.get();
  rank0.stop();
}

}  // namespace
}  // namespace fsdp
