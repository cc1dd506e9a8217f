#include "model/linear.h"

namespace fsdp {

void linear_forward(Backend& be, float* out, const float* in, const float* w, const float* b, long N, long I, long O) {
  be.bias_fill(out, b, N, O);
  be.gemm(false, true, N, O, I, 1.0f, in, I, w, I, 1.0f, out, O);
}

void linear_backward(Backend& be, float* din, bool accumulate_din, float* dw, float* db, const float* dout, const float* in, const float* w,
                     long N, long I, long O) {
  if (din) be.gemm(false, false, N, I, O, 1.0f, dout, O, w, I, accumulate_din ? 1.0f : 0.0f, din, I);
  be.gemm(true, false, O, I, N, 1.0f, dout, O, in, I, 1.0f, dw, I);
  if (db) be.bias_backward(db, dout, N, O);
}

}  // namespace fsdp
