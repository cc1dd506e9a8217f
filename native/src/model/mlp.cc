#include "model/mlp.h"

namespace fsdp {

void mlp_forward(Backend& be, MlpSaved& saved, const void* x, const MlpWeights& w, const Dims& d,
                 const LayerProbe& probe) {
  Allocator& a = be.allocator();
  const long N = d.N(), C = d.C, F = d.F;
  saved.h = a.allocate(MemoryCategory::activations, compute_bytes(be, N * F));
  saved.g = a.allocate(MemoryCategory::activations, compute_bytes(be, N * F));
  if (!probe.active()) {
    be.linear_gelu_forward(saved.g.data(), saved.h.data(), x, w.fc_w, w.fc_b, N, C, F);
    return;
  }
  // Op by op, so a NaN planted in h reaches g as it would without fusion.
  be.linear_forward(saved.h.data(), be.compute_dtype(), x, w.fc_w, w.fc_b, N, C, F);
  probe.forward("mlp.fc", saved.h.data(), N * F);
  be.gelu_forward(saved.g.data(), saved.h.data(), N * F);
  probe.forward("mlp.gelu", saved.g.data(), N * F);
}

void mlp_output(Backend& be, void* out, const MlpSaved& saved, const MlpWeights& w, const Dims& d) {
  be.linear_forward(out, be.compute_dtype(), saved.g.data(), w.fc2_w, w.fc2_b, d.N(), d.F, d.C);
}

void mlp_recompute_gelu(Backend& be, MlpSaved& saved, const Dims& d) {
  const long n = d.N() * d.F;
  saved.g = be.allocator().allocate(MemoryCategory::activations, compute_bytes(be, n));
  be.gelu_forward(saved.g.data(), saved.h.data(), n);
}

void mlp_backward(Backend& be, void* dx, const MlpGrads& grads, const void* dout, const void* x, const MlpSaved& saved,
                  const MlpWeights& w, void* dh, const Dims& d, const LayerProbe& probe) {
  const long N = d.N(), C = d.C, F = d.F;
  const DType act = be.compute_dtype();
  be.linear_backward(dh, false, grads.fc2_w, grads.fc2_b, dout, act, saved.g.data(), w.fc2_w, N, F, C);
  probe.backward_out("mlp.fc2", dh, N * F);
  probe.backward_in("mlp.gelu", dh, N * F);
  be.gelu_backward(dh, saved.h.data(), N * F);
  probe.backward_out("mlp.gelu", dh, N * F);
  probe.backward_in("mlp.fc", dh, N * F);
  be.linear_backward(dx, false, grads.fc_w, grads.fc_b, dh, act, x, w.fc_w, N, C, F);
  probe.backward_out("mlp.fc", dx, N * C);
}

}  // namespace fsdp
