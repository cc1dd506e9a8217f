// LD_PRELOAD shim for `npm run bench:blas -- --end-to-end`: the native runtime, unchanged, with its
// matrix products on Intel MKL instead of the OpenBLAS it links, to see what a whole training step
// gains (not only the products measured alone). It defines cblas_sgemm (MKL's) and
// openblas_set_num_threads (OpenBLAS's and MKL's thread count), which the runtime calls through
// the dynamic linker. MKL's file is $FSDP_BLAS_PRELOAD_MKL; it runs on the process's GNU OpenMP
// threads and, unless MKL_CBWR is set, in its run-to-run reproducible mode, as the runtime would run it.
// With FSDP_BLAS_PRELOAD_BF16=1 every product runs in mixed precision instead (issue 42 item 2): both
// fp32 operands rounded to bf16 (bf16_round.h) into buffers of the calling thread, then MKL's
// cblas_gemm_bf16bf16f32 (fp32 accumulation and C) — what a runtime that keeps fp32 weights and
// activations and multiplies in bf16 would do, its rounding cost included in each step.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16_round.h"

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*gemm_bf16_fn)(int, int, int, int, int, int, float, const bf16*, int, const bf16*, int, float, float*,
                             int);
static sgemm_fn mkl_sgemm;
static gemm_bf16_fn mkl_gemm_bf16;  // set when FSDP_BLAS_PRELOAD_BF16=1
static void (*mkl_set_threads)(int);

enum { kMklThreadingGnu = 3, kMklCbwrAuto = 2 };  // mkl_service.h, mkl_types.h

static void* need(void* lib, const char* name, const char* file) {
  void* f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "mkl_preload: %s has no %s\n", file, name);
    exit(1);
  }
  return f;
}

__attribute__((constructor)) static void load_mkl(void) {
  const char* file = getenv("FSDP_BLAS_PRELOAD_MKL");
  if (!file || !*file) {
    fprintf(stderr, "mkl_preload: set FSDP_BLAS_PRELOAD_MKL to libmkl_rt's file\n");
    exit(1);
  }
  void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "mkl_preload: cannot load %s: %s\n", file, dlerror());
    exit(1);
  }
  ((int (*)(int))need(lib, "MKL_Set_Threading_Layer", file))(kMklThreadingGnu);
  if (!getenv("MKL_CBWR")) ((int (*)(int))need(lib, "MKL_CBWR_Set", file))(kMklCbwrAuto);
  mkl_sgemm = (sgemm_fn)need(lib, "cblas_sgemm", file);
  mkl_set_threads = (void (*)(int))need(lib, "MKL_Set_Num_Threads", file);
  const char* bf16_mode = getenv("FSDP_BLAS_PRELOAD_BF16");
  if (bf16_mode && !strcmp(bf16_mode, "1")) {
    mkl_gemm_bf16 = (gemm_bf16_fn)need(lib, "cblas_gemm_bf16bf16f32", file);
    fprintf(stderr, "mkl_preload: products in bf16 (cblas_gemm_bf16bf16f32), operands rounded by %s\n",
            bf16_round_init());
  }
}

/** This thread's buffer of at least n bf16 values (kept: a step's products ask for the same sizes again). */
static bf16* thread_buffer(int which, size_t n) {
  static __thread bf16* buffer[2];
  static __thread size_t capacity[2];
  if (capacity[which] < n) {
    free(buffer[which]);
    buffer[which] = malloc(n * sizeof(bf16));
    if (!buffer[which]) {
      fprintf(stderr, "mkl_preload: out of memory (%zu bf16 for an operand)\n", n);
      exit(1);
    }
    capacity[which] = n;
  }
  return buffer[which];
}

enum { kRowMajor = 101, kTrans = 112 };

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc) {
  if (!mkl_gemm_bf16 || order != kRowMajor) {
    mkl_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // op(A) is m × k, op(B) k × n; as stored (row-major), A has a_rows rows of a_cols and B likewise.
  const int a_rows = ta == kTrans ? k : m, a_cols = ta == kTrans ? m : k;
  const int b_rows = tb == kTrans ? n : k, b_cols = tb == kTrans ? k : n;
  bf16* a16 = thread_buffer(0, (size_t)a_rows * lda);
  bf16* b16 = thread_buffer(1, (size_t)b_rows * ldb);
  to_bf16_matrix(a, a16, a_rows, a_cols, lda);
  to_bf16_matrix(b, b16, b_rows, b_cols, ldb);
  mkl_gemm_bf16(order, ta, tb, m, n, k, alpha, a16, lda, b16, ldb, beta, c, ldc);
}

void openblas_set_num_threads(int n) {
  void (*next)(int) = (void (*)(int))dlsym(RTLD_NEXT, "openblas_set_num_threads");
  if (next) next(n);
  mkl_set_threads(n);
}
