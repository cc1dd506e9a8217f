#include "parallel/agreement.h"

#include <cstdint>

namespace fsdp {

std::pair<int, std::string> first_nonempty(Collectives& world, const std::string& mine) {
  if (world.size() == 1) return {mine.empty() ? -1 : 0, mine};
  const std::uint8_t has = mine.empty() ? 0 : 1;
  std::vector<std::uint8_t> all(static_cast<std::size_t>(world.size()));
  world.all_gather(&has, all.data(), 1, CommType::u8);
  for (int r = 0; r < world.size(); ++r) {
    if (all[r]) return {r, broadcast_string(world, mine, r)};
  }
  return {-1, ""};
}

std::string first_failure(Collectives& world, const std::string& mine) {
  const auto [rank, msg] = first_nonempty(world, mine);
  return rank > 0 ? "rank " + std::to_string(rank) + ": " + msg : msg;
}

std::string broadcast_string(Collectives& world, const std::string& s, int root) {
  std::uint64_t n = s.size();
  world.broadcast(&n, sizeof n, root);
  std::string out = world.rank() == root ? s : std::string(n, '\0');
  if (n > 0) world.broadcast(out.data(), n, root);
  return out;
}

std::vector<double> gather_values(Collectives& world, const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * static_cast<std::size_t>(world.size()));
  world.all_gather(mine.data(), all.data(), mine.size(), CommType::f64);
  return all;
}

}  // namespace fsdp
