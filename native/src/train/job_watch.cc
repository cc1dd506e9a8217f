#include "train/job_watch.h"

#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "parallel/agreement.h"
#include "parallel/process_groups.h"

namespace fsdp {

namespace {

void append_usage(std::vector<double>& out, const MemoryUsage& m) {
  for (auto b : m.bytes) out.push_back(static_cast<double>(b));
  out.push_back(static_cast<double>(m.total));
}

MemoryUsage usage_at(const double* p) {
  MemoryUsage m;
  for (int k = 0; k < kMemoryCategories; ++k) m.bytes[k] = static_cast<std::uint64_t>(p[k]);
  m.total = static_cast<std::uint64_t>(p[kMemoryCategories]);
  return m;
}

}  // namespace

std::vector<JobRank> gather_job(Collectives& world, Backend& backend) {
  const std::vector<std::string> hosts = gather_host_names(world);
  std::vector<double> mine = {static_cast<double>(::getpid())};
  append_usage(mine, backend.allocator().live());
  append_usage(mine, backend.host_allocator().live());
  const std::vector<double> all = gather_values(world, mine);
  const std::size_t per_rank = mine.size(), usage = kMemoryCategories + 1;
  std::vector<JobRank> ranks;
  for (int r = 0; r < world.size(); ++r) {
    const double* p = all.data() + r * per_rank;
    ranks.push_back({r, hosts[r], static_cast<int>(p[0]), usage_at(p + 1), usage_at(p + 1 + usage)});
  }
  return ranks;
}

std::vector<WatchedProcess> watchable(const std::vector<JobRank>& ranks, int launcher_pid,
                                      const std::string& launcher_name) {
  std::vector<WatchedProcess> out;
  for (const auto& r : ranks) {
    if (r.rank != 0 && r.host == ranks[0].host)
      out.push_back(
          {"rank " + std::to_string(r.rank) + " (pid " + std::to_string(r.pid) + " on " + r.host + ")", r.pid});
  }
  if (launcher_pid > 0)
    out.push_back(
        {"the job's launcher (pid " + std::to_string(launcher_pid) + ", " + launcher_name + ")", launcher_pid});
  return out;
}

JobWatch::JobWatch(RunFolder& folder, std::vector<WatchedProcess> watched, std::vector<int> local_ranks)
    : folder_(folder) {
  watch_ = std::make_unique<PeerWatch>(std::move(watched), [this, local_ranks](const WatchedProcess& gone) {
    const std::string reason = gone.what +
                               " is gone: it ended while the job was running, so the job stops; continue from the last "
                               "complete checkpoint with --resume auto";
    folder_.end(RunStatus::failed, step_.load(), reason);
    // No rank outlives the job's end: the ranks on this host would otherwise wait in a collective
    // for ever once their launcher (mpirun) is gone, with no one left to end them.
    for (int pid : local_ranks)
      if (pid > 1 && pid != gone.pid && pid != ::getpid()) ::kill(pid, SIGKILL);
    std::fprintf(stderr, "fsdp-train-native: %s\n", reason.c_str());
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  });
}

JobWatch::~JobWatch() {
  stop();
}

void JobWatch::stop() {
  if (watch_) watch_->stop();
}

}  // namespace fsdp
