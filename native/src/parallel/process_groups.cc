#include "parallel/process_groups.h"

#include <cstring>
#include <map>
#include <stdexcept>

#include "parallel/single_process.h"
#include "runtime/files.h"

namespace fsdp {

std::vector<std::string> gather_host_names(Collectives& world) {
  constexpr std::size_t kName = 256;  // HOST_NAME_MAX is 64 on Linux; FQDNs can be longer
  char mine[kName] = {};
  std::strncpy(mine, host_name().c_str(), kName - 1);
  std::vector<char> all(kName * static_cast<std::size_t>(world.size()));
  world.all_gather(mine, all.data(), kName, CommType::u8);
  std::vector<std::string> names;
  for (int r = 0; r < world.size(); ++r) names.emplace_back(all.data() + r * kName);
  return names;
}

ProcessGroups whole_world_groups(Collectives& data) {
  ProcessGroups g;
  g.shard = data.split(0, data.rank());
  g.replicas = std::make_unique<SingleProcess>();
  return g;
}

ProcessGroups hybrid_groups(Collectives& control, Collectives& data, int ranks_per_node, int expected) {
  const int W = control.size(), rank = control.rank();
  int node = 0, index = 0;
  if (ranks_per_node > 0) {
    if (W % ranks_per_node != 0)
      throw std::runtime_error("fsdp.ranks_per_node " + std::to_string(ranks_per_node) +
                               " does not divide the world size " + std::to_string(W));
    node = rank / ranks_per_node;
    index = rank % ranks_per_node;
  } else {
    // Nodes are hosts, numbered in the order their first rank appears; a rank's index is its place among its host's
    // ranks.
    const std::vector<std::string> hosts = gather_host_names(control);
    std::map<std::string, int> node_of, ranks_on;
    for (const auto& h : hosts) {
      if (!node_of.count(h)) node_of.emplace(h, static_cast<int>(node_of.size()));
      ++ranks_on[h];
    }
    for (const auto& [h, n] : ranks_on) {
      if (n != expected) {
        throw std::runtime_error("HYBRID_SHARD shards within a host: host " + h + " runs " + std::to_string(n) +
                                 " ranks, launch.nproc_per_node says " + std::to_string(expected) +
                                 " (set fsdp.ranks_per_node to group ranks yourself)");
      }
    }
    node = node_of[hosts[rank]];
    for (int r = 0; r < rank; ++r) index += hosts[r] == hosts[rank] ? 1 : 0;
  }
  ProcessGroups g;
  g.shard = data.split(node, rank);
  g.replicas = data.split(index, rank);
  return g;
}

}  // namespace fsdp
