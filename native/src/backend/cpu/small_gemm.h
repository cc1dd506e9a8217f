// One row-major float32 product on the calling thread's share of OpenBLAS, for the attention
// kernels that call many small products from inside an OpenMP loop (attention.cc, gqa_attention.cc).
#pragma once
#include <cblas.h>

#include "backend/cpu/bf16_gemm.h"

namespace fsdp {

/**
 * Whether (batch, head) pairs may run in parallel: OpenBLAS's OpenMP build runs single-threaded
 * inside a parallel region, so every result keeps a fixed order; its pthreads build
 * (FSDP_BLAS_OPENMP 0) runs the pairs one after another, each product on OpenBLAS's own threads.
 */
constexpr bool kPairsInParallel = FSDP_BLAS_OPENMP != 0;

/** C[m, n] = alpha op(A) op(B) + beta C; with `bf16`, A and B rounded to bf16 first (bf16_gemm.h). */
inline void small_gemm(bool bf16, bool ta, bool tb, long m, long n, long k, float alpha, const float* a, long lda,
                       const float* b, long ldb, float beta, float* c, long ldc) {
  if (bf16) return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

}  // namespace fsdp
