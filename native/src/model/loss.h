// The LM head and the loss: logits = x W^T (W is the tied token embedding, or an untied head),
// then softmax cross-entropy against the next tokens. Logits and losses are float32; the logits
// buffer becomes the probabilities, then their gradient, in place.
#pragma once
#include <cstdint>

#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

struct LossSaved {
  Buffer logits, losses;
  void reset() { logits.reset(), losses.reset(); }
};

/**
 * Allocates `saved`; returns the mean loss over the N tokens. x and w in compute dtype; targets in
 * the backend's memory. Copies the logits to host memory at logits_copy when given.
 */
double loss_forward(Backend& be, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets, const Dims& d, const LayerProbe& probe,
                    float* logits_copy = nullptr);

/** dx[N, C] = ... (overwritten, compute dtype); dw += ...; the gradient of `scale` x the mean loss. */
void loss_backward(Backend& be, void* dx, float* dw, LossSaved& saved, const void* x, const void* w, const std::int32_t* targets, float scale,
                   const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
