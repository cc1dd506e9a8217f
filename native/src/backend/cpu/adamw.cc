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

inline Updated adamw_update(const AdamWArgs& a, std::size_t i) {
  const float g = a.grads[i] * a.grad_scale;
  const float m = a.beta1 * a.m[i] + (1.0f - a.beta1) * g;
  const float v = a.beta2 * a.v[i] + (1.0f - a.beta2) * g * g;
  const float m_hat = m / a.bias_correction1;
  const float v_hat = v / a.bias_correction2;
  float p = a.params[i] - a.lr * a.weight_decay * a.params[i];
  p -= a.lr * m_hat / (std::sqrt(v_hat) + a.eps);
  if (static_cast<std::int64_t>(i) == a.poison) p = NAN;
  return {p, m, v};
}

}  // namespace

std::uint64_t CpuBackend::adamw_check(const AdamWArgs& a) {
  std::uint64_t bad = 0;
#pragma omp parallel for schedule(static) reduction(+ : bad)
  for (std::size_t i = 0; i < a.n; ++i) {
    const Updated u = adamw_update(a, i);
    bad += (is_finite(u.p) && is_finite(u.m) && is_finite(u.v)) ? 0 : 1;
  }
  return bad;
}

void CpuBackend::adamw_apply(const AdamWArgs& a) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < a.n; ++i) {
    const Updated u = adamw_update(a, i);
    a.params[i] = u.p;
    a.m[i] = u.m;
    a.v[i] = u.v;
  }
}

}  // namespace fsdp
