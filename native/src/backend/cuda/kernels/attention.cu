// Causal multi-head attention without the T×T matrix. bfloat16 and float16 run on tensor cores
// (flash_forward.cu, flash_backward.cu) wherever the tensors are 16-byte aligned; this file holds
// the entry points, the delta kernel, and the float32 kernels on CUDA cores (the FlashAttention-2
// algorithm): forward streams key/value tiles through shared memory with an online softmax and
// keeps only each row's log-sum-exp; backward recomputes the probabilities tile by tile, once for
// dK and dV (a thread per key) and once for dQ (a thread per query), so every gradient is a sum in
// a fixed order with no atomics. Accumulation in float32 for every dtype. Head sizes are template
// arguments (registers hold a row), compiled for 32, 64 and 128.
//
// Layout: qkv[B*T, 3C] with head h's q at columns h*hs, k at C + h*hs, v at 2C + h*hs;
// y[B*T, C] at h*hs; lse and delta [B, H, T].
#include <atomic>
#include <cmath>

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "backend/cuda/kernels/attention_path.h"

namespace fsdp::cuda {

namespace {

constexpr int kQueryRows = 64;  // forward and dQ: queries per block (a thread each)
constexpr int kKeyRows = 32;    // keys per shared-memory tile
constexpr int kKeyBlock = 32;   // dK/dV: keys per block (a thread each)
constexpr int kQueryTile = 32;  // dK/dV: queries per shared-memory tile

struct Shape {
  long B, T, C, H;
  float scale;  // 1 / sqrt(head size)
};

/**
 * Rows r0 .. r0 + rows of one head's slice of a row-major tensor into shared memory as float32:
 * dst[j * stride + i] = src[(r0 + j) * row_stride + col + i], zero past the sequence's end.
 */
template <class T, int HS>
__device__ __forceinline__ void load_rows(float* dst, int stride, const T* src, long row_stride, long col, long r0,
                                          int rows, long T_) {
  for (int e = threadIdx.x; e < rows * HS; e += blockDim.x) {
    const long r = r0 + e / HS;
    const int i = e % HS;
    dst[(e / HS) * stride + i] = r < T_ ? to_f(src[r * row_stride + col + i]) : 0.0f;
  }
}

template <class T, int HS>
__global__ void forward_kernel(T* y, float* lse, const T* qkv, Shape sh, bool given_lse) {
  extern __shared__ float smem[];
  float* Ks = smem;                  // [kKeyRows][HS]
  float* Vs = smem + kKeyRows * HS;  // [kKeyRows][HS]
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long q0 = blockIdx.x * static_cast<long>(kQueryRows);
  const long t = q0 + threadIdx.x;
  const long C3 = 3 * sh.C;
  const T* base = qkv + b * sh.T * C3;
  const bool active = t < sh.T;

  float q[HS], o[HS];
  float m = -INFINITY, l = 0.0f;
  if (active) {
#pragma unroll
    for (int i = 0; i < HS; ++i) {
      q[i] = to_f(base[t * C3 + h * HS + i]) * sh.scale;
      o[i] = 0.0f;
    }
    if (given_lse) m = lse[bh * sh.T + t], l = 1.0f;
  }
  const long last = (q0 + kQueryRows < sh.T ? q0 + kQueryRows : sh.T) - 1;
  for (long k0 = 0; k0 <= last; k0 += kKeyRows) {
    __syncthreads();
    load_rows<T, HS>(Ks, HS, base, C3, sh.C + h * HS, k0, kKeyRows, sh.T);
    load_rows<T, HS>(Vs, HS, base, C3, 2 * sh.C + h * HS, k0, kKeyRows, sh.T);
    __syncthreads();
    if (!active || k0 > t) continue;
    const int n = static_cast<int>(t - k0 + 1 < kKeyRows ? t - k0 + 1 : kKeyRows);
    // Key by key: the running maximum m and sum l rescale o only when the maximum grows.
#pragma unroll 1
    for (int u = 0; u < n; ++u) {
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < HS; ++i) s += q[i] * Ks[u * HS + i];
      if (!given_lse && s > m) {
        const float correction = expf(m - s);  // 0 for the first key (m = -inf)
        l *= correction;
#pragma unroll
        for (int i = 0; i < HS; ++i) o[i] *= correction;
        m = s;
      }
      const float p = expf(s - m);
      if (!given_lse) l += p;
      if (y) {
#pragma unroll
        for (int i = 0; i < HS; ++i) o[i] += p * Vs[u * HS + i];
      }
    }
  }
  if (!active) return;
  if (!given_lse) lse[bh * sh.T + t] = m + logf(l);
  if (y) {
    const float inv = 1.0f / l;
    T* yr = y + (b * sh.T + t) * sh.C + h * HS;
#pragma unroll
    for (int i = 0; i < HS; ++i) yr[i] = from_f<T>(o[i] * inv);
  }
}

/** delta[b, h, t] = sum_i dy[i] y[i] over the head's channels: a warp per (row, head). */
template <class T>
__global__ void delta_kernel(float* delta, const T* dy, const T* y, Shape sh, int hs) {
  const long w = (blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  const long rows = sh.B * sh.T * sh.H;
  if (w >= rows) return;
  const long h = w % sh.H, bt = w / sh.H;  // bt = b*T + t
  const T* a = dy + bt * sh.C + h * hs;
  const T* c = y + bt * sh.C + h * hs;
  float acc = 0.0f;
  for (int i = lane; i < hs; i += 32) acc += to_f(a[i]) * to_f(c[i]);
  acc = warp_sum(acc);
  const long b = bt / sh.T, t = bt % sh.T;
  if (lane == 0) delta[(b * sh.H + h) * sh.T + t] = acc;
}

/**
 * The same with 16-byte packs: G = hs / K lanes per (row, head), each summing one pack of K
 * channels at a time, then the G partial sums added by shuffles in a fixed order.
 */
template <class T>
__global__ void delta_pack_kernel(float* delta, const T* dy, const T* y, Shape sh, int hs) {
  constexpr int K = Pack<T>::kSize;
  const int G = hs / K < 32 ? hs / K : 32;  // lanes per (row, head): a power of two
  const long item = (blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x) / G;
  const int part = threadIdx.x % G;
  const long rows = sh.B * sh.T * sh.H;
  const long h = item % sh.H, bt = item / sh.H;
  float acc = 0.0f;
  if (item < rows) {
    for (int i = part * K; i < hs; i += G * K) {
      const Pack<T> a = Pack<T>::load(dy + bt * sh.C + h * hs + i), c = Pack<T>::load(y + bt * sh.C + h * hs + i);
#pragma unroll
      for (int k = 0; k < K; ++k) acc += to_f(a.v[k]) * to_f(c.v[k]);
    }
  }
  for (int o = G / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (item < rows && part == 0) delta[(bt / sh.T * sh.H + h) * sh.T + bt % sh.T] = acc;
}

/** dK and dV: a thread per key u, visiting every query t >= u in tiles. */
template <class T, int HS>
__global__ void dkdv_kernel(T* dqkv, const T* dy, const T* qkv, const float* lse, const float* delta, Shape sh) {
  extern __shared__ float smem[];
  constexpr int P = HS + 1;          // padded rows: thread u reads row u conflict-free
  float* Ks = smem;                  // [kKeyBlock][P]
  float* Vs = Ks + kKeyBlock * P;    // [kKeyBlock][P]
  float* Qs = Vs + kKeyBlock * P;    // [kQueryTile][HS]
  float* Ds = Qs + kQueryTile * HS;  // [kQueryTile][HS] dO
  float* Ls = Ds + kQueryTile * HS;  // [kQueryTile] lse
  float* Es = Ls + kQueryTile;       // [kQueryTile] delta
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long k0 = blockIdx.x * static_cast<long>(kKeyBlock);
  const long u = k0 + threadIdx.x;
  const long C3 = 3 * sh.C;
  const T* base = qkv + b * sh.T * C3;
  const T* dyb = dy + b * sh.T * sh.C;

  load_rows<T, HS>(Ks, P, base, C3, sh.C + h * HS, k0, kKeyBlock, sh.T);
  load_rows<T, HS>(Vs, P, base, C3, 2 * sh.C + h * HS, k0, kKeyBlock, sh.T);
  float dk[HS], dv[HS];
#pragma unroll
  for (int i = 0; i < HS; ++i) dk[i] = dv[i] = 0.0f;
  const float* kr = Ks + threadIdx.x * P;
  const float* vr = Vs + threadIdx.x * P;

  for (long t0 = (k0 / kQueryTile) * kQueryTile; t0 < sh.T; t0 += kQueryTile) {
    __syncthreads();
    load_rows<T, HS>(Qs, HS, base, C3, h * HS, t0, kQueryTile, sh.T);
    load_rows<T, HS>(Ds, HS, dyb, sh.C, h * HS, t0, kQueryTile, sh.T);
    for (int e = threadIdx.x; e < kQueryTile; e += blockDim.x) {
      const long t = t0 + e;
      Ls[e] = t < sh.T ? lse[bh * sh.T + t] : 0.0f;
      Es[e] = t < sh.T ? delta[bh * sh.T + t] : 0.0f;
    }
    __syncthreads();
    if (u >= sh.T) continue;
#pragma unroll 1
    for (int j = 0; j < kQueryTile; ++j) {
      const long t = t0 + j;
      if (t < u || t >= sh.T) continue;
      const float* qj = Qs + j * HS;
      const float* dj = Ds + j * HS;
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int i = 0; i < HS; ++i) {
        s += qj[i] * kr[i];
        dp += dj[i] * vr[i];
      }
      const float p = expf(s * sh.scale - Ls[j]);
      const float ds = p * (dp - Es[j]) * sh.scale;
#pragma unroll
      for (int i = 0; i < HS; ++i) {
        dv[i] += p * dj[i];
        dk[i] += ds * qj[i];
      }
    }
  }
  if (u >= sh.T) return;
  T* row = dqkv + (b * sh.T + u) * C3;
#pragma unroll
  for (int i = 0; i < HS; ++i) {
    row[sh.C + h * HS + i] = from_f<T>(dk[i]);
    row[2 * sh.C + h * HS + i] = from_f<T>(dv[i]);
  }
}

/** dQ: a thread per query t, visiting every key u <= t in tiles. */
template <class T, int HS>
__global__ void dq_kernel(T* dqkv, const T* dy, const T* qkv, const float* lse, const float* delta, Shape sh) {
  extern __shared__ float smem[];
  constexpr int P = HS + 1;
  float* Qs = smem;                 // [kQueryRows][P] own rows
  float* Ds = Qs + kQueryRows * P;  // [kQueryRows][P] dO rows
  float* Ks = Ds + kQueryRows * P;  // [kKeyRows][HS]
  float* Vs = Ks + kKeyRows * HS;   // [kKeyRows][HS]
  const long bh = blockIdx.y, b = bh / sh.H, h = bh % sh.H;
  const long q0 = blockIdx.x * static_cast<long>(kQueryRows);
  const long t = q0 + threadIdx.x;
  const long C3 = 3 * sh.C;
  const T* base = qkv + b * sh.T * C3;
  const T* dyb = dy + b * sh.T * sh.C;
  load_rows<T, HS>(Qs, P, base, C3, h * HS, q0, kQueryRows, sh.T);
  load_rows<T, HS>(Ds, P, dyb, sh.C, h * HS, q0, kQueryRows, sh.T);
  const bool active = t < sh.T;
  const float L = active ? lse[bh * sh.T + t] : 0.0f, E = active ? delta[bh * sh.T + t] : 0.0f;
  float dq[HS];
#pragma unroll
  for (int i = 0; i < HS; ++i) dq[i] = 0.0f;
  const float* qr = Qs + threadIdx.x * P;
  const float* dr = Ds + threadIdx.x * P;
  const long last = (q0 + kQueryRows < sh.T ? q0 + kQueryRows : sh.T) - 1;
  for (long k0 = 0; k0 <= last; k0 += kKeyRows) {
    __syncthreads();
    load_rows<T, HS>(Ks, HS, base, C3, sh.C + h * HS, k0, kKeyRows, sh.T);
    load_rows<T, HS>(Vs, HS, base, C3, 2 * sh.C + h * HS, k0, kKeyRows, sh.T);
    __syncthreads();
    if (!active || k0 > t) continue;
    const int n = static_cast<int>(t - k0 + 1 < kKeyRows ? t - k0 + 1 : kKeyRows);
#pragma unroll 1
    for (int j = 0; j < n; ++j) {
      const float* kj = Ks + j * HS;
      const float* vj = Vs + j * HS;
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int i = 0; i < HS; ++i) {
        s += qr[i] * kj[i];
        dp += dr[i] * vj[i];
      }
      const float p = expf(s * sh.scale - L);
      const float ds = p * (dp - E) * sh.scale;
#pragma unroll
      for (int i = 0; i < HS; ++i) dq[i] += ds * kj[i];
    }
  }
  if (!active) return;
  T* row = dqkv + (b * sh.T + t) * C3 + h * HS;
#pragma unroll
  for (int i = 0; i < HS; ++i) row[i] = from_f<T>(dq[i]);
}

Shape shape_of(long B, long T, long C, long H) {
  return {B, T, C, H, 1.0f / std::sqrt(static_cast<float>(C / H))};
}

/** Raises a kernel's dynamic shared-memory limit once (above 48 KB needs the opt-in). */
template <class K>
void allow_shared(K kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
}

template <class T, int HS>
void forward(void* y, float* lse, const void* qkv, const Shape& sh, bool given_lse, cudaStream_t s) {
  const std::size_t bytes = sizeof(float) * 2 * kKeyRows * HS;
  allow_shared(forward_kernel<T, HS>, bytes);
  const dim3 grid(static_cast<unsigned>((sh.T + kQueryRows - 1) / kQueryRows), static_cast<unsigned>(sh.B * sh.H));
  forward_kernel<T, HS>
      <<<grid, kQueryRows, bytes, s>>>(static_cast<T*>(y), lse, static_cast<const T*>(qkv), sh, given_lse);
}

template <class T, int HS>
void backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta, const Shape& sh,
              cudaStream_t s) {
  const std::size_t kv_bytes = sizeof(float) * (2 * kKeyBlock * (HS + 1) + 2 * kQueryTile * HS + 2 * kQueryTile);
  allow_shared(dkdv_kernel<T, HS>, kv_bytes);
  dkdv_kernel<T, HS>
      <<<dim3(static_cast<unsigned>((sh.T + kKeyBlock - 1) / kKeyBlock), static_cast<unsigned>(sh.B * sh.H)), kKeyBlock,
         kv_bytes, s>>>(static_cast<T*>(dqkv), static_cast<const T*>(dy), static_cast<const T*>(qkv), lse, delta, sh);
  check_launch("attention_backward (dK, dV)");
  const std::size_t q_bytes = sizeof(float) * (2 * kQueryRows * (HS + 1) + 2 * kKeyRows * HS);
  allow_shared(dq_kernel<T, HS>, q_bytes);
  dq_kernel<T, HS>
      <<<dim3(static_cast<unsigned>((sh.T + kQueryRows - 1) / kQueryRows), static_cast<unsigned>(sh.B * sh.H)),
         kQueryRows, q_bytes, s>>>(static_cast<T*>(dqkv), static_cast<const T*>(dy), static_cast<const T*>(qkv), lse,
                                   delta, sh);
}

/** Calls F<HS>() for the head size; false when none is compiled. */
template <class F>
bool with_head_size(long hs, F&& f) {
  switch (hs) {
    case 32:
      f(std::integral_constant<int, 32>{});
      return true;
    case 64:
      f(std::integral_constant<int, 64>{});
      return true;
    case 128:
      f(std::integral_constant<int, 128>{});
      return true;
    default:
      return false;
  }
}

std::atomic<unsigned long long> tensor_core_calls{0}, cuda_core_calls{0};

/** Whether a call goes to the tensor-core kernels (attention_path.h's rule), counted per path so a fallback shows. */
bool on_tensor_cores(DType t, long C, long H, long B, std::initializer_list<const void*> ptrs) {
  const bool tensor_cores = attention_path(t, C, H, B, ptrs).path == AttentionPath::tensor_cores;
  (tensor_cores ? tensor_core_calls : cuda_core_calls).fetch_add(1, std::memory_order_relaxed);
  return tensor_cores;
}

void unsupported(long hs) {
  throw std::invalid_argument("cuda attention: head size " + std::to_string(hs) +
                              " (d_model / n_heads) is not compiled; supported: 32, 64, 128");
}

}  // namespace

bool attention_supports(long head_size) {
  return head_size == 32 || head_size == 64 || head_size == 128;
}

AttentionCalls attention_calls() {
  return {tensor_core_calls.load(), cuda_core_calls.load()};
}

void attention_forward(void* y, float* lse, const void* qkv, long B, long T, long C, long H, bool given_lse, DType t,
                       cudaStream_t s) {
  if (on_tensor_cores(t, C, H, B, {y, qkv})) return flash_attention_forward(y, lse, qkv, B, T, C, H, given_lse, t, s);
  const Shape sh = shape_of(B, T, C, H);
  FSDP_DISPATCH(t, E, if (!with_head_size(C / H, [&](auto hs) {
                            forward<E, decltype(hs)::value>(y, lse, qkv, sh, given_lse, s);
                          })) unsupported(C / H));
  check_launch("attention_forward");
}

void attention_backward_delta(float* delta, const void* dy, const void* y, long B, long T, long C, long H, DType t,
                              cudaStream_t s) {
  const Shape sh = shape_of(B, T, C, H);
  const long hs = C / H;
  FSDP_DISPATCH(
      t, E, const long lanes = hs / Pack<E>::kSize < 32 ? hs / Pack<E>::kSize : 32;
      if (hs % Pack<E>::kSize == 0 && (lanes & (lanes - 1)) == 0 &&
          packable(static_cast<std::size_t>(C), sizeof(E), {dy, y})) {
        const std::size_t threads = static_cast<std::size_t>(B * T * H) * static_cast<std::size_t>(lanes);
        delta_pack_kernel<E><<<blocks_for(threads, 256, 1u << 30), 256, 0, s>>>(
            delta, static_cast<const E*>(dy), static_cast<const E*>(y), sh, static_cast<int>(hs));
      } else {
        const std::size_t threads = static_cast<std::size_t>(B * T * H) * 32;
        delta_kernel<E><<<blocks_for(threads, 256, 1u << 30), 256, 0, s>>>(
            delta, static_cast<const E*>(dy), static_cast<const E*>(y), sh, static_cast<int>(hs));
      });
  check_launch("attention_backward_delta");
}

void attention_backward(void* dqkv, const void* dy, const void* qkv, const float* lse, const float* delta, long B,
                        long T, long C, long H, DType t, cudaStream_t s) {
  if (on_tensor_cores(t, C, H, B, {dqkv, dy, qkv}))
    return flash_attention_backward(dqkv, dy, qkv, lse, delta, B, T, C, H, t, s);
  const Shape sh = shape_of(B, T, C, H);
  FSDP_DISPATCH(t, E, if (!with_head_size(C / H, [&](auto hs) {
                            backward<E, decltype(hs)::value>(dqkv, dy, qkv, lse, delta, sh, s);
                          })) unsupported(C / H));
  check_launch("attention_backward (dQ)");
}

}  // namespace fsdp::cuda
