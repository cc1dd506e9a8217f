#include "model/block.h"

namespace fsdp {

void BlockSaved::reset() {
  ln1.reset();
  attn.qkv.reset(), attn.probs.reset(), attn.y.reset();
  res2.reset();
  ln2.reset();
  mlp.h.reset(), mlp.g.reset();
}

BackwardWorkspace::BackwardWorkspace(Backend& be, const Dims& d) {
  Allocator& a = be.allocator();
  const std::size_t NC = compute_bytes(be, d.N() * d.C);
  d_res = a.allocate(MemoryCategory::workspace, NC);
  tmp_a = a.allocate(MemoryCategory::workspace, NC);
  tmp_b = a.allocate(MemoryCategory::workspace, NC);
  dqkv = a.allocate(MemoryCategory::workspace, 3 * NC);
  dprobs = a.allocate(MemoryCategory::workspace, sizeof(float) * be.attention_scratch_size(d.B, d.T, d.H));
  dh = a.allocate(MemoryCategory::workspace, compute_bytes(be, d.N() * d.F));
}

namespace {

/** Everything before the MLP's output product: what a full recompute rebuilds. */
void run_internals(const BlockRun& r, BlockSaved& s, const void* in, const BlockWeights& w) {
  const long N = r.d.N(), C = r.d.C;
  layernorm_forward(r.be, s.ln1, in, w.ln1_w, w.ln1_b, N, C);
  r.probe.forward("ln1", s.ln1.out.data(), N * C);
  s.res2 = r.be.allocator().allocate(MemoryCategory::activations, compute_bytes(r.be, N * C));
  attention_forward(r.be, s.attn, s.res2.data(), s.ln1.out.data(), w.attn, r.d, r.probe);
  if (r.probe.active()) {
    // Op by op, so the NaN locator sees the residual sum before ln2 reads it.
    r.be.dropout_residual(s.res2.data(), in, s.res2.data(), N * C, r.dropout, r.attn_key);
    r.probe.forward("attn.proj", s.res2.data(), N * C);
    layernorm_forward(r.be, s.ln2, s.res2.data(), w.ln2_w, w.ln2_b, N, C);
  } else {
    residual_layernorm_forward(r.be, s.ln2, s.res2.data(), in, s.res2.data(), r.dropout, r.attn_key, w.ln2_w, w.ln2_b,
                               N, C);
  }
  r.probe.forward("ln2", s.ln2.out.data(), N * C);
  mlp_forward(r.be, s.mlp, s.ln2.out.data(), w.mlp, r.d, r.probe);
}

}  // namespace

Buffer block_forward(const BlockRun& r, BlockSaved& s, const void* in, const BlockWeights& w, BlockRecompute keep) {
  const long NC = r.d.N() * r.d.C;
  run_internals(r, s, in, w);
  Buffer out = r.be.allocator().allocate(MemoryCategory::activations, compute_bytes(r.be, NC));
  mlp_output(r.be, out.data(), s.mlp, w.mlp, r.d);
  r.be.dropout_residual(out.data(), s.res2.data(), out.data(), NC, r.dropout, r.mlp_key);
  r.probe.forward("mlp.fc2", out.data(), NC);
  switch (keep) {
    case BlockRecompute::none:
      break;
    case BlockRecompute::full:
      s.reset();
      break;
    case BlockRecompute::selective:
      // Keep the matrix-product outputs (qkv, y, x2, h); drop what is cheap to recompute.
      s.ln1.reset();
      s.attn.probs.reset();
      s.ln2.reset();
      s.mlp.g.reset();
      break;
  }
  return out;
}

void block_recompute(const BlockRun& r, BlockSaved& s, const void* in, const BlockWeights& w, BlockRecompute keep) {
  const long N = r.d.N(), C = r.d.C;
  switch (keep) {
    case BlockRecompute::none:
      return;
    case BlockRecompute::full:
      run_internals(r, s, in, w);
      return;
    case BlockRecompute::selective:
      layernorm_forward(r.be, s.ln1, in, w.ln1_w, w.ln1_b, N, C);
      attention_recompute_probs(r.be, s.attn, r.d);
      layernorm_forward(r.be, s.ln2, s.res2.data(), w.ln2_w, w.ln2_b, N, C);
      mlp_recompute_gelu(r.be, s.mlp, r.d);
      return;
  }
}

void block_backward(const BlockRun& r, BackwardWorkspace& ws, const BlockSaved& s, const void* in,
                    const BlockWeights& w, const BlockGrads& g) {
  Backend& be = r.be;
  const long N = r.d.N(), C = r.d.C, NC = N * C;
  void* d_res = ws.d_res.data();
  void* tmp_a = ws.tmp_a.data();
  void* tmp_b = ws.tmp_b.data();

  // MLP branch: out = x2 + dropout(mlp(ln2(x2))). The residual passes d_res through unchanged.
  void* d_mlp = d_res;
  if (r.dropout > 0) {
    be.dropout(tmp_a, d_res, NC, r.dropout, r.mlp_key);
    d_mlp = tmp_a;
  }
  r.probe.backward_in("mlp.fc2", d_mlp, NC);
  mlp_backward(be, tmp_b, g.mlp, d_mlp, s.ln2.out.data(), s.mlp, w.mlp, ws.dh.data(), r.d, r.probe);
  r.probe.backward_in("ln2", tmp_b, NC);
  layernorm_backward(be, d_res, g.ln2_w, g.ln2_b, tmp_b, s.res2.data(), s.ln2, w.ln2_w, N, C);
  r.probe.backward_out("ln2", d_res, NC);

  // Attention branch: x2 = x + dropout(attention(ln1(x))).
  void* d_attn = d_res;
  if (r.dropout > 0) {
    be.dropout(tmp_a, d_res, NC, r.dropout, r.attn_key);
    d_attn = tmp_a;
  }
  r.probe.backward_in("attn.proj", d_attn, NC);
  // tmp_b serves as d(y) and then, once y's gradient is consumed, as d(ln1 out).
  attention_backward(be, tmp_b, g.attn, d_attn, s.ln1.out.data(), s.attn, w.attn,
                     {tmp_b, ws.dqkv.data(), ws.dprobs.f32()}, r.d, r.probe);
  r.probe.backward_in("ln1", tmp_b, NC);
  layernorm_backward(be, d_res, g.ln1_w, g.ln1_b, tmp_b, in, s.ln1, w.ln1_w, N, C);
  r.probe.backward_out("ln1", d_res, NC);
}

}  // namespace fsdp
