// `npm run bench:blas`'s measuring program: one BLAS, loaded with dlopen, runs the float32 matrix
// products a training step of the native runtime multiplies (shapes recorded from the runtime's
// own cblas_sgemm calls by shape_log.c), and prints one JSON line per shape with its CPU and wall
// time per call. One binary for every candidate, so the only difference between two runs is the
// library; bench/blas/run.mjs starts it once per candidate and round, interleaved.
//
//   gemm_bench KIND LIBRARY THREADS MIN_SECONDS < SHAPES
// KIND: openblas | scipy-openblas | mkl | blis | onednn (how to find the entry points and set the
// threads), or a bf16 one: mkl-bf16 (cblas_gemm_bf16bf16f32), onednn-bf16 (oneDNN's matmul primitive,
// bf16 source and weights, f32 destination), onednn-gemm-bf16 (dnnl_gemm_bf16bf16f32, exported by
// libdnnl but not in its public header). SHAPES: one line per shape, "ta tb m n k lda ldb ldc
// beta_zero in_parallel".
// The bf16 kinds multiply bfloat16 operands into float32 C (fp32 accumulation, C += or C =), what
// mixed precision's matrix products are; their error is measured against the fp32 operands, and the
// time to round each fp32 operand to bf16 (what a runtime keeping fp32 master weights and fp32
// activations pays per product at most) is timed apart and printed beside it.
// Shapes marked in_parallel are called as the runtime's attention does: many independent products
// from inside an OpenMP loop over (batch, head) pairs, one product per thread at a time.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bf16_round.h"

enum { kRowMajor = 101, kNoTrans = 111, kTrans = 112 };
typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                               int);
typedef int (*dnnl_sgemm_fn)(char, char, long, long, long, float, const float*, long, const float*, long, float, float*,
                             long);

typedef void (*cblas_gemm_bf16_fn)(int, int, int, int, int, int, float, const bf16*, int, const bf16*, int, float,
                                   float*, int);
typedef int (*dnnl_gemm_bf16_fn)(char, char, long, long, long, float, const bf16*, long, const bf16*, long, float,
                                 float*, long);

static cblas_sgemm_fn cblas_sgemm_p;
static dnnl_sgemm_fn dnnl_sgemm_p;
static cblas_gemm_bf16_fn cblas_gemm_bf16_p;
static dnnl_gemm_bf16_fn dnnl_gemm_bf16_p;
static int matmul_bf16;  // onednn-bf16: oneDNN's matmul primitive (below)

static void dnnl_ok(int status, const char* what) {
  if (status != 0) {
    fprintf(stderr, "gemm_bench: oneDNN %s failed with status %d\n", what, status);
    exit(1);
  }
}

static void sgemm(int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta,
                  float* c, int ldc) {
  if (dnnl_sgemm_p) {
    // oneDNN's sgemm is row-major already.
    dnnl_ok(dnnl_sgemm_p(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc), "dnnl_sgemm");
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

// ---- oneDNN's matmul primitive in bf16 (the C API of oneDNN 2.x, loaded with dlopen) ----------
// Its descriptors are only passed by pointer between the library's functions, so they live in
// buffers larger than oneDNN 2.6's structs (dnnl_types.h); the enum values are that header's.
enum { kDnnlCpu = 1, kDnnlBf16 = 2, kDnnlF32 = 3, kDnnlStreamInOrder = 1, kDnnlQueryImplInfoStr = 8 };
enum { kDnnlArgSrc = 1, kDnnlArgDst = 17, kDnnlArgWeights = 33 };
typedef struct {
  _Alignas(64) unsigned char bytes[8192];
} dnnl_desc_buffer;
typedef struct {
  int arg;
  void* memory;
} dnnl_exec_arg;
static struct {
  int (*engine_create)(void**, int, size_t);
  int (*stream_create)(void**, void*, unsigned);
  int (*memory_desc_init_by_strides)(void*, int, const int64_t*, int, const int64_t*);
  int (*matmul_desc_init)(void*, const void*, const void*, const void*, const void*);
  int (*primitive_attr_create)(void**);
  int (*post_ops_create)(void**);
  int (*post_ops_append_sum)(void*, float);
  int (*primitive_attr_set_post_ops)(void*, const void*);
  int (*primitive_desc_create)(void**, const void*, const void*, void*, const void*);
  int (*primitive_desc_query)(const void*, int, int, void*);
  int (*primitive_desc_destroy)(void*);
  int (*primitive_create)(void**, const void*);
  int (*primitive_destroy)(void*);
  int (*primitive_execute)(const void*, void*, int, const dnnl_exec_arg*);
  int (*memory_create)(void**, const void*, void*, void*);
  int (*memory_destroy)(void*);
  int (*stream_wait)(void*);
  int (*effective_cpu_isa)(void);
  void* engine;
} dnnl;

/** A 2-D memory descriptor of rows × cols with the given strides. */
static void dnnl_md(dnnl_desc_buffer* md, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
                    int type) {
  int64_t dims[12] = {rows, cols}, strides[12] = {row_stride, col_stride};
  dnnl_ok(dnnl.memory_desc_init_by_strides(md, 2, dims, type, strides), "memory_desc_init_by_strides");
}

/** One shape's matmul: the primitive for C = op(A) op(B) (beta 0) or C += (beta 1, a sum post-op), and per
 * slot the memory objects over that slot's buffers and a stream of its own (slots run concurrently). */
typedef struct {
  void* primitive[2];
  char impl[2][128];
  void** memory;  // slots × 3: A, B, C
  void** stream;  // slots
  int slots;
} matmul_shape;

static void matmul_create(matmul_shape* ms, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc, int slots,
                          bf16** as, bf16** bs, float** cs) {
  static dnnl_desc_buffer a_md, b_md, c_md, op;
  dnnl_md(&a_md, m, k, ta ? 1 : lda, ta ? lda : 1, kDnnlBf16);
  dnnl_md(&b_md, k, n, tb ? 1 : ldb, tb ? ldb : 1, kDnnlBf16);
  dnnl_md(&c_md, m, n, ldc, 1, kDnnlF32);
  dnnl_ok(dnnl.matmul_desc_init(&op, &a_md, &b_md, NULL, &c_md), "matmul_desc_init");
  for (int beta = 0; beta < 2; ++beta) {
    void* attr = NULL;
    if (beta) {
      void* post_ops;
      dnnl_ok(dnnl.primitive_attr_create(&attr), "primitive_attr_create");
      dnnl_ok(dnnl.post_ops_create(&post_ops), "post_ops_create");
      dnnl_ok(dnnl.post_ops_append_sum(post_ops, 1.0f), "post_ops_append_sum");
      dnnl_ok(dnnl.primitive_attr_set_post_ops(attr, post_ops), "primitive_attr_set_post_ops");
    }
    void* pd;
    dnnl_ok(dnnl.primitive_desc_create(&pd, &op, attr, dnnl.engine, NULL), "matmul primitive_desc_create");
    const char* impl = "";
    dnnl.primitive_desc_query(pd, kDnnlQueryImplInfoStr, 0, &impl);
    snprintf(ms->impl[beta], sizeof ms->impl[beta], "%s", impl ? impl : "");
    dnnl_ok(dnnl.primitive_create(&ms->primitive[beta], pd), "primitive_create");
    dnnl.primitive_desc_destroy(pd);
  }
  ms->slots = slots;
  ms->memory = malloc(3 * slots * sizeof(void*));
  ms->stream = malloc(slots * sizeof(void*));
  for (int s = 0; s < slots; ++s) {
    dnnl_ok(dnnl.memory_create(&ms->memory[3 * s], &a_md, dnnl.engine, as[s]), "memory_create");
    dnnl_ok(dnnl.memory_create(&ms->memory[3 * s + 1], &b_md, dnnl.engine, bs[s]), "memory_create");
    dnnl_ok(dnnl.memory_create(&ms->memory[3 * s + 2], &c_md, dnnl.engine, cs[s]), "memory_create");
    dnnl_ok(dnnl.stream_create(&ms->stream[s], dnnl.engine, kDnnlStreamInOrder), "stream_create");
  }
}

static void matmul_run(const matmul_shape* ms, int slot, int beta_one) {
  const dnnl_exec_arg args[3] = {{kDnnlArgSrc, ms->memory[3 * slot]},
                                 {kDnnlArgWeights, ms->memory[3 * slot + 1]},
                                 {kDnnlArgDst, ms->memory[3 * slot + 2]}};
  dnnl_ok(dnnl.primitive_execute(ms->primitive[beta_one], ms->stream[slot], 3, args), "matmul execute");
  dnnl_ok(dnnl.stream_wait(ms->stream[slot]), "stream_wait");
}

static void matmul_destroy(matmul_shape* ms) {
  for (int i = 0; i < 3 * ms->slots; ++i) dnnl.memory_destroy(ms->memory[i]);
  free(ms->memory);
  free(ms->stream);  // oneDNN 2.6's streams on the CPU engine hold nothing per shape worth freeing here
  for (int beta = 0; beta < 2; ++beta) dnnl.primitive_destroy(ms->primitive[beta]);
}

static void load_dnnl_matmul(void* lib, const char* path) {
#define DNNL_FN(field, name) *(void**)&dnnl.field = need(lib, name, path)
  DNNL_FN(engine_create, "dnnl_engine_create");
  DNNL_FN(stream_create, "dnnl_stream_create");
  DNNL_FN(memory_desc_init_by_strides, "dnnl_memory_desc_init_by_strides");
  DNNL_FN(matmul_desc_init, "dnnl_matmul_desc_init");
  DNNL_FN(primitive_attr_create, "dnnl_primitive_attr_create");
  DNNL_FN(post_ops_create, "dnnl_post_ops_create");
  DNNL_FN(post_ops_append_sum, "dnnl_post_ops_append_sum");
  DNNL_FN(primitive_attr_set_post_ops, "dnnl_primitive_attr_set_post_ops");
  DNNL_FN(primitive_desc_create, "dnnl_primitive_desc_create");
  DNNL_FN(primitive_desc_query, "dnnl_primitive_desc_query");
  DNNL_FN(primitive_desc_destroy, "dnnl_primitive_desc_destroy");
  DNNL_FN(primitive_create, "dnnl_primitive_create");
  DNNL_FN(primitive_destroy, "dnnl_primitive_destroy");
  DNNL_FN(primitive_execute, "dnnl_primitive_execute");
  DNNL_FN(memory_create, "dnnl_memory_create");
  DNNL_FN(memory_destroy, "dnnl_memory_destroy");
  DNNL_FN(stream_wait, "dnnl_stream_wait");
  DNNL_FN(effective_cpu_isa, "dnnl_get_effective_cpu_isa");
#undef DNNL_FN
  dnnl_ok(dnnl.engine_create(&dnnl.engine, kDnnlCpu, 0), "engine_create");
}

/** oneDNN's effective ISA (dnnl_cpu_isa_t of dnnl_types.h) by name. */
static const char* dnnl_isa_name(int isa) {
  switch (isa) {
    case 0x27:
      return "avx512_core";
    case 0x67:
      return "avx512_core_vnni";
    case 0xe7:
      return "avx512_core_bf16";
    case 0x3e7:
      return "avx512_core_amx";
    default:
      return "other";
  }
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
  } else if (!strcmp(kind, "mkl") || !strcmp(kind, "mkl-bf16")) {
    // The runtime's threads are GNU OpenMP's: MKL must use the same runtime, not Intel's libiomp5.
    ((int (*)(int))need(lib, "MKL_Set_Threading_Layer", path))(3 /* MKL_THREADING_GNU (mkl_service.h) */);
    if (!strcmp(kind, "mkl-bf16"))
      cblas_gemm_bf16_p = (cblas_gemm_bf16_fn)need(lib, "cblas_gemm_bf16bf16f32", path);
    else
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
  } else if (!strcmp(kind, "onednn") || !strcmp(kind, "onednn-bf16") || !strcmp(kind, "onednn-gemm-bf16")) {
    if (!strcmp(kind, "onednn-bf16")) {
      load_dnnl_matmul(lib, path);
      matmul_bf16 = 1;
    } else if (!strcmp(kind, "onednn-gemm-bf16")) {
      dnnl_gemm_bf16_p = (dnnl_gemm_bf16_fn)need(lib, "dnnl_gemm_bf16bf16f32", path);
    } else {
      dnnl_sgemm_p = (dnnl_sgemm_fn)need(lib, "dnnl_sgemm", path);
    }
    typedef struct {
      int major, minor, patch;
      const char* hash;
      unsigned cpu_runtime, gpu_runtime;
    } dnnl_version_t;
    const dnnl_version_t* v = ((const dnnl_version_t* (*)(void))need(lib, "dnnl_version", path))();
    const int isa = ((int (*)(void))need(lib, "dnnl_get_effective_cpu_isa", path))();
    snprintf(about, about_len, "oneDNN %d.%d.%d; effective ISA %s (0x%x)", v->major, v->minor, v->patch,
             dnnl_isa_name(isa), isa);
  } else {
    fprintf(stderr,
            "gemm_bench: unknown kind %s (openblas, scipy-openblas, mkl, blis, onednn, mkl-bf16, onednn-bf16, "
            "onednn-gemm-bf16)\n",
            kind);
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

static bf16* bf16_copy(const float* src, size_t n) {
  bf16* p = malloc(n * sizeof(bf16));
  if (!p) {
    fprintf(stderr, "gemm_bench: out of memory (%zu bf16)\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n; ++i) p[i] = to_bf16(src[i]);
  return p;
}

static const matmul_shape* current_matmul;

/** C = op(A) op(B) + beta C in bf16 × bf16 → fp32, by the loaded bf16 kind. */
static void gemm_bf16(int slot, int ta, int tb, int m, int n, int k, const bf16* a, int lda, const bf16* b, int ldb,
                      float beta, float* c, int ldc) {
  if (matmul_bf16) {
    matmul_run(current_matmul, slot, beta != 0.0f);
  } else if (dnnl_gemm_bf16_p) {
    dnnl_ok(dnnl_gemm_bf16_p(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc),
            "dnnl_gemm_bf16bf16f32");
  } else {
    cblas_gemm_bf16_p(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c,
                      ldc);
  }
}

/** CPU and wall seconds per call of converting one operand (rows × cols, leading dimension ld) of each slot. */
static void time_conversion(float** src, bf16** dst, int slots, int in_parallel, int rows, int cols, int ld,
                            double min_seconds, int threads, double* cpu_per, double* wall_per) {
  long calls = 0;
  const double cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC);
  double cpu = 0, wall = 0;
  do {
    if (in_parallel) {
#pragma omp parallel for schedule(static)
      for (int s = 0; s < slots; ++s) to_bf16_matrix(src[s], dst[s], rows, cols, ld);
      calls += slots;
    } else {
      to_bf16_matrix(src[0], dst[0], rows, cols, ld);
      calls += 1;
    }
    cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    wall = seconds(CLOCK_MONOTONIC) - wall0;
  } while (cpu < min_seconds * threads && wall < 4 * min_seconds);
  *cpu_per = cpu / calls;
  *wall_per = wall / calls;
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
  const int bf16_mode = cblas_gemm_bf16_p || dnnl_gemm_bf16_p || matmul_bf16;
  const char* rounding = bf16_round_init();
  printf("{\"library\":\"%s\",\"bf16\":%d,\"convert\":\"%s\"}\n", about, bf16_mode, rounding);
  int ta, tb, m, n, k, lda, ldb, ldc, beta_zero, in_parallel;
  while (scanf("%d %d %d %d %d %d %d %d %d %d", &ta, &tb, &m, &n, &k, &lda, &ldb, &ldc, &beta_zero, &in_parallel) ==
         10) {
    const size_t a_rows = ta ? k : m, b_rows = tb ? n : k;
    const int a_cols = ta ? m : k, b_cols = tb ? k : n;
    // Independent products for the parallel shapes: each of 2 × threads slots has its own C (and A, B).
    const int slots = in_parallel ? 2 * threads : 1;
    float** as = malloc(slots * sizeof(float*));
    float** bs = malloc(slots * sizeof(float*));
    float** cs = malloc(slots * sizeof(float*));
    bf16** as16 = malloc(slots * sizeof(bf16*));
    bf16** bs16 = malloc(slots * sizeof(bf16*));
    for (int s = 0; s < slots; ++s) {
      as[s] = filled(a_rows * lda, 1u + s);
      bs[s] = filled(b_rows * ldb, 1000u + s);
      cs[s] = filled((size_t)m * ldc, 2000u + s);
      as16[s] = bf16_mode ? bf16_copy(as[s], a_rows * lda) : NULL;
      bs16[s] = bf16_mode ? bf16_copy(bs[s], b_rows * ldb) : NULL;
    }
    matmul_shape ms = {0};
    if (matmul_bf16) {
      matmul_create(&ms, ta, tb, m, n, k, lda, ldb, ldc, slots, as16, bs16, cs);
      current_matmul = &ms;
    }
    const float beta = beta_zero ? 0.0f : 1.0f;
    // One product on slot s: fp32 sgemm, or the bf16 one on the slots' bf16 copies.
#define PRODUCT(s, b)                                                           \
  do {                                                                          \
    if (bf16_mode)                                                              \
      gemm_bf16(s, ta, tb, m, n, k, as16[s], lda, bs16[s], ldb, b, cs[s], ldc); \
    else                                                                        \
      sgemm(ta, tb, m, n, k, as[s], lda, bs[s], ldb, b, cs[s], ldc);            \
  } while (0)
    // Warm-up (packing buffers, thread pools), then the error check on a fresh product; in bf16 against the
    // fp32 operands, so it is the error mixed precision's product really has.
    PRODUCT(0, 0.0f);
    const double error = check(ta, tb, m, n, k, as[0], lda, bs[0], ldb, cs[0], ldc);
    long calls = 0;
    const double cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID), wall0 = seconds(CLOCK_MONOTONIC);
    double cpu = 0, wall = 0;
    do {
      if (in_parallel) {
#pragma omp parallel for schedule(static)
        for (int s = 0; s < slots; ++s) PRODUCT(s, beta);
        calls += slots;
      } else {
        PRODUCT(0, beta);
        calls += 1;
      }
      cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
      wall = seconds(CLOCK_MONOTONIC) - wall0;
    } while (cpu < min_seconds * threads && wall < 4 * min_seconds);
#undef PRODUCT
    printf(
        "{\"ta\":%d,\"tb\":%d,\"m\":%d,\"n\":%d,\"k\":%d,\"lda\":%d,\"ldb\":%d,\"ldc\":%d,\"beta_zero\":%d,"
        "\"in_parallel\":%d,\"calls\":%ld,\"cpu_s_per_call\":%.9g,\"wall_s_per_call\":%.9g,\"max_rel_error\":%.3g",
        ta, tb, m, n, k, lda, ldb, ldc, beta_zero, in_parallel, calls, cpu / calls, wall / calls, error);
    if (bf16_mode) {
      // What rounding each fp32 operand to bf16 costs per product (a quarter of the products' minimum time each).
      double a_cpu, a_wall, b_cpu, b_wall;
      time_conversion(as, as16, slots, in_parallel, (int)a_rows, a_cols, lda, min_seconds / 4, threads, &a_cpu,
                      &a_wall);
      time_conversion(bs, bs16, slots, in_parallel, (int)b_rows, b_cols, ldb, min_seconds / 4, threads, &b_cpu,
                      &b_wall);
      printf(
          ",\"convert_a_cpu_s_per_call\":%.9g,\"convert_a_wall_s_per_call\":%.9g,\"convert_b_cpu_s_per_call\":%.9g,"
          "\"convert_b_wall_s_per_call\":%.9g",
          a_cpu, a_wall, b_cpu, b_wall);
      if (matmul_bf16) printf(",\"impl\":\"%s\",\"impl_beta1\":\"%s\"", ms.impl[0], ms.impl[1]);
    }
    printf("}\n");
    fflush(stdout);
    if (matmul_bf16) matmul_destroy(&ms);
    for (int s = 0; s < slots; ++s) {
      free(as[s]);
      free(bs[s]);
      free(cs[s]);
      free(as16[s]);
      free(bs16[s]);
    }
    free(as);
    free(bs);
    free(cs);
    free(as16);
    free(bs16);
  }
  return 0;
}
