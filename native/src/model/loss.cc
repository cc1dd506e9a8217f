#include "model/loss.h"

namespace fsdp {

double loss_forward(Backend& be, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets, const Dims& d, const LayerProbe& probe,
                    float* logits_copy) {
  Allocator& a = be.allocator();
  const long N = d.N();
  saved.logits = a.allocate(MemoryCategory::activations, sizeof(float) * N * d.V);
  saved.losses = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  be.linear_forward(saved.logits.data(), DType::f32, x, w, nullptr, N, d.C, d.V);
  probe.forward("lm_head", saved.logits.data(), N * d.V, DType::f32);
  if (logits_copy) be.download(logits_copy, saved.logits.data(), sizeof(float) * N * d.V);
  be.softmax_xent_forward(saved.losses.f32(), saved.logits.f32(), targets, N, d.V);
  probe.forward("softmax_xent", saved.losses.data(), N, DType::f32);
  return be.sum(saved.losses.f32(), N) / static_cast<double>(N);
}

void loss_backward(Backend& be, void* dx, float* dw, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets, float scale,
                   const Dims& d, const LayerProbe& probe) {
  const long N = d.N();
  float* dlogits = saved.logits.f32();
  be.softmax_xent_backward(dlogits, targets, N, d.V, scale / static_cast<float>(N));
  probe.backward_out("softmax_xent", dlogits, N * d.V, DType::f32);
  probe.backward_in("lm_head", dlogits, N * d.V, DType::f32);
  be.linear_backward(dx, false, dw, nullptr, dlogits, DType::f32, x, w, N, d.C, d.V);
  probe.backward_out("lm_head", dx, N * d.C);
}

}  // namespace fsdp
