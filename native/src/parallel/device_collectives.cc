#include "parallel/device_collectives.h"

#include <cstring>
#include <map>
#include <stdexcept>
#include <vector>

#include "parallel/staged_collectives.h"
#include "runtime/files.h"

#ifdef FSDP_WITH_CUDA
#include <cuda_runtime.h>

#include "parallel/cuda/cuda_staging.h"
#endif
#ifdef FSDP_WITH_NCCL
#include "parallel/cuda/nccl_collectives.h"
#endif

namespace fsdp {

bool nccl_built() {
#ifdef FSDP_WITH_NCCL
  return true;
#else
  return false;
#endif
}

CommType comm_type(DType t) {
  switch (t) {
    case DType::f32:
      return CommType::f32;
    case DType::bf16:
      return CommType::bf16;
    case DType::f16:
      return CommType::f16;
  }
  return CommType::f32;
}

#ifdef FSDP_WITH_CUDA
namespace {

/** Every rank's "host device" in rank order (a collective over the control world). */
std::vector<std::string> gather_devices(Collectives& control, const std::string& mine) {
  constexpr std::size_t kWidth = 320;
  char buf[kWidth] = {};
  std::strncpy(buf, mine.c_str(), kWidth - 1);
  std::vector<char> all(kWidth * static_cast<std::size_t>(control.size()));
  control.all_gather(buf, all.data(), kWidth, CommType::u8);
  std::vector<std::string> out;
  for (int r = 0; r < control.size(); ++r) out.emplace_back(all.data() + r * kWidth);
  return out;
}

/** "ranks 0 and 1 share GPU 0000:41:00.0 on host h" for the first shared device, "" when none is shared. */
std::string shared_device(const std::vector<std::string>& devices) {
  std::map<std::string, int> first;
  for (int r = 0; r < static_cast<int>(devices.size()); ++r) {
    const auto [it, fresh] = first.emplace(devices[r], r);
    if (!fresh) return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share GPU " + devices[r];
  }
  return "";
}

}  // namespace
#endif

DeviceCollectives device_collectives(Backend& be, Collectives& control, const std::string& choice) {
  if (choice != "auto" && choice != "nccl" && choice != "mpi")
    throw std::runtime_error("launch.collectives: \"" + choice + "\" is not one of auto, nccl, mpi");
  DeviceCollectives d;
  if (be.host_memory()) {
    if (choice == "nccl")
      throw std::runtime_error(
          "launch.collectives: nccl needs launch.device: cuda (the CPU backend's buffers go through MPI)");
    d.world = &control;
    d.kind = "host";
    return d;
  }
#ifdef FSDP_WITH_CUDA
  const std::string shared = shared_device(gather_devices(control, be.device_id() + " on host " + host_name()));
  auto staged = [&] {
    d.owned = std::make_unique<StagedCollectives>(
        control, std::make_shared<cuda::CudaStaging>(static_cast<cudaStream_t>(be.compute_queue())));
    d.world = d.owned.get();
    d.kind = "mpi (pinned host staging)";
    return std::move(d);
  };
  if (choice == "mpi") return staged();
  if (choice == "nccl") {
    if (!nccl_built())
      throw std::runtime_error(
          "launch.collectives: nccl: this build of the runtime has no NCCL (CMake found no nccl.h; see "
          "native/CUDA.md), use mpi or auto");
    if (!shared.empty())
      throw std::runtime_error("launch.collectives: nccl needs one GPU per rank, but " + shared +
                               ": use launch.collectives: mpi (or auto) to share GPUs, or fewer ranks per host");
  }
  // auto: NCCL where it can run; one rank has nothing to communicate, so it needs no communicator.
  if (!nccl_built() || !shared.empty() || (choice == "auto" && control.size() == 1)) return staged();
#ifdef FSDP_WITH_NCCL
  d.owned = std::make_unique<cuda::NcclCollectives>(control, static_cast<cudaStream_t>(be.compute_queue()));
  d.world = d.owned.get();
  d.kind = "nccl";
  return d;
#endif
#endif
  throw std::runtime_error("launch.collectives: this build has no collectives for " + be.name() + " buffers");
}

}  // namespace fsdp
