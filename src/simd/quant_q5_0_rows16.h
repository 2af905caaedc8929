// Q5_0 weights repacked sixteen rows to a group for decode (cpu/nn/quant_linear.h keeps such a
// copy of every Q5_0 projection beside its blocks), as quant_q4k_rows16.h does for Q4_K: a
// vector's 16 int32 lanes are the 16 rows, so one vpdpbusd against 4 activation bytes
// broadcast to every lane adds 4 products to each row's sum, and no row is summed across
// lanes. Q5_0 is what llama-quantize writes where a K type's 256-value blocks do not fit a
// row (Kimi Linear's 128-wide gate up-projections in a Q4_K_M file): such short rows spend
// most of the blocks' kernel on each row's own reduction. The copy takes the blocks' 22
// bytes a row and block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/quant_dot.h"

namespace hanpu::simd {

inline constexpr int kQ5_0GroupRows = 16;
// A group's block (32 values of each of its 16 rows): 4 vectors of 64 bytes (4 bytes of each
// row's 16 code bytes), a 32-bit word a row of its high bits (qh), the rows' d (f16).
inline constexpr size_t kQ5_0GroupBlockBytes = 4 * 64 + 64 + 16 * 2;

// Repacks 16 Q5_0 rows of `in` values (a multiple of 32; rows[r]: row r's blocks) into dst
// [in / 32][kQ5_0GroupBlockBytes].
void q5_0_group_rows(const uint8_t* const* rows, int in, uint8_t* dst);

// Whether this CPU and build run q5_0_group_times_one (AVX512-VNNI and BITALG).
bool q5_0_group_usable();

// y[r], r < 16: the group's row r times a, a single row quantized per 32 values (q, dlane,
// dsum), `blocks` blocks of 32. Requires q5_0_group_usable().
void q5_0_group_times_one(const uint8_t* group, int blocks, const QuantActs& a, float* y);

}  // namespace hanpu::simd
