// fsdp-mpi-tests: GoogleTest under mpirun (test/native/mpi-gtest.test.ts runs it with 2 and 4
// ranks). What is tested here needs real ranks: collectives through host staging against MPI's own,
// and the model states above them.
#include <gtest/gtest.h>

#include <memory>

#include "parallel/mpi/mpi_collectives.h"
#include "test/mpi/mpi_world.h"

namespace fsdp::test {

namespace {
std::unique_ptr<Collectives> g_world;
}

Collectives& mpi_world() {
  return *g_world;
}

}  // namespace fsdp::test

int main(int argc, char** argv) {
  fsdp::MpiSession session(&argc, &argv);
  fsdp::test::g_world = session.world();
  // Rank 0 prints the listing; the others print their failures only.
  if (fsdp::test::g_world->rank() != 0) ::testing::GTEST_FLAG(brief) = true;
  ::testing::InitGoogleTest(&argc, argv);
  // One report (--gtest_output) for the job: rank 0's (a failure elsewhere fails the exit code).
  if (fsdp::test::g_world->rank() != 0) ::testing::GTEST_FLAG(output) = "";
  const int failed = RUN_ALL_TESTS();
  // A failure on one rank is a failure of every rank's binary.
  double any = failed ? 1.0 : 0.0;
  fsdp::test::g_world->all_reduce(&any, 1, fsdp::CommType::f64);
  fsdp::test::g_world.reset();
  return any > 0 ? 1 : 0;
}
