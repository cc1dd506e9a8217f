// AdamW (decoupled weight decay, as torch.optim.AdamW) over a flat range of parameters. The update
// is computed by one inline function used by both the check pass and the apply pass, so a step can
// be refused whole before anything is written (stability.on_nan: skip).
#include <cmath>

#include "backend/cpu/cpu_backend.h"

namespace fsdp {

namespace {

struct Updated {
  float p, m, v;
};

/** One element's update. Branch-free and with the loop's constants hoisted by the caller, so the loops vectorise (8
 * floats a time with AVX2). */
inline Updated adamw_update(const AdamWArgs& a, float param, float grad, float m0, float v0) {
  const float g = grad * a.grad_scale;
  const float m = a.beta1 * m0 + (1.0f - a.beta1) * g;
  const float v = a.beta2 * v0 + (1.0f - a.beta2) * g * g;
  const float m_hat = m / a.bias_correction1;
  const float v_hat = v / a.bias_correction2;
  float p = param - a.lr * a.weight_decay * param;
  p -= a.lr * m_hat / (std::sqrt(v_hat) + a.eps);
  return {p, m, v};
}

bool poisoned(const AdamWArgs& a) {
  return a.poison >= 0 && static_cast<std::size_t>(a.poison) < a.n;
}

}  // namespace

std::uint64_t CpuBackend::adamw_check(const AdamWArgs& a) {
  std::uint64_t bad = 0;
  const float* __restrict params = a.params;
  const float* __restrict grads = a.grads;
  const float* __restrict m = a.m;
  const float* __restrict v = a.v;
#pragma omp parallel for simd schedule(static) reduction(+ : bad)
  for (std::size_t i = 0; i < a.n; ++i) {
    const Updated u = adamw_update(a, params[i], grads[i], m[i], v[i]);
    bad += (is_finite(u.p) && is_finite(u.m) && is_finite(u.v)) ? 0 : 1;
  }
  // debug.inject_nan's planted NaN makes its element's update non-finite.
  if (poisoned(a)) {
    const Updated u = adamw_update(a, params[a.poison], grads[a.poison], m[a.poison], v[a.poison]);
    if (is_finite(u.p) && is_finite(u.m) && is_finite(u.v)) ++bad;
  }
  return bad;
}

void CpuBackend::adamw_apply(const AdamWArgs& a) {
  float* __restrict params = a.params;
  const float* __restrict grads = a.grads;
  float* __restrict m = a.m;
  float* __restrict v = a.v;
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < a.n; ++i) {
    const Updated u = adamw_update(a, params[i], grads[i], m[i], v[i]);
    params[i] = u.p;
    m[i] = u.m;
    v[i] = u.v;
  }
  if (poisoned(a)) params[a.poison] = NAN;
}

}  // namespace fsdp
