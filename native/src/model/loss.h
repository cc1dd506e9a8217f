// The LM head and the loss: logits = x W^T (W is the tied token embedding, or an untied head),
// then softmax cross-entropy against the next tokens — one layer-level operation of the backend
// (Backend::classifier_*), which decides how the logits are kept between forward and backward.
// Losses are float32; the probes see the logits and their gradient as float32-or-compute-dtype
// [N, V] rows under the names "lm_head" and "softmax_xent".
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

struct LossSaved {
  Buffer state, losses;  // state: what the backend's classifier keeps (the CPU's float32 probabilities)
  void reset() { state.reset(), losses.reset(); }
};

/**
 * Allocates `saved`; returns the mean loss over the N tokens. x and w in compute dtype; targets in
 * the backend's memory. Copies the logits to host memory at logits_copy when given.
 */
double loss_forward(Backend& be, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets,
                    const Dims& d, const LayerProbe& probe, float* logits_copy = nullptr);

/** dx[N, C] = ... (overwritten, compute dtype); dw += ...; the gradient of `scale` x the mean loss. */
void loss_backward(Backend& be, void* dx, float* dw, LossSaved& saved, const void* x, const void* w,
                   const std::int32_t* targets, float scale, const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
