// Token and position embeddings: forward gathers rows, backward scatter-adds them.
#include "backend/cpu/cpu_backend.h"

namespace fsdp {

void CpuBackend::embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, long B,
                                   long T, long C) {
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long t = 0; t < T; ++t) {
      float* o = out + (b * T + t) * C;
      const float* e = wte + static_cast<long>(tokens[b * T + t]) * C;
      const float* p = wpe + t * C;
      for (long c = 0; c < C; ++c) o[c] = e[c] + p[c];
    }
  }
}

void CpuBackend::embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, long B,
                                    long T, long C) {
  // Several positions can hold the same token: threads own channel blocks and visit the tokens in
  // order, so the scatter-add is race-free and its order fixed.
  constexpr long kBlock = 16;
#pragma omp parallel for schedule(static)
  for (long c0 = 0; c0 < C; c0 += kBlock) {
    const long c1 = c0 + kBlock < C ? c0 + kBlock : C;
    for (long b = 0; b < B; ++b) {
      for (long t = 0; t < T; ++t) {
        const float* d = dout + (b * T + t) * C;
        float* e = dwte + static_cast<long>(tokens[b * T + t]) * C;
        float* p = dwpe + t * C;
        for (long c = c0; c < c1; ++c) {
          e[c] += d[c];
          p[c] += d[c];
        }
      }
    }
  }
}

}  // namespace fsdp
