// Elementwise kernels: casts, fills, GELU, dropout (+ residual), bias epilogues and the bias
// gradient. Each has a 16-byte vector path (8 bfloat16 or 4 float32 a load) where the pointers
// and the length allow it, and a scalar path otherwise.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"
#include "runtime/rng.h"

namespace fsdp::cuda {

namespace {

constexpr unsigned kThreads = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

__device__ __forceinline__ float gelu_grad(float x) {
  const float th = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}

/** Grid-stride loop over packs of T, with the op applied per element index and value. */
template <class T, class Op>
__global__ void pack_kernel(std::size_t packs, Op op) {
  for (std::size_t p = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; p < packs;
       p += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    op(p * Pack<T>::kSize);
}

template <class Op>
__global__ void scalar_kernel(std::size_t n, Op op) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    op(i);
}

/** Four elements of T as one 8- or 16-byte store. */
template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

/** dst = src in packs of four (one 16-byte load, one 8-byte store for the 16-bit types): the masters' cast to the
 * compute copy. */
template <class T>
__global__ void cast4_kernel(Four<T>* dst, const float4* src, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = src[i];
    dst[i] = Four<T>{{from_f<T>(x.x), from_f<T>(x.y), from_f<T>(x.z), from_f<T>(x.w)}};
  }
}

template <class T>
__global__ void cast_kernel(T* dst, const float* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] = from_f<T>(src[i]);
}

template <class T>
struct GeluForward {
  T* out;
  const T* in;
  __device__ void operator()(std::size_t i) const {
    const Pack<T> x = Pack<T>::load(in + i);
    Pack<T> y;
#pragma unroll
    for (int k = 0; k < Pack<T>::kSize; ++k) y.v[k] = from_f<T>(gelu(to_f(x.v[k])));
    y.store(out + i);
  }
};

template <class T>
struct GeluBackward {
  T* d;
  const T* in;
  __device__ void operator()(std::size_t i) const {
    const Pack<T> x = Pack<T>::load(in + i);
    Pack<T> g = Pack<T>::load(d + i);
#pragma unroll
    for (int k = 0; k < Pack<T>::kSize; ++k) g.v[k] = from_f<T>(to_f(g.v[k]) * gelu_grad(to_f(x.v[k])));
    g.store(d + i);
  }
};

/** out = residual + mask(x) (residual may be null: plain dropout), masks from counter_uniform. */
template <class T>
struct DropoutPack {
  T* out;
  const T* residual;
  const T* x;
  float p, keep_scale;
  std::uint64_t key;
  __device__ void operator()(std::size_t i) const {
    const Pack<T> xv = Pack<T>::load(x + i);
    Pack<T> r;
    if (residual) r = Pack<T>::load(residual + i);
    Pack<T> o;
#pragma unroll
    for (int k = 0; k < Pack<T>::kSize; ++k) {
      const float kept =
          p == 0.0f ? to_f(xv.v[k]) : (counter_uniform(key, i + k) >= p ? to_f(xv.v[k]) * keep_scale : 0.0f);
      o.v[k] = from_f<T>((residual ? to_f(r.v[k]) : 0.0f) + kept);
    }
    o.store(out + i);
  }
};

template <class T>
struct DropoutScalar {
  T* out;
  const T* residual;
  const T* x;
  float p, keep_scale;
  std::uint64_t key;
  __device__ void operator()(std::size_t i) const {
    const float xv = to_f(x[i]);
    const float kept = p == 0.0f ? xv : (counter_uniform(key, i) >= p ? xv * keep_scale : 0.0f);
    out[i] = from_f<T>((residual ? to_f(residual[i]) : 0.0f) + kept);
  }
};

template <class T>
void run_dropout(void* out, const void* residual, const void* x, std::size_t n, float p, std::uint64_t key,
                 cudaStream_t s) {
  const float keep_scale = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
  if (packable(n, sizeof(T), {out, residual, x})) {
    const std::size_t packs = n / Pack<T>::kSize;
    pack_kernel<T><<<blocks_for(packs, kThreads), kThreads, 0, s>>>(
        packs, DropoutPack<T>{static_cast<T*>(out), static_cast<const T*>(residual), static_cast<const T*>(x), p,
                              keep_scale, key});
  } else {
    scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(
        n, DropoutScalar<T>{static_cast<T*>(out), static_cast<const T*>(residual), static_cast<const T*>(x), p,
                            keep_scale, key});
  }
  check_launch("dropout");
}

template <class T>
__global__ void bias_act_kernel(T* out, T* gelu_pre, const float* b, long N, long O) {
  const std::size_t n = static_cast<std::size_t>(N) * O;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = to_f(out[i]) + (b ? b[i % O] : 0.0f);
    if (gelu_pre) {
      gelu_pre[i] = from_f<T>(v);
      out[i] = from_f<T>(gelu(to_f(from_f<T>(v))));  // GELU of the stored (rounded) pre-activation, as the unfused path
    } else {
      out[i] = from_f<T>(v);
    }
  }
}

// Bias gradient: block (x, y) sums rows y*R .. of its columns; then one pass adds the row-block
// partials in order. Deterministic for any N. Where the rows allow, a thread reads 16 bytes (a pack
// of 8 bfloat16 or 4 float32 columns) per row, so a warp reads whole 512-byte row segments.
constexpr int kBiasRows = 256;

template <class T>
__global__ void bias_partial_kernel(float* partial, const T* dout, long N, long O) {
  const long col = blockIdx.x * 32L + threadIdx.x;
  const long r0 = blockIdx.y * static_cast<long>(kBiasRows);
  __shared__ float acc[8][33];
  float sum = 0.0f;
  if (col < O) {
    for (long r = r0 + threadIdx.y; r < r0 + kBiasRows && r < N; r += blockDim.y) sum += to_f(dout[r * O + col]);
  }
  acc[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < O) {
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += acc[k][threadIdx.x];
    partial[blockIdx.y * O + col] = total;
  }
}

/** As bias_partial_kernel, a pack of K columns a thread: 32 x K columns a block (O a multiple of K, rows 16-byte
 * aligned). */
template <class T>
__global__ void bias_partial_pack_kernel(float* partial, const T* dout, long N, long O) {
  constexpr int K = Pack<T>::kSize;
  const long col = (blockIdx.x * 32L + threadIdx.x) * K;
  const long r0 = blockIdx.y * static_cast<long>(kBiasRows);
  __shared__ float acc[8][32 * K + 1];
  float sum[K] = {};
  if (col < O) {
    for (long r = r0 + threadIdx.y; r < r0 + kBiasRows && r < N; r += blockDim.y) {
      const Pack<T> d = Pack<T>::load(dout + r * O + col);
#pragma unroll
      for (int k = 0; k < K; ++k) sum[k] += to_f(d.v[k]);
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) acc[threadIdx.y][threadIdx.x * K + k] = sum[k];
  __syncthreads();
  // 256 threads sum the 32 K columns over the 8 row groups, in group order.
  for (int c = threadIdx.y * 32 + threadIdx.x; c < 32 * K; c += 256) {
    const long out_col = blockIdx.x * 32L * K + c;
    if (out_col >= O) continue;
    float total = 0.0f;
    for (int k = 0; k < 8; ++k) total += acc[k][c];
    partial[blockIdx.y * O + out_col] = total;
  }
}

__global__ void bias_finish_kernel(float* db, const float* partial, long row_blocks, long O) {
  const long col = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (col >= O) return;
  float total = 0.0f;
  for (long k = 0; k < row_blocks; ++k) total += partial[k * O + col];
  db[col] += total;
}

}  // namespace

void cast_from_f32(void* dst, DType t, const float* src, std::size_t n, cudaStream_t s) {
  FSDP_DISPATCH(
      t, T,
      if (n % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
          reinterpret_cast<std::uintptr_t>(dst) % (4 * sizeof(T)) == 0) {
        cast4_kernel<T><<<blocks_for(n / 4, kThreads), kThreads, 0, s>>>(static_cast<Four<T>*>(dst),
                                                                         reinterpret_cast<const float4*>(src), n / 4);
      } else { cast_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, s>>>(static_cast<T*>(dst), src, n); });
  check_launch("cast_from_f32");
}

void copy_rows(void* dst, long dst_ld, DType dst_t, const void* src, long src_ld, DType src_t, long N, long cols,
               cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(N) * static_cast<std::size_t>(cols);
  FSDP_DISPATCH(
      dst_t, D,
      FSDP_DISPATCH(src_t, S, D* d = static_cast<D*>(dst); const S* x = static_cast<const S*>(src);
                    scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(n, [=] __device__(std::size_t i) {
                      const long r = static_cast<long>(i / cols), c = static_cast<long>(i % cols);
                      d[r * dst_ld + c] = from_f<D>(to_f(x[r * src_ld + c]));
                    });));
  check_launch("copy_rows");
}

void scale(void* x, DType t, std::size_t n, float factor, cudaStream_t s) {
  FSDP_DISPATCH(t, T, T* p = static_cast<T*>(x); scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(
                    n, [=] __device__(std::size_t i) { p[i] = from_f<T>(to_f(p[i]) * factor); }););
  check_launch("scale");
}

void add_to(float* dst, const float* src, std::size_t n, cudaStream_t s) {
  scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(n, [=] __device__(std::size_t i) { dst[i] += src[i]; });
  check_launch("add_to");
}

void fill(float* x, std::size_t n, float value, cudaStream_t s) {
  scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(n, [=] __device__(std::size_t i) { x[i] = value; });
  check_launch("fill");
}

void set_element(void* x, DType t, std::size_t index, float value, cudaStream_t s) {
  FSDP_DISPATCH(t, T, T* p = static_cast<T*>(x) + index;
                scalar_kernel<<<1, 32, 0, s>>>(1, [=] __device__(std::size_t) { *p = from_f<T>(value); }););
  check_launch("set_element");
}

void gelu_forward(void* out, const void* in, std::size_t n, DType t, cudaStream_t s) {
  FSDP_DISPATCH(
      t, T, T* o = static_cast<T*>(out); const T* x = static_cast<const T*>(in);
      if (packable(n, sizeof(T), {out, in})) {
        const std::size_t packs = n / Pack<T>::kSize;
        pack_kernel<T><<<blocks_for(packs, kThreads), kThreads, 0, s>>>(packs, GeluForward<T>{o, x});
      } else {
        scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(
            n, [=] __device__(std::size_t i) { o[i] = from_f<T>(gelu(to_f(x[i]))); });
      });
  check_launch("gelu_forward");
}

void gelu_backward(void* d, const void* in, std::size_t n, DType t, cudaStream_t s) {
  FSDP_DISPATCH(
      t, T, T* g = static_cast<T*>(d); const T* x = static_cast<const T*>(in); if (packable(n, sizeof(T), {d, in})) {
        const std::size_t packs = n / Pack<T>::kSize;
        pack_kernel<T><<<blocks_for(packs, kThreads), kThreads, 0, s>>>(packs, GeluBackward<T>{g, x});
      } else {
        scalar_kernel<<<blocks_for(n, kThreads), kThreads, 0, s>>>(
            n, [=] __device__(std::size_t i) { g[i] = from_f<T>(to_f(g[i]) * gelu_grad(to_f(x[i]))); });
      });
  check_launch("gelu_backward");
}

void dropout_residual(void* out, const void* residual, const void* x, std::size_t n, float p, std::uint64_t key,
                      DType t, cudaStream_t s) {
  FSDP_DISPATCH(t, T, run_dropout<T>(out, residual, x, n, p, key, s));
}

void dropout(void* out, const void* x, std::size_t n, float p, std::uint64_t key, DType t, cudaStream_t s) {
  FSDP_DISPATCH(t, T, run_dropout<T>(out, nullptr, x, n, p, key, s));
}

void bias_act(void* out, void* gelu_pre, const float* b, long N, long O, DType t, cudaStream_t s) {
  FSDP_DISPATCH(t, T,
                bias_act_kernel<T><<<blocks_for(static_cast<std::size_t>(N) * O, kThreads), kThreads, 0, s>>>(
                    static_cast<T*>(out), static_cast<T*>(gelu_pre), b, N, O););
  check_launch("bias_act");
}

std::size_t bias_backward_scratch(long N, long O) {
  return static_cast<std::size_t>((N + kBiasRows - 1) / kBiasRows) * O;
}

void bias_backward(float* db, const void* dout, DType dout_t, long N, long O, float* scratch, cudaStream_t s) {
  const long row_blocks = (N + kBiasRows - 1) / kBiasRows;
  FSDP_DISPATCH(
      dout_t, T,
      if (packable(static_cast<std::size_t>(O), sizeof(T), {dout})) {
        const long cols = 32L * Pack<T>::kSize;
        bias_partial_pack_kernel<T>
            <<<dim3(static_cast<unsigned>((O + cols - 1) / cols), static_cast<unsigned>(row_blocks)), dim3(32, 8), 0,
               s>>>(scratch, static_cast<const T*>(dout), N, O);
      } else {
        bias_partial_kernel<T>
            <<<dim3(static_cast<unsigned>((O + 31) / 32), static_cast<unsigned>(row_blocks)), dim3(32, 8), 0, s>>>(
                scratch, static_cast<const T*>(dout), N, O);
      });
  check_launch("bias_backward (partials)");
  bias_finish_kernel<<<static_cast<unsigned>((O + 255) / 256), 256, 0, s>>>(db, scratch, row_blocks, O);
  check_launch("bias_backward");
}

}  // namespace fsdp::cuda
