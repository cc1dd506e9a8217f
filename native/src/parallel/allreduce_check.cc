#include "parallel/allreduce_check.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_options.h"
#include "parallel/agreement.h"
#include "parallel/device_collectives.h"
#include "parallel/process_groups.h"
#include "backend/device_probe.h"

namespace fsdp {

namespace {

/** Rank r's value at i: sums over ranks stay below 2^24, so float holds them exactly. */
float value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 7 + 1));
}
float sum(int ranks, std::size_t i) {
  return static_cast<float>(ranks * (ranks + 1) / 2 * static_cast<int>(i % 7 + 1));
}

/** The first element where got differs from want(i), as "what[i] = got, expected want"; "" when none does. */
template <class F>
std::string first_difference(const char* what, const std::vector<float>& got, std::size_t first, F want) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want(first + i))
      return std::string(what) + "[" + std::to_string(first + i) + "] = " + std::to_string(got[i]) + ", expected " +
             std::to_string(want(first + i));
  }
  return "";
}

/**
 * Where the checked buffers live: host vectors, or a backend's device memory (values are uploaded
 * before an operation and read back after it, so the collectives see device pointers).
 */
class CheckMemory {
 public:
  explicit CheckMemory(Backend* device) : device_(device) {}
  /** A buffer holding `values`, valid until the next reset(). */
  float* put(const std::vector<float>& values) {
    if (!device_) {
      host_.push_back(values);
      return host_.back().data();
    }
    device_buffers_.push_back(device_->allocator().allocate(MemoryCategory::comm, sizeof(float) * values.size() + 4));
    device_->upload(device_buffers_.back().data(), values.data(), sizeof(float) * values.size());
    return device_buffers_.back().f32();
  }
  std::vector<float> get(const float* p, std::size_t n) {
    std::vector<float> out(n);
    if (device_) device_->synchronize();
    if (device_)
      device_->download(out.data(), p, sizeof(float) * n);
    else
      std::memcpy(out.data(), p, sizeof(float) * n);
    return out;
  }
  void synchronize() {
    if (device_) device_->synchronize();
  }

 private:
  Backend* device_;
  std::vector<std::vector<float>> host_;
  std::vector<Buffer> device_buffers_;
};

/** Every check on `world`'s buffers in `mem`; the failures of this rank. */
std::vector<std::string> run_checks(Collectives& world, CheckMemory& mem, std::size_t n) {
  const int W = world.size(), r = world.rank();
  const std::size_t block = n / W;
  std::vector<std::string> wrong;
  auto note = [&](const std::string& s) {
    if (!s.empty()) wrong.push_back(s);
  };
  auto ramp = [&](std::size_t count, std::size_t from, int rank) {
    std::vector<float> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = value(rank, from + i);
    return v;
  };

  float* data = mem.put(ramp(n, 0, r));
  world.all_reduce(data, n, CommType::f32);
  note(first_difference("all_reduce", mem.get(data, n), 0, [&](std::size_t i) { return sum(W, i); }));

  float* send = mem.put(ramp(n, 0, r));
  float* shard = mem.put(std::vector<float>(block));
  world.reduce_scatter(send, shard, block, CommType::f32);
  note(first_difference("reduce_scatter", mem.get(shard, block), r * block, [&](std::size_t i) { return sum(W, i); }));

  // Uneven blocks, as a unit whose size is not a multiple of the ranks is cut.
  const Blocks uneven{block, n - W / 2};
  float* in_place = mem.put(ramp(uneven.total, 0, r));
  world.reduce_scatter_in_place(in_place, uneven, CommType::f32);
  const std::vector<float> reduced = mem.get(in_place, uneven.total);
  note(first_difference(
      "reduce_scatter_in_place",
      std::vector<float>(reduced.begin() + uneven.offset(r), reduced.begin() + uneven.offset(r) + uneven.count(r)),
      uneven.offset(r), [&](std::size_t i) { return sum(W, i); }));
  world.all_gather_in_place(in_place, uneven, CommType::f32);
  note(first_difference("all_gather_in_place", mem.get(in_place, uneven.total), 0,
                        [&](std::size_t i) { return sum(W, i); }));

  float* mine = mem.put(ramp(block, r * block, r));
  float* gathered = mem.put(std::vector<float>(n));
  float* started = mem.put(std::vector<float>(n));
  world.all_gather(mine, gathered, block, CommType::f32);
  note(first_difference("all_gather", mem.get(gathered, n), 0,
                        [&](std::size_t i) { return value(static_cast<int>(i / block), i); }));
  world.start_all_gather(mine, started, block, CommType::f32)->wait();
  note(first_difference("start_all_gather", mem.get(started, n), 0,
                        [&](std::size_t i) { return value(static_cast<int>(i / block), i); }));

  float* root = mem.put(r == W - 1 ? ramp(block, 0, W - 1) : std::vector<float>(block));
  world.broadcast(root, sizeof(float) * block, W - 1);
  note(first_difference("broadcast", mem.get(root, block), 0, [&](std::size_t i) { return value(W - 1, i); }));
  return wrong;
}

/** Every rank's failures, on every rank, through the control world. */
nlohmann::json gather_failures(Collectives& control, const std::vector<std::string>& wrong) {
  std::string mine;
  for (const auto& w : wrong) mine += (mine.empty() ? "" : "; ") + w;
  nlohmann::json failures = nlohmann::json::array();
  for (int q = 0; q < control.size(); ++q) {
    const std::string theirs = broadcast_string(control, mine, q);
    if (!theirs.empty()) failures.push_back("rank " + std::to_string(q) + ": " + theirs);
  }
  return failures;
}

/** Bus bandwidth as nccl-tests reports it: 2 (W - 1) / W of the buffer crosses each rank's link. */
double bus_gbps(double bytes, int W, double seconds) {
  return W > 1 && seconds > 0 ? bytes * 2.0 * (W - 1) / W / seconds / 1e9 : 0.0;
}

/** The device collectives of this build's GPU backend, checked and timed; null when there is no GPU here. */
nlohmann::json check_device(Collectives& control, std::size_t n) {
  if (!cuda_backend_built() || probe_devices().gpus.empty()) return nullptr;
  nlohmann::json out;
  std::string error;
  std::unique_ptr<Backend> be;
  DeviceCollectives dc;
  try {
    BackendOptions o;
    o.device_index = local_rank();
    be = make_backend("cuda", o);
    dc = device_collectives(*be, control, "auto");
  } catch (const std::exception& e) {
    error = e.what();
  }
  error = first_failure(control, error);
  if (!error.empty()) return {{"ok", false}, {"failures", {error}}};
  CheckMemory mem(be.get());
  nlohmann::json failures = gather_failures(control, run_checks(*dc.world, mem, n));
  // Bandwidth on a larger buffer, after a warm-up, as the median-free mean of a few repetitions.
  const std::size_t big = std::size_t{32} << 20;  // 128 MB of float32
  Buffer data = be->allocator().allocate(MemoryCategory::comm, sizeof(float) * big);
  be->fill(data.f32(), big, 1.0f);
  dc.world->all_reduce(data.f32(), big, CommType::f32);
  be->synchronize();
  control.barrier();
  const int repeats = 5;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < repeats; ++k) dc.world->all_reduce(data.f32(), big, CommType::f32);
  be->synchronize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeats;
  return {{"ok", failures.empty()},
          {"collectives", dc.kind},
          {"device", be->device_id()},
          {"bytes", 4.0 * static_cast<double>(big)},
          {"all_reduce_seconds", seconds},
          {"all_reduce_busbw_gbps", bus_gbps(4.0 * static_cast<double>(big), control.size(), seconds)},
          {"failures", failures}};
}

}  // namespace

nlohmann::json check_collectives(Collectives& world, std::size_t elements) {
  const int W = world.size();
  const std::size_t n = (elements + W - 1) / W * W;
  CheckMemory host(nullptr);
  // The all-reduce is timed on its own: the first operation of the check.
  std::vector<float> warm(n, 1.0f);
  world.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  world.all_reduce(warm.data(), n, CommType::f32);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const nlohmann::json failures = gather_failures(world, run_checks(world, host, n));
  nlohmann::json out = {{"ok", failures.empty()},
                        {"world_size", W},
                        {"hosts", gather_host_names(world)},
                        {"elements", n},
                        {"seconds", seconds},
                        {"all_reduce_gbps", bus_gbps(4.0 * static_cast<double>(n), W, seconds)},
                        {"failures", failures}};
  // GPU buffers too where this build has a GPU backend and the host a GPU (NCCL's bus bandwidth where NCCL is used).
  const nlohmann::json device = check_device(world, n);
  if (!device.is_null()) {
    out["device"] = device;
    if (!device.value("ok", false)) out["ok"] = false;
  }
  return out;
}

}  // namespace fsdp
