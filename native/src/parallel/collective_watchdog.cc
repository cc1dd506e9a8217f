#include "parallel/collective_watchdog.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/files.h"
#include "runtime/peer_watch.h"

namespace fsdp {

namespace fs = std::filesystem;

namespace {

constexpr double kInterval = 0.25;      // seconds between looks
constexpr double kStaleAfter = 3.0;     // a watchdog that has not published for this long is not running
constexpr double kAutoMinimum = 300.0;  // the automatic timeout is never below this
constexpr double kStepFactor = 20.0;
constexpr double kDeferred = 10.0;  // a rank that is not the one to act waits this much longer
constexpr double kWakeGrace = 5.0;  // after this rank was stopped itself: time for the others to beat again

/** The state letter of /proc/PID/stat ('R', 'S', 'T' stopped, 't' traced, 'Z' zombie), or 0 when there is no such
 * process. */
char process_state(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? 0 : stat[close + 2];
}

struct Published {
  unsigned long long entered = 0;
  double waiting_since = 0, at = 0;
  bool found = false;
};

Published read_state(const std::string& file) {
  Published p;
  std::ifstream in(file);
  p.found = static_cast<bool>(in >> p.entered >> p.waiting_since >> p.at);
  return p;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

}  // namespace

CollectiveWatchdog::CollectiveWatchdog(const std::vector<JobRank>& ranks, int me, CollectiveClock& clock,
                                       double timeout_s, double heartbeat_s,
                                       std::function<void(const std::string&)> on_stuck)
    : ranks_(ranks),
      me_(me),
      clock_(clock),
      configured_(timeout_s),
      heartbeat_(heartbeat_s),
      on_stuck_(std::move(on_stuck)) {
  const fs::path base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path();
  dir_ = (base / ("fsdp-collectives-" + ranks_.at(0).host + "-" + std::to_string(ranks_.at(0).pid))).string();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  started_ = last_look_ = unix_time();
  publish(started_);
  thread_ = std::thread([this] { watch(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  stop();
}

void CollectiveWatchdog::stop() {
  if (stop_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  std::error_code ec;
  fs::remove(state_file(me_), ec);
  fs::remove(dir_, ec);  // the last rank on this host to leave removes it
}

void CollectiveWatchdog::step_took(double s) {
  double old = longest_step_.load();
  while (s > old && !longest_step_.compare_exchange_weak(old, s)) {
  }
}

double CollectiveWatchdog::timeout() const {
  return configured_ > 0 ? configured_ : std::max(kAutoMinimum, kStepFactor * longest_step_.load());
}

std::string CollectiveWatchdog::state_file(int rank) const {
  return dir_ + "/rank-" + std::to_string(rank);
}

void CollectiveWatchdog::publish(double now) const {
  std::ostringstream line;
  line.precision(17);
  line << clock_.entered.load() << " " << clock_.waiting_since.load() << " " << now << "\n";
  const std::string file = state_file(me_), tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line.str();
  }
  std::error_code ec;
  fs::rename(tmp, file, ec);
}

void CollectiveWatchdog::watch() {
  const auto pause = std::chrono::duration<double>(kInterval);
  while (!stop_.load()) {
    std::this_thread::sleep_for(pause);
    if (stop_.load()) return;
    const double now = unix_time();
    publish(now);
    // This thread did not run for a while (the process was stopped, or the machine slept): the
    // others may have been stopped with it; give them time to beat again before judging them.
    if (now - last_look_ > kStaleAfter) judge_after_ = now + kWakeGrace;
    last_look_ = now;
    if (const std::string silent = silent_rank(now); !silent.empty()) {
      on_stuck_(silent);
      return;
    }
    const double since = clock_.waiting_since.load();
    // Rank 0 speaks first (it writes the run's end); the others follow if it does not.
    const double limit = me_ == 0 ? timeout() : 2 * timeout() + 10;
    if (since <= 0 || now - since < limit) continue;
    on_stuck_("rank " + std::to_string(me_) + " has waited " + seconds(now - since) +
              " in a collective that did not complete (the timeout is " + seconds(timeout()) +
              ", launch.collective_timeout_s): " + who_did_not_arrive(now) +
              ". The job stops; continue from the last complete checkpoint with --resume auto");
    return;
  }
}

std::string CollectiveWatchdog::silent_rank(double now) {
  if (heartbeat_ <= 0 || now < judge_after_) return "";
  const std::string& host = ranks_.at(me_).host;
  // The ranks on this host that have been silent too long (a rank that never beat since this
  // watchdog started counts from then), and the lowest one that has not: the one that acts.
  std::vector<std::pair<const JobRank*, double>> silent;
  int actor = -1;
  for (const JobRank& r : ranks_) {
    if (r.host != host) continue;
    double quiet = 0;
    if (r.rank != me_) {
      const Published p = read_state(state_file(r.rank));
      // A rank whose state was seen and is gone has left the job (its watchdog removes it at the end).
      if (!p.found && seen_.count(r.rank)) continue;
      if (p.found) seen_.insert(r.rank);
      quiet = now - (p.found ? std::max(p.at, started_) : started_);
    }
    if (quiet > heartbeat_)
      silent.emplace_back(&r, quiet);
    else if (actor < 0)
      actor = r.rank;
  }
  if (silent.empty()) return "";
  const double longest = std::max_element(silent.begin(), silent.end(), [](const auto& a, const auto& b) {
                           return a.second < b.second;
                         })->second;
  if (me_ != actor && longest <= heartbeat_ + kDeferred) return "";
  std::string named;
  for (const auto& [r, quiet] : silent) {
    const char state = process_state(r->pid);
    const std::string who =
        "rank " + std::to_string(r->rank) + " (pid " + std::to_string(r->pid) + " on " + r->host + ")";
    const std::string what = state == 'T' || state == 't'
                                 ? " is stopped (SIGSTOP or a debugger) and has not answered for "
                             : state == 0 || state == 'Z' ? " is gone: no answer for "
                                                          : " has not answered for ";
    named += (named.empty() ? "" : "; ") + who + what + seconds(quiet) +
             (state == 'T' || state == 't' || state == 0 || state == 'Z' ? "" : " (frozen)");
  }
  return named + " (no heartbeat; launch.heartbeat_timeout_s is " + seconds(heartbeat_) +
         "). The job stops; continue from the last complete checkpoint with --resume auto";
}

std::string CollectiveWatchdog::who_did_not_arrive(double now) const {
  const Published mine = read_state(state_file(me_));
  std::vector<std::string> named, elsewhere;
  for (const JobRank& r : ranks_) {
    if (r.rank == me_) continue;
    const std::string who = "rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + " on " + r.host + ")";
    if (r.host != ranks_[me_].host) {
      elsewhere.push_back(std::to_string(r.rank));
      continue;
    }
    const char state = process_state(r.pid);
    if (state == 0 || state == 'Z' || state == 'X') {
      named.push_back(who + " is gone");
    } else if (state == 'T' || state == 't') {
      named.push_back(who + " is stopped (SIGSTOP or a debugger) and did not arrive");
    } else {
      const Published p = read_state(state_file(r.rank));
      if (!p.found || now - p.at > kStaleAfter) {
        named.push_back(who + " did not arrive: it has not answered for " + seconds(p.found ? now - p.at : 0) +
                        " (frozen)");
      } else if (p.waiting_since <= 0) {
        named.push_back(who + " did not arrive: it is running outside any collective (at collective " +
                        std::to_string(p.entered) + ", this rank waits in " + std::to_string(mine.entered) + ")");
      }
    }
  }
  if (!named.empty()) {
    std::string out;
    for (const auto& n : named) out += (out.empty() ? "" : "; ") + n;
    return out;
  }
  if (!elsewhere.empty()) {
    std::string list;
    for (const auto& r : elsewhere) list += (list.empty() ? "" : ", ") + r;
    return "every rank on this host waits too; the one that did not arrive is among ranks " + list + " on other hosts";
  }
  return "every rank of the job waits in it: the collective itself does not complete (the MPI transport?)";
}

}  // namespace fsdp
