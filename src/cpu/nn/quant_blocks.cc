// GGUF block decoding (see quant_blocks.h). Plain scalar code on purpose: it is the reference
// the vectorised quantized kernels are tested against, and it must round as numpy does, one
// f32 multiply (then one add for the types with a min), never a fused multiply-add.
#include "cpu/nn/quant_blocks.h"

#include <cmath>
#include <cstring>

#include "hanpu/dtype.h"

namespace hanpu::cpu {

namespace {

constexpr QuantTypeInfo kTypes[] = {
    {QuantType::kQ4_0, "Q4_0", 2, 18}, {QuantType::kQ4_1, "Q4_1", 3, 20},
    {QuantType::kQ5_0, "Q5_0", 6, 22}, {QuantType::kQ5_1, "Q5_1", 7, 24},
    {QuantType::kQ8_0, "Q8_0", 8, 34},
};

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return f16_bits_to_f32(h);
}

bool has_min(QuantType t) { return t == QuantType::kQ4_1 || t == QuantType::kQ5_1; }

// Value j's nibble (0..15) of the 16 bytes at `qs`.
int nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }

// d q (+ m): the product rounded to f32 on its own, as numpy computes it. `volatile` keeps a
// compiler from contracting the two into one fused multiply-add, which rounds once.
float scaled(float d, float q) {
  volatile float p = d * q;
  return p;
}

void decode_block(QuantType t, const uint8_t* b, float* x) {
  const float d = half_at(b);
  switch (t) {
    case QuantType::kQ4_0:
      for (int j = 0; j < kQuantBlockElems; ++j)
        x[j] = scaled(d, static_cast<float>(nibble(b + 2, j) - 8));
      return;
    case QuantType::kQ4_1: {
      const float m = half_at(b + 2);
      for (int j = 0; j < kQuantBlockElems; ++j)
        x[j] = scaled(d, static_cast<float>(nibble(b + 4, j))) + m;
      return;
    }
    case QuantType::kQ5_0:
    case QuantType::kQ5_1: {
      const bool min = t == QuantType::kQ5_1;
      const uint8_t* qh_at = b + (min ? 4 : 2);
      uint32_t qh;
      std::memcpy(&qh, qh_at, sizeof(qh));
      const uint8_t* qs = qh_at + 4;
      const float m = min ? half_at(b + 2) : 0.0f;
      for (int j = 0; j < kQuantBlockElems; ++j) {
        const int q = nibble(qs, j) | static_cast<int>(((qh >> j) & 1u) << 4);
        x[j] = min ? scaled(d, static_cast<float>(q)) + m : scaled(d, static_cast<float>(q - 16));
      }
      return;
    }
    case QuantType::kQ8_0:
      for (int j = 0; j < kQuantBlockElems; ++j)
        x[j] = scaled(d, static_cast<float>(static_cast<int8_t>(b[2 + j])));
      return;
  }
}

}  // namespace

std::span<const QuantTypeInfo> quant_types() { return kTypes; }

const QuantTypeInfo& quant_type_info(QuantType t) { return kTypes[static_cast<int>(t)]; }

std::optional<QuantType> quant_type_of_ggml(uint32_t ggml_type) {
  for (const QuantTypeInfo& i : kTypes) {
    if (i.ggml_type == ggml_type) return i.type;
  }
  return std::nullopt;
}

void dequantize_blocks(QuantType t, const uint8_t* src, size_t blocks, float* dst) {
  const size_t bytes = static_cast<size_t>(quant_type_info(t).bytes);
  for (size_t i = 0; i < blocks; ++i) decode_block(t, src + i * bytes, dst + i * kQuantBlockElems);
}

size_t first_block_with_bad_scale(QuantType t, const uint8_t* src, size_t blocks) {
  const size_t bytes = static_cast<size_t>(quant_type_info(t).bytes);
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* b = src + i * bytes;
    if (!std::isfinite(half_at(b)) || (has_min(t) && !std::isfinite(half_at(b + 2)))) return i;
  }
  return blocks;
}

}  // namespace hanpu::cpu
