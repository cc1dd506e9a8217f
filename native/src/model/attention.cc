#include "model/attention.h"

#include "model/linear.h"

namespace fsdp {

void attention_forward(Backend& be, AttentionSaved& saved, float* out, const float* x, const AttentionWeights& w, const Dims& d,
                       const LayerProbe& probe) {
  Allocator& a = be.allocator();
  const long N = d.N(), C = d.C;
  saved.qkv = a.allocate(MemoryCategory::activations, sizeof(float) * N * 3 * C);
  linear_forward(be, saved.qkv.f32(), x, w.qkv_w, w.qkv_b, N, C, 3 * C);
  probe.forward("attn.qkv", saved.qkv.f32(), N * 3 * C);
  saved.probs = a.allocate(MemoryCategory::activations, sizeof(float) * d.B * d.H * d.T * d.T);
  be.attention_probs(saved.probs.f32(), saved.qkv.f32(), d.B, d.T, C, d.H);
  probe.forward("attn.softmax", saved.probs.f32(), d.B * d.H * d.T * d.T);
  saved.y = a.allocate(MemoryCategory::activations, sizeof(float) * N * C);
  be.attention_values(saved.y.f32(), saved.probs.f32(), saved.qkv.f32(), d.B, d.T, C, d.H);
  probe.forward("attn.out", saved.y.f32(), N * C);
  linear_forward(be, out, saved.y.f32(), w.proj_w, w.proj_b, N, C, C);
}

void attention_recompute_probs(Backend& be, AttentionSaved& saved, const Dims& d) {
  saved.probs = be.allocator().allocate(MemoryCategory::activations, sizeof(float) * d.B * d.H * d.T * d.T);
  be.attention_probs(saved.probs.f32(), saved.qkv.f32(), d.B, d.T, d.C, d.H);
}

void attention_backward(Backend& be, float* dx, const AttentionGrads& g, const float* dout, const float* x, const AttentionSaved& saved,
                        const AttentionWeights& w, const AttentionScratch& s, const Dims& d, const LayerProbe& probe) {
  const long N = d.N(), C = d.C, P = d.B * d.H * d.T * d.T;
  linear_backward(be, s.dy, false, g.proj_w, g.proj_b, dout, saved.y.f32(), w.proj_w, N, C, C);
  probe.backward_out("attn.proj", s.dy, N * C);
  probe.backward_in("attn.out", s.dy, N * C);
  be.attention_values_backward(s.dprobs, s.dqkv, s.dy, saved.probs.f32(), saved.qkv.f32(), d.B, d.T, C, d.H);
  probe.backward_out("attn.out", s.dprobs, P);
  probe.backward_in("attn.softmax", s.dprobs, P);
  be.attention_probs_backward(s.dqkv, s.dprobs, saved.probs.f32(), saved.qkv.f32(), d.B, d.T, C, d.H);
  probe.backward_out("attn.softmax", s.dqkv, N * 3 * C);
  probe.backward_in("attn.qkv", s.dqkv, N * 3 * C);
  linear_backward(be, dx, false, g.qkv_w, g.qkv_b, s.dqkv, x, w.qkv_w, N, C, 3 * C);
  probe.backward_out("attn.qkv", dx, N * C);
}

}  // namespace fsdp
