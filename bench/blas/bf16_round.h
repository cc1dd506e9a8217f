// Rounding float32 to bfloat16 (round to nearest even) for bench/blas's programs (gemm_bench.c and
// mkl_preload.c): what a mixed-precision runtime pays to turn its fp32 operands into a bf16 GEMM's.
// AVX512-BF16's vcvtneps2bf16 where the CPU has it (call bf16_round_init() first), else the same
// rounding in plain C. Static functions: each program includes it once.
#pragma once
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

static inline bf16 to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16)((u >> 16) | 0x40);  // NaN stays NaN
  return (bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/** One row of `cols` floats to bf16: AVX512-BF16's vcvtneps2bf16 where the CPU has it (the same rounding). */
__attribute__((target("avx512f,avx512bf16"))) static void row_to_bf16_avx512(const float* src, bf16* dst, int cols) {
  int j = 0;
  for (; j + 16 <= cols; j += 16) {
    __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + j));
    _mm256_storeu_si256((__m256i*)(dst + j), (__m256i)v);
  }
  for (; j < cols; ++j) dst[j] = to_bf16(src[j]);
}

static int have_avx512bf16;

/** Whether vcvtneps2bf16 runs here; returns its name or "scalar". */
static const char* bf16_round_init(void) {
  __builtin_cpu_init();
  have_avx512bf16 = __builtin_cpu_supports("avx512bf16");
  return have_avx512bf16 ? "avx512bf16 vcvtneps2bf16" : "scalar";
}

static void row_to_bf16(const float* src, bf16* dst, int cols) {
  if (have_avx512bf16) {
    row_to_bf16_avx512(src, dst, cols);
    return;
  }
  for (int j = 0; j < cols; ++j) dst[j] = to_bf16(src[j]);
}

/** rows × cols of a matrix with leading dimension ld, fp32 to bf16; on the OpenMP threads unless already in a
 * parallel region (attention's products: then each thread converts its own operands). */
static void to_bf16_matrix(const float* src, bf16* dst, int rows, int cols, int ld) {
#pragma omp parallel for schedule(static) if (!omp_in_parallel() && (long)rows * cols > 16384)
  for (int i = 0; i < rows; ++i) row_to_bf16(src + (size_t)i * ld, dst + (size_t)i * ld, cols);
}
