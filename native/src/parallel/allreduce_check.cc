#include "parallel/allreduce_check.h"

#include <chrono>
#include <string>
#include <vector>

#include "parallel/agreement.h"
#include "parallel/process_groups.h"

namespace fsdp {

namespace {

/** Rank r's value at i: sums over ranks stay below 2^24, so float holds them exactly. */
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1)); }
float sum(int ranks, std::size_t i) { return static_cast<float>(ranks * (ranks + 1) / 2 * static_cast<int>(i % 7 + 1)); }

/** The first element where got differs from want(i), as "what[i] = got, expected want"; "" when none does. */
template <class F>
std::string first_difference(const char* what, const std::vector<float>& got, std::size_t first, F want) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want(first + i)) return std::string(what) + "[" + std::to_string(first + i) + "] = " + std::to_string(got[i]) + ", expected " + std::to_string(want(first + i));
  }
  return "";
}

}  // namespace

nlohmann::json check_collectives(Collectives& world, std::size_t elements) {
  const int W = world.size(), r = world.rank();
  const std::size_t n = (elements + W - 1) / W * W, block = n / W;
  std::vector<std::string> wrong;
  auto note = [&](const std::string& s) {
    if (!s.empty()) wrong.push_back(s);
  };

  std::vector<float> data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = value(r, i);
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  world.all_reduce(data.data(), n, CommType::f32);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  note(first_difference("all_reduce", data, 0, [&](std::size_t i) { return sum(W, i); }));

  std::vector<float> send(n), shard(block);
  for (std::size_t i = 0; i < n; ++i) send[i] = value(r, i);
  world.reduce_scatter(send.data(), shard.data(), block, CommType::f32);
  note(first_difference("reduce_scatter", shard, r * block, [&](std::size_t i) { return sum(W, i); }));

  // Uneven blocks, as a unit whose size is not a multiple of the ranks is cut.
  const Blocks uneven{block, n - W / 2};
  std::vector<float> in_place(uneven.total);
  for (std::size_t i = 0; i < uneven.total; ++i) in_place[i] = value(r, i);
  world.reduce_scatter_in_place(in_place.data(), uneven, CommType::f32);
  note(first_difference("reduce_scatter_in_place", std::vector<float>(in_place.begin() + uneven.offset(r), in_place.begin() + uneven.offset(r) + uneven.count(r)),
                        uneven.offset(r), [&](std::size_t i) { return sum(W, i); }));
  world.all_gather_in_place(in_place.data(), uneven, CommType::f32);
  note(first_difference("all_gather_in_place", in_place, 0, [&](std::size_t i) { return sum(W, i); }));

  std::vector<float> mine(block), gathered(n), started(n);
  for (std::size_t i = 0; i < block; ++i) mine[i] = value(r, r * block + i);
  world.all_gather(mine.data(), gathered.data(), block, CommType::f32);
  note(first_difference("all_gather", gathered, 0, [&](std::size_t i) { return value(static_cast<int>(i / block), i); }));
  world.start_all_gather(mine.data(), started.data(), block, CommType::f32)->wait();
  note(first_difference("start_all_gather", started, 0, [&](std::size_t i) { return value(static_cast<int>(i / block), i); }));

  std::vector<float> root(block);
  for (std::size_t i = 0; i < block; ++i) root[i] = r == W - 1 ? value(W - 1, i) : 0.0f;
  world.broadcast(root.data(), sizeof(float) * block, W - 1);
  note(first_difference("broadcast", root, 0, [&](std::size_t i) { return value(W - 1, i); }));

  // Every rank's findings, to every rank.
  std::string mine_text;
  for (const auto& w : wrong) mine_text += (mine_text.empty() ? "" : "; ") + w;
  nlohmann::json failures = nlohmann::json::array();
  for (int q = 0; q < W; ++q) {
    const std::string theirs = broadcast_string(world, mine_text, q);
    if (!theirs.empty()) failures.push_back("rank " + std::to_string(q) + ": " + theirs);
  }
  // Bus bandwidth as nccl-tests reports it: 2 (W - 1) / W of the buffer crosses each rank's link.
  const double bytes = 4.0 * static_cast<double>(n);
  return {{"ok", failures.empty()},
          {"world_size", W},
          {"hosts", gather_host_names(world)},
          {"elements", n},
          {"seconds", seconds},
          {"all_reduce_gbps", W > 1 && seconds > 0 ? bytes * 2.0 * (W - 1) / W / seconds / 1e9 : 0.0},
          {"failures", failures}};
}

}  // namespace fsdp
