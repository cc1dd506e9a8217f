// SwiGLU, the gated MLP's middle: h = silu(gate) · up, with gate and up side by side in each row
// of the one gate_up product (gate_proj's rows, then up_proj's: mlp.gate_up.weight).
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vector_math.h"

namespace fsdp {

void CpuBackend::swiglu_forward(void* h, const void* gate_up, long N, long F) {
  const float* gu = static_cast<const float*>(gate_up);
  float* hs = static_cast<float*>(h);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    const float* g = gu + i * 2 * F;
    const float* u = g + F;
    float* hi = hs + i * F;
#pragma omp simd
    for (long j = 0; j < F; ++j) hi[j] = g[j] / (1.0f + expf(-g[j])) * u[j];
  }
}

void CpuBackend::swiglu_backward(void* dgate_up, const void* dh, const void* gate_up, long N, long F) {
  const float* gu = static_cast<const float*>(gate_up);
  const float* dhs = static_cast<const float*>(dh);
  float* dgu = static_cast<float*>(dgate_up);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    const float* g = gu + i * 2 * F;
    const float* u = g + F;
    const float* d = dhs + i * F;
    float* dg = dgu + i * 2 * F;
    float* du = dg + F;
    // silu'(g) = s (1 + g (1 - s)), s = sigmoid(g).
#pragma omp simd
    for (long j = 0; j < F; ++j) {
      const float s = 1.0f / (1.0f + expf(-g[j]));
      dg[j] = d[j] * u[j] * s * (1.0f + g[j] * (1.0f - s));
      du[j] = d[j] * g[j] * s;
    }
  }
}

}  // namespace fsdp
