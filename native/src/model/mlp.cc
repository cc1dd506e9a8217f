#include "model/mlp.h"

#include "model/linear.h"

namespace fsdp {

void mlp_forward(Backend& be, MlpSaved& saved, const float* x, const MlpWeights& w, const Dims& d, const LayerProbe& probe) {
  Allocator& a = be.allocator();
  const long N = d.N(), C = d.C, F = d.F;
  saved.h = a.allocate(MemoryCategory::activations, sizeof(float) * N * F);
  linear_forward(be, saved.h.f32(), x, w.fc_w, w.fc_b, N, C, F);
  probe.forward("mlp.fc", saved.h.f32(), N * F);
  saved.g = a.allocate(MemoryCategory::activations, sizeof(float) * N * F);
  be.gelu_forward(saved.g.f32(), saved.h.f32(), N * F);
  probe.forward("mlp.gelu", saved.g.f32(), N * F);
}

void mlp_output(Backend& be, float* out, const MlpSaved& saved, const MlpWeights& w, const Dims& d) {
  linear_forward(be, out, saved.g.f32(), w.fc2_w, w.fc2_b, d.N(), d.F, d.C);
}

void mlp_recompute_gelu(Backend& be, MlpSaved& saved, const Dims& d) {
  const long n = d.N() * d.F;
  saved.g = be.allocator().allocate(MemoryCategory::activations, sizeof(float) * n);
  be.gelu_forward(saved.g.f32(), saved.h.f32(), n);
}

void mlp_backward(Backend& be, float* dx, const MlpGrads& grads, const float* dout, const float* x, const MlpSaved& saved, const MlpWeights& w,
                  float* dh, const Dims& d, const LayerProbe& probe) {
  const long N = d.N(), C = d.C, F = d.F;
  linear_backward(be, dh, false, grads.fc2_w, grads.fc2_b, dout, saved.g.f32(), w.fc2_w, N, F, C);
  probe.backward_out("mlp.fc2", dh, N * F);
  probe.backward_in("mlp.gelu", dh, N * F);
  be.gelu_backward(dh, saved.h.f32(), N * F);
  probe.backward_out("mlp.gelu", dh, N * F);
  probe.backward_in("mlp.fc", dh, N * F);
  linear_backward(be, dx, false, grads.fc_w, grads.fc_b, dh, x, w.fc_w, N, C, F);
  probe.backward_out("mlp.fc", dx, N * C);
}

}  // namespace fsdp
