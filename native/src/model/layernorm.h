// LayerNorm over channels. Saves its output and the per-row mean and reciprocal std (float32),
// which backward needs with the input.
#pragma once
#include "backend/backend.h"
#include "runtime/allocator.h"

namespace fsdp {

struct LayerNormSaved {
  Buffer out, mean, rstd;
  void reset() { out.reset(), mean.reset(), rstd.reset(); }
};

/** Allocates `saved` (activations) and normalises x[N, C]. */
void layernorm_forward(Backend& be, LayerNormSaved& saved, const float* x, const float* w, const float* b, long N, long C);

/** dx += ..., dw += ..., db += ... from dout. */
void layernorm_backward(Backend& be, float* dx, float* dw, float* db, const float* dout, const float* x, const LayerNormSaved& saved,
                        const float* w, long N, long C);

}  // namespace fsdp
