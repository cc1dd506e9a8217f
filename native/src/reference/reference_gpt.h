// The reference path: the same GPT written as plainly as possible — loops, no BLAS, no threads,
// any floating-point type (double for finite-difference gradient checks). The fast path
// (backend/, model/) is tested against it. Keep it simple and frozen: it is the definition of
// what the model computes, not a place for speed.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "model/param_layout.h"
#include "runtime/rng.h"

namespace fsdp::reference {

template <class R>
using Vec = std::vector<R>;

// ---- ops, each forward next to its backward ---------------------------------------------------

/** out[N, O] = in[N, I] w[O, I]^T + b. */
template <class R>
void linear_forward(R* out, const R* in, const R* w, const R* b, long N, long I, long O) {
  for (long n = 0; n < N; ++n)
    for (long o = 0; o < O; ++o) {
      R s = b ? b[o] : R(0);
      for (long i = 0; i < I; ++i) s += in[n * I + i] * w[o * I + i];
      out[n * O + o] = s;
    }
}
/** din = dout w (overwritten, unless null); dw += dout^T in; db += sum dout. */
template <class R>
void linear_backward(R* din, R* dw, R* db, const R* dout, const R* in, const R* w, long N, long I, long O) {
  for (long n = 0; n < N; ++n)
    for (long i = 0; i < I && din; ++i) {
      R s = 0;
      for (long o = 0; o < O; ++o) s += dout[n * O + o] * w[o * I + i];
      din[n * I + i] = s;
    }
  for (long o = 0; o < O; ++o)
    for (long n = 0; n < N; ++n) {
      for (long i = 0; i < I; ++i) dw[o * I + i] += dout[n * O + o] * in[n * I + i];
      if (db) db[o] += dout[n * O + o];
    }
}

template <class R>
void layernorm_forward(R* out, R* mean, R* rstd, const R* x, const R* w, const R* b, long N, long C) {
  for (long n = 0; n < N; ++n) {
    R m = 0, v = 0;
    for (long c = 0; c < C; ++c) m += x[n * C + c];
    m /= C;
    for (long c = 0; c < C; ++c) v += (x[n * C + c] - m) * (x[n * C + c] - m);
    v /= C;
    const R r = R(1) / std::sqrt(v + R(1e-5));
    for (long c = 0; c < C; ++c) out[n * C + c] = (x[n * C + c] - m) * r * w[c] + b[c];
    mean[n] = m, rstd[n] = r;
  }
}
/** dx += ..., dw += ..., db += ... */
template <class R>
void layernorm_backward(R* dx, R* dw, R* db, const R* dout, const R* x, const R* w, const R* mean, const R* rstd,
                        long N, long C) {
  for (long n = 0; n < N; ++n) {
    R a = 0, b2 = 0;
    for (long c = 0; c < C; ++c) {
      const R xhat = (x[n * C + c] - mean[n]) * rstd[n];
      a += dout[n * C + c] * w[c];
      b2 += dout[n * C + c] * w[c] * xhat;
      dw[c] += dout[n * C + c] * xhat;
      db[c] += dout[n * C + c];
    }
    a /= C, b2 /= C;
    for (long c = 0; c < C; ++c) {
      const R xhat = (x[n * C + c] - mean[n]) * rstd[n];
      dx[n * C + c] += rstd[n] * (dout[n * C + c] * w[c] - a - xhat * b2);
    }
  }
}

/** Causal attention core: probs[B,H,T,T], out[B*T, C] from qkv[B*T, 3C]. */
template <class R>
void attention_forward(R* out, R* probs, const R* qkv, long B, long T, long C, long H) {
  const long hs = C / H;
  const R scale = R(1) / std::sqrt(R(hs));
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h)
      for (long t = 0; t < T; ++t) {
        R* p = probs + ((b * H + h) * T + t) * T;
        R max = -INFINITY, sum = 0;
        for (long u = 0; u < T; ++u) {
          if (u > t) {
            p[u] = 0;
            continue;
          }
          R s = 0;
          for (long i = 0; i < hs; ++i)
            s += qkv[(b * T + t) * 3 * C + h * hs + i] * qkv[(b * T + u) * 3 * C + C + h * hs + i];
          p[u] = s * scale;
          max = std::max(max, p[u]);
        }
        for (long u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - max));
        for (long u = 0; u <= t; ++u) p[u] /= sum;
        for (long i = 0; i < hs; ++i) {
          R s = 0;
          for (long u = 0; u <= t; ++u) s += p[u] * qkv[(b * T + u) * 3 * C + 2 * C + h * hs + i];
          out[(b * T + t) * C + h * hs + i] = s;
        }
      }
}
/** dqkv (overwritten) from dout. */
template <class R>
void attention_backward(R* dqkv, const R* dout, const R* probs, const R* qkv, long B, long T, long C, long H) {
  const long hs = C / H;
  const R scale = R(1) / std::sqrt(R(hs));
  for (long i = 0; i < B * T * 3 * C; ++i) dqkv[i] = 0;
  Vec<R> dp(T);
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h)
      for (long t = 0; t < T; ++t) {
        const R* p = probs + ((b * H + h) * T + t) * T;
        const R* d = dout + (b * T + t) * C + h * hs;
        R dot = 0;
        for (long u = 0; u <= t; ++u) {
          R s = 0;
          for (long i = 0; i < hs; ++i) {
            s += d[i] * qkv[(b * T + u) * 3 * C + 2 * C + h * hs + i];
            dqkv[(b * T + u) * 3 * C + 2 * C + h * hs + i] += p[u] * d[i];
          }
          dp[u] = s;
          dot += p[u] * s;
        }
        for (long u = 0; u <= t; ++u) {
          const R ds = p[u] * (dp[u] - dot) * scale;
          for (long i = 0; i < hs; ++i) {
            dqkv[(b * T + t) * 3 * C + h * hs + i] += ds * qkv[(b * T + u) * 3 * C + C + h * hs + i];
            dqkv[(b * T + u) * 3 * C + C + h * hs + i] += ds * qkv[(b * T + t) * 3 * C + h * hs + i];
          }
        }
      }
}

template <class R>
R gelu(R x) {
  const R k = std::sqrt(R(2) / R(3.14159265358979323846));
  return R(0.5) * x * (R(1) + std::tanh(k * (x + R(0.044715) * x * x * x)));
}
template <class R>
R gelu_grad(R x) {
  const R k = std::sqrt(R(2) / R(3.14159265358979323846));
  const R th = std::tanh(k * (x + R(0.044715) * x * x * x));
  return R(0.5) * (R(1) + th) + R(0.5) * x * (R(1) - th * th) * k * (R(1) + R(3) * R(0.044715) * x * x);
}

/** The dropout mask factor of element i: 0, or 1 / (1 - p) — the same mask as the fast path. */
template <class R>
R dropout_factor(float p, std::uint64_t key, std::size_t i) {
  if (p == 0.0f) return R(1);
  return CounterRng(key).uniform(i) >= p ? R(1) / (R(1) - R(p)) : R(0);
}

/** losses[N] and probs[N, V] from logits. */
template <class R>
void softmax_xent_forward(R* losses, R* probs, const R* logits, const std::int32_t* targets, long N, long V) {
  for (long n = 0; n < N; ++n) {
    R max = -INFINITY, sum = 0;
    for (long v = 0; v < V; ++v) max = std::max(max, logits[n * V + v]);
    for (long v = 0; v < V; ++v) sum += std::exp(logits[n * V + v] - max);
    for (long v = 0; v < V; ++v) probs[n * V + v] = std::exp(logits[n * V + v] - max) / sum;
    losses[n] = std::log(sum) + max - logits[n * V + targets[n]];
  }
}

// ---- the model ----------------------------------------------------------------------------------

/** Parameters (or gradients) as flat per-unit vectors in the layout of model/param_layout.h. */
template <class R>
using Units = std::vector<Vec<R>>;

template <class R>
Units<R> zeros_like(const ParamLayout& layout) {
  Units<R> u;
  for (const auto& unit : layout.units) u.emplace_back(unit.numel, R(0));
  return u;
}

struct Tokens {
  const std::int32_t* inputs;
  const std::int32_t* targets;
  long B, T;
};

/**
 * Mean loss of the batch; when `grads` is given, adds the gradient of grad_scale x loss to it.
 * Dropout uses the fast path's keys (model/gpt.h dropout_site_key) so both see the same masks.
 */
template <class R>
R forward_backward(const ParamLayout& layout, const Units<R>& params, const Tokens& tok, float dropout,
                   std::uint64_t dropout_key, Units<R>* grads, R grad_scale = R(1), Vec<R>* logits_out = nullptr);

/** AdamW step on every parameter, as optim/adamw.h defines it (decay groups, layer-wise LR decay). */
template <class R>
void adamw_step(const ParamLayout& layout, Units<R>& params, const Units<R>& grads, Units<R>& m, Units<R>& v, long t,
                double lr, double beta1, double beta2, double eps, double weight_decay, double layer_lr_decay,
                R grad_scale);

}  // namespace fsdp::reference

#include "reference/reference_gpt_impl.h"
