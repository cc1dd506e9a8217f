// Collectives on device buffers through host memory: each operation copies its device operands to
// host buffers, runs the operation over a host-memory Collectives (MPI), and copies the results
// back. The fallback where NCCL is missing or cannot run — NCCL refuses two ranks on one GPU, so
// this is also what lets 2 and 4 ranks share one GPU in tests (launch.collectives: mpi).
//
// The copies are behind HostStaging: on a GPU pinned host memory and copies ordered on the
// backend's stream (parallel/cuda/cuda_staging.h); anywhere, plain host memory and memcpy
// (MemcpyStaging below), which is how the staging logic is tested on CPU buffers with real mpirun.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "parallel/collectives.h"

namespace fsdp {

/** How a device's buffers reach host memory and back. */
class HostStaging {
 public:
  virtual ~HostStaging() = default;
  /** Host memory the copies go through (pinned on a GPU); freed by free_host. */
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void free_host(void* p) = 0;
  /** host[bytes] = device[bytes], complete on return (after the device work queued before it). */
  virtual void to_host(void* host, const void* device, std::size_t bytes) = 0;
  /** device[bytes] = host[bytes], ordered before the device work queued after it; host may be reused on return. */
  virtual void to_device(void* device, const void* host, std::size_t bytes) = 0;
};

/** Staging where the "device" is host memory too: memcpy both ways (tests, and CPU buffers). */
class MemcpyStaging final : public HostStaging {
 public:
  void* allocate_host(std::size_t bytes) override;
  void free_host(void* p) override;
  void to_host(void* host, const void* device, std::size_t bytes) override;
  void to_device(void* device, const void* host, std::size_t bytes) override;
  /** Bytes copied each way so far (tests check the staging really went through host buffers). */
  std::size_t to_host_bytes = 0, to_device_bytes = 0;
};

class StagedCollectives final : public Collectives {
 public:
  /** Over `host` (not owned), copying through `staging`. */
  StagedCollectives(Collectives& host, std::shared_ptr<HostStaging> staging);
  /** Over a sub-group this object owns (split()). */
  StagedCollectives(std::unique_ptr<Collectives> host, std::shared_ptr<HostStaging> staging);
  ~StagedCollectives() override;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  void all_reduce(void* data, std::size_t count, CommType type) override;
  void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) override;
  void reduce_scatter_in_place(void* data, Blocks blocks, CommType type) override;
  void all_gather(const void* send, void* recv, std::size_t count, CommType type) override;
  std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                      CommType type) override;
  void all_gather_in_place(void* data, Blocks blocks, CommType type) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void barrier() override { host_->barrier(); }
  std::unique_ptr<Collectives> split(int color, int key) override;

  /** A host buffer of at least `bytes` from the pool, returned to it when the handle goes. */
  class HostBuffer;

 private:
  HostBuffer buffer(std::size_t bytes);
  friend class StagedPending;

  std::unique_ptr<Collectives> owned_;
  Collectives* host_;
  std::shared_ptr<HostStaging> staging_;
  struct Pool;
  std::shared_ptr<Pool> pool_;  // shared with buffers that outlive an operation (prefetches)
};

class StagedCollectives::HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(std::shared_ptr<Pool> pool, void* p, std::size_t bytes) : pool_(std::move(pool)), p_(p), bytes_(bytes) {}
  HostBuffer(HostBuffer&& o) noexcept : pool_(std::move(o.pool_)), p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  ~HostBuffer();
  char* at(std::size_t byte_offset) const { return static_cast<char*>(p_) + byte_offset; }
  void* data() const { return p_; }

 private:
  std::shared_ptr<Pool> pool_;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace fsdp
