// The reference path of the decoder family (Llama 3, Qwen3, Mistral, SmolLM2): the ops the family
// adds to reference_gpt.h and the whole model, written as plainly as the GPT reference — loops, no
// BLAS, no threads, any floating-point type (double for the finite-difference checks of
// native/test/decoder_gradient_check_test.cc and the transformers fixtures of
// test/fixtures/reference/decoder/). The float32 ops of the backend are tested against these. The
// conventions (packed qkv, parameter names and order, RoPE's pairs) are /work/team/decoder-layout.md's,
// i.e. transformers' LlamaForCausalLM / Qwen3ForCausalLM written in our layout.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference/reference_gpt.h"

namespace fsdp::reference {

// ---- RMSNorm ------------------------------------------------------------------------------------

/**
 * out = x / sqrt(mean(x²) + eps) · w over N rows of C; rstd[n] = 1 / sqrt(mean(x²) + eps).
 * Row n of x and of out starts at n · stride (0 means C): the per-head q/k norms of Qwen3 run it on
 * one head's D columns inside packed qkv, with stride (H + 2 KV) D. out may be x.
 */
template <class R>
void rmsnorm_forward(R* out, R* rstd, const R* x, const R* w, long N, long C, double eps, long stride = 0) {
  if (stride == 0) stride = C;
  for (long n = 0; n < N; ++n) {
    const R* xr = x + n * stride;
    R ss = 0;
    for (long c = 0; c < C; ++c) ss += xr[c] * xr[c];
    const R r = R(1) / std::sqrt(ss / R(C) + R(eps));
    for (long c = 0; c < C; ++c) out[n * stride + c] = xr[c] * r * w[c];
    rstd[n] = r;
  }
}
/** dx += ..., dw += ... (rows at n · stride as in the forward; dx and dout use it too, dx must not be dout). */
template <class R>
void rmsnorm_backward(R* dx, R* dw, const R* dout, const R* x, const R* w, const R* rstd, long N, long C,
                      long stride = 0) {
  if (stride == 0) stride = C;
  for (long n = 0; n < N; ++n) {
    const R* xr = x + n * stride;
    const R* dr = dout + n * stride;
    const R r = rstd[n];
    // y_c = x_c r w_c with r = (mean(x²) + eps)^(-1/2): dr/dx_c = -r³ x_c / C.
    R dot = 0;
    for (long c = 0; c < C; ++c) {
      dot += dr[c] * w[c] * xr[c];
      dw[c] += dr[c] * xr[c] * r;
    }
    for (long c = 0; c < C; ++c) dx[n * stride + c] += r * dr[c] * w[c] - xr[c] * r * r * r * dot / R(C);
  }
}

// ---- rotary position embeddings -----------------------------------------------------------------

/** The config's RoPE: rope_theta and rope_scaling (rope_type "default" or "llama3"). */
struct Rope {
  double theta = 10000.0;
  bool llama3 = false;  // rope_type "llama3"; the four fields below are read only then
  double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  double original_max_position_embeddings = 8192.0;
};

/**
 * inv_freq[j] for j < D / 2: theta^(-2j / D), then, for rope_type llama3, rescaled exactly as
 * transformers' _compute_llama3_parameters (modeling_rope_utils.py): wavelengths longer than
 * original / low_freq_factor are divided by factor, shorter than original / high_freq_factor kept,
 * those between interpolated by smooth = (original / wavelength - low) / (high - low). In double
 * (transformers computes it in float32; fixtures record its values and the test allows for that).
 */
inline std::vector<double> rope_inv_freq(const Rope& rope, long D) {
  if (D % 2 != 0) throw std::invalid_argument("rope_inv_freq: head_dim " + std::to_string(D) + " is odd");
  const double pi = 3.14159265358979323846;
  std::vector<double> inv(D / 2);
  for (long j = 0; j < D / 2; ++j) {
    double f = 1.0 / std::pow(rope.theta, static_cast<double>(2 * j) / static_cast<double>(D));
    if (rope.llama3) {
      const double low_wavelen = rope.original_max_position_embeddings / rope.low_freq_factor;
      const double high_wavelen = rope.original_max_position_embeddings / rope.high_freq_factor;
      const double wavelen = 2 * pi / f;
      const double scaled = wavelen > low_wavelen ? f / rope.factor : f;
      if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen)) {
        const double smooth = (rope.original_max_position_embeddings / wavelen - rope.low_freq_factor) /
                              (rope.high_freq_factor - rope.low_freq_factor);
        f = (1 - smooth) * scaled / rope.factor + smooth * scaled;
      } else {
        f = scaled;
      }
    }
    inv[j] = f;
  }
  return inv;
}

/**
 * RoPE on the q and k parts of packed qkv [B·T, (H + 2 KV) · D]: in each head, the pair
 * (j, j + D/2) at position t (= row mod T) turns by the angle t · inv_freq[j] — transformers'
 * q·cos + rotate_half(q)·sin. The v part is copied. out may be qkv.
 */
template <class R>
void rope_forward(R* out, const R* qkv, const double* inv_freq, long B, long T, long H, long KV, long D) {
  const long W = (H + 2 * KV) * D, half = D / 2;
  for (long n = 0; n < B * T; ++n) {
    const long t = n % T;
    for (long head = 0; head < H + 2 * KV; ++head) {
      const R* x = qkv + n * W + head * D;
      R* y = out + n * W + head * D;
      if (head >= H + KV) {
        for (long i = 0; i < D; ++i) y[i] = x[i];
        continue;
      }
      for (long j = 0; j < half; ++j) {
        const double angle = static_cast<double>(t) * inv_freq[j];
        const R c = R(std::cos(angle)), s = R(std::sin(angle)), a = x[j], b = x[j + half];
        y[j] = a * c - b * s;
        y[j + half] = b * c + a * s;
      }
    }
  }
}
/** dqkv (overwritten; may be dout) from dout: the inverse rotation on q and k, v passed through. */
template <class R>
void rope_backward(R* dqkv, const R* dout, const double* inv_freq, long B, long T, long H, long KV, long D) {
  const long W = (H + 2 * KV) * D, half = D / 2;
  for (long n = 0; n < B * T; ++n) {
    const long t = n % T;
    for (long head = 0; head < H + 2 * KV; ++head) {
      const R* dy = dout + n * W + head * D;
      R* dx = dqkv + n * W + head * D;
      if (head >= H + KV) {
        for (long i = 0; i < D; ++i) dx[i] = dy[i];
        continue;
      }
      for (long j = 0; j < half; ++j) {
        const double angle = static_cast<double>(t) * inv_freq[j];
        const R c = R(std::cos(angle)), s = R(std::sin(angle)), a = dy[j], b = dy[j + half];
        dx[j] = a * c + b * s;
        dx[j + half] = b * c - a * s;
      }
    }
  }
}

// ---- SwiGLU -------------------------------------------------------------------------------------

template <class R>
R silu(R x) {
  return x / (R(1) + std::exp(-x));
}
template <class R>
R silu_grad(R x) {
  const R s = R(1) / (R(1) + std::exp(-x));
  return s * (R(1) + x * (R(1) - s));
}

/** h[N, F] = silu(gate) · up, gate_up[N, 2F] holding each row's gate (F) then up (F). */
template <class R>
void swiglu_forward(R* h, const R* gate_up, long N, long F) {
  for (long n = 0; n < N; ++n)
    for (long f = 0; f < F; ++f) h[n * F + f] = silu(gate_up[n * 2 * F + f]) * gate_up[n * 2 * F + F + f];
}
/** dgate_up[N, 2F] (overwritten) from dh[N, F]. */
template <class R>
void swiglu_backward(R* dgate_up, const R* dh, const R* gate_up, long N, long F) {
  for (long n = 0; n < N; ++n)
    for (long f = 0; f < F; ++f) {
      const R g = gate_up[n * 2 * F + f], u = gate_up[n * 2 * F + F + f], d = dh[n * F + f];
      dgate_up[n * 2 * F + f] = d * u * silu_grad(g);
      dgate_up[n * 2 * F + F + f] = d * silu(g);
    }
}

// ---- causal grouped-query attention -------------------------------------------------------------

/**
 * Causal attention over packed qkv [B·T, (H + 2 KV) · D] (q heads, then k heads, then v heads):
 * out[B·T, H·D], probs[B, H, T, T]; scale 1 / sqrt(D); query head h reads kv head h / (H / KV).
 */
template <class R>
void gqa_attention_forward(R* out, R* probs, const R* qkv, long B, long T, long H, long KV, long D) {
  const long W = (H + 2 * KV) * D, group = H / KV;
  const R scale = R(1) / std::sqrt(R(D));
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h) {
      const long k_off = (H + h / group) * D, v_off = (H + KV + h / group) * D;
      for (long t = 0; t < T; ++t) {
        R* p = probs + ((b * H + h) * T + t) * T;
        const R* q = qkv + (b * T + t) * W + h * D;
        R max = -INFINITY, sum = 0;
        for (long u = 0; u < T; ++u) {
          if (u > t) {
            p[u] = 0;
            continue;
          }
          R s = 0;
          for (long i = 0; i < D; ++i) s += q[i] * qkv[(b * T + u) * W + k_off + i];
          p[u] = s * scale;
          max = std::max(max, p[u]);
        }
        for (long u = 0; u <= t; ++u) sum += (p[u] = std::exp(p[u] - max));
        for (long u = 0; u <= t; ++u) p[u] /= sum;
        for (long i = 0; i < D; ++i) {
          R s = 0;
          for (long u = 0; u <= t; ++u) s += p[u] * qkv[(b * T + u) * W + v_off + i];
          out[(b * T + t) * H * D + h * D + i] = s;
        }
      }
    }
}
/** dqkv (overwritten) from dout[B·T, H·D]; the kv heads sum the gradients of their H / KV query heads. */
template <class R>
void gqa_attention_backward(R* dqkv, const R* dout, const R* probs, const R* qkv, long B, long T, long H, long KV,
                            long D) {
  const long W = (H + 2 * KV) * D, group = H / KV;
  const R scale = R(1) / std::sqrt(R(D));
  for (long i = 0; i < B * T * W; ++i) dqkv[i] = 0;
  Vec<R> dp(T);
  for (long b = 0; b < B; ++b)
    for (long h = 0; h < H; ++h) {
      const long k_off = (H + h / group) * D, v_off = (H + KV + h / group) * D;
      for (long t = 0; t < T; ++t) {
        const R* p = probs + ((b * H + h) * T + t) * T;
        const R* d = dout + (b * T + t) * H * D + h * D;
        R dot = 0;
        for (long u = 0; u <= t; ++u) {
          R s = 0;
          for (long i = 0; i < D; ++i) {
            s += d[i] * qkv[(b * T + u) * W + v_off + i];
            dqkv[(b * T + u) * W + v_off + i] += p[u] * d[i];
          }
          dp[u] = s;
          dot += p[u] * s;
        }
        for (long u = 0; u <= t; ++u) {
          const R ds = p[u] * (dp[u] - dot) * scale;
          for (long i = 0; i < D; ++i) {
            dqkv[(b * T + t) * W + h * D + i] += ds * qkv[(b * T + u) * W + k_off + i];
            dqkv[(b * T + u) * W + k_off + i] += ds * qkv[(b * T + t) * W + h * D + i];
          }
        }
      }
    }
}

// ---- the model ----------------------------------------------------------------------------------

/** A decoder of the family, as the run config / config.json describes it (decoder-layout.md's names). */
struct DecoderSpec {
  long V = 0, C = 0, L = 0, H = 0, KV = 0, D = 0, F = 0;
  bool tied = true;
  bool attention_bias = false, mlp_bias = false;
  bool qk_norm = false;  // Qwen3
  double eps = 1e-6;     // rms_norm_eps
  Rope rope;
};

/** One parameter tensor in the flat vector. */
struct DecoderParam {
  std::string name;
  std::size_t offset = 0, numel = 0;
  bool decay = false;  // AdamW weight decay: the matrix weights but the embedding (decoder-layout.md)
};

/**
 * The parameters in decoder-layout.md's order — embedding.wte; per block ln1, attn.qkv (weight,
 * bias), attn.q_norm, attn.k_norm, attn.proj (weight, bias), ln2, mlp.gate_up (weight, bias),
 * mlp.down (weight, bias), present ones only; final_ln.weight; lm_head.weight when untied — each
 * unit's segments end to end, so offsets are those of the units concatenated.
 */
inline std::vector<DecoderParam> decoder_params(const DecoderSpec& s) {
  if (s.H <= 0 || s.KV <= 0 || s.H % s.KV != 0)
    throw std::invalid_argument("DecoderSpec: " + std::to_string(s.H) + " heads are not a multiple of " +
                                std::to_string(s.KV) + " key-value heads");
  std::vector<DecoderParam> out;
  std::size_t offset = 0;
  auto add = [&](const std::string& name, long numel, bool decay) {
    out.push_back({name, offset, static_cast<std::size_t>(numel), decay});
    offset += static_cast<std::size_t>(numel);
  };
  const long W = (s.H + 2 * s.KV) * s.D;
  add("embedding.wte", s.V * s.C, false);  // as GPT-2's: the embedding is not decayed
  for (long i = 0; i < s.L; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    add(b + "ln1.weight", s.C, false);
    add(b + "attn.qkv.weight", W * s.C, true);
    if (s.attention_bias) add(b + "attn.qkv.bias", W, false);
    if (s.qk_norm) add(b + "attn.q_norm.weight", s.D, false), add(b + "attn.k_norm.weight", s.D, false);
    add(b + "attn.proj.weight", s.C * s.H * s.D, true);
    if (s.attention_bias) add(b + "attn.proj.bias", s.C, false);
    add(b + "ln2.weight", s.C, false);
    add(b + "mlp.gate_up.weight", 2 * s.F * s.C, true);
    if (s.mlp_bias) add(b + "mlp.gate_up.bias", 2 * s.F, false);
    add(b + "mlp.down.weight", s.C * s.F, true);
    if (s.mlp_bias) add(b + "mlp.down.bias", s.C, false);
  }
  add("final_ln.weight", s.C, false);
  if (!s.tied) add("lm_head.weight", s.V * s.C, true);
  return out;
}

/** The number of parameters (the flat vector's length). */
inline std::size_t decoder_param_count(const DecoderSpec& s) {
  const auto p = decoder_params(s);
  return p.back().offset + p.back().numel;
}

/**
 * Mean cross-entropy of the batch over B·T; when `grads` (flat, the parameters' length) is given,
 * adds the gradient of grad_scale × loss to it. `logits_out`, when given, receives the [B·T, V] logits.
 */
template <class R>
R decoder_forward_backward(const DecoderSpec& spec, const Vec<R>& params, const Tokens& tok, Vec<R>* grads,
                           R grad_scale = R(1), Vec<R>* logits_out = nullptr);

/** AdamW on the flat vector, as optim/adamw.h defines it: decay where DecoderParam::decay says, one learning rate. */
template <class R>
void decoder_adamw_step(const DecoderSpec& spec, Vec<R>& params, const Vec<R>& grads, Vec<R>& m, Vec<R>& v, long t,
                        double lr, double beta1, double beta2, double eps, double weight_decay, R grad_scale);

}  // namespace fsdp::reference

#include "reference/reference_decoder_impl.h"
