// LD_PRELOAD shim for `npm run bench:blas -- --end-to-end`: the native runtime, unchanged, with its
// matrix products on Intel MKL instead of the OpenBLAS it links, to see what a whole training step
// gains (not only the products measured alone). It defines cblas_sgemm (MKL's) and
// openblas_set_num_threads (OpenBLAS's and MKL's thread count), which the runtime calls through
// the dynamic linker. MKL's file is $FSDP_BLAS_PRELOAD_MKL; it runs on the process's GNU OpenMP
// threads and, unless MKL_CBWR is set, in its run-to-run reproducible mode, as the runtime would run it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);
static sgemm_fn mkl_sgemm;
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
}

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  mkl_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void openblas_set_num_threads(int n) {
  void (*next)(int) = (void (*)(int))dlsym(RTLD_NEXT, "openblas_set_num_threads");
  if (next) next(n);
  mkl_set_threads(n);
}
