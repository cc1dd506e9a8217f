// Softmax cross-entropy. The classifier's fused pass (classifier_softmax_xent): logits in the
// compute dtype, rows padded to a multiple of 128, one pass for the log-sum-exp (online maximum and
// sum) and one that writes softmax - onehot in place, so backward is only the LM head's products.
// And the float32 pair the Backend interface keeps (softmax_xent_forward/backward), in place as on
// the CPU: forward turns a row into its probabilities and writes the loss (log-sum-exp minus the
// target's logit, finite even where the target's probability underflows); backward turns the
// probabilities into the logits' gradient. A block per row, 16-byte loads where the row allows.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace fsdp::cuda {

namespace {

constexpr int kThreads = 512;

__global__ void xent_forward_kernel(float* losses, float* logits, const std::int32_t* targets, long V) {
  __shared__ float shared[32];
  float* row = logits + blockIdx.x * V;
  const float target_logit = row[targets[blockIdx.x]];
  float m = -INFINITY;
  for (long v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, row[v]);
  m = block_max(m, shared);
  float sum = 0.0f;
  for (long v = threadIdx.x; v < V; v += blockDim.x) {
    const float e = expf(row[v] - m);
    row[v] = e;
    sum += e;
  }
  sum = block_sum(sum, shared);
  const float inv = 1.0f / sum;
  for (long v = threadIdx.x; v < V; v += blockDim.x) row[v] *= inv;
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(sum) + m - target_logit;
}

__global__ void xent_backward_kernel(float* probs, const std::int32_t* targets, long V, float scale, bool vector) {
  float* row = probs + blockIdx.x * V;
  const long target = targets[blockIdx.x];
  if (vector) {
    for (long v = threadIdx.x * 4L; v < V; v += blockDim.x * 4L) {
      float4 p = *reinterpret_cast<float4*>(row + v);
      p.x = (p.x - (v == target ? 1.0f : 0.0f)) * scale;
      p.y = (p.y - (v + 1 == target ? 1.0f : 0.0f)) * scale;
      p.z = (p.z - (v + 2 == target ? 1.0f : 0.0f)) * scale;
      p.w = (p.w - (v + 3 == target ? 1.0f : 0.0f)) * scale;
      *reinterpret_cast<float4*>(row + v) = p;
    }
  } else {
    for (long v = threadIdx.x; v < V; v += blockDim.x) row[v] = (row[v] - (v == target ? 1.0f : 0.0f)) * scale;
  }
}

/** (m, s): a maximum and the sum of exp(x - m) over some values; merged without forming inf - inf. */
struct Partial {
  float m = -INFINITY, s = 0.0f;
  __device__ void add(float x) {
    if (x > m) {
      s = s * expf(m - x) + 1.0f;  // 0 * exp(-inf) = 0 for the first value
      m = x;
    } else if (x != -INFINITY) {
      s += expf(x - m);  // a NaN x makes s NaN: the loss carries it
    }
  }
  __device__ void merge(float om, float os) {
    const float mm = fmaxf(m, om);
    if (mm == -INFINITY) return;
    s = s * expf(m - mm) + os * expf(om - mm);
    m = mm;
  }
};

template <class T>
__global__ void classifier_kernel(float* losses, T* logits, const std::int32_t* targets, long V, long ld) {
  __shared__ float shared_m[32], shared_s[32];
  T* row = logits + blockIdx.x * ld;
  constexpr int K = Pack<T>::kSize;
  Partial part;
  for (long v = threadIdx.x * static_cast<long>(K); v < V; v += static_cast<long>(blockDim.x) * K) {
    const Pack<T> x = Pack<T>::load(row + v);
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (v + k < V) part.add(to_f(x.v[k]));
  }
  for (int o = 16; o > 0; o >>= 1)
    part.merge(__shfl_xor_sync(0xffffffffu, part.m, o), __shfl_xor_sync(0xffffffffu, part.s, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared_m[warp] = part.m, shared_s[warp] = part.s;
  __syncthreads();
  Partial all;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w)
    all.merge(shared_m[w], shared_s[w]);  // every thread, in warp order
  const float lse = all.m + logf(all.s);
  const long target = targets[blockIdx.x];
  if (threadIdx.x == 0) losses[blockIdx.x] = lse - to_f(row[target]);
  __syncthreads();  // the target's logit is read before its pack is overwritten
  for (long v = threadIdx.x * static_cast<long>(K); v < ld; v += static_cast<long>(blockDim.x) * K) {
    Pack<T> x = Pack<T>::load(row + v);
#pragma unroll
    for (int k = 0; k < K; ++k)
      x.v[k] = from_f<T>(v + k < V ? expf(to_f(x.v[k]) - lse) - (v + k == target ? 1.0f : 0.0f) : 0.0f);
    x.store(row + v);
  }
}

}  // namespace

void classifier_softmax_xent(float* losses, void* logits, const std::int32_t* targets, long N, long V, long ld, DType t,
                             cudaStream_t s) {
  if (!packable(static_cast<std::size_t>(ld), dtype_bytes(t), {logits}) || ld < V) {
    throw std::invalid_argument("classifier_softmax_xent: rows of " + std::to_string(ld) +
                                " elements are not whole 16-byte packs at aligned addresses");
  }
  FSDP_DISPATCH(t, T,
                classifier_kernel<T>
                <<<static_cast<unsigned>(N), kThreads, 0, s>>>(losses, static_cast<T*>(logits), targets, V, ld));
  check_launch("classifier_softmax_xent");
}

void softmax_xent_forward(float* losses, float* logits, const std::int32_t* targets, long N, long V, cudaStream_t s) {
  xent_forward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(losses, logits, targets, V);
  check_launch("softmax_xent_forward");
}

void softmax_xent_backward(float* probs, const std::int32_t* targets, long N, long V, float scale, cudaStream_t s) {
  const bool vector = V % 4 == 0 && reinterpret_cast<std::uintptr_t>(probs) % 16 == 0;
  xent_backward_kernel<<<static_cast<unsigned>(N), kThreads, 0, s>>>(probs, targets, V, scale, vector);
  check_launch("softmax_xent_backward");
}

}  // namespace fsdp::cuda
