// One causal-attention problem and its answer from the reference path (reference_gpt.h, in
// double): random qkv and dy already rounded to a compute dtype, so a kernel's error against the
// answer is its own (its rounding of P, dS and outputs, its summation order). Shared by the CPU
// tests of the tensor-core kernels (flash_emulated_test.cc) and the GPU kernel tests (cuda/).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/reference_gpt.h"
#include "runtime/rng.h"

namespace fsdp::test {

struct AttentionCase {
  long B, T, C, H;
  std::vector<float> qkv, dy;        // [B*T, 3C], [B*T, C]: values representable in the compute dtype
  std::vector<double> y, lse, dqkv;  // the reference's y [B*T, C], lse [B, H, T], dqkv [B*T, 3C]

  /** round: the compute dtype's rounding of a float32 (identity for float32). spread: inputs uniform in [-spread,
   * spread]. */
  template <class Round>
  AttentionCase(long b, long t, long c, long h, std::uint64_t seed, Round round, double spread = 2.0)
      : B(b), T(t), C(c), H(h), qkv(b * t * 3 * c), dy(b * t * c) {
    const CounterRng rng(seed);
    for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = round(static_cast<float>(spread * (2 * rng.uniform(i) - 1)));
    for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = round(static_cast<float>(2 * rng.uniform(qkv.size() + i) - 1));
    const std::vector<double> q(qkv.begin(), qkv.end()), d(dy.begin(), dy.end());
    std::vector<double> probs(static_cast<std::size_t>(B * H * T * T));
    y.assign(static_cast<std::size_t>(B * T * C), 0.0);
    dqkv.assign(qkv.size(), 0.0);
    reference::attention_forward(y.data(), probs.data(), q.data(), B, T, C, H);
    reference::attention_backward(dqkv.data(), d.data(), probs.data(), q.data(), B, T, C, H);
    lse.assign(static_cast<std::size_t>(B * H * T), 0.0);
    const long hs = C / H;
    for (long bb = 0; bb < B; ++bb)
      for (long hh = 0; hh < H; ++hh)
        for (long tq = 0; tq < T; ++tq) {
          double mx = -INFINITY;
          std::vector<double> s(static_cast<std::size_t>(tq + 1));
          for (long u = 0; u <= tq; ++u) {
            double acc = 0;
            for (long i = 0; i < hs; ++i)
              acc += q[(bb * T + tq) * 3 * C + hh * hs + i] * q[(bb * T + u) * 3 * C + C + hh * hs + i];
            s[u] = acc / std::sqrt(static_cast<double>(hs));
            mx = std::max(mx, s[u]);
          }
          double sum = 0;
          for (double v : s) sum += std::exp(v - mx);
          lse[(bb * H + hh) * T + tq] = mx + std::log(sum);
        }
  }

  /** delta[b, h, t] = rowsum(dy o y) per head, from a kernel's own y (as the delta kernel forms it, in float32). */
  std::vector<float> delta_of(const std::vector<float>& y_kernel) const {
    std::vector<float> delta(static_cast<std::size_t>(B * H * T));
    const long hs = C / H;
    for (long bt = 0; bt < B * T; ++bt)
      for (long hh = 0; hh < H; ++hh) {
        float acc = 0;
        for (long i = 0; i < hs; ++i) acc += dy[bt * C + hh * hs + i] * y_kernel[bt * C + hh * hs + i];
        delta[(bt / T * H + hh) * T + bt % T] = acc;
      }
    return delta;
  }
};

/** max |a - b| over max |b|: an error relative to the tensor's scale (elements near zero do not dominate). */
template <class A, class B>
double scaled_error(const A& a, const B& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale == 0 ? diff : diff / scale;
}

}  // namespace fsdp::test
