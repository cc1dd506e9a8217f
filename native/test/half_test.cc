// 16-bit floats on the host (runtime/half.h), which the host-staged 16-bit sums and the
// conversions of reduce_dtype/param_dtype rely on: every float16 value survives a round trip,
// every midpoint between two neighbours rounds to the even one, and just above it to the upper,
// overflow gives Inf, NaN stays NaN; bfloat16 rounds to nearest even too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/half.h"

namespace fsdp {
namespace {

TEST(Half, Float16RoundsToNearestEvenOverEveryValue) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16(f), h) << "round trip of " << f;
  }
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = f16_to_float(static_cast<std::uint16_t>(h)), hi = f16_to_float(static_cast<std::uint16_t>(h + 1));
    const float mid = (lo + hi) / 2;  // exact in float32
    ASSERT_EQ(float_to_f16(mid), (h & 1) ? h + 1 : h) << "midpoint above " << lo;
    ASSERT_EQ(float_to_f16(std::nextafter(mid, 1e30f)), h + 1) << "just above the midpoint above " << lo;
    ASSERT_EQ(float_to_f16(-mid), ((h & 1) ? h + 1 : h) | 0x8000u);
  }
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00) << "the midpoint to 65536 rounds up to Inf";
  EXPECT_EQ(float_to_f16(1e-8f), 0) << "below half the smallest subnormal";
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), float_to_bf16(1.0f)) << "a tie rounds to the even mantissa";
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), float_to_bf16(1.0f + 4.0f / 256));
  EXPECT_EQ(bf16_to_float(float_to_bf16(3.140625f)), 3.140625f);
}

}  // namespace
}  // namespace fsdp
