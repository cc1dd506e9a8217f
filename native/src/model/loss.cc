#include "model/loss.h"

namespace fsdp {

namespace {

/** The head's probe as the backend's classifier sees it: the two ops the model names. */
class ClassifierProbe final : public ClassifierTap {
 public:
  explicit ClassifierProbe(const LayerProbe& probe) : probe_(probe) {}
  void logits(void* x, std::size_t n, DType dtype) override { probe_.forward("lm_head", x, n, dtype); }
  void losses(float* x, std::size_t n) override { probe_.forward("softmax_xent", x, n, DType::f32); }
  void logits_grad(void* d, std::size_t n, DType dtype) override {
    probe_.backward_out("softmax_xent", d, n, dtype);
    probe_.backward_in("lm_head", d, n, dtype);
  }

 private:
  const LayerProbe& probe_;
};

}  // namespace

double loss_forward(Backend& be, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets,
                    const Dims& d, const LayerProbe& probe, float* logits_copy) {
  Allocator& a = be.allocator();
  const long N = d.N();
  saved.state = a.allocate(MemoryCategory::activations, be.classifier_state_bytes(N, d.V));
  saved.losses = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  ClassifierProbe tap(probe);
  be.classifier_forward(saved.state.data(), saved.losses.f32(), x, w, targets, N, d.C, d.V,
                        probe.active() ? &tap : nullptr, logits_copy);
  return be.sum(saved.losses.f32(), N) / static_cast<double>(N);
}

void loss_backward(Backend& be, void* dx, float* dw, LossSaved& saved, const void* x, const void* w,
                   const std::int32_t* targets, float scale, const Dims& d, const LayerProbe& probe) {
  const long N = d.N();
  ClassifierProbe tap(probe);
  be.classifier_backward(dx, dw, saved.state.data(), x, w, targets, N, d.C, d.V, scale / static_cast<float>(N),
                         probe.active() ? &tap : nullptr);
  probe.backward_out("lm_head", dx, N * d.C);
}

}  // namespace fsdp
