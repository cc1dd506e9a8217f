// float32 -> float16 -> float32 on the host, round to nearest even with subnormals, as the GPU's
// __float2half_rn (runtime/half.h has the bfloat16 pair and float16 -> float32). For the tests that
// give kernels float16 inputs and compare with references built from the same rounded values.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/half.h"

namespace fsdp::test {

inline std::uint16_t float_to_f16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to 65520 or more: inf
  if (a < 0x38800000u) {
    // Subnormal or zero in float16: a multiple of 2^-24, rounded to nearest even.
    float f;
    std::memcpy(&f, &a, sizeof f);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(f * 16777216.0f)));
  }
  const std::uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (((rounded >> 13) - (112u << 10)) & 0x7fffu));
}

inline float round_f16(float x) { return f16_to_float(float_to_f16(x)); }
inline float round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

}  // namespace fsdp::test
