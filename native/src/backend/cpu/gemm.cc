// Matrix products through OpenBLAS (or oneDNN's bf16 GEMM: bf16_gemm.h), and the bias parts of linear layers.
#include <cblas.h>

#include <stdexcept>

#include "backend/cpu/bf16_gemm.h"
#include "backend/cpu/cpu_backend.h"

namespace fsdp {

CpuBackend::CpuBackend(bool bf16_gemm) : bf16_gemm_(bf16_gemm) {
  if (!bf16_gemm) return;
  if (const std::string refusal = cpu_bf16_refusal(); !refusal.empty())
    throw std::runtime_error("mixed_precision.param_dtype: bfloat16 on launch.device: cpu: " + refusal);
}

void CpuBackend::gemm(bool trans_a, bool trans_b, long m, long n, long k, float alpha, const float* a, long lda,
                      const float* b, long ldb, float beta, float* c, long ldc) {
  if (bf16_gemm_) return gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void CpuBackend::bias_fill(float* out, const float* b, long N, long O) {
#pragma omp parallel for schedule(static)
  for (long i = 0; i < N; ++i) {
    float* row = out + i * O;
    if (b) {
      for (long o = 0; o < O; ++o) row[o] = b[o];
    } else {
      for (long o = 0; o < O; ++o) row[o] = 0.0f;
    }
  }
}

void CpuBackend::bias_backward(float* db, const float* dout, long N, long O) {
  // Threads own column blocks and sum rows in order: the result does not depend on the thread count.
  constexpr long kBlock = 64;
#pragma omp parallel for schedule(static)
  for (long o0 = 0; o0 < O; o0 += kBlock) {
    const long o1 = o0 + kBlock < O ? o0 + kBlock : O;
    float acc[kBlock] = {};
    for (long i = 0; i < N; ++i) {
      const float* row = dout + i * O;
      for (long o = o0; o < o1; ++o) acc[o - o0] += row[o];
    }
    for (long o = o0; o < o1; ++o) db[o] += acc[o - o0];
  }
}

}  // namespace fsdp
