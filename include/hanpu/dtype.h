// Storage dtypes of activations (q, k, v, o): fp32, fp16, bf16. Compute is always fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hanpu {

enum class DType : uint8_t { kF32, kF16, kBF16 };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

constexpr size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }
std::string_view dtype_name(DType t);                     // "f32", "f16", "bf16"
std::optional<DType> parse_dtype(std::string_view name);  // accepts the names above

// Scalar conversions with round-to-nearest-even, used by references and tests to build the
// exact rounded inputs a kernel sees. Hot paths convert with src/simd instead.
uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float x);
float bf16_bits_to_f32(uint16_t h);

// Reads element i of a buffer stored in dtype t as float.
float load_as_f32(const void* data, DType t, size_t i);
// Writes x (rounded to nearest even) into element i of a buffer stored in dtype t.
void store_from_f32(void* data, DType t, size_t i, float x);

}  // namespace hanpu
