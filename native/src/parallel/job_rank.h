// One rank of the job as every rank knows it (gathered once, at run_start, by train/job_watch.h):
// its host, pid and resident memory. Here, below train/, because the collective watchdog
// (collective_watchdog.h) names a stuck rank by it.
#pragma once
#include <string>

#include "runtime/allocator.h"

namespace fsdp {

struct JobRank {
  int rank = 0;
  std::string host;
  int pid = 0;
  MemoryUsage resident, resident_host;  // device (backend) and offload host memory, live now
};

}  // namespace fsdp
