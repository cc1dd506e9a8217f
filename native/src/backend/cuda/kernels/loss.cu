// Softmax cross-entropy over float32 logits, in place as on the CPU: forward turns a row into its
// probabilities and writes the loss (log-sum-exp minus the target's logit, finite even where the
// target's probability underflows); backward turns the probabilities into the logits' gradient.
// A block per row, 16-byte loads where the row allows.
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

}  // namespace

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
