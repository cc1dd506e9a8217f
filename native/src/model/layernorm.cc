#include "model/layernorm.h"

namespace fsdp {

void layernorm_forward(Backend& be, LayerNormSaved& saved, const float* x, const float* w, const float* b, long N, long C) {
  Allocator& a = be.allocator();
  saved.out = a.allocate(MemoryCategory::activations, sizeof(float) * N * C);
  saved.mean = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  saved.rstd = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  be.layernorm_forward(saved.out.f32(), saved.mean.f32(), saved.rstd.f32(), x, w, b, N, C);
}

void layernorm_backward(Backend& be, float* dx, float* dw, float* db, const float* dout, const float* x, const LayerNormSaved& saved,
                        const float* w, long N, long C) {
  be.layernorm_backward(dx, dw, db, dout, x, w, saved.mean.f32(), saved.rstd.f32(), N, C);
}

}  // namespace fsdp
