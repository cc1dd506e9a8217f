// Token and position embeddings. Forward gathers rows; backward sums each position's gradient
// over the batch (dwpe) and each token's rows (dwte) in a fixed order: the positions come grouped
// by token from the host, and one block owns one token's row, so no two blocks add to one element.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace fsdp::cuda {

namespace {

template <class T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, long T_,
                                         long C, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t row = i / C, c = i % C;
    const long t = static_cast<long>(row % T_);
    out[i] = from_f<T>(to_f(wte[static_cast<long>(tokens[row]) * C + c]) + to_f(wpe[t * C + c]));
  }
}

template <class T>
__global__ void position_grad_kernel(float* dwpe, const T* dout, long B, long T_, long C) {
  const std::size_t n = static_cast<std::size_t>(T_) * C;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc = 0.0f;
    for (long b = 0; b < B; ++b) acc += to_f(dout[static_cast<std::size_t>(b) * n + i]);
    dwpe[i] += acc;
  }
}

template <class T>
__global__ void token_grad_kernel(float* dwte, const T* dout, const std::int32_t* positions, const std::int32_t* starts,
                                  const std::int32_t* bucket_tokens, long C) {
  const int k = blockIdx.x;
  const long token = bucket_tokens[k];
  for (long c = threadIdx.x; c < C; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = starts[k]; j < starts[k + 1]; ++j) acc += to_f(dout[static_cast<long>(positions[j]) * C + c]);
    dwte[token * C + c] += acc;
  }
}

}  // namespace

void embedding_forward(void* out, const std::int32_t* tokens, const void* wte, const void* wpe, long B, long T_, long C,
                       DType t, cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(B * T_) * C;
  FSDP_DISPATCH(t, E,
                embedding_forward_kernel<E><<<blocks_for(n, 256), 256, 0, s>>>(
                    static_cast<E*>(out), tokens, static_cast<const E*>(wte), static_cast<const E*>(wpe), T_, C, n));
  check_launch("embedding_forward");
}

void embedding_backward(float* dwte, float* dwpe, const void* dout, const std::int32_t* positions,
                        const std::int32_t* starts, const std::int32_t* bucket_tokens, int buckets, long B, long T_,
                        long C, DType t, cudaStream_t s) {
  FSDP_DISPATCH(t, E,
                position_grad_kernel<E><<<blocks_for(static_cast<std::size_t>(T_) * C, 256), 256, 0, s>>>(
                    dwpe, static_cast<const E*>(dout), B, T_, C);
                if (buckets > 0) token_grad_kernel<E>
                <<<buckets, 256, 0, s>>>(dwte, static_cast<const E*>(dout), positions, starts, bucket_tokens, C));
  check_launch("embedding_backward");
}

}  // namespace fsdp::cuda
