// Causal multi-head attention core: probs = softmax(q k^T / sqrt(hs)) over the positions up to
// each query, out = probs v. The projections around it are linear layers (model/attention.cc).
//
// Threads own whole (batch, head) pairs: keys and values receive gradient from every later
// query, so no two threads write the same element and every sum has a fixed order. Inner loops
// run along contiguous memory so they vectorise: each pair's keys (or values) are first copied
// transposed into a small per-thread scratch (hs x T floats).
#include <omp.h>

#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vector_math.h"

namespace fsdp {

namespace {

/** dst[i * T + t] = src[t * stride + i]: a head's keys or values, transposed. */
void transpose_head(float* dst, const float* src, long T, long hs, long stride) {
  for (long t = 0; t < T; ++t)
    for (long i = 0; i < hs; ++i) dst[i * T + t] = src[t * stride + i];
}

thread_local std::vector<float> t_scratch;

float* scratch(std::size_t n) {
  if (t_scratch.size() < n) t_scratch.resize(n);
  return t_scratch.data();
}

}  // namespace

void CpuBackend::attention_probs(float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      float* kt = scratch(static_cast<std::size_t>(hs * T));
      transpose_head(kt, qkv + b * T * C3 + C + h * hs, T, hs, C3);
      for (long t = 0; t < T; ++t) {
        const float* q = qkv + (b * T + t) * C3 + h * hs;
        float* p = probs + ((b * H + h) * T + t) * T;
        const long n = t + 1;
        for (long u = 0; u < n; ++u) p[u] = 0.0f;
        for (long i = 0; i < hs; ++i) {
          const float qi = q[i] * scale;
          const float* k = kt + i * T;
#pragma omp simd
          for (long u = 0; u < n; ++u) p[u] += qi * k[u];
        }
        float max = -INFINITY;
#pragma omp simd reduction(max : max)
        for (long u = 0; u < n; ++u) max = p[u] > max ? p[u] : max;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (long u = 0; u < n; ++u) {
          p[u] = expf(p[u] - max);
          sum += p[u];
        }
        const float inv = 1.0f / sum;
#pragma omp simd
        for (long u = 0; u < n; ++u) p[u] *= inv;
        for (long u = n; u < T; ++u) p[u] = 0.0f;
      }
    }
  }
}

void CpuBackend::attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      for (long t = 0; t < T; ++t) {
        const float* p = probs + ((b * H + h) * T + t) * T;
        float* o = out + (b * T + t) * C + h * hs;
        for (long i = 0; i < hs; ++i) o[i] = 0.0f;
        for (long u = 0; u <= t; ++u) {
          const float* v = qkv + (b * T + u) * C3 + 2 * C + h * hs;
          const float pu = p[u];
#pragma omp simd
          for (long i = 0; i < hs; ++i) o[i] += pu * v[i];
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
      float* vt = scratch(static_cast<std::size_t>(hs * T));
      transpose_head(vt, qkv + b * T * C3 + 2 * C + h * hs, T, hs, C3);
      for (long t = 0; t < T; ++t) {
        float* dv = dqkv + (b * T + t) * C3 + 2 * C + h * hs;
        for (long i = 0; i < hs; ++i) dv[i] = 0.0f;
      }
      for (long t = 0; t < T; ++t) {
        const float* p = probs + ((b * H + h) * T + t) * T;
        float* dp = dprobs + ((b * H + h) * T + t) * T;
        const float* d = dout + (b * T + t) * C + h * hs;
        const long n = t + 1;
        // dprobs = dout . v (along the keys), and dv += probs * dout.
        for (long u = 0; u < T; ++u) dp[u] = 0.0f;
        for (long i = 0; i < hs; ++i) {
          const float di = d[i];
          const float* v = vt + i * T;
#pragma omp simd
          for (long u = 0; u < n; ++u) dp[u] += di * v[u];
        }
        for (long u = 0; u < n; ++u) {
          float* dv = dqkv + (b * T + u) * C3 + 2 * C + h * hs;
          const float pu = p[u];
#pragma omp simd
          for (long i = 0; i < hs; ++i) dv[i] += pu * d[i];
        }
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
        const long n = t + 1;
        // Softmax backward, in place: dscore = p (dp - sum_j p_j dp_j) / sqrt(hs).
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (long u = 0; u < n; ++u) dot += p[u] * dp[u];
#pragma omp simd
        for (long u = 0; u < n; ++u) dp[u] = p[u] * (dp[u] - dot) * scale;
        const float* q = qkv + (b * T + t) * C3 + h * hs;
        float* dq = dqkv + (b * T + t) * C3 + h * hs;
        for (long u = 0; u < n; ++u) {
          const float ds = dp[u];
          const float* k = qkv + (b * T + u) * C3 + C + h * hs;
          float* dk = dqkv + (b * T + u) * C3 + C + h * hs;
#pragma omp simd
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
