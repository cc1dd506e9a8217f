// CPU threads for OpenMP kernels and OpenBLAS. Both pools get the same count, fixed for the run:
// the count decides how reductions are split, so a fixed count is part of bitwise determinism.
#pragma once

namespace fsdp {

/** threads_per_rank from the config (0 = this host's cores divided among its ranks). */
int resolve_threads(int threads_per_rank, int ranks_on_host);

/** Sets OpenMP's and OpenBLAS's thread counts. */
void use_threads(int n);

int current_threads();

}  // namespace fsdp
