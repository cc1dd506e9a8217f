// Causal multi-head attention core: probs = softmax(q k^T / sqrt(hs)) over the positions up to
// each query, out = probs v. The projections around it are linear layers (model/attention.cc).
//
// Each (batch, head) pair is a handful of small matrix products (T x hs by hs x T and back),
// which OpenBLAS does several times faster than loops; threads own whole pairs, and OpenBLAS's
// OpenMP build runs single-threaded inside a parallel region, so every result has a fixed
// order. The products cover the full T x T square; the causal mask is applied by the softmax
// (probabilities above the diagonal are zero), so the masked half contributes exact zeros.
// With OpenBLAS's pthreads build (FSDP_BLAS_OPENMP 0) the pairs run one after another, each
// product using OpenBLAS's own threads.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/small_gemm.h"
#include "backend/cpu/softmax_row.h"

namespace fsdp {

void CpuBackend::attention_probs(float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      const float* q = qkv + b * T * C3 + h * hs;
      float* p = probs + (b * H + h) * T * T;
      small_gemm(bf16_gemm_, false, true, T, T, hs, scale, q, C3, q + C, C3, 0.0f, p, T);
      for (long t = 0; t < T; ++t) {
        float* row = p + t * T;
        softmax_in_place(row, t + 1);
        for (long u = t + 1; u < T; ++u) row[u] = 0.0f;
      }
    }
  }
}

void CpuBackend::attention_values(float* out, const float* probs, const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      small_gemm(bf16_gemm_, false, false, T, hs, T, 1.0f, probs + (b * H + h) * T * T, T,
                 qkv + b * T * C3 + 2 * C + h * hs, C3, 0.0f, out + b * T * C + h * hs, C);
    }
  }
}

void CpuBackend::attention_values_backward(float* dprobs, float* dqkv, const float* dout, const float* probs,
                                           const float* qkv, long B, long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      const float* d = dout + b * T * C + h * hs;
      const float* p = probs + (b * H + h) * T * T;
      // dprobs = dout v^T; dv = probs^T dout.
      small_gemm(bf16_gemm_, false, true, T, T, hs, 1.0f, d, C, qkv + b * T * C3 + 2 * C + h * hs, C3, 0.0f,
                 dprobs + (b * H + h) * T * T, T);
      small_gemm(bf16_gemm_, true, false, T, hs, T, 1.0f, p, T, d, C, 0.0f, dqkv + b * T * C3 + 2 * C + h * hs, C3);
    }
  }
}

void CpuBackend::attention_probs_backward(float* dqkv, float* dprobs, const float* probs, const float* qkv, long B,
                                          long T, long C, long H) {
  const long hs = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) schedule(static) if (kPairsInParallel)
  for (long b = 0; b < B; ++b) {
    for (long h = 0; h < H; ++h) {
      const float* p = probs + (b * H + h) * T * T;
      float* ds = dprobs + (b * H + h) * T * T;
      // Softmax backward, in place: dscore = p (dp - sum_j p_j dp_j); zero above the diagonal.
      for (long t = 0; t < T; ++t) {
        const float* pr = p + t * T;
        float* dr = ds + t * T;
        const long n = t + 1;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (long u = 0; u < n; ++u) dot += pr[u] * dr[u];
#pragma omp simd
        for (long u = 0; u < n; ++u) dr[u] = pr[u] * (dr[u] - dot);
        for (long u = n; u < T; ++u) dr[u] = 0.0f;
      }
      // Through q k^T / sqrt(hs): dq = ds k / sqrt(hs), dk = ds^T q / sqrt(hs).
      const float* q = qkv + b * T * C3 + h * hs;
      small_gemm(bf16_gemm_, false, false, T, hs, T, scale, ds, T, q + C, C3, 0.0f, dqkv + b * T * C3 + h * hs, C3);
      small_gemm(bf16_gemm_, true, false, T, hs, T, scale, ds, T, q, C3, 0.0f, dqkv + b * T * C3 + C + h * hs, C3);
    }
  }
}

}  // namespace fsdp
