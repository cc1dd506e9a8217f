// How much host memory a process can still allocate here: the kernel's MemAvailable, and, where
// the process lives in a memory cgroup (a container, a SLURM job, systemd), the room left under
// the tightest limit on its path — beyond which the OOM killer ends the run without a word
// (exit 137, an empty log), since allocations themselves succeed until the pages are touched.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace fsdp {

struct HostMemory {
  std::uint64_t available = 0;                // the smaller of the two below
  std::uint64_t mem_available = 0;            // /proc/meminfo MemAvailable
  std::optional<std::uint64_t> cgroup_limit;  // the tightest memory cgroup limit, when there is one
  std::uint64_t cgroup_used = 0;              // what the cgroup holds against it (reclaimable file pages not counted)
  std::string cgroup;                         // its path, for messages
};

HostMemory host_memory();

/** "12.3 GiB" (MiB below a GiB, KiB below a MiB): the unit a person reads memory sizes in. */
std::string human_bytes(std::uint64_t bytes);

}  // namespace fsdp
