// Causal multi-head attention core: probs = softmax(q k^T / sqrt(hs)) over the positions up to
// each query, out = probs v. The projections around it are linear layers (model/attention.cc).
// Backward threads own whole (batch, head) pairs: keys and values receive gradient from every
// later query, so no two threads write the same element and the summation order is fixed.
#include <cmath>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

void CpuBackend::attention_probs(float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(3) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long t = 0; t < T; ++t) {
        const float* q = qkv + (b * T + t) * C3 + h * hs;
        float* p = probs + ((b * H + h) * T + t) * T;
        float max = -INFINITY;
        for (long t2 = 0; t2 <= t; ++t2) {
          const float* k = qkv + (b * T + t2) * C3 + C + h * hs;
          float s = 0.0f;
          for (long i = 0; i < hs; ++i) s += q[i] * k[i];
          s *= scale;
          p[t2] = s;
          max = s > max ? s : max;
        }
        float sum = 0.0f;
        for (long t2 = 0; t2 <= t; ++t2) {
          p[t2] = std::exp(p[t2] - max);
          sum += p[t2];
        }
        const float inv = 1.0f / sum;
        for (long t2 = 0; t2 <= t; ++t2) p[t2] *= inv;
        for (long t2 = t + 1; t2 < T; ++t2) p[t2] = 0.0f;
      }
    }
  }
}

void CpuBackend::attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
#pragma omp parallel for collapse(3) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long t = 0; t < T; ++t) {
        const float* p = probs + ((b * H + h) * T + t) * T;
        float* o = out + (b * T + t) * C + h * hs;
        for (long i = 0; i < hs; ++i) o[i] = 0.0f;
        for (long t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
          const float pt = p[t2];
          for (long i = 0; i < hs; ++i) o[i] += pt * v[i];
        }
      }
    }
  }
}

void CpuBackend::attention_values_backward(float* dprobs, float* dqkv, const float* dout, const float* probs, const float* qkv, long B, long T,
                                           long C, long H) {
  const long hs = C / H, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long t = 0; t < T; ++t) {
        float* dv = dqkv + (b * T + t) * C3 + 2 * C + h * hs;
        for (long i = 0; i < hs; ++i) dv[i] = 0.0f;
      }
      for (long t = 0; t < T; ++t) {
        const float* p = probs + ((b * H + h) * T + t) * T;
        float* dp = dprobs + ((b * H + h) * T + t) * T;
        const float* d = dout + (b * T + t) * C + h * hs;
        for (long t2 = 0; t2 <= t; ++t2) {
          const float* v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
          float* dv = dqkv + (b * T + t2) * C3 + 2 * C + h * hs;
          float s = 0.0f;
          for (long i = 0; i < hs; ++i) {
            s += d[i] * v[i];
            dv[i] += p[t2] * d[i];
          }
          dp[t2] = s;
        }
        for (long t2 = t + 1; t2 < T; ++t2) dp[t2] = 0.0f;
      }
    }
  }
}

void CpuBackend::attention_probs_backward(float* dqkv, float* dprobs, const float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long t = 0; t < T; ++t) {
        float* row = dqkv + (b * T + t) * C3 + h * hs;
        for (long i = 0; i < hs; ++i) row[i] = row[C + i] = 0.0f;
      }
      for (long t = 0; t < T; ++t) {
        const float* p = probs + ((b * H + h) * T + t) * T;
        float* dp = dprobs + ((b * H + h) * T + t) * T;
        // Softmax backward: dscore = p (dp - sum_j p_j dp_j), then through q k^T / sqrt(hs).
        float dot = 0.0f;
        for (long t2 = 0; t2 <= t; ++t2) dot += p[t2] * dp[t2];
        const float* q = qkv + (b * T + t) * C3 + h * hs;
        float* dq = dqkv + (b * T + t) * C3 + h * hs;
        for (long t2 = 0; t2 <= t; ++t2) {
          const float ds = p[t2] * (dp[t2] - dot) * scale;
          const float* k = qkv + (b * T + t2) * C3 + C + h * hs;
          float* dk = dqkv + (b * T + t2) * C3 + C + h * hs;
          for (long i = 0; i < hs; ++i) {
            dq[i] += ds * k[i];
            dk[i] += ds * q[i];
          }
        }
      }
    }
  }
}

}  // namespace fsdp
