// Scalar dtype conversions (round-to-nearest-even) and dtype names.
#include "hanpu/dtype.h"

#include <cmath>
#include <cstring>

namespace hanpu {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

static uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
static float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Highway 1.0's scalar BF16FromF32 truncates; models and torch round to nearest even.
uint16_t f32_to_bf16_bits(float x) {
  uint32_t u = bits_of(x);
  if (std::isnan(x)) return static_cast<uint16_t>((u >> 16) | 0x40);  // keep it a NaN
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float bf16_bits_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

// IEEE binary16, round to nearest even, overflow to inf, subnormals kept.
uint16_t f32_to_f16_bits(float x) {
  const uint32_t u = bits_of(x);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFF;
  if (abs >= 0x7F800000) return sign | (abs > 0x7F800000 ? 0x7E00 : 0x7C00);
  if (abs >= 0x477FF000) return sign | 0x7C00;  // rounds to >= 65520: inf
  if (abs < 0x38800000) {                       // below the smallest normal half (2^-14)
    // Scale into the subnormal grid: value / 2^-24, rounded to nearest even by the FPU.
    const float scaled = float_of(abs) * 16777216.0f;  // exact power-of-two scaling
    const float r = std::nearbyint(scaled);
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant = abs & 0x7FFFFF;
  int32_t exp = static_cast<int32_t>(abs >> 23) - 127 + 15;
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half += 1;  // may carry into exponent
  return sign | static_cast<uint16_t>(half);
}

float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
    return (h & 0x8000) ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7F800000 | (mant << 13));
  return float_of(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

float load_as_f32(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kF16:
      return f16_bits_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16:
      return bf16_bits_to_f32(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.0f;
}

void store_from_f32(void* data, DType t, size_t i, float x) {
  switch (t) {
    case DType::kF32:
      static_cast<float*>(data)[i] = x;
      break;
    case DType::kF16:
      static_cast<uint16_t*>(data)[i] = f32_to_f16_bits(x);
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[i] = f32_to_bf16_bits(x);
      break;
  }
}

}  // namespace hanpu
