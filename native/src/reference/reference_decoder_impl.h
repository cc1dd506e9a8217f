// The reference decoder's forward/backward and AdamW (included by reference_decoder.h).
#pragma once
#include <cmath>
#include <map>

namespace fsdp::reference {

template <class R>
R decoder_forward_backward(const DecoderSpec& s, const Vec<R>& params, const Tokens& tok, Vec<R>* grads, R grad_scale,
                           Vec<R>* logits_out) {
  const long B = tok.B, T = tok.T, N = B * T, C = s.C, H = s.H, KV = s.KV, D = s.D, F = s.F, V = s.V, L = s.L;
  const long W = (H + 2 * KV) * D;
  std::map<std::string, std::size_t> where;
  for (const auto& p : decoder_params(s)) where[p.name] = p.offset;
  if (params.size() != decoder_param_count(s))
    throw std::invalid_argument("decoder_forward_backward: " + std::to_string(params.size()) +
                                " parameters, the spec has " + std::to_string(decoder_param_count(s)));
  // Absent optional parameters (biases, q/k norms) read as null, as linear_forward takes them.
  auto P = [&](const std::string& name) -> const R* {
    const auto it = where.find(name);
    return it == where.end() ? nullptr : params.data() + it->second;
  };
  auto G = [&](const std::string& name) -> R* {
    const auto it = where.find(name);
    return it == where.end() ? nullptr : grads->data() + it->second;
  };
  auto blk = [](long i, const char* name) { return "blocks." + std::to_string(i) + "." + name; };
  const std::vector<double> inv_freq = rope_inv_freq(s.rope, D);
  const R* lm_w = s.tied ? P("embedding.wte") : P("lm_head.weight");

  struct Layer {
    Vec<R> ln1, ln1_rstd, qkv, qkv_n, q_rstd, k_rstd, qkv_r, probs, y, res2, ln2, ln2_rstd, gu, h;
  };
  std::vector<Vec<R>> res(L + 1, Vec<R>(N * C));
  std::vector<Layer> act(L);
  for (long n = 0; n < N; ++n)
    for (long c = 0; c < C; ++c) res[0][n * C + c] = P("embedding.wte")[tok.inputs[n] * C + c];

  for (long i = 0; i < L; ++i) {
    Layer& a = act[i];
    const Vec<R>& x = res[i];
    a.ln1.resize(N * C), a.ln1_rstd.resize(N), a.qkv.resize(N * W), a.q_rstd.resize(H * N), a.k_rstd.resize(KV * N),
        a.qkv_r.resize(N * W), a.probs.resize(B * H * T * T), a.y.resize(N * H * D), a.res2.resize(N * C),
        a.ln2.resize(N * C), a.ln2_rstd.resize(N), a.gu.resize(N * 2 * F), a.h.resize(N * F);
    rmsnorm_forward(a.ln1.data(), a.ln1_rstd.data(), x.data(), P(blk(i, "ln1.weight")), N, C, s.eps);
    linear_forward(a.qkv.data(), a.ln1.data(), P(blk(i, "attn.qkv.weight")), P(blk(i, "attn.qkv.bias")), N, C, W);
    a.qkv_n = a.qkv;
    if (s.qk_norm) {  // Qwen3: each q and k head RMSNorm'd over D before RoPE
      for (long h = 0; h < H; ++h)
        rmsnorm_forward(a.qkv_n.data() + h * D, a.q_rstd.data() + h * N, a.qkv.data() + h * D,
                        P(blk(i, "attn.q_norm.weight")), N, D, s.eps, W);
      for (long g = 0; g < KV; ++g)
        rmsnorm_forward(a.qkv_n.data() + (H + g) * D, a.k_rstd.data() + g * N, a.qkv.data() + (H + g) * D,
                        P(blk(i, "attn.k_norm.weight")), N, D, s.eps, W);
    }
    rope_forward(a.qkv_r.data(), a.qkv_n.data(), inv_freq.data(), B, T, H, KV, D);
    gqa_attention_forward(a.y.data(), a.probs.data(), a.qkv_r.data(), B, T, H, KV, D);
    linear_forward(a.res2.data(), a.y.data(), P(blk(i, "attn.proj.weight")), P(blk(i, "attn.proj.bias")), N, H * D, C);
    for (long j = 0; j < N * C; ++j) a.res2[j] += x[j];
    rmsnorm_forward(a.ln2.data(), a.ln2_rstd.data(), a.res2.data(), P(blk(i, "ln2.weight")), N, C, s.eps);
    linear_forward(a.gu.data(), a.ln2.data(), P(blk(i, "mlp.gate_up.weight")), P(blk(i, "mlp.gate_up.bias")), N, C,
                   2 * F);
    swiglu_forward(a.h.data(), a.gu.data(), N, F);
    linear_forward(res[i + 1].data(), a.h.data(), P(blk(i, "mlp.down.weight")), P(blk(i, "mlp.down.bias")), N, F, C);
    for (long j = 0; j < N * C; ++j) res[i + 1][j] += a.res2[j];
  }
  Vec<R> lnf(N * C), lnf_rstd(N), logits(N * V), probs(N * V), losses(N);
  rmsnorm_forward(lnf.data(), lnf_rstd.data(), res[L].data(), P("final_ln.weight"), N, C, s.eps);
  linear_forward(logits.data(), lnf.data(), lm_w, static_cast<const R*>(nullptr), N, C, V);
  if (logits_out) *logits_out = logits;
  softmax_xent_forward(losses.data(), probs.data(), logits.data(), tok.targets, N, V);
  R loss = 0;
  for (R l : losses) loss += l;
  loss /= N;
  if (!grads) return loss;

  Vec<R> dlogits(N * V), dlnf(N * C), dres(N * C, R(0));
  for (long n = 0; n < N; ++n)
    for (long v = 0; v < V; ++v)
      dlogits[n * V + v] = (probs[n * V + v] - (v == tok.targets[n] ? R(1) : R(0))) * grad_scale / R(N);
  R* dlm = s.tied ? G("embedding.wte") : G("lm_head.weight");
  linear_backward(dlnf.data(), dlm, static_cast<R*>(nullptr), dlogits.data(), lnf.data(), lm_w, N, C, V);
  rmsnorm_backward(dres.data(), G("final_ln.weight"), dlnf.data(), res[L].data(), P("final_ln.weight"), lnf_rstd.data(),
                   N, C);
  for (long i = L - 1; i >= 0; --i) {
    const Layer& a = act[i];
    Vec<R> dh(N * F), dgu(N * 2 * F), dln2(N * C), dy(N * H * D), dqkv_r(N * W), dqkv(N * W), dln1(N * C);
    // dres is d(res[i+1]) and becomes d(res2), then d(res[i]): the residual paths add into it.
    linear_backward(dh.data(), G(blk(i, "mlp.down.weight")), G(blk(i, "mlp.down.bias")), dres.data(), a.h.data(),
                    P(blk(i, "mlp.down.weight")), N, F, C);
    swiglu_backward(dgu.data(), dh.data(), a.gu.data(), N, F);
    linear_backward(dln2.data(), G(blk(i, "mlp.gate_up.weight")), G(blk(i, "mlp.gate_up.bias")), dgu.data(),
                    a.ln2.data(), P(blk(i, "mlp.gate_up.weight")), N, C, 2 * F);
    rmsnorm_backward(dres.data(), G(blk(i, "ln2.weight")), dln2.data(), a.res2.data(), P(blk(i, "ln2.weight")),
                     a.ln2_rstd.data(), N, C);
    linear_backward(dy.data(), G(blk(i, "attn.proj.weight")), G(blk(i, "attn.proj.bias")), dres.data(), a.y.data(),
                    P(blk(i, "attn.proj.weight")), N, H * D, C);
    gqa_attention_backward(dqkv_r.data(), dy.data(), a.probs.data(), a.qkv_r.data(), B, T, H, KV, D);
    rope_backward(dqkv.data(), dqkv_r.data(), inv_freq.data(), B, T, H, KV, D);
    if (s.qk_norm) {  // the norms' input gradient replaces the q and k parts; v passes through
      const Vec<R> dqkv_n = dqkv;
      for (long n = 0; n < N; ++n)
        for (long j = 0; j < (H + KV) * D; ++j) dqkv[n * W + j] = 0;
      for (long h = 0; h < H; ++h)
        rmsnorm_backward(dqkv.data() + h * D, G(blk(i, "attn.q_norm.weight")), dqkv_n.data() + h * D,
                         a.qkv.data() + h * D, P(blk(i, "attn.q_norm.weight")), a.q_rstd.data() + h * N, N, D, W);
      for (long g = 0; g < KV; ++g)
        rmsnorm_backward(dqkv.data() + (H + g) * D, G(blk(i, "attn.k_norm.weight")), dqkv_n.data() + (H + g) * D,
                         a.qkv.data() + (H + g) * D, P(blk(i, "attn.k_norm.weight")), a.k_rstd.data() + g * N, N, D, W);
    }
    linear_backward(dln1.data(), G(blk(i, "attn.qkv.weight")), G(blk(i, "attn.qkv.bias")), dqkv.data(), a.ln1.data(),
                    P(blk(i, "attn.qkv.weight")), N, C, W);
    rmsnorm_backward(dres.data(), G(blk(i, "ln1.weight")), dln1.data(), res[i].data(), P(blk(i, "ln1.weight")),
                     a.ln1_rstd.data(), N, C);
  }
  for (long n = 0; n < N; ++n)
    for (long c = 0; c < C; ++c) G("embedding.wte")[tok.inputs[n] * C + c] += dres[n * C + c];
  return loss;
}

template <class R>
void decoder_adamw_step(const DecoderSpec& spec, Vec<R>& params, const Vec<R>& grads, Vec<R>& m, Vec<R>& v, long t,
                        double lr, double beta1, double beta2, double eps, double weight_decay, R grad_scale) {
  for (const auto& seg : decoder_params(spec)) {
    const R wd = seg.decay ? R(weight_decay) : R(0);
    for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i) {
      const R g = grads[i] * grad_scale;
      m[i] = R(beta1) * m[i] + (R(1) - R(beta1)) * g;
      v[i] = R(beta2) * v[i] + (R(1) - R(beta2)) * g * g;
      const R m_hat = m[i] / (R(1) - std::pow(R(beta1), R(t)));
      const R v_hat = v[i] / (R(1) - std::pow(R(beta2), R(t)));
      params[i] -= R(lr) * wd * params[i];
      params[i] -= R(lr) * m_hat / (std::sqrt(v_hat) + R(eps));
    }
  }
}

}  // namespace fsdp::reference
