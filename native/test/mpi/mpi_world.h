// The job's world for the tests run under mpirun (fsdp-mpi-tests): main() joins it before the
// tests start. Every rank runs every test; a test's collectives are called in the same order on
// every rank, and a failure on any rank fails the binary (mpirun reports the worst exit code).
#pragma once
#include "parallel/collectives.h"

namespace fsdp::test {

Collectives& mpi_world();

}  // namespace fsdp::test
