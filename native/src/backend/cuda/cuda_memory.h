// Device memory and pinned host memory for the counting allocator (runtime/allocator.h): every
// GPU tensor of the runtime comes from CudaAllocator, so the measured peak per category covers
// them all; what CUDA itself holds (the context, cuBLASLt's workspace) is reported beside it.
#pragma once
#include "runtime/allocator.h"

namespace fsdp::cuda {

class CudaAllocator final : public Allocator {
 public:
  ~CudaAllocator() override { release_cache(); }

 protected:
  void* system_allocate(std::size_t bytes) override;
  void system_free(void* p) override;
};

/** Page-locked host memory: the data loader's batches copy to the GPU without a staging copy. */
class PinnedHostAllocator final : public Allocator {
 public:
  ~PinnedHostAllocator() override { release_cache(); }

 protected:
  void* system_allocate(std::size_t bytes) override;
  void system_free(void* p) override;
};

}  // namespace fsdp::cuda
