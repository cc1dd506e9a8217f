#include "model/layernorm.h"

namespace fsdp {

namespace {

void allocate(Backend& be, LayerNormSaved& saved, long N, long C) {
  Allocator& a = be.allocator();
  saved.out = a.allocate(MemoryCategory::activations, compute_bytes(be, N * C));
  saved.mean = a.allocate(MemoryCategory::activations, sizeof(float) * N);
  saved.rstd = a.allocate(MemoryCategory::activations, sizeof(float) * N);
}

}  // namespace

void layernorm_forward(Backend& be, LayerNormSaved& saved, const void* x, const void* w, const void* b, long N,
                       long C) {
  allocate(be, saved, N, C);
  be.layernorm_forward(saved.out.data(), saved.mean.f32(), saved.rstd.f32(), x, w, b, N, C);
}

void residual_layernorm_forward(Backend& be, LayerNormSaved& saved, void* sum, const void* residual, const void* x,
                                float p, std::uint64_t key, const void* w, const void* b, long N, long C) {
  allocate(be, saved, N, C);
  be.residual_layernorm_forward(sum, saved.out.data(), saved.mean.f32(), saved.rstd.f32(), residual, x, p, key, w, b, N,
                                C);
}

void layernorm_backward(Backend& be, void* dx, float* dw, float* db, const void* dout, const void* x,
                        const LayerNormSaved& saved, const void* w, long N, long C) {
  be.layernorm_backward(dx, dw, db, dout, x, w, saved.mean.f32(), saved.rstd.f32(), N, C);
}

}  // namespace fsdp
