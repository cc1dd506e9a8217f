// The MLP: h = x Wfc^T + b, g = GELU(h), out = g Wfc2^T + b. Saves h and g.
#pragma once
#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

/** The layer's parameter tensors (T = const float) or their gradients (T = float). */
template <class T>
struct MlpParams {
  T *fc_w, *fc_b, *fc2_w, *fc2_b;
};
using MlpWeights = MlpParams<const float>;
using MlpGrads = MlpParams<float>;

struct MlpSaved {
  Buffer h, g;
};

/** Allocates `saved` and computes h and g (everything before the output product). */
void mlp_forward(Backend& be, MlpSaved& saved, const float* x, const MlpWeights& w, const Dims& d, const LayerProbe& probe);

/** out[N, C] = g Wfc2^T + b (out allocated by the caller: it is the block's output). */
void mlp_output(Backend& be, float* out, const MlpSaved& saved, const MlpWeights& w, const Dims& d);

/** Recomputes only g = GELU(h) from the kept h (selective checkpointing). */
void mlp_recompute_gelu(Backend& be, MlpSaved& saved, const Dims& d);

/** dx[N, C] = ... (overwritten); parameter gradients accumulated. dh[N, F] is scratch. */
void mlp_backward(Backend& be, float* dx, const MlpGrads& grads, const float* dout, const float* x, const MlpSaved& saved, const MlpWeights& w,
                  float* dh, const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
