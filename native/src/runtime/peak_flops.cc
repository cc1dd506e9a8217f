#include "runtime/peak_flops.h"

#include <algorithm>
#include <chrono>

namespace fsdp {

double measure_sgemm_flops(Backend& be, long n, int repeats) {
  Allocator& alloc = be.allocator();
  double best = 0;
  {
    const std::size_t bytes = sizeof(float) * n * n;
    Buffer a = alloc.allocate(MemoryCategory::workspace, bytes), b = alloc.allocate(MemoryCategory::workspace, bytes),
           c = alloc.allocate(MemoryCategory::workspace, bytes);
    be.fill(a.f32(), n * n, 0.5f);
    be.fill(b.f32(), n * n, 0.25f);
    be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);  // warm-up: threads, pages
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, 2.0 * n * n * n / s);
    }
  }
  alloc.release_cache();  // nothing of this stays reserved for the run
  return best;
}

}  // namespace fsdp
