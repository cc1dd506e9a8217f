// The machine's own sgemm speed: the denominator of MFU. Measured, not looked up, so it is the
// peak of this BLAS on these cores under this load.
#pragma once
#include "backend/backend.h"

namespace fsdp {

/** Best FLOP/s of `repeats` n x n x n float32 matrix products on the backend. */
double measure_sgemm_flops(Backend& be, long n = 1024, int repeats = 3);

}  // namespace fsdp
