// LD_PRELOAD shim for `npm run bench:blas -- --record`: counts the runtime's cblas_sgemm calls by
// shape, so the GEMM benchmark runs the shapes a training step really multiplies (not guessed
// ones). It forwards every call to the next cblas_sgemm in the search order (the linked BLAS) and
// writes one JSON line per distinct call shape to $FSDP_BLAS_SHAPE_LOG when the process exits.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                         int);

enum { kMaxShapes = 512 };
struct shape {
  int order, ta, tb, m, n, k, lda, ldb, ldc, in_parallel, beta_zero;
  long calls;
};
static struct shape shapes[kMaxShapes];
static int n_shapes;
static long dropped;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sgemm_fn next_sgemm;

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                 const float* b, int ldb, float beta, float* c, int ldc) {
  if (!next_sgemm) next_sgemm = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
  struct shape s = {order, ta, tb, m, n, k, lda, ldb, ldc, omp_in_parallel(), beta == 0.0f, 1};
  pthread_mutex_lock(&lock);
  int i = 0;
  for (; i < n_shapes; ++i) {
    const struct shape* t = &shapes[i];
    if (t->order == s.order && t->ta == s.ta && t->tb == s.tb && t->m == s.m && t->n == s.n && t->k == s.k &&
        t->lda == s.lda && t->ldb == s.ldb && t->ldc == s.ldc && t->in_parallel == s.in_parallel &&
        t->beta_zero == s.beta_zero)
      break;
  }
  if (i < n_shapes) {
    shapes[i].calls++;
  } else if (n_shapes < kMaxShapes) {
    shapes[n_shapes++] = s;
  } else {
    dropped++;
  }
  pthread_mutex_unlock(&lock);
  next_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((destructor)) static void write_log(void) {
  const char* path = getenv("FSDP_BLAS_SHAPE_LOG");
  if (!path || !*path) return;
  FILE* f = fopen(path, "a");
  if (!f) {
    fprintf(stderr, "shape_log: cannot open FSDP_BLAS_SHAPE_LOG=%s\n", path);
    return;
  }
  for (int i = 0; i < n_shapes; ++i) {
    const struct shape* s = &shapes[i];
    fprintf(f,
            "{\"row_major\":%d,\"ta\":%d,\"tb\":%d,\"m\":%d,\"n\":%d,\"k\":%d,\"lda\":%d,\"ldb\":%d,\"ldc\":%d,"
            "\"in_parallel\":%d,\"beta_zero\":%d,\"calls\":%ld}\n",
            s->order == 101, s->ta == 112, s->tb == 112, s->m, s->n, s->k, s->lda, s->ldb, s->ldc, s->in_parallel,
            s->beta_zero, s->calls);
  }
  if (dropped) fprintf(f, "{\"dropped_calls\":%ld}\n", dropped);
  fclose(f);
}
