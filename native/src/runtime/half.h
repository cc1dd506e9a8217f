// 16-bit floats on the host, as bit patterns: bfloat16 (the top half of a float32) and IEEE
// float16. For reading GPU tensors back (diagnostics, tests) and for 16-bit sums over MPI; the GPU
// converts with its own instructions, and these round as they do.
#pragma once
#include <cstdint>
#include <cstring>

namespace fsdp {

inline float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint32_t float_to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bf16_to_float(std::uint16_t h) {
  return bits_to_float(static_cast<std::uint32_t>(h) << 16);
}

/** Round to nearest even, as the GPU's __float2bfloat16; NaN stays NaN. */
inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));  // Inf, NaN
  if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
  if (man == 0) return bits_to_float(sign);
  // Subnormal: value = man * 2^-24.
  const float v = static_cast<float>(man) * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

/** Round to nearest even, as the GPU's __float2half_rn: overflow to Inf, subnormals kept; NaN stays NaN. */
inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_to_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to 65536 or beyond: Inf
  if (a >= 0x38800000u) {
    // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
    const std::uint32_t r = a - 0x38000000u;
    return static_cast<std::uint16_t>(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal: the value in units of 2^-24, rounded to nearest even.
  const std::uint32_t exp = a >> 23, man = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - static_cast<int>(exp);  // 2^-24 units: man * 2^(exp - 127 - 23 + 24)
  const std::uint32_t q = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return static_cast<std::uint16_t>(sign | (q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u)));
}

}  // namespace fsdp
