// Collectives over NCCL on GPU buffers (parallel/collectives.h), bootstrapped through another
// Collectives (MPI across processes, or the single-process world): rank 0 makes the NCCL unique
// id and broadcasts it. No NCCL types here, so the rest of the runtime compiles without NCCL.
// NCCL needs one GPU per rank (it refuses two ranks on one device: "Duplicate GPU detected");
// parallel/device_collectives.h checks that before choosing it.
//
// Communication runs on its own stream. An operation waits (on the GPU, by an event) for the work
// queued so far on the compute stream, and the compute stream waits for the operation, so the
// caller sees the usual in-order results without blocking the host; work queued on the compute
// stream in between (the next layer's compute) overlaps with it. Scalars in host memory (the
// gradient norm, the optimizer's non-finite count) go through small buffers of their own (device and
// pinned host), copied on the communication stream, and block until that stream has finished.
#pragma once
#include <cuda_runtime.h>

#include <memory>

#include "parallel/collectives.h"

namespace fsdp::cuda {

/** Whether this build has NCCL. */
bool nccl_built();

class NcclCollectives final : public Collectives {
 public:
  /** On the rank's GPU, already current; `compute` is the stream the backend computes on. */
  NcclCollectives(Collectives& bootstrap, cudaStream_t compute);
  /** Over a sub-group whose bootstrap this object owns (split()). */
  NcclCollectives(std::unique_ptr<Collectives> bootstrap, cudaStream_t compute);
  ~NcclCollectives() override;

  int rank() const override;
  int size() const override;
  void all_reduce(void* data, std::size_t count, CommType type) override;
  void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) override;
  void reduce_scatter_in_place(void* data, Blocks blocks, CommType type) override;
  void all_gather(const void* send, void* recv, std::size_t count, CommType type) override;
  std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                      CommType type) override;
  void all_gather_in_place(void* data, Blocks blocks, CommType type) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override;
  std::unique_ptr<Collectives> split(int color, int key) override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace fsdp::cuda
