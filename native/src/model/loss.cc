#include "model/loss.h"

#include "model/linear.h"

namespace fsdp {

double loss_forward(Backend& be, LossSaved& saved, const float* x, const float* w, const std::int32_t* targets, const Dims& d, const LayerProbe& probe,
                    float* logits_copy) {
  Allocator& a = be.allocator();
  const long N = d.N();
  saved.logits = a.allocate(MemoryCategory::activations, sizeof(float) * N * d.V);
  saved.losses = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  linear_forward(be, saved.logits.f32(), x, w, nullptr, N, d.C, d.V);
  probe.forward("lm_head", saved.logits.f32(), N * d.V);
  if (logits_copy) be.copy(logits_copy, saved.logits.f32(), N * d.V);
  be.softmax_xent_forward(saved.losses.f32(), saved.logits.f32(), targets, N, d.V);
  probe.forward("softmax_xent", saved.losses.f32(), N);
  return be.sum(saved.losses.f32(), N) / static_cast<double>(N);
}

void loss_backward(Backend& be, float* dx, float* dw, LossSaved& saved, const float* x, const float* w, const std::int32_t* targets, float scale,
                   const Dims& d, const LayerProbe& probe) {
  const long N = d.N();
  float* dlogits = saved.logits.f32();
  be.softmax_xent_backward(dlogits, targets, N, d.V, scale / static_cast<float>(N));
  probe.backward_out("softmax_xent", dlogits, N * d.V);
  probe.backward_in("lm_head", dlogits, N * d.V);
  linear_backward(be, dx, false, dw, nullptr, dlogits, x, w, N, d.C, d.V);
  probe.backward_out("lm_head", dx, N * d.C);
}

}  // namespace fsdp
