// Round-to-nearest-even conversions against exhaustive and known values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hanpu/dtype.h"

namespace hanpu {
namespace {

TEST(DType, F16RoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(f))));
      continue;
    }
    EXPECT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
  }
}

TEST(DType, F16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16_bits(1.0f + 1.0f / 2048), 0x3C00);  // tie -> even (down)
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3.0f / 2048), 0x3C02);  // tie -> even (up)
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);            // rounds to inf
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and min sub
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(DType, BF16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie -> even
  EXPECT_EQ(f32_to_bf16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(std::nanf("")))));
  for (uint32_t h = 0; h < 0x10000; h += 7) {
    const float f = bf16_bits_to_f32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16_bits(f), h);
    }
  }
}

TEST(DType, Names) {
  for (DType t : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  EXPECT_FALSE(parse_dtype("f64"));
}

}  // namespace
}  // namespace hanpu
