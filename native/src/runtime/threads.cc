#include "runtime/threads.h"

#include <omp.h>

#include <algorithm>
#include <thread>

extern "C" void openblas_set_num_threads(int);

namespace fsdp {

int resolve_threads(int threads_per_rank, int ranks_on_host) {
  if (threads_per_rank > 0) return threads_per_rank;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, ranks_on_host));
}

void use_threads(int n) {
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int current_threads() {
  return omp_get_max_threads();
}

}  // namespace fsdp
