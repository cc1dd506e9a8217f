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
  // InitGoogleTest has already installed the report's writer from the flag, so clearing the flag here
  // would change nothing: every rank would write the same file at the same time, and the reader found
  // it garbled (CI: a 2-rank run that passed read as 0 of 0). The other ranks drop the writer itself.
  if (fsdp::test::g_world->rank() != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    std::unique_ptr<::testing::TestEventListener> writer(listeners.Release(listeners.default_xml_generator()));
  }
  const int failed = RUN_ALL_TESTS();
  // A failure on one rank is a failure of every rank's binary.
  double any = failed ? 1.0 : 0.0;
  fsdp::test::g_world->all_reduce(&any, 1, fsdp::CommType::f64);
  fsdp::test::g_world.reset();
  return any > 0 ? 1 : 0;
}
