// `npm run bench:blas`'s measuring program: one BLAS, loaded with dlopen, runs the float32 matrix
// products a training step of the native runtime multiplies (shapes recorded from the runtime's
// own cblas_sgemm calls by shape_log.c), and prints one JSON line per shape with its CPU and wall
// time per call. One binary for every candidate, so the only difference between two runs is the
// library; bench/blas/run.mjs starts it once per candidate and round, interleaved.
//
//   gemm_bench KIND LIBRARY THREADS MIN_SECONDS < SHAPES
// KIND: openblas | scipy-openblas | mkl | blis | onednn (how to find the entry points and set the
// threads). SHAPES: one line per shape, "ta tb m n k lda ldb ldc beta_zero in_parallel".
// Shapes marked in_parallel are called as the runtime's attention does: many independent products
// from inside an OpenMP loop over (batch, head) pairs, one product per thread at a time.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                               float*, int);
typedef int (*dnnl_sgemm_fn)(char, char, long, long, long, float, const float*, long, const float*, long, float,
                             float*, long);

static cblas_sgemm_fn cblas_sgemm_p;
static dnnl_sgemm_fn dnnl_sgemm_p;

static void sgemm(int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
                  float* c, int ldc) {
  if (dnnl_sgemm_p) {
    // oneDNN's sgemm is row-major already.
    int status = dnnl_sgemm_p(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    if (status != 0) {
      fprintf(stderr, "gemm_bench: dnnl_sgemm failed with status %d\n", status);
      exit(1);
    }
  } else {
    cblas_sgemm_p(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                  ldc);
  }
}

static void* need(void* lib, const char* name, const char* path) {
  void* f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "gemm_bench: %s has no %s\n", path, name);
    exit(1);
  }
  return f;
}

/** Loads the library and sets its threads; returns a one-line description of the build. */
static void load(const char* kind, const char* path, int threads, char* about, size_t about_len) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "gemm_bench: cannot load %s: %s\n", path, dlerror());
    exit(1);
  }
  omp_set_num_threads(threads);
  snprintf(about, about_len, "%s", kind);
  if (!strcmp(kind, "openblas") || !strcmp(kind, "scipy-openblas")) {
    const char* prefix = strcmp(kind, "openblas") ? "scipy_" : "";
    char name[64];
    snprintf(name, sizeof name, "%scblas_sgemm", prefix);
    cblas_sgemm_p = (cblas_sgemm_fn)need(lib, name, path);
    snprintf(name, sizeof name, "%sopenblas_set_num_threads", prefix);
    ((void (*)(int))need(lib, name, path))(threads);
    snprintf(name, sizeof name, "%sopenblas_get_config", prefix);
    const char* config = ((char* (*)(void))need(lib, name, path))();
    snprintf(name, sizeof name, "%sopenblas_get_corename", prefix);
    const char* core = ((char* (*)(void))need(lib, name, path))();
    snprintf(about, about_len, "%s; kernels %s", config, core);
  } else if (!strcmp(kind, "mkl")) {
    // The runtime's threads are GNU OpenMP's: MKL must use the same runtime, not Intel's libiomp5.
    ((int (*)(int))need(lib, "MKL_Set_Threading_Layer", path))(3 /* MKL_THREADING_GNU (mkl_service.h) */);
    cblas_sgemm_p = (cblas_sgemm_fn)need(lib, "cblas_sgemm", path);
    ((void (*)(int))need(lib, "MKL_Set_Num_Threads", path))(threads);
    char version[256] = "";
    ((void (*)(char*, int))need(lib, "MKL_Get_Version_String", path))(version, sizeof version);
    snprintf(about, about_len, "%s", version);
  } else if (!strcmp(kind, "blis")) {
    cblas_sgemm_p = (cblas_sgemm_fn)need(lib, "cblas_sgemm", path);
    ((void (*)(long))need(lib, "bli_thread_set_num_threads", path))(threads);
    const char* version = ((const char* (*)(void))need(lib, "bli_info_get_version_str", path))();
    int id = ((int (*)(void))need(lib, "bli_arch_query_id", path))();
    const char* arch = ((const char* (*)(int))need(lib, "bli_arch_string", path))(id);
    snprintf(about, about_len, "BLIS %s; kernels %s", version, arch);
  } else if (!strcmp(kind, "onednn")) {
    dnnl_sgemm_p = (dnnl_sgemm_fn)need(lib, "dnnl_sgemm", path);
    typedef struct {
      int major, minor, patch;
      const char* hash;
      unsigned cpu_runtime, gpu_runtime;
    } dnnl_version_t;
    const dnnl_version_t* v = ((const dnnl_version_t* (*)(void))need(lib, "dnnl_version", path))();
    snprintf(about, about_len, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
  } else {
    fprintf(stderr, "gemm_bench: unknown kind %s (openblas, scipy-openblas, mkl, blis, onednn)\n", kind);
    exit(1);
  }
}

static double seconds(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static float* filled(size_t n, unsigned seed) {
  float* p = malloc(n * sizeof(float));
  if (!p) {
    fprintf(stderr, "gemm_bench: out of memory (%zu floats)\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  return p;
}

/** Largest relative error of a few entries of C = op(A) op(B) against a double-precision dot product. */
static double check(int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                    const float* c, int ldc) {
  double worst = 0;
  for (int s = 0; s < 16; ++s) {
    int i = (int)((s * 7919L) % m), j = (int)((s * 104729L) % n);
    double ref = 0, mag = 0;
    for (int p = 0; p < k; ++p) {
      double x = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
      double y = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
      ref += x * y;
      mag += fabs(x * y);
    }
    double err = fabs(c[(size_t)i * ldc + j] - ref) / (mag > 0 ? mag : 1);
    if (err > worst) worst = err;
  }
  return worst;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: gemm_bench KIND LIBRARY THREADS MIN_SECONDS < SHAPES\n");
    return 2;
  }
  const int threads = atoi(argv[3]);
  const double min_seconds = atof(argv[4]);
  char about[512];
  load(argv[1], argv[2], threads, about, sizeof about);
  printf("{\"library\":\"%s\"}\n", about);
  int ta, tb, m, n, k, lda, ldb, ldc, beta_zero, in_parallel;
  while (scanf("%d %d %d %d %d %d %d %d %d %d", &ta, &tb, &m, &n, &k, &lda, &ldb, &ldc, &beta_zero, &in_parallel) ==
         10) {
    const size_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    // Independent products for the parallel shapes: each of 2 × threads slots has its own C (and A, B).
    const int slots = in_parallel ? 2 * threads : 1;
    float** as = malloc(slots * sizeof(float*));
    float** bs = malloc(slots * sizeof(float*));
    float** cs = malloc(slots * sizeof(float*));
    for (int s = 0; s < slots; ++s) {
      as[s] = filled(a_rows * lda, 1u + s);
      bs[s] = filled(b_rows * ldb, 1000u + s);
      cs[s] = filled((size_t)m * ldc, 2000u + s);
    }
    const float beta = beta_zero ? 0.0f : 1.0f;
    // Warm-up (packing buffers, thread pools), then the error check on a fresh product.
    sgemm(ta, tb, m, n, k, as[0], lda, bs[0], ldb, 0.0f, cs[0], ldc);
    const double error = check(ta, tb, m, n, k, as[0], lda, bs[0], ldb, cs[0], ldc);
    long calls = 0;
    const double cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC);
    double cpu = 0, wall = 0;
    do {
      if (in_parallel) {
#pragma omp parallel for schedule(static)
        for (int s = 0; s < slots; ++s) sgemm(ta, tb, m, n, k, as[s], lda, bs[s], ldb, beta, cs[s], ldc);
        calls += slots;
      } else {
        sgemm(ta, tb, m, n, k, as[0], lda, bs[0], ldb, beta, cs[0], ldc);
        calls += 1;
      }
      cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
      wall = seconds(CLOCK_MONOTONIC) - wall0;
    } while (cpu < min_seconds * threads && wall < 4 * min_seconds);
    printf(
        "{\"ta\":%d,\"tb\":%d,\"m\":%d,\"n\":%d,\"k\":%d,\"lda\":%d,\"ldb\":%d,\"ldc\":%d,\"beta_zero\":%d,"
        "\"in_parallel\":%d,\"calls\":%ld,\"cpu_s_per_call\":%.9g,\"wall_s_per_call\":%.9g,\"max_rel_error\":%.3g}\n",
        ta, tb, m, n, k, lda, ldb, ldc, beta_zero, in_parallel, calls, cpu / calls, wall / calls, error);
    fflush(stdout);
    for (int s = 0; s < slots; ++s) {
      free(as[s]);
      free(bs[s]);
      free(cs[s]);
    }
    free(as);
    free(bs);
    free(cs);
  }
  return 0;
}
