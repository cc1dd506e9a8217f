// Dropout with masks drawn from a counter-based RNG: element i is kept when uniform(key, i) >= p,
// and scaled by 1 / (1 - p). Backward and recomputation regenerate the same mask from the key.
#include "backend/cpu/cpu_backend.h"
#include "runtime/rng.h"

namespace fsdp {

void CpuBackend::dropout_residual(float* out, const float* residual, const float* x, std::size_t n, float p,
                                  std::uint64_t key) {
  if (p == 0.0f) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < n; ++i) out[i] = residual[i] + x[i];
    return;
  }
  const CounterRng rng(key);
  const float keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = residual[i] + (rng.uniform(i) >= p ? x[i] * keep_scale : 0.0f);
}

void CpuBackend::dropout(float* out, const float* x, std::size_t n, float p, std::uint64_t key) {
  if (p == 0.0f) {
    if (out != x) copy(out, x, n);
    return;
  }
  const CounterRng rng(key);
  const float keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = rng.uniform(i) >= p ? x[i] * keep_scale : 0.0f;
}

}  // namespace fsdp
