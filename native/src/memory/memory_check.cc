#include "memory/memory_check.h"

#include <algorithm>

namespace fsdp {

namespace {

std::string by_category(const MemoryUsage& m) {
  std::string out;
  for (int k = 0; k < kMemoryCategories; ++k) {
    if (m.bytes[k] == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(category_name(static_cast<MemoryCategory>(k))) + " " +
           human_bytes(m.bytes[k]);
  }
  return out;
}

constexpr const char* kAdvice =
    ": shard it (fsdp.sharding_strategy FULL_SHARD over more ranks), lower training.batch_size_per_gpu or "
    "data.seq_len, turn on activation_checkpointing, or set launch.check_memory: false (fsdp-train --no-memory-check) "
    "to try anyway";

}  // namespace

std::string memory_shortfall(const MemoryPlan& plan, const RunConfig& config, const HostMemory& host,
                             const DeviceProbe& devices) {
  const bool cuda = config.launch.device == "cuda";
  const std::uint64_t ranks = static_cast<std::uint64_t>(std::max(1, config.launch.nproc_per_node));
  // On the CPU the device plan is host memory; on a GPU only what is offloaded is.
  const std::uint64_t per_rank = (cuda ? 0 : plan.device.total) + plan.host.total;
  const std::uint64_t need = per_rank * ranks;
  if (need > host.available) {
    std::string have = human_bytes(host.available) + " is available";
    if (host.cgroup_limit && host.available < host.mem_available) {
      have += " (memory cgroup " + host.cgroup + ": limit " + human_bytes(*host.cgroup_limit) + ", " +
              human_bytes(host.cgroup_used) + " in use)";
    } else {
      have += " (MemAvailable)";
    }
    return "the memory plan needs " + human_bytes(per_rank) + " of host memory per rank" +
           (ranks > 1 ? " x " + std::to_string(ranks) + " ranks on this host = " + human_bytes(need) : "") + " (" +
           by_category(cuda ? plan.host : plan.device) +
           (cuda || plan.host.total == 0 ? "" : "; offloaded " + human_bytes(plan.host.total)) + "), but " + have +
           kAdvice;
  }
  if (cuda && !devices.gpus.empty()) {
    // Ranks on this host share its GPUs round-robin (local rank mod GPUs).
    const std::uint64_t gpus = devices.gpus.size();
    const std::uint64_t per_gpu = (ranks + gpus - 1) / gpus;
    const GpuInfo& smallest =
        *std::min_element(devices.gpus.begin(), devices.gpus.end(),
                          [](const GpuInfo& a, const GpuInfo& b) { return a.memory_bytes < b.memory_bytes; });
    if (plan.device.total * per_gpu > smallest.memory_bytes) {
      return "the memory plan needs " + human_bytes(plan.device.total) + " of GPU memory per rank" +
             (per_gpu > 1 ? " x " + std::to_string(per_gpu) + " ranks per GPU" : "") + " (" + by_category(plan.device) +
             "), but GPU " + std::to_string(smallest.index) + " (" + smallest.name + ") has " +
             human_bytes(smallest.memory_bytes) + kAdvice;
    }
  }
  return "";
}

}  // namespace fsdp
