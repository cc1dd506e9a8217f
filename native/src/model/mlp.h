// The MLP: h = x Wfc^T + b, g = GELU(h), out = g Wfc2^T + b. Saves h and g.
#pragma once
#include "backend/backend.h"
#include "model/dims.h"
#include "model/probe.h"
#include "runtime/allocator.h"

namespace fsdp {

/** The layer's parameter tensors (T = const void: the weights, in the backend's compute dtype) or their gradients (T =
 * float). */
template <class T>
struct MlpParams {
  T *fc_w, *fc_b, *fc2_w, *fc2_b;
};
using MlpWeights = MlpParams<const void>;
using MlpGrads = MlpParams<float>;

struct MlpSaved {
  Buffer h, g;
};

/** Allocates `saved` and computes h and g (everything before the output product). */
void mlp_forward(Backend& be, MlpSaved& saved, const void* x, const MlpWeights& w, const Dims& d,
                 const LayerProbe& probe);

/** out[N, C] = g Wfc2^T + b (out allocated by the caller: it is the block's output). */
void mlp_output(Backend& be, void* out, const MlpSaved& saved, const MlpWeights& w, const Dims& d);

/** Recomputes only g = GELU(h) from the kept h (selective checkpointing). */
void mlp_recompute_gelu(Backend& be, MlpSaved& saved, const Dims& d);

/** dx[N, C] = ... (overwritten); parameter gradients accumulated. dh[N, F] is scratch. */
void mlp_backward(Backend& be, void* dx, const MlpGrads& grads, const void* dout, const void* x, const MlpSaved& saved,
                  const MlpWeights& w, void* dh, const Dims& d, const LayerProbe& probe);

}  // namespace fsdp
