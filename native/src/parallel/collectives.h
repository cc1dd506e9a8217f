// The collective operations a parallelism layer needs, behind one interface: single-process now
// (parallel/single_process.h), MPI on CPU buffers next (issue 4), NCCL on GPU buffers later.
// Sums only: that is all FSDP-style training uses. Counts are elements.
#pragma once
#include <cstddef>

namespace fsdp {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /** data[n] = sum over ranks, in place. */
  virtual void all_reduce(float* data, std::size_t n) = 0;
  virtual void all_reduce(double* data, std::size_t n) = 0;
  /** recv[count] = sum over ranks of send[rank * count … (rank + 1) * count). send holds size() * count. */
  virtual void reduce_scatter(const float* send, float* recv, std::size_t count) = 0;
  /** recv[size() * count] = every rank's send[count], in rank order. */
  virtual void all_gather(const float* send, float* recv, std::size_t count) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
};

}  // namespace fsdp
