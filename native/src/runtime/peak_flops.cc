#include "runtime/peak_flops.h"

#include <algorithm>
#include <chrono>

#include "runtime/files.h"
#include "runtime/threads.h"

namespace fsdp {

SgemmSpeed measure_sgemm(Backend& be, long n, int repeats) {
  Allocator& alloc = be.allocator();
  SgemmSpeed best;
  {
    const std::size_t bytes = sizeof(float) * n * n;
    Buffer a = alloc.allocate(MemoryCategory::workspace, bytes), b = alloc.allocate(MemoryCategory::workspace, bytes),
           c = alloc.allocate(MemoryCategory::workspace, bytes);
    be.fill(a.f32(), n * n, 0.5f);
    be.fill(b.f32(), n * n, 0.25f);
    be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);  // warm-up: threads, pages
    const double flop = 2.0 * n * n * n;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = process_cpu_seconds();
      be.gemm(false, false, n, n, n, 1.0f, a.f32(), n, b.f32(), n, 0.0f, c.f32(), n);
      best.flops = std::max(best.flops, flop / seconds_since(t0));
      best.cpu_flops = std::max(best.cpu_flops, flop * current_threads() / (process_cpu_seconds() - c0));
    }
  }
  alloc.release_cache();  // nothing of this stays reserved for the run
  return best;
}

}  // namespace fsdp
