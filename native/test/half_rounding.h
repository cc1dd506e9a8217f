// float32 -> 16-bit -> float32 on the host, round to nearest even as the GPU's __float2bfloat16_rn
// and __float2half_rn (runtime/half.h's conversions): for the tests that give kernels 16-bit inputs
// and compare with references built from the same rounded values.
#pragma once
#include "runtime/half.h"

namespace fsdp::test {

inline float round_f16(float x) {
  return f16_to_float(float_to_f16(x));
}
inline float round_bf16(float x) {
  return bf16_to_float(float_to_bf16(x));
}

}  // namespace fsdp::test
