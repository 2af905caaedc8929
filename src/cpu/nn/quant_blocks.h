// GGUF's quantized block formats, as ggml defines them (ggml-common.h): each block holds
// kQuantBlockElems values of a row in `bytes` bytes, an f16 scale d first. This file decodes
// them one block at a time in plain scalar code: the reference the quantized GEMV and GEMM
// kernels (and the loader's checks) are measured against. The decoded values are bit for bit
// those of the `gguf` Python package's dequantize (tests/fixtures/quant,
// scripts/make_quant_vectors.py).
//   Q4_0: d, 16 bytes of nibbles;           x = d (q - 8),        q in [0, 15]
//   Q4_1: d, m, 16 bytes of nibbles;        x = d q + m
//   Q5_0: d, 4 bytes of 5th bits, nibbles;  x = d (q - 16),       q in [0, 31]
//   Q5_1: d, m, 4 bytes of 5th bits, nibbles; x = d q + m
//   Q8_0: d, 32 int8;                        x = d q
// Nibbles: byte j holds value j in its low half and value j + 16 in its high half; the 5th
// bits: bit j of the little-endian 32-bit word is value j's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hanpu::cpu {

enum class QuantType { kQ4_0, kQ4_1, kQ5_0, kQ5_1, kQ8_0 };

inline constexpr int kQuantBlockElems = 32;  // values per block of every type here

struct QuantTypeInfo {
  QuantType type;
  std::string_view name;  // as GGUF tools print it: "Q4_0"
  uint32_t ggml_type;     // the tensor type id in a GGUF file
  int bytes;              // per block of kQuantBlockElems values
};

std::span<const QuantTypeInfo> quant_types();
const QuantTypeInfo& quant_type_info(QuantType t);
// The type of a GGUF tensor type id, if it is one of these.
std::optional<QuantType> quant_type_of_ggml(uint32_t ggml_type);

// Decodes `blocks` whole blocks at `src` into blocks * kQuantBlockElems floats at `dst`.
void dequantize_blocks(QuantType t, const uint8_t* src, size_t blocks, float* dst);

// Whether every scale (and min) of the blocks is finite: a NaN or an infinity there would
// poison every value of its block. Returns the index of the first bad block, or `blocks`.
size_t first_block_with_bad_scale(QuantType t, const uint8_t* src, size_t blocks);

}  // namespace hanpu::cpu
