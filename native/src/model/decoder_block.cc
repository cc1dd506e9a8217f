#include "model/decoder_block.h"

#include <string>
#include <type_traits>

namespace fsdp {

const ParamSegment* find_segment(const UnitLayout& unit, const char* name) {
  const std::string suffix = std::string(".") + name;
  for (const auto& s : unit.segments)
    if (s.name.size() >= suffix.size() && s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &s;
  return nullptr;
}

void DecoderBlockSaved::reset() {
  ln1_out.reset(), ln1_rstd.reset();
  qkv_in.reset(), qk_rstd.reset(), qkv.reset();
  probs.reset(), y.reset();
  res2.reset();
  ln2_out.reset(), ln2_rstd.reset();
  gate_up.reset(), h.reset();
}

DecoderWorkspace::DecoderWorkspace(Backend& be, const DecoderDims& d) {
  Allocator& a = be.allocator();
  const long N = d.N();
  d_res = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * d.C));
  d_norm = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * d.C));
  dy = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * d.H * d.D));
  dqkv = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * d.W()));
  dprobs =
      a.allocate(MemoryCategory::workspace, sizeof(float) * be.gqa_attention_scratch_size(d.B, d.T, d.H, d.KV, d.D));
  dgate_up = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * 2 * d.F));
  dh = a.allocate(MemoryCategory::workspace, compute_bytes(be, N * d.F));
}

namespace {

/** The NaN locator's view inside the backend's attention: "attn.softmax" and "attn.out". */
class ProbeTap final : public AttentionTap {
 public:
  explicit ProbeTap(const LayerProbe& probe) : probe_(probe) {}
  void softmax_state(float* state, std::size_t n) override { probe_.forward("attn.softmax", state, n, DType::f32); }
  void softmax_grad(float* grad, std::size_t n) override {
    probe_.backward_out("attn.out", grad, n, DType::f32);
    probe_.backward_in("attn.softmax", grad, n, DType::f32);
  }

 private:
  const LayerProbe& probe_;
};

Buffer activation(Backend& be, std::size_t elements) {
  return be.allocator().allocate(MemoryCategory::activations, compute_bytes(be, elements));
}
Buffer rstd(Backend& be, std::size_t elements) {
  return be.allocator().allocate(MemoryCategory::activations, sizeof(float) * elements);
}

/** `p` moved on by n elements of the compute dtype. */
template <class P>
P at(const Backend& be, P p, long n) {
  using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<P>>, const char, char>;
  return static_cast<P>(static_cast<Byte*>(p) + compute_bytes(be, static_cast<std::size_t>(n)));
}

void rmsnorm(const DecoderBlockRun& r, Buffer& out, Buffer& rs, const void* x, const void* w) {
  const long N = r.d.N(), C = r.d.C;
  out = activation(r.be, N * C);
  rs = rstd(r.be, N);
  r.be.rmsnorm_forward(out.data(), rs.f32(), x, w, N, 1, C, C, r.d.eps);
}

/** The normalised, turned qkv attention reads, from qkv_in (Qwen3) or in place. */
void qk_norm_and_rope(const DecoderBlockRun& r, DecoderBlockSaved& s, const DecoderBlockWeights& w) {
  const DecoderDims& d = r.d;
  const long N = d.N(), W = d.W();
  if (d.qk_norm) {
    s.qkv = activation(r.be, N * W);
    s.qk_rstd = rstd(r.be, N * (d.H + d.KV));
    // A copy in the compute dtype (dropout at p = 0), then the two norms in place on q and on k.
    r.be.dropout(s.qkv.data(), s.qkv_in.data(), N * W, 0.0f, 0);
    r.be.rmsnorm_forward(s.qkv.data(), s.qk_rstd.f32(), s.qkv.data(), w.q_norm_w, N, d.H, d.D, W, d.eps);
    r.probe.forward("attn.q_norm", s.qkv.data(), N * W);
    void* k = at(r.be, s.qkv.data(), d.H * d.D);
    r.be.rmsnorm_forward(k, s.qk_rstd.f32() + N * d.H, k, w.k_norm_w, N, d.KV, d.D, W, d.eps);
    r.probe.forward("attn.k_norm", s.qkv.data(), N * W);
  }
  r.be.rope_forward(s.qkv.data(), r.inv_freq, d.B, d.T, d.H, d.KV, d.D);
  r.probe.forward("attn.rope", s.qkv.data(), N * W);
}

/** Everything before the MLP's output product: what a full recompute rebuilds. */
void run_internals(const DecoderBlockRun& r, DecoderBlockSaved& s, const void* in, const DecoderBlockWeights& w) {
  Backend& be = r.be;
  const DecoderDims& d = r.d;
  const long N = d.N(), C = d.C, W = d.W(), HD = d.H * d.D;
  const DType act = be.compute_dtype();
  rmsnorm(r, s.ln1_out, s.ln1_rstd, in, w.ln1_w);
  r.probe.forward("ln1", s.ln1_out.data(), N * C);
  Buffer& qkv = d.qk_norm ? s.qkv_in : s.qkv;
  qkv = activation(be, N * W);
  be.linear_forward(qkv.data(), act, s.ln1_out.data(), w.qkv_w, w.qkv_b, N, C, W);
  r.probe.forward("attn.qkv", qkv.data(), N * W);
  qk_norm_and_rope(r, s, w);

  s.probs = be.allocator().allocate(MemoryCategory::activations,
                                    sizeof(float) * be.gqa_attention_state_size(d.B, d.T, d.H, d.KV, d.D));
  s.y = activation(be, N * HD);
  ProbeTap tap(r.probe);
  be.gqa_attention_forward(s.y.data(), s.probs.f32(), s.qkv.data(), d.B, d.T, d.H, d.KV, d.D,
                           r.probe.active() ? &tap : nullptr);
  r.probe.forward("attn.out", s.y.data(), N * HD);
  s.res2 = activation(be, N * C);
  be.linear_forward(s.res2.data(), act, s.y.data(), w.proj_w, w.proj_b, N, HD, C);
  be.dropout_residual(s.res2.data(), in, s.res2.data(), N * C, 0.0f, 0);
  r.probe.forward("attn.proj", s.res2.data(), N * C);

  rmsnorm(r, s.ln2_out, s.ln2_rstd, s.res2.data(), w.ln2_w);
  r.probe.forward("ln2", s.ln2_out.data(), N * C);
  s.gate_up = activation(be, N * 2 * d.F);
  be.linear_forward(s.gate_up.data(), act, s.ln2_out.data(), w.gate_up_w, w.gate_up_b, N, C, 2 * d.F);
  r.probe.forward("mlp.gate_up", s.gate_up.data(), N * 2 * d.F);
  s.h = activation(be, N * d.F);
  be.swiglu_forward(s.h.data(), s.gate_up.data(), N, d.F);
  r.probe.forward("mlp.swiglu", s.h.data(), N * d.F);
}

}  // namespace

Buffer decoder_block_forward(const DecoderBlockRun& r, DecoderBlockSaved& s, const void* in,
                             const DecoderBlockWeights& w, BlockRecompute keep) {
  const long N = r.d.N(), C = r.d.C;
  run_internals(r, s, in, w);
  Buffer out = activation(r.be, N * C);
  r.be.linear_forward(out.data(), r.be.compute_dtype(), s.h.data(), w.down_w, w.down_b, N, r.d.F, C);
  r.be.dropout_residual(out.data(), s.res2.data(), out.data(), N * C, 0.0f, 0);
  r.probe.forward("mlp.down", out.data(), N * C);
  switch (keep) {
    case BlockRecompute::none:
      break;
    case BlockRecompute::full:
      s.reset();
      break;
    case BlockRecompute::selective:
      // Keep the matrix-product outputs (qkv, y, x2, gate_up) and the turned qkv attention reads
      // (its recompute would be a norm and a rotation, but it costs as much memory as qkv_in);
      // drop the norms' outputs, the softmax state and h.
      s.ln1_out.reset(), s.ln1_rstd.reset();
      s.probs.reset();
      s.ln2_out.reset(), s.ln2_rstd.reset();
      s.h.reset();
      break;
  }
  return out;
}

void decoder_block_recompute(const DecoderBlockRun& r, DecoderBlockSaved& s, const void* in,
                             const DecoderBlockWeights& w, BlockRecompute keep) {
  const DecoderDims& d = r.d;
  switch (keep) {
    case BlockRecompute::none:
      return;
    case BlockRecompute::full:
      run_internals(r, s, in, w);
      return;
    case BlockRecompute::selective:
      rmsnorm(r, s.ln1_out, s.ln1_rstd, in, w.ln1_w);
      s.probs = r.be.allocator().allocate(MemoryCategory::activations,
                                          sizeof(float) * r.be.gqa_attention_state_size(d.B, d.T, d.H, d.KV, d.D));
      r.be.gqa_attention_state(s.probs.f32(), s.qkv.data(), d.B, d.T, d.H, d.KV, d.D);
      rmsnorm(r, s.ln2_out, s.ln2_rstd, s.res2.data(), w.ln2_w);
      s.h = activation(r.be, d.N() * d.F);
      r.be.swiglu_forward(s.h.data(), s.gate_up.data(), d.N(), d.F);
      return;
  }
}

void decoder_block_backward(const DecoderBlockRun& r, DecoderWorkspace& ws, const DecoderBlockSaved& s, const void* in,
                            const DecoderBlockWeights& w, const DecoderBlockGrads& g) {
  Backend& be = r.be;
  const DecoderDims& d = r.d;
  const long N = d.N(), C = d.C, F = d.F, W = d.W(), HD = d.H * d.D;
  const DType act = be.compute_dtype();
  void* d_res = ws.d_res.data();
  void* d_norm = ws.d_norm.data();

  // MLP branch: out = x2 + down(swiglu(gate_up(ln2(x2)))); the residual passes d_res through.
  r.probe.backward_in("mlp.down", d_res, N * C);
  be.linear_backward(ws.dh.data(), false, g.down_w, g.down_b, d_res, act, s.h.data(), w.down_w, N, F, C);
  r.probe.backward_out("mlp.down", ws.dh.data(), N * F);
  r.probe.backward_in("mlp.swiglu", ws.dh.data(), N * F);
  be.swiglu_backward(ws.dgate_up.data(), ws.dh.data(), s.gate_up.data(), N, F);
  r.probe.backward_out("mlp.swiglu", ws.dgate_up.data(), N * 2 * F);
  r.probe.backward_in("mlp.gate_up", ws.dgate_up.data(), N * 2 * F);
  be.linear_backward(d_norm, false, g.gate_up_w, g.gate_up_b, ws.dgate_up.data(), act, s.ln2_out.data(), w.gate_up_w, N,
                     C, 2 * F);
  r.probe.backward_out("mlp.gate_up", d_norm, N * C);
  r.probe.backward_in("ln2", d_norm, N * C);
  be.rmsnorm_backward(d_res, true, g.ln2_w, d_norm, s.res2.data(), w.ln2_w, s.ln2_rstd.f32(), N, 1, C, C);
  r.probe.backward_out("ln2", d_res, N * C);

  // Attention branch: x2 = x + proj(attention(rope(qk_norm(qkv(ln1(x)))))).
  r.probe.backward_in("attn.proj", d_res, N * C);
  be.linear_backward(ws.dy.data(), false, g.proj_w, g.proj_b, d_res, act, s.y.data(), w.proj_w, N, HD, C);
  r.probe.backward_out("attn.proj", ws.dy.data(), N * HD);
  r.probe.backward_in("attn.out", ws.dy.data(), N * HD);
  ProbeTap tap(r.probe);
  void* dqkv = ws.dqkv.data();
  be.gqa_attention_backward(dqkv, ws.dprobs.f32(), ws.dy.data(), s.qkv.data(), s.y.data(), s.probs.f32(), d.B, d.T, d.H,
                            d.KV, d.D, r.probe.active() ? &tap : nullptr);
  r.probe.backward_out("attn.softmax", dqkv, N * W);
  r.probe.backward_in("attn.rope", dqkv, N * W);
  be.rope_backward(dqkv, r.inv_freq, d.B, d.T, d.H, d.KV, d.D);
  r.probe.backward_out("attn.rope", dqkv, N * W);
  if (d.qk_norm) {
    // In place on dqkv: each norm overwrites the gradient of its heads.
    void* dk = at(be, dqkv, d.H * d.D);
    r.probe.backward_in("attn.k_norm", dqkv, N * W);
    be.rmsnorm_backward(dk, false, g.k_norm_w, dk, at(be, s.qkv_in.data(), d.H * d.D), w.k_norm_w,
                        s.qk_rstd.f32() + N * d.H, N, d.KV, d.D, W);
    r.probe.backward_out("attn.k_norm", dqkv, N * W);
    r.probe.backward_in("attn.q_norm", dqkv, N * W);
    be.rmsnorm_backward(dqkv, false, g.q_norm_w, dqkv, s.qkv_in.data(), w.q_norm_w, s.qk_rstd.f32(), N, d.H, d.D, W);
    r.probe.backward_out("attn.q_norm", dqkv, N * W);
  }
  r.probe.backward_in("attn.qkv", dqkv, N * W);
  be.linear_backward(d_norm, false, g.qkv_w, g.qkv_b, dqkv, act, s.ln1_out.data(), w.qkv_w, N, C, W);
  r.probe.backward_out("attn.qkv", d_norm, N * C);
  r.probe.backward_in("ln1", d_norm, N * C);
  be.rmsnorm_backward(d_res, true, g.ln1_w, d_norm, in, w.ln1_w, s.ln1_rstd.f32(), N, 1, C, C);
  r.probe.backward_out("ln1", d_res, N * C);
}

}  // namespace fsdp
