// The reference model's forward/backward and AdamW (included by reference_gpt.h).
#pragma once
#include <algorithm>
#include <cmath>

namespace fsdp::reference {

template <class R>
R forward_backward(const ParamLayout& layout, const Units<R>& params, const Tokens& tok, float dropout,
                   std::uint64_t dropout_key, Units<R>* grads, R grad_scale, Vec<R>* logits_out) {
  const ModelShape& s = layout.shape;
  const long B = tok.B, T = tok.T, N = B * T, C = s.C, H = s.H, F = s.F, V = s.V, L = s.L;
  auto P = [&](int unit, const char* name) { return params[unit].data() + layout.units[unit].segment(name).offset; };
  auto G = [&](int unit, const char* name) { return (*grads)[unit].data() + layout.units[unit].segment(name).offset; };
  auto key = [&](int site) { return derive_key(dropout_key, static_cast<std::uint64_t>(site)); };
  const int head = layout.head_unit();
  const R* lm_w = s.tied ? P(0, "embedding.wte") : P(head, "lm_head.weight");

  struct Layer {
    Vec<R> ln1, ln1_mean, ln1_rstd, qkv, probs, y, proj, res2, ln2, ln2_mean, ln2_rstd, h, g, m;
  };
  std::vector<Vec<R>> res(L + 1, Vec<R>(N * C));
  std::vector<Layer> act(L);

  for (long n = 0; n < N; ++n)
    for (long c = 0; c < C; ++c)
      res[0][n * C + c] = (P(0, "embedding.wte")[tok.inputs[n] * C + c] + P(0, "embedding.wpe")[(n % T) * C + c]) *
                          dropout_factor<R>(dropout, key(0), n * C + c);
  for (long i = 0; i < L; ++i) {
    const int u = layout.block_unit(static_cast<int>(i));
    Layer& a = act[i];
    const Vec<R>& x = res[i];
    a.ln1.resize(N * C), a.ln1_mean.resize(N), a.ln1_rstd.resize(N), a.qkv.resize(N * 3 * C),
        a.probs.resize(B * H * T * T), a.y.resize(N * C);
    a.proj.resize(N * C), a.res2.resize(N * C), a.ln2.resize(N * C), a.ln2_mean.resize(N), a.ln2_rstd.resize(N),
        a.h.resize(N * F), a.g.resize(N * F);
    a.m.resize(N * C);
    layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x.data(), P(u, "ln1.weight"),
                      P(u, "ln1.bias"), N, C);
    linear_forward(a.qkv.data(), a.ln1.data(), P(u, "attn.qkv.weight"), P(u, "attn.qkv.bias"), N, C, 3 * C);
    attention_forward(a.y.data(), a.probs.data(), a.qkv.data(), B, T, C, H);
    linear_forward(a.proj.data(), a.y.data(), P(u, "attn.proj.weight"), P(u, "attn.proj.bias"), N, C, C);
    for (long j = 0; j < N * C; ++j) a.res2[j] = x[j] + a.proj[j] * dropout_factor<R>(dropout, key(1 + 2 * i), j);
    layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.res2.data(), P(u, "ln2.weight"),
                      P(u, "ln2.bias"), N, C);
    linear_forward(a.h.data(), a.ln2.data(), P(u, "mlp.fc.weight"), P(u, "mlp.fc.bias"), N, C, F);
    for (long j = 0; j < N * F; ++j) a.g[j] = gelu(a.h[j]);
    linear_forward(a.m.data(), a.g.data(), P(u, "mlp.fc2.weight"), P(u, "mlp.fc2.bias"), N, F, C);
    for (long j = 0; j < N * C; ++j) res[i + 1][j] = a.res2[j] + a.m[j] * dropout_factor<R>(dropout, key(2 + 2 * i), j);
  }
  Vec<R> lnf(N * C), lnf_mean(N), lnf_rstd(N), logits(N * V), probs(N * V), losses(N);
  layernorm_forward(lnf.data(), lnf_mean.data(), lnf_rstd.data(), res[L].data(), P(head, "final_ln.weight"),
                    P(head, "final_ln.bias"), N, C);
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
  R* dlm = s.tied ? G(0, "embedding.wte") : G(head, "lm_head.weight");
  linear_backward(dlnf.data(), dlm, static_cast<R*>(nullptr), dlogits.data(), lnf.data(), lm_w, N, C, V);
  layernorm_backward(dres.data(), G(head, "final_ln.weight"), G(head, "final_ln.bias"), dlnf.data(), res[L].data(),
                     P(head, "final_ln.weight"), lnf_mean.data(), lnf_rstd.data(), N, C);
  for (long i = L - 1; i >= 0; --i) {
    const int u = layout.block_unit(static_cast<int>(i));
    const Layer& a = act[i];
    Vec<R> dm(N * C), dg(N * F), dln2(N * C), dproj(N * C), dy(N * C), dqkv(N * 3 * C), dln1(N * C);
    for (long j = 0; j < N * C; ++j) dm[j] = dres[j] * dropout_factor<R>(dropout, key(2 + 2 * i), j);
    linear_backward(dg.data(), G(u, "mlp.fc2.weight"), G(u, "mlp.fc2.bias"), dm.data(), a.g.data(),
                    P(u, "mlp.fc2.weight"), N, F, C);
    for (long j = 0; j < N * F; ++j) dg[j] *= gelu_grad(a.h[j]);
    linear_backward(dln2.data(), G(u, "mlp.fc.weight"), G(u, "mlp.fc.bias"), dg.data(), a.ln2.data(),
                    P(u, "mlp.fc.weight"), N, C, F);
    layernorm_backward(dres.data(), G(u, "ln2.weight"), G(u, "ln2.bias"), dln2.data(), a.res2.data(),
                       P(u, "ln2.weight"), a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
    for (long j = 0; j < N * C; ++j) dproj[j] = dres[j] * dropout_factor<R>(dropout, key(1 + 2 * i), j);
    linear_backward(dy.data(), G(u, "attn.proj.weight"), G(u, "attn.proj.bias"), dproj.data(), a.y.data(),
                    P(u, "attn.proj.weight"), N, C, C);
    attention_backward(dqkv.data(), dy.data(), a.probs.data(), a.qkv.data(), B, T, C, H);
    linear_backward(dln1.data(), G(u, "attn.qkv.weight"), G(u, "attn.qkv.bias"), dqkv.data(), a.ln1.data(),
                    P(u, "attn.qkv.weight"), N, C, 3 * C);
    layernorm_backward(dres.data(), G(u, "ln1.weight"), G(u, "ln1.bias"), dln1.data(), res[i].data(),
                       P(u, "ln1.weight"), a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
  }
  for (long n = 0; n < N; ++n)
    for (long c = 0; c < C; ++c) {
      const R d = dres[n * C + c] * dropout_factor<R>(dropout, key(0), n * C + c);
      G(0, "embedding.wte")[tok.inputs[n] * C + c] += d;
      G(0, "embedding.wpe")[(n % T) * C + c] += d;
    }
  return loss;
}

template <class R>
void adamw_step(const ParamLayout& layout, Units<R>& params, const Units<R>& grads, Units<R>& m, Units<R>& v, long t,
                double lr, double beta1, double beta2, double eps, double weight_decay, double layer_lr_decay,
                R grad_scale) {
  for (std::size_t u = 0; u < layout.units.size(); ++u) {
    const R unit_lr = R(lr * layout.lr_scale(static_cast<int>(u), layer_lr_decay));
    for (const auto& seg : layout.units[u].segments) {
      const R wd = seg.decay ? R(weight_decay) : R(0);
      for (std::size_t i = seg.offset; i < seg.offset + seg.numel; ++i) {
        const R g = grads[u][i] * grad_scale;
        m[u][i] = R(beta1) * m[u][i] + (R(1) - R(beta1)) * g;
        v[u][i] = R(beta2) * v[u][i] + (R(1) - R(beta2)) * g * g;
        const R m_hat = m[u][i] / (R(1) - std::pow(R(beta1), R(t)));
        const R v_hat = v[u][i] / (R(1) - std::pow(R(beta2), R(t)));
        params[u][i] -= unit_lr * wd * params[u][i];
        params[u][i] -= unit_lr * m_hat / (std::sqrt(v_hat) + R(eps));
      }
    }
  }
}

}  // namespace fsdp::reference
