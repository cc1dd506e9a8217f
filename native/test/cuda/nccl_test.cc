// NCCL collectives on one GPU (the GPU machine has one: several ranks on one GPU is not something
// NCCL does, so multi-rank NCCL is untested there). One rank bootstrapped through the
// single-process world: the communicator forms, and every operation gives a world of one's result
// on device buffers and on host scalars.
#ifdef FSDP_WITH_NCCL
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "parallel/cuda/nccl_collectives.h"
#include "parallel/single_process.h"

namespace fsdp::test {
namespace {

TEST(Nccl, OneRankCollectivesAreTheIdentityOnDeviceAndHostBuffers) {
  BackendOptions o;
  cuda::CudaBackend be(o);
  SingleProcess world;
  cuda::NcclCollectives nccl(world, be.stream());
  EXPECT_EQ(nccl.rank(), 0);
  EXPECT_EQ(nccl.size(), 1);

  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f};
  Buffer a = be.allocator().allocate(MemoryCategory::comm, sizeof(float) * 4),
         b = be.allocator().allocate(MemoryCategory::comm, sizeof(float) * 4);
  be.upload(a.data(), values.data(), sizeof(float) * 4);
  nccl.all_reduce(a.data(), 4, CommType::f32);
  nccl.reduce_scatter(a.data(), b.data(), 4, CommType::f32);
  nccl.all_gather(b.data(), a.data(), 4, CommType::f32);
  nccl.start_all_gather(a.data(), b.data(), 4, CommType::f32)->wait();
  nccl.reduce_scatter_in_place(b.data(), Blocks{4, 4}, CommType::f32);
  nccl.all_gather_in_place(b.data(), Blocks{4, 4}, CommType::f32);
  be.synchronize();
  std::vector<float> back(4);
  be.download(back.data(), b.data(), sizeof(float) * 4);
  EXPECT_EQ(back, values);

  double host = 2.5;
  nccl.all_reduce(&host, 1, CommType::f64);
  EXPECT_EQ(host, 2.5);
  nccl.barrier();
}

TEST(Nccl, SixteenBitTypesTravelAsThemselves) {
  // reduce_dtype and param_dtype collectives: the bits of bfloat16 and float16 buffers go through unchanged.
  BackendOptions o;
  cuda::CudaBackend be(o);
  SingleProcess world;
  cuda::NcclCollectives nccl(world, be.stream());
  const std::vector<std::uint16_t> bits = {0x3f80, 0xc000, 0x4049, 0x0001, 0x7bff, 0x8000};
  for (CommType t : {CommType::bf16, CommType::f16}) {
    Buffer a = be.allocator().allocate(MemoryCategory::comm, 2 * bits.size()),
           b = be.allocator().allocate(MemoryCategory::comm, 2 * bits.size());
    be.upload(a.data(), bits.data(), 2 * bits.size());
    nccl.all_reduce(a.data(), bits.size(), t);
    nccl.reduce_scatter(a.data(), b.data(), bits.size(), t);
    nccl.start_all_gather(b.data(), a.data(), bits.size(), t)->wait();
    be.synchronize();
    std::vector<std::uint16_t> back(bits.size());
    be.download(back.data(), a.data(), 2 * bits.size());
    EXPECT_EQ(back, bits);
  }
}

}  // namespace
}  // namespace fsdp::test
#endif
