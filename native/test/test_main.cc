// The test binary starts as the runtime does (runtime/process_start.h): OpenMP's wait policy and
// the runtime's choice of OpenBLAS kernels are in place before OpenBLAS initialises, so the
// gradient checks and the PyTorch parity tests run on the kernels training runs on.
#include <gtest/gtest.h>

#include "runtime/process_start.h"

int main(int argc, char** argv) {
  fsdp::prepare_process_environment(argv);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
