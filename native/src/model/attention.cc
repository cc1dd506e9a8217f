#include "model/attention.h"

namespace fsdp {

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

}  // namespace

void attention_forward(Backend& be, AttentionSaved& saved, void* out, const void* x, const AttentionWeights& w,
                       const Dims& d, const LayerProbe& probe) {
  Allocator& a = be.allocator();
  const long N = d.N(), C = d.C;
  const DType act = be.compute_dtype();
  saved.qkv = a.allocate(MemoryCategory::activations, compute_bytes(be, N * 3 * C));
  be.linear_forward(saved.qkv.data(), act, x, w.qkv_w, w.qkv_b, N, C, 3 * C);
  probe.forward("attn.qkv", saved.qkv.data(), N * 3 * C);
  saved.probs = a.allocate(MemoryCategory::activations, sizeof(float) * be.attention_state_size(d.B, d.T, d.H));
  saved.y = a.allocate(MemoryCategory::activations, compute_bytes(be, N * C));
  ProbeTap tap(probe);
  be.attention_forward(saved.y.data(), saved.probs.f32(), saved.qkv.data(), d.B, d.T, C, d.H,
                       probe.active() ? &tap : nullptr);
  probe.forward("attn.out", saved.y.data(), N * C);
  be.linear_forward(out, act, saved.y.data(), w.proj_w, w.proj_b, N, C, C);
}

void attention_recompute_probs(Backend& be, AttentionSaved& saved, const Dims& d) {
  saved.probs =
      be.allocator().allocate(MemoryCategory::activations, sizeof(float) * be.attention_state_size(d.B, d.T, d.H));
  be.attention_state(saved.probs.f32(), saved.qkv.data(), d.B, d.T, d.C, d.H);
}

void attention_backward(Backend& be, void* dx, const AttentionGrads& g, const void* dout, const void* x,
                        const AttentionSaved& saved, const AttentionWeights& w, const AttentionScratch& s,
                        const Dims& d, const LayerProbe& probe) {
  const long N = d.N(), C = d.C;
  const DType act = be.compute_dtype();
  be.linear_backward(s.dy, false, g.proj_w, g.proj_b, dout, act, saved.y.data(), w.proj_w, N, C, C);
  probe.backward_out("attn.proj", s.dy, N * C);
  probe.backward_in("attn.out", s.dy, N * C);
  ProbeTap tap(probe);
  be.attention_backward(s.dqkv, s.dprobs, s.dy, saved.qkv.data(), saved.y.data(), saved.probs.f32(), d.B, d.T, C, d.H,
                        probe.active() ? &tap : nullptr);
  probe.backward_out("attn.softmax", s.dqkv, N * 3 * C);
  probe.backward_in("attn.qkv", s.dqkv, N * 3 * C);
  be.linear_backward(dx, false, g.qkv_w, g.qkv_b, s.dqkv, act, x, w.qkv_w, N, C, 3 * C);
  probe.backward_out("attn.qkv", dx, N * C);
}

}  // namespace fsdp
