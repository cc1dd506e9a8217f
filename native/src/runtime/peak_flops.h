// The machine's own sgemm speed: the denominator of MFU. Measured, not looked up, so it is the
// peak of this BLAS on these cores under this load.
#pragma once
#include "backend/backend.h"

namespace fsdp {

struct SgemmSpeed {
  double flops = 0;      // best FLOP/s by the wall clock
  double cpu_flops = 0;  // best FLOP per CPU-second, times the threads: the peak on an unloaded machine
};

/** Best speed of `repeats` n x n x n float32 matrix products on the backend. */
SgemmSpeed measure_sgemm(Backend& be, long n = 1024, int repeats = 3);

}  // namespace fsdp
