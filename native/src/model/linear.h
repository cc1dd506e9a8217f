// A linear layer, out = in W^T + b, with W in PyTorch's (out, in) layout: the matrix products of
// attention, the MLP and the LM head.
#pragma once
#include "backend/backend.h"

namespace fsdp {

/** out[N, O] = in[N, I] W[O, I]^T + b[O] (b may be null). */
void linear_forward(Backend& be, float* out, const float* in, const float* w, const float* b, long N, long I, long O);

/**
 * din[N, I] = dout W (overwritten, or added when `accumulate_din`; skipped when null);
 * dw[O, I] += dout^T in; db[O] += column sums of dout (skipped when null).
 */
void linear_backward(Backend& be, float* din, bool accumulate_din, float* dw, float* db, const float* dout, const float* in, const float* w,
                     long N, long I, long O);

}  // namespace fsdp
