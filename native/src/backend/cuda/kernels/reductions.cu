// Whole-tensor reductions in double, deterministic: a fixed grid of kReductionBlocks blocks each
// sums a fixed strided part in a fixed order, then one block sums the partials in block order. The
// result depends on n only, never on scheduling.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace fsdp::cuda {

namespace {

constexpr int kThreads = 256;

__device__ double block_sum_double(double x, double* shared) {
  shared[threadIdx.x] = x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double r = shared[0];
  __syncthreads();
  return r;
}

__device__ double block_max_double(double x, double* shared) {
  shared[threadIdx.x] = x;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = fmax(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = shared[0];
  __syncthreads();
  return r;
}

__device__ __forceinline__ bool finite(float x) {
  return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

/** Slots per block: sum, sum of squares, max |x| (finite), non-finite count. */
template <class T>
__global__ void partial_kernel(double* partial, const T* x, std::size_t n, int slots) {
  __shared__ double shared[kThreads];
  double s = 0, sq = 0, mx = 0, bad = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = to_f(x[i]);
    if (slots == 4 && !finite(v)) {
      bad += 1;
      continue;
    }
    s += v;
    sq += static_cast<double>(v) * v;
    mx = fmax(mx, fabs(static_cast<double>(v)));
  }
  s = block_sum_double(s, shared);
  sq = block_sum_double(sq, shared);
  if (slots == 4) {
    mx = block_max_double(mx, shared);
    bad = block_sum_double(bad, shared);
  }
  if (threadIdx.x == 0) {
    double* p = partial + blockIdx.x * 4;
    p[0] = s, p[1] = sq, p[2] = mx, p[3] = bad;
  }
}

__global__ void finish_kernel(double* out, const double* partial, int blocks, int slots) {
  if (threadIdx.x != 0) return;
  double s = 0, sq = 0, mx = 0, bad = 0;
  for (int k = 0; k < blocks; ++k) {
    s += partial[4 * k];
    sq += partial[4 * k + 1];
    mx = fmax(mx, partial[4 * k + 2]);
    bad += partial[4 * k + 3];
  }
  out[0] = s, out[1] = sq;
  if (slots == 4) out[2] = mx, out[3] = bad;
}

}  // namespace

std::size_t reduction_scratch_doubles() {
  return 4 * kReductionBlocks;
}

void sum(double* out, const float* x, std::size_t n, double* scratch, cudaStream_t s) {
  partial_kernel<float><<<kReductionBlocks, kThreads, 0, s>>>(scratch, x, n, 2);
  check_launch("sum (partials)");
  finish_kernel<<<1, 32, 0, s>>>(out, scratch, kReductionBlocks, 2);
  check_launch("sum");
}

void stats(double* out, const void* x, DType t, std::size_t n, double* scratch, cudaStream_t s) {
  FSDP_DISPATCH(t, E, partial_kernel<E><<<kReductionBlocks, kThreads, 0, s>>>(scratch, static_cast<const E*>(x), n, 4));
  check_launch("stats (partials)");
  finish_kernel<<<1, 32, 0, s>>>(out, scratch, kReductionBlocks, 4);
  check_launch("stats");
}

}  // namespace fsdp::cuda
