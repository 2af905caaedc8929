// Rows of bf16 weights into one strip of the pairs layout (simd/amx.h), the layout every bf16
// prefill kernel reads: at load for bf16 checkpoints, and for every weight of a prefill from
// quantized blocks (cpu/nn/quant_linear.cc), where its cost is paid per token batch.
#pragma once

#include <cstdint>

namespace hanpu::simd {

// Packs 32 rows (row c, an output column, at rows + c * ld: 32 kt_blocks values each; rows
// past the matrix zero-filled by the caller) into one strip of kt_blocks blocks. Pair row j
// of a block's half holds 32-bit word j of its 16 rows: two 16 x 16 transposes of words per
// block, done in registers with AVX-512, word by word elsewhere.
void pack_strip_bf16(const uint16_t* rows, int64_t ld, int kt_blocks, uint16_t* strip);

}  // namespace hanpu::simd
