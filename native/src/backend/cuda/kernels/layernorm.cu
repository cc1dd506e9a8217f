// LayerNorm forward and backward (eps 1e-5, statistics in float32 as the CPU computes them), and
// the fused residual + dropout + LayerNorm of a block's middle. A warp normalises one row, 16 bytes
// a lane at a time where the row's pointers and width allow (8 bfloat16: the profile of the scalar
// version had LayerNorm backward at 3% of a GPT-2 step, far from the memory's speed); the
// weight and bias gradients are summed per column over fixed row blocks and then in block order,
// so they do not depend on scheduling.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "runtime/rng.h"

namespace fsdp::cuda {

namespace {

constexpr float kEps = 1e-5f;
constexpr int kWarps = 8;  // rows per block in the row kernels
constexpr int kRowsPerPartial = 128;

/** K consecutive elements as float32: one 16-byte access when K is Pack<T>'s size, K scalar ones when 1. */
template <class T, int K>
struct Elements {
  float v[K];
  __device__ __forceinline__ static Elements load(const T* p) {
    Elements r;
    if constexpr (K == Pack<T>::kSize) {
      const Pack<T> pk = Pack<T>::load(p);
#pragma unroll
      for (int k = 0; k < K; ++k) r.v[k] = to_f(pk.v[k]);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) r.v[k] = to_f(p[k]);
    }
    return r;
  }
  __device__ __forceinline__ void store(T* p) const {
    if constexpr (K == Pack<T>::kSize) {
      Pack<T> pk;
#pragma unroll
      for (int k = 0; k < K; ++k) pk.v[k] = from_f<T>(v[k]);
      pk.store(p);
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) p[k] = from_f<T>(v[k]);
    }
  }
};

/**
 * One row per warp, K elements a lane at a time (16-byte loads where the row allows). With
 * `residual`: the row is first formed as residual + dropout(x) and stored to `sum` (rounded to T,
 * as the unfused path stores it), and normalised from the stored values.
 */
template <class T, int K>
__global__ void layernorm_kernel(T* out, float* mean, float* rstd, T* sum, const T* residual, const T* x, float p,
                                 std::uint64_t key, const T* w, const T* b, long N, long C) {
  using E = Elements<T, K>;
  const long row = blockIdx.x * static_cast<long>(kWarps) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* xi = x + row * C;
  const T* src = xi;
  if (residual) {
    const T* ri = residual + row * C;
    T* si = sum + row * C;
    const float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    for (long c = lane * K; c < C; c += 32 * K) {
      const E xv = E::load(xi + c), rv = E::load(ri + c);
      E sv;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const float kept =
            p == 0.0f ? xv.v[k]
                      : (counter_uniform(key, static_cast<std::uint64_t>(row * C + c + k)) >= p ? xv.v[k] * keep_scale
                                                                                                : 0.0f);
        sv.v[k] = to_f(from_f<T>(rv.v[k] + kept));  // normalised as stored
      }
      sv.store(si + c);
    }
    __syncwarp();
    src = si;
  }
  float s = 0.0f;
  for (long c = lane * K; c < C; c += 32 * K) {
    const E v = E::load(src + c);
#pragma unroll
    for (int k = 0; k < K; ++k) s += v.v[k];
  }
  const float m = warp_sum(s) / static_cast<float>(C);
  float var = 0.0f;
  for (long c = lane * K; c < C; c += 32 * K) {
    const E v = E::load(src + c);
#pragma unroll
    for (int k = 0; k < K; ++k) var += (v.v[k] - m) * (v.v[k] - m);
  }
  const float r = 1.0f / sqrtf(warp_sum(var) / static_cast<float>(C) + kEps);
  T* oi = out + row * C;
  for (long c = lane * K; c < C; c += 32 * K) {
    const E v = E::load(src + c), wv = E::load(w + c), bv = E::load(b + c);
    E o;
#pragma unroll
    for (int k = 0; k < K; ++k) o.v[k] = (v.v[k] - m) * r * wv.v[k] + bv.v[k];
    o.store(oi + c);
  }
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

/** dx += rstd (g - mean(g) - xhat mean(g xhat)), g = dout w: one row per warp, K elements a lane at a time. */
template <class T, int K>
__global__ void layernorm_dx_kernel(T* dx, const T* dout, const T* x, const T* w, const float* mean, const float* rstd,
                                    long N, long C) {
  using E = Elements<T, K>;
  const long row = blockIdx.x * static_cast<long>(kWarps) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* di = dout + row * C;
  const T* xi = x + row * C;
  const float m = mean[row], r = rstd[row];
  float sg = 0.0f, sgx = 0.0f;
  for (long c = lane * K; c < C; c += 32 * K) {
    const E d = E::load(di + c), xv = E::load(xi + c), wv = E::load(w + c);
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const float g = d.v[k] * wv.v[k];
      sg += g;
      sgx += g * (xv.v[k] - m) * r;
    }
  }
  const float mg = warp_sum(sg) / static_cast<float>(C), mgx = warp_sum(sgx) / static_cast<float>(C);
  T* dxi = dx + row * C;
  for (long c = lane * K; c < C; c += 32 * K) {
    const E d = E::load(di + c), xv = E::load(xi + c), wv = E::load(w + c);
    E o = E::load(dxi + c);
#pragma unroll
    for (int k = 0; k < K; ++k) o.v[k] += r * (d.v[k] * wv.v[k] - mg - (xv.v[k] - m) * r * mgx);
    o.store(dxi + c);
  }
}

/** partial[k][0..C) and partial[k][C..2C): dw and db summed over row block k, one column a thread. */
template <class T>
__global__ void layernorm_dwdb_partial_kernel(float* partial, const T* dout, const T* x, const float* mean,
                                              const float* rstd, long N, long C) {
  const long c = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const long r0 = blockIdx.y * static_cast<long>(kRowsPerPartial);
  const long r1 = r0 + kRowsPerPartial < N ? r0 + kRowsPerPartial : N;
  float dw = 0.0f, db = 0.0f;
  for (long r = r0; r < r1; ++r) {
    const float d = to_f(dout[r * C + c]);
    dw += d * (to_f(x[r * C + c]) - mean[r]) * rstd[r];
    db += d;
  }
  partial[blockIdx.y * 2 * C + c] = dw;
  partial[blockIdx.y * 2 * C + C + c] = db;
}

__global__ void layernorm_dwdb_finish_kernel(float* dw, float* db, const float* partial, long blocks, long C) {
  const long c = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  float sw = 0.0f, sb = 0.0f;
  for (long k = 0; k < blocks; ++k) {
    sw += partial[k * 2 * C + c];
    sb += partial[k * 2 * C + C + c];
  }
  dw[c] += sw;
  db[c] += sb;
}

unsigned row_blocks(long N) {
  return static_cast<unsigned>((N + kWarps - 1) / kWarps);
}

/** Runs f with K = 16-byte packs of T when every row pointer allows them, else K = 1. */
template <class T, class F>
void with_width(long C, std::initializer_list<const void*> ptrs, F&& f) {
  if (packable(static_cast<std::size_t>(C), sizeof(T), ptrs))
    f(std::integral_constant<int, Pack<T>::kSize>{});
  else
    f(std::integral_constant<int, 1>{});
}

}  // namespace

void layernorm_forward(void* out, float* mean, float* rstd, const void* x, const void* w, const void* b, long N, long C,
                       DType t, cudaStream_t s) {
  FSDP_DISPATCH(t, T, with_width<T>(C, {out, x, w, b}, [&](auto k) {
                  layernorm_kernel<T, decltype(k)::value><<<row_blocks(N), kWarps * 32, 0, s>>>(
                      static_cast<T*>(out), mean, rstd, nullptr, nullptr, static_cast<const T*>(x), 0.0f, 0,
                      static_cast<const T*>(w), static_cast<const T*>(b), N, C);
                }));
  check_launch("layernorm_forward");
}

void residual_layernorm_forward(void* sum, void* out, float* mean, float* rstd, const void* residual, const void* x,
                                float p, std::uint64_t key, const void* w, const void* b, long N, long C, DType t,
                                cudaStream_t s) {
  FSDP_DISPATCH(t, T, with_width<T>(C, {sum, out, residual, x, w, b}, [&](auto k) {
                  layernorm_kernel<T, decltype(k)::value><<<row_blocks(N), kWarps * 32, 0, s>>>(
                      static_cast<T*>(out), mean, rstd, static_cast<T*>(sum), static_cast<const T*>(residual),
                      static_cast<const T*>(x), p, key, static_cast<const T*>(w), static_cast<const T*>(b), N, C);
                }));
  check_launch("residual_layernorm_forward");
}

std::size_t layernorm_backward_scratch(long N, long C) {
  return static_cast<std::size_t>((N + kRowsPerPartial - 1) / kRowsPerPartial) * 2 * C;
}

void layernorm_backward(void* dx, float* dw, float* db, const void* dout, const void* x, const void* w,
                        const float* mean, const float* rstd, long N, long C, DType t, float* scratch, cudaStream_t s) {
  const long blocks = (N + kRowsPerPartial - 1) / kRowsPerPartial;
  const unsigned col_blocks = static_cast<unsigned>((C + 127) / 128);
  FSDP_DISPATCH(t, T,
                with_width<T>(C, {dx, dout, x, w},
                              [&](auto k) {
                                layernorm_dx_kernel<T, decltype(k)::value><<<row_blocks(N), kWarps * 32, 0, s>>>(
                                    static_cast<T*>(dx), static_cast<const T*>(dout), static_cast<const T*>(x),
                                    static_cast<const T*>(w), mean, rstd, N, C);
                              });
                layernorm_dwdb_partial_kernel<T><<<dim3(col_blocks, static_cast<unsigned>(blocks)), 128, 0, s>>>(
                    scratch, static_cast<const T*>(dout), static_cast<const T*>(x), mean, rstd, N, C));
  check_launch("layernorm_backward");
  layernorm_dwdb_finish_kernel<<<col_blocks, 128, 0, s>>>(dw, db, scratch, blocks, C);
  check_launch("layernorm_backward (dw, db)");
}

}  // namespace fsdp::cuda
