// Collectives through host staging (parallel/staged_collectives.h) against MPI's own, on CPU
// buffers with real ranks: every operation, in every element type the runtime sends, gives the
// same bytes as the same operation over MPI directly — uneven blocks, an all-gather started and
// waited for later, one started and never waited for, sub-groups — and the data really went
// through the staging copies. 16-bit sums are checked against float32 sums rounded once per
// addition (what a GPU's 16-bit reduction does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "parallel/staged_collectives.h"
#include "runtime/half.h"
#include "runtime/rng.h"
#include "test/mpi/mpi_world.h"

namespace fsdp::test {
namespace {

/** n elements of type t as bytes, different on every rank (and for every seed). */
std::vector<std::uint8_t> values(CommType t, std::size_t n, int rank, std::uint64_t seed) {
  const CounterRng rng(seed * 1000 + static_cast<std::uint64_t>(rank));
  std::vector<std::uint8_t> out(n * comm_type_bytes(t));
  for (std::size_t i = 0; i < n; ++i) {
    const float x = static_cast<float>(rng.normal(i));
    if (t == CommType::f32)
      std::memcpy(out.data() + 4 * i, &x, 4);
    else if (t == CommType::f64) {
      const double d = x;
      std::memcpy(out.data() + 8 * i, &d, 8);
    } else if (t == CommType::bf16 || t == CommType::f16) {
      const std::uint16_t h = t == CommType::bf16 ? float_to_bf16(x) : float_to_f16(x);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      out[i] = static_cast<std::uint8_t>(rng.bits(i));
    }
  }
  return out;
}

class StagedCollectivesTest : public ::testing::TestWithParam<CommType> {};

TEST_P(StagedCollectivesTest, EveryOperationGivesMpisOwnBytes) {
  const CommType t = GetParam();
  Collectives& world = mpi_world();
  const int W = world.size(), r = world.rank();
  auto direct = world.split(0, r);
  auto staging = std::make_shared<MemcpyStaging>();
  StagedCollectives staged(world.split(0, r), staging);
  const std::size_t e = comm_type_bytes(t), n = 1000 + 37, block = (n + W - 1) / W;
  const bool sums = t != CommType::u8;

  if (sums) {
    auto a = values(t, n, r, 1), b = a;
    direct->all_reduce(a.data(), n, t);
    staged.all_reduce(b.data(), n, t);
    EXPECT_EQ(a, b) << "all_reduce";

    auto send = values(t, block * W, r, 2);
    std::vector<std::uint8_t> x(block * e), y(block * e, 0xee);
    direct->reduce_scatter(send.data(), x.data(), block, t);
    staged.reduce_scatter(send.data(), y.data(), block, t);
    EXPECT_EQ(x, y) << "reduce_scatter";

    // Uneven blocks: the last ranks' blocks are short or empty. Only the rank's block is defined.
    const Blocks uneven{block, n - W / 2};
    auto c = values(t, uneven.total, r, 3), d = c;
    direct->reduce_scatter_in_place(c.data(), uneven, t);
    staged.reduce_scatter_in_place(d.data(), uneven, t);
    const std::size_t at = uneven.offset(r) * e, len = uneven.count(r) * e;
    EXPECT_EQ(std::vector<std::uint8_t>(c.begin() + at, c.begin() + at + len),
              std::vector<std::uint8_t>(d.begin() + at, d.begin() + at + len))
        << "reduce_scatter_in_place";
  }

  const Blocks uneven{block, n - W / 2};
  auto g = values(t, uneven.total, r, 4), h = g;
  direct->all_gather_in_place(g.data(), uneven, t);
  staged.all_gather_in_place(h.data(), uneven, t);
  EXPECT_EQ(g, h) << "all_gather_in_place";

  auto mine = values(t, block, r, 5);
  std::vector<std::uint8_t> all1(block * W * e), all2(block * W * e, 0xee), all3(block * W * e, 0xee);
  direct->all_gather(mine.data(), all1.data(), block, t);
  staged.all_gather(mine.data(), all2.data(), block, t);
  EXPECT_EQ(all1, all2) << "all_gather";
  auto pending = staged.start_all_gather(mine.data(), all3.data(), block, t);
  // Another operation between the start and the wait, as a prefetch overlaps a unit's compute.
  auto z = values(t, 16, r, 6), z2 = z;
  if (sums) {
    direct->all_reduce(z.data(), 16, t);
    staged.all_reduce(z2.data(), 16, t);
    EXPECT_EQ(z, z2);
  }
  pending->wait();
  EXPECT_EQ(all1, all3) << "start_all_gather";
  // A prefetch nobody waits for: finished by its destructor, and nothing is copied back.
  std::vector<std::uint8_t> untouched(block * W * e, 0xab);
  staged.start_all_gather(mine.data(), untouched.data(), block, t).reset();
  EXPECT_EQ(untouched, std::vector<std::uint8_t>(block * W * e, 0xab));

  auto root1 = values(t, 64, r, 7), root2 = root1;
  direct->broadcast(root1.data(), 64 * e, W - 1);
  staged.broadcast(root2.data(), 64 * e, W - 1);
  EXPECT_EQ(root1, root2) << "broadcast";

  EXPECT_GT(staging->to_host_bytes, 0u);
  EXPECT_GT(staging->to_device_bytes, 0u);
}

std::string type_name(const ::testing::TestParamInfo<CommType>& i) {
  static const char* const names[] = {"f32", "f64", "u8", "bf16", "f16"};
  return names[static_cast<int>(i.param)];
}

INSTANTIATE_TEST_SUITE_P(Types, StagedCollectivesTest,
                         ::testing::Values(CommType::f32, CommType::f64, CommType::u8, CommType::bf16, CommType::f16),
                         type_name);

TEST(StagedCollectives, SixteenBitSumsRoundOncePerAdditionAsAGpuDoes) {
  // With 2 ranks a sum is one addition: exactly the 16-bit rounding of the float32 sum. With more,
  // MPI chooses the order, and each addition rounds once: the error is at most (W - 1) u sum|x|
  // (u: the type's unit roundoff), and the result is a 16-bit value, not a float32 sum.
  Collectives& world = mpi_world();
  const int W = world.size(), r = world.rank();
  StagedCollectives staged(world.split(0, r), std::make_shared<MemcpyStaging>());
  for (CommType t : {CommType::bf16, CommType::f16}) {
    const double u = t == CommType::bf16 ? 1.0 / 256 : 1.0 / 2048;
    const std::size_t n = 4096;
    auto as_float = [t](const std::vector<std::uint8_t>& v, std::size_t i) {
      std::uint16_t h;
      std::memcpy(&h, v.data() + 2 * i, 2);
      return t == CommType::bf16 ? bf16_to_float(h) : f16_to_float(h);
    };
    std::vector<std::vector<std::uint8_t>> inputs;
    for (int q = 0; q < W; ++q) inputs.push_back(values(t, n, q, 11));
    auto mine = inputs[r];
    staged.all_reduce(mine.data(), n, t);
    for (std::size_t i = 0; i < n; ++i) {
      double exact = 0, magnitude = 0;
      for (int q = 0; q < W; ++q) exact += as_float(inputs[q], i), magnitude += std::fabs(as_float(inputs[q], i));
      const float got = as_float(mine, i);
      if (W == 2) {
        const float sum = as_float(inputs[0], i) + as_float(inputs[1], i);
        ASSERT_EQ(got, t == CommType::bf16 ? bf16_to_float(float_to_bf16(sum)) : f16_to_float(float_to_f16(sum)))
            << "element " << i;
      } else {
        ASSERT_LE(std::fabs(got - exact), (W - 1) * u * magnitude + 1e-30) << "element " << i;
      }
    }
  }
}

TEST(StagedCollectives, SubGroupsStageTheirOwnOperations) {
  // Pairs of ranks (0,1), (2,3): a split of a staged world is staged over the split.
  Collectives& world = mpi_world();
  const int r = world.rank();
  auto staging = std::make_shared<MemcpyStaging>();
  StagedCollectives staged(world.split(0, r), staging);
  auto pair = staged.split(r / 2, r);
  float x = static_cast<float>(r + 1);
  pair->all_reduce(&x, 1, CommType::f32);
  const int first = r / 2 * 2, last = std::min(first + 1, world.size() - 1);
  float want = 0;
  for (int q = first; q <= last; ++q) want += static_cast<float>(q + 1);
  EXPECT_EQ(x, want);
  EXPECT_EQ(staging->to_host_bytes, sizeof(float));
}

}  // namespace
}  // namespace fsdp::test
