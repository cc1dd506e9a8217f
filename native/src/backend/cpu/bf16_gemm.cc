#include "backend/cpu/bf16_gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#ifdef __AVX512BF16__
#include <immintrin.h>
#endif

#include "runtime/half.h"

#ifdef FSDP_ONEDNN_BUILT
#include <oneapi/dnnl/dnnl.h>

// Exported by libdnnl (Debian's 2.6.3 and later) but left out of its public header: the row-major
// bf16 x bf16 -> f32 GEMM, C = alpha op(A) op(B) + beta C. CMake checks the symbol links before it
// defines FSDP_ONEDNN_BUILT. Its bfloat16_t is 16 bits of storage, as std::uint16_t is here.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                                               float alpha, const std::uint16_t* A, dnnl_dim_t lda,
                                               const std::uint16_t* B, dnnl_dim_t ldb, float beta, float* C,
                                               dnnl_dim_t ldc);
#endif

namespace fsdp {

namespace {

// Each thread's rounded operands, kept between products so that a step allocates them once; the
// attention kernels' threads each hold their own (small) pair.
struct OperandBuffers {
  std::vector<std::uint16_t> a, b;
  ~OperandBuffers() { held.fetch_sub(2 * (a.capacity() + b.capacity())); }
  static std::atomic<std::uint64_t> held;
  std::uint16_t* take(std::vector<std::uint16_t>& v, std::size_t n) {
    if (v.size() < n) {
      const std::size_t before = v.capacity();
      v.resize(n);
      held.fetch_add(2 * (v.capacity() - before));
    }
    return v.data();
  }
};
std::atomic<std::uint64_t> OperandBuffers::held{0};
thread_local OperandBuffers tls_buffers;

/** Rounds the stored rows x cols matrix (leading dimension ld) into a packed one. */
void round_matrix(std::uint16_t* dst, const float* src, long rows, long cols, long ld, bool parallel) {
#pragma omp parallel for schedule(static) if (parallel)
  for (long r = 0; r < rows; ++r) round_to_bf16(dst + r * cols, src + r * ld, static_cast<std::size_t>(cols));
}

#ifdef FSDP_ONEDNN_BUILT
std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_sse41:
      return "sse41";
    default:
      return "isa 0x" + [isa] {
        char hex[16];
        std::snprintf(hex, sizeof hex, "%x", static_cast<unsigned>(isa));
        return std::string(hex);
      }();
  }
}

bool has_amx_bf16() {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned amx = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_amx);
  return (isa & amx) == amx;
}
#endif

}  // namespace

bool bf16_without_amx_measured_faster(const CpuFeatures& f) {
  return f.vendor == "AuthenticAMD" && f.family == 0x19 && f.avx512_bf16 && f.usable_avx512();
}

bool onednn_built() {
#ifdef FSDP_ONEDNN_BUILT
  return true;
#else
  return false;
#endif
}

std::string onednn_isa() {
#ifdef FSDP_ONEDNN_BUILT
  return isa_name(dnnl_get_effective_cpu_isa());
#else
  return "";
#endif
}

std::string cpu_bf16_refusal() {
#ifdef FSDP_ONEDNN_BUILT
  if (has_amx_bf16()) return "";
  // oneDNN's bf16 GEMM has no kernels below AVX-512 (it answers "unimplemented"): no override helps.
  const unsigned avx512 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core);
  if ((static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & avx512) != avx512)
    return "this CPU has no AVX-512 (oneDNN's best instruction set here: " + onednn_isa() +
           "), which oneDNN's bf16 matrix products need: train in float32";
  // oneDNN must run its AVX512-BF16 kernels too (it reports them for the CPU's own features), not emulate them.
  const unsigned avx512_bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  const bool onednn_bf16 = (static_cast<unsigned>(dnnl_get_effective_cpu_isa()) & avx512_bf16) == avx512_bf16;
  if (onednn_bf16 && bf16_without_amx_measured_faster(read_cpu_features())) return "";
  const char* force = std::getenv(kCpuBf16WithoutAmxVar);
  if (force && std::string(force) == "1") return "";
  return "this CPU has no AMX-BF16 tiles (oneDNN's best instruction set here: " + onednn_isa() +
         "), and without them bf16 matrix products were measured faster than float32 only on AMD Zen 4; on an "
         "Intel CPU's AVX512-BF16 they run at about 0.66x float32's speed "
         "(bench/results/blas-bf16-intel-avx512-2026-12-07.md): train in float32, or set " +
         kCpuBf16WithoutAmxVar + "=1 to run bf16 anyway";
#else
  return "this build of the runtime has no oneDNN, which the CPU's bf16 matrix products run on: install Debian's "
         "libdnnl-dev and rebuild the runtime";
#endif
}

nlohmann::json cpu_gemm_json(bool bf16) {
  nlohmann::json j;
  if (!bf16) {
    j = {{"library", "OpenBLAS"}, {"dtype", "float32"}, {"note", "OpenBLAS sgemm, float32"}};
  } else {
#ifdef FSDP_ONEDNN_BUILT
    const dnnl_version_t* v = dnnl_version();
    const std::string version =
        std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    j = {{"library", "oneDNN " + version},
         {"dtype", "bfloat16"},
         {"isa", onednn_isa()},
         {"note", "oneDNN " + version + " gemm_bf16bf16f32 on " + onednn_isa() +
                      ": bf16 operands, float32 accumulation and output"}};
#else
    j = {{"library", "oneDNN"}, {"dtype", "bfloat16"}, {"note", "not built"}};
#endif
  }
  const std::string refusal = cpu_bf16_refusal();
  j["bf16_available"] = refusal.empty();
  if (!refusal.empty()) j["bf16_refusal"] = refusal;
  return j;
}

void round_to_bf16(std::uint16_t* dst, const float* src, std::size_t n) {
  std::size_t i = 0;
#ifdef __AVX512BF16__
  for (; i + 16 <= n; i += 16) {
    const __m256bh r = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<const __m256i&>(r));
  }
#endif
  for (; i < n; ++i) dst[i] = float_to_bf16(src[i]);
}

void gemm_bf16(bool ta, bool tb, long m, long n, long k, float alpha, const float* a, long lda, const float* b,
               long ldb, float beta, float* c, long ldc) {
#ifdef FSDP_ONEDNN_BUILT
  // An operand above the cap: halve the dimension that shrinks the larger one (m or n split C, k
  // splits the sum, whose second half adds onto the first in float32).
  const std::uint64_t a_elems = static_cast<std::uint64_t>(m) * static_cast<std::uint64_t>(k),
                      b_elems = static_cast<std::uint64_t>(k) * static_cast<std::uint64_t>(n);
  if (std::max(a_elems, b_elems) > kBf16OperandElements) {
    const bool split_k = a_elems >= b_elems ? k > m : k > n;
    if (split_k) {
      const long k1 = k / 2;
      gemm_bf16(ta, tb, m, n, k1, alpha, a, lda, b, ldb, beta, c, ldc);
      return gemm_bf16(ta, tb, m, n, k - k1, alpha, ta ? a + k1 * lda : a + k1, lda, tb ? b + k1 : b + k1 * ldb, ldb,
                       1.0f, c, ldc);
    }
    if (a_elems >= b_elems) {
      const long m1 = m / 2;
      gemm_bf16(ta, tb, m1, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return gemm_bf16(ta, tb, m - m1, n, k, alpha, ta ? a + m1 : a + m1 * lda, lda, b, ldb, beta, c + m1 * ldc, ldc);
    }
    const long n1 = n / 2;
    gemm_bf16(ta, tb, m, n1, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return gemm_bf16(ta, tb, m, n - n1, k, alpha, a, lda, tb ? b + n1 * ldb : b + n1, ldb, beta, c + n1, ldc);
  }
  // The operands as stored: op(A) is [m, k], so A is [k, m] when transposed; likewise B.
  const long a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  OperandBuffers& buf = tls_buffers;
  std::uint16_t* a16 = buf.take(buf.a, static_cast<std::size_t>(a_rows * a_cols));
  std::uint16_t* b16 = buf.take(buf.b, static_cast<std::size_t>(b_rows * b_cols));
  // Inside the attention kernels' OpenMP loop each thread rounds its own small operands.
  const bool parallel = !omp_in_parallel();
  round_matrix(a16, a, a_rows, a_cols, lda, parallel);
  round_matrix(b16, b, b_rows, b_cols, ldb, parallel);
  const dnnl_status_t status =
      dnnl_gemm_bf16bf16f32(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a16, a_cols, b16, b_cols, beta, c, ldc);
  if (status != dnnl_success) {
    const std::string what = "cpu backend: oneDNN's bf16 GEMM (dnnl_gemm_bf16bf16f32) failed with status " +
                             std::to_string(static_cast<int>(status)) + " on " + std::to_string(m) + " x " +
                             std::to_string(n) + " x " + std::to_string(k);
    // An exception cannot leave an OpenMP region: say it and stop.
    if (omp_in_parallel()) {
      std::fprintf(stderr, "%s\n", what.c_str());
      std::abort();
    }
    throw std::runtime_error(what);
  }
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta,
      (void)c, (void)ldc;
  throw std::runtime_error("cpu backend: bf16 matrix products: " + cpu_bf16_refusal());
#endif
}

std::uint64_t bf16_operand_bytes_held() {
  return OperandBuffers::held.load();
}

}  // namespace fsdp
