// RMSNorm over the channels of each row: y = x / sqrt(mean(x²) + eps) · w (LlamaRMSNorm in
// float32). Rows are addressed as (token, head) so the same kernels serve the residual stream
// (one row per token) and Qwen3's per-head q / k norms inside packed qkv (G heads per token).
#include <cmath>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {

/** Offset of row r = (n, g) of N·G rows of C channels, tokens `stride` elements apart. */
inline long row_offset(long r, long G, long C, long stride) {
  return (r / G) * stride + (r % G) * C;
}

}  // namespace

void CpuBackend::rmsnorm_forward(void* out, float* rstd, const void* x, const void* w, long N, long G, long C,
                                 long stride, float eps) {
  const float* xs = static_cast<const float*>(x);
  const float* ws = static_cast<const float*>(w);
  float* os = static_cast<float*>(out);
#pragma omp parallel for schedule(static)
  for (long r = 0; r < N * G; ++r) {
    const long off = row_offset(r, G, C, stride);
    const float* xi = xs + off;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (long c = 0; c < C; ++c) ss += xi[c] * xi[c];
    const float rs = 1.0f / std::sqrt(ss / C + eps);
    float* oi = os + off;
#pragma omp simd
    for (long c = 0; c < C; ++c) oi[c] = xi[c] * rs * ws[c];
    rstd[r] = rs;
  }
}

void CpuBackend::rmsnorm_backward(void* dx, bool accumulate_dx, float* dw, const void* dout, const void* x,
                                  const void* w, const float* rstd, long N, long G, long C, long stride) {
  const float* xs = static_cast<const float*>(x);
  const float* ws = static_cast<const float*>(w);
  const float* ds = static_cast<const float*>(dout);
  float* dxs = static_cast<float*>(dx);
  const long rows = N * G;
  // dw first, while dout is whole (dx may overwrite it): channel blocks, rows in order, so the sum
  // does not depend on the thread count.
  constexpr long kBlock = 32;
#pragma omp parallel for schedule(static)
  for (long c0 = 0; c0 < C; c0 += kBlock) {
    const long c1 = c0 + kBlock < C ? c0 + kBlock : C;
    float acc[kBlock] = {};
    for (long r = 0; r < rows; ++r) {
      const long off = row_offset(r, G, C, stride);
      const float rs = rstd[r];
      for (long c = c0; c < c1; ++c) acc[c - c0] += ds[off + c] * xs[off + c] * rs;
    }
    for (long c = c0; c < c1; ++c) dw[c] += acc[c - c0];
  }
  // dx_c = r w_c dout_c - x_c r³ / C · sum_j dout_j w_j x_j, by rows.
#pragma omp parallel for schedule(static)
  for (long r = 0; r < rows; ++r) {
    const long off = row_offset(r, G, C, stride);
    const float* xi = xs + off;
    const float* di = ds + off;
    const float rs = rstd[r];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (long c = 0; c < C; ++c) dot += di[c] * ws[c] * xi[c];
    const float coef = dot * rs * rs * rs / C;
    float* dxi = dxs + off;
    if (accumulate_dx) {
#pragma omp simd
      for (long c = 0; c < C; ++c) dxi[c] += rs * di[c] * ws[c] - coef * xi[c];
    } else {
#pragma omp simd
      for (long c = 0; c < C; ++c) dxi[c] = rs * di[c] * ws[c] - coef * xi[c];
    }
  }
}

}  // namespace fsdp
