// AdamW (decoupled weight decay, as torch.optim.AdamW and the CPU backend), float32 throughout.
// The same update function serves the check pass (count non-finite results, write nothing) and
// the apply pass, so a step can be refused whole; 16-byte loads where the range allows.
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/kernels.h"

namespace fsdp::cuda {

namespace {

struct Updated {
  float p, m, v;
};

__device__ __forceinline__ Updated update(const AdamWArgs& a, float p, float g, float m, float v, std::size_t i) {
  g *= a.grad_scale;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float m_hat = m / a.bias_correction1;
  const float v_hat = v / a.bias_correction2;
  float np = p - a.lr * a.weight_decay * p;
  np -= a.lr * m_hat / (sqrtf(v_hat) + a.eps);
  if (static_cast<std::int64_t>(i) == a.poison) np = __int_as_float(0x7fc00000);
  return {np, m, v};
}

__device__ __forceinline__ bool finite(float x) {
  return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u;
}

__global__ void adamw_kernel(AdamWArgs a, bool apply, unsigned long long* bad) {
  unsigned long long local_bad = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < a.n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const Updated u = update(a, a.params[i], a.grads[i], a.m[i], a.v[i], i);
    if (apply) {
      a.params[i] = u.p;
      a.m[i] = u.m;
      a.v[i] = u.v;
    } else if (!(finite(u.p) && finite(u.m) && finite(u.v))) {
      ++local_bad;
    }
  }
  // An integer count: the order of the additions does not change it.
  if (!apply && local_bad) atomicAdd(bad, local_bad);
}

__global__ void adamw_vector_kernel(AdamWArgs a, bool apply, unsigned long long* bad) {
  unsigned long long local_bad = 0;
  const std::size_t packs = a.n / 4;
  for (std::size_t k = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; k < packs;
       k += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 p = reinterpret_cast<const float4*>(a.params)[k], g = reinterpret_cast<const float4*>(a.grads)[k];
    const float4 m = reinterpret_cast<const float4*>(a.m)[k], v = reinterpret_cast<const float4*>(a.v)[k];
    const Updated u0 = update(a, p.x, g.x, m.x, v.x, 4 * k), u1 = update(a, p.y, g.y, m.y, v.y, 4 * k + 1);
    const Updated u2 = update(a, p.z, g.z, m.z, v.z, 4 * k + 2), u3 = update(a, p.w, g.w, m.w, v.w, 4 * k + 3);
    if (apply) {
      reinterpret_cast<float4*>(a.params)[k] = make_float4(u0.p, u1.p, u2.p, u3.p);
      reinterpret_cast<float4*>(a.m)[k] = make_float4(u0.m, u1.m, u2.m, u3.m);
      reinterpret_cast<float4*>(a.v)[k] = make_float4(u0.v, u1.v, u2.v, u3.v);
    } else {
      for (const Updated& u : {u0, u1, u2, u3}) local_bad += (finite(u.p) && finite(u.m) && finite(u.v)) ? 0 : 1;
    }
  }
  if (!apply && local_bad) atomicAdd(bad, local_bad);
}

}  // namespace

void adamw(const AdamWArgs& a, bool apply, unsigned long long* bad, cudaStream_t s) {
  if (a.n == 0) return;
  if (packable(a.n, sizeof(float), {a.params, a.grads, a.m, a.v})) {
    adamw_vector_kernel<<<blocks_for(a.n / 4, 256, 2048), 256, 0, s>>>(a, apply, bad);
  } else {
    adamw_kernel<<<blocks_for(a.n, 256, 2048), 256, 0, s>>>(a, apply, bad);
  }
  check_launch("adamw");
}

}  // namespace fsdp::cuda
