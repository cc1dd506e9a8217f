// Before the first allocation, the memory plan (memory/memory_plan.h) against what this machine
// can hold: host memory for every rank on this host (MemAvailable and the memory cgroup's limit,
// runtime/host_memory.h), and each GPU's memory. A run that cannot fit is refused with the
// numbers instead of being OOM-killed (exit 137, nothing said) or failing on its first step;
// launch.check_memory: false (fsdp-train --no-memory-check) runs it anyway.
#pragma once
#include <string>

#include "config/run_config.h"
#include "memory/memory_plan.h"
#include "backend/device_probe.h"
#include "runtime/host_memory.h"

namespace fsdp {

/** Why the plan does not fit this host (and its GPUs), or "" when it does. */
std::string memory_shortfall(const MemoryPlan& plan, const RunConfig& config, const HostMemory& host,
                             const DeviceProbe& devices);

}  // namespace fsdp
