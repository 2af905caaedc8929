// GGUF's quantized block formats, as ggml defines them (ggml-common.h): each block holds
// `block_elems` values of a row in `bytes` bytes. This file decodes
// them one block at a time in plain scalar code: the reference the quantized GEMV and GEMM
// kernels (and the loader's checks) are measured against. The decoded values are bit for bit
// those of the `gguf` Python package's dequantize (tests/fixtures/quant,
// scripts/make_quant_vectors.py).
//   Q4_0: d, 16 bytes of nibbles;           x = d (q - 8),        q in [0, 15]
//   Q4_1: d, m, 16 bytes of nibbles;        x = d q + m
//   Q5_0: d, 4 bytes of 5th bits, nibbles;  x = d (q - 16),       q in [0, 31]
//   Q5_1: d, m, 4 bytes of 5th bits, nibbles; x = d q + m
//   Q8_0: d, 32 int8;                        x = d q
//   Q4_K: 256 values: d, dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32, then
//         128 bytes of nibbles;            x = (d sc) q - (dmin m)
//   Q6_K: 256 values: 128 bytes of low nibbles, 64 of 2-bit highs, 16 int8 scales for 16
//         sub-blocks of 16, then d;        x = (d sc) (q - 32),  q in [0, 63]
//   Q5_K: Q4_K with a 5th bit per value;   Q2_K: 4-bit scales and mins, 2-bit values;
//   Q3_K: 6-bit scales, 3-bit values (2 bits and a mask bit);
//   IQ4_NL (32 values) and IQ4_XS (256, 6-bit sub-scales): 4-bit indices into a fixed
//         non-uniform grid of 16 levels, x = d (sc) level[q]
// In the 32-value types byte j holds value j in its low half and value j + 16 in its high half,
// and bit j of the little-endian 32-bit word of 5th bits is value j's. The K types' layouts are
// spelled out in quant_blocks.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace hanpu {

enum class QuantType {
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  kQ4_K,
  kQ6_K,
  kQ2_K,
  kQ3_K,
  kQ5_K,
  kIQ4_NL,
  kIQ4_XS
};

struct QuantTypeInfo {
  QuantType type;
  std::string_view name;  // as GGUF tools print it: "Q4_0"
  uint32_t ggml_type;     // the tensor type id in a GGUF file
  int block_elems;        // values per block: 32, or 256 for the K types
  int bytes;              // per block
};

std::span<const QuantTypeInfo> quant_types();
const QuantTypeInfo& quant_type_info(QuantType t);
// The type of a GGUF tensor type id, if it is one of these.
std::optional<QuantType> quant_type_of_ggml(uint32_t ggml_type);

// The type named `name` ("Q4_K", case-insensitive), if it is one of these.
std::optional<QuantType> parse_quant_type(std::string_view name);

// "Q4_0, Q4_1, ...": every type's name, for messages.
std::string quant_type_names();

// Byte offsets in a block of its f16 scale d and of its f16 min (-1: the type has none).
int quant_scale_offset(QuantType t);
int quant_min_offset(QuantType t);

// Decodes `blocks` whole blocks at `src` into blocks * block_elems floats at `dst`.
void dequantize_blocks(QuantType t, const uint8_t* src, size_t blocks, float* dst);

// Whether every scale (and min) of the blocks is finite: a NaN or an infinity there would
// poison every value of its block. Returns the index of the first bad block, or `blocks`.
size_t first_block_with_bad_scale(QuantType t, const uint8_t* src, size_t blocks);

}  // namespace hanpu
