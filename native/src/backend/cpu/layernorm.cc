// LayerNorm over the channels of each row: y = (x - mean) * rstd * w + b.
#include <cmath>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {
constexpr float kEps = 1e-5f;
}

void CpuBackend::layernorm_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                                   long N, long C) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (long c = 0; c < C; ++c) s += xi[c];
    const float m = s / C;
    float v = 0.0f;
#pragma omp simd reduction(+ : v)
    for (long c = 0; c < C; ++c) {
      const float d = xi[c] - m;
      v += d * d;
    }
    const float r = 1.0f / std::sqrt(v / C + kEps);
    float* oi = out + i * C;
#pragma omp simd
    for (long c = 0; c < C; ++c) oi[c] = (xi[c] - m) * r * w[c] + b[c];
    mean[i] = m;
    rstd[i] = r;
  }
}

void CpuBackend::layernorm_backward(float* dx, float* dw, float* db, const float* dout, const float* x, const float* w,
                                    const float* mean, const float* rstd, long N, long C) {
  // dx by rows.
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    const float* xi = x + i * C;
    const float* di = dout + i * C;
    const float m = mean[i], r = rstd[i];
    float dnorm_mean = 0.0f, dnorm_xhat_mean = 0.0f;
#pragma omp simd reduction(+ : dnorm_mean, dnorm_xhat_mean)
    for (long c = 0; c < C; ++c) {
      const float dnorm = di[c] * w[c];
      dnorm_mean += dnorm;
      dnorm_xhat_mean += dnorm * (xi[c] - m) * r;
    }
    dnorm_mean /= C;
    dnorm_xhat_mean /= C;
    float* dxi = dx + i * C;
#pragma omp simd
    for (long c = 0; c < C; ++c) {
      const float xhat = (xi[c] - m) * r;
      dxi[c] += r * (di[c] * w[c] - dnorm_mean - xhat * dnorm_xhat_mean);
    }
  }
  // dw, db by channel blocks, rows in order (deterministic, no per-thread partial sums).
  constexpr long kBlock = 32;
#pragma omp parallel for schedule(static)
  for (long c0 = 0; c0 < C; c0 += kBlock) {
    const long c1 = c0 + kBlock < C ? c0 + kBlock : C;
    float accw[kBlock] = {}, accb[kBlock] = {};
    for (long i = 0; i < N; ++i) {
      const float* xi = x + i * C;
      const float* di = dout + i * C;
      const float m = mean[i], r = rstd[i];
      for (long c = c0; c < c1; ++c) {
        accw[c - c0] += di[c] * (xi[c] - m) * r;
        accb[c - c0] += di[c];
      }
    }
    for (long c = c0; c < c1; ++c) {
      dw[c] += accw[c - c0];
      db[c] += accb[c - c0];
    }
  }
}

}  // namespace fsdp
