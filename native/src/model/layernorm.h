// LayerNorm over channels. Saves its output (compute dtype) and the per-row mean and reciprocal
// std (float32), which backward needs with the input.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "runtime/allocator.h"

namespace fsdp {

struct LayerNormSaved {
  Buffer out, mean, rstd;
  void reset() { out.reset(), mean.reset(), rstd.reset(); }
};

/** Allocates `saved` (activations) and normalises x[N, C]; w, b in compute dtype. */
void layernorm_forward(Backend& be, LayerNormSaved& saved, const void* x, const void* w, const void* b, long N, long C);

/** sum = residual + dropout(x) (sum may alias x), then normalises sum: one pass on a GPU. */
void residual_layernorm_forward(Backend& be, LayerNormSaved& saved, void* sum, const void* residual, const void* x,
                                float p, std::uint64_t key, const void* w, const void* b, long N, long C);

/** dx += ..., dw += ..., db += ... from dout. */
void layernorm_backward(Backend& be, void* dx, float* dw, float* db, const void* dout, const void* x,
                        const LayerNormSaved& saved, const void* w, long N, long C);

}  // namespace fsdp
