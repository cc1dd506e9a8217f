// The collective operations a parallelism layer needs, behind one interface: a world of one
// (parallel/single_process.h), MPI on host buffers (parallel/mpi/mpi_collectives.h), and for GPU
// buffers NCCL (parallel/cuda/nccl_collectives.h) or MPI through pinned host memory
// (parallel/staged_collectives.h); parallel/device_collectives.h picks one. Buffers are untyped
// pointers with an element type, so a GPU implementation takes device pointers through the same
// calls; the one asynchronous operation (the all-gather FSDP prefetches with) returns a handle to
// wait on, which is where a stream-ordered implementation keeps its event. Reductions are sums:
// that is all FSDP-style training uses (16-bit sums add in float32 and round once, as NCCL does).
// Counts are elements. Every rank of the group calls every operation, in the same order.
//
// A run holds two kinds: the control world (host values: votes, host names, losses, norms —
// always host memory) and the device collectives the model state's buffers go through.
#pragma once
#include <cstddef>
#include <memory>

namespace fsdp {

enum class CommType { f32, f64, u8, bf16, f16 };
std::size_t comm_type_bytes(CommType t);

/** An operation in flight; its buffers may be touched only after wait() (the destructor waits too). */
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

/**
 * Rank r's block of an in-place operation over `total` elements cut in blocks of `block`:
 * [r block, min(total, (r + 1) block)) — the last ranks' blocks are short or empty when `total`
 * is not a multiple.
 */
struct Blocks {
  std::size_t block, total;
  std::size_t offset(int rank) const;
  std::size_t count(int rank) const;
};

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /** data[count] = sum over ranks, in place. */
  virtual void all_reduce(void* data, std::size_t count, CommType type) = 0;
  /** recv[count] = sum over ranks of their send[rank * count … (rank + 1) * count); send holds size() * count. */
  virtual void reduce_scatter(const void* send, void* recv, std::size_t count, CommType type) = 0;
  /** The rank's block of data becomes the sum over ranks of that block; the rest of data is left undefined. */
  virtual void reduce_scatter_in_place(void* data, Blocks blocks, CommType type) = 0;
  /** recv[size() * count] = every rank's send[count], in rank order. */
  virtual void all_gather(const void* send, void* recv, std::size_t count, CommType type) = 0;
  /** all_gather, started now; send and recv belong to the operation until it is waited for. */
  virtual std::unique_ptr<PendingCollective> start_all_gather(const void* send, void* recv, std::size_t count,
                                                              CommType type) = 0;
  /** Every rank's block of data, copied to every rank. */
  virtual void all_gather_in_place(void* data, Blocks blocks, CommType type) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  /** The sub-group of the ranks that pass the same color, ordered by key (MPI_Comm_split). Every rank calls it. */
  virtual std::unique_ptr<Collectives> split(int color, int key) = 0;
};

}  // namespace fsdp
