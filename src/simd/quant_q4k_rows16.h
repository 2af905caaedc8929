// Q4_K weights repacked sixteen rows to a group for decode (cpu/nn/quant_linear.h keeps such
// a copy of every Q4_K projection beside its blocks). In a group's unit (256 values of each of
// its 16 rows) a vector's 16 int32 lanes are the 16 rows: vector j holds 4 bytes of each
// row's codes, so one vpdpbusd against 4 activation bytes broadcast to every lane adds 4
// products to each row's sum, and the sub-blocks' 6-bit scales apply as plain vector
// products. The loop over GGUF's own layout (quant_dot_vnni.cc) spends most of its
// instructions moving each row's scales into its lanes and summing each row across them
// (docs/journal, 2026-12-06, "A Q4_K loop over 16 rows interleaved"). The copy takes the
// blocks' 144 bytes a row and unit (the scales stay six bits), so a decode that waits on
// memory reads no more than from the blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/quant_dot.h"

namespace hanpu::simd {

inline constexpr int kQ4kGroupRows = 16;
// A group's unit: 32 code vectors of 64 bytes, then a 32-bit word a row each of the low four
// bits of the 8 scales, of the 8 mins, and of their top two bits, then the rows' d and dmin
// (f16): 144 bytes a row, as GGUF's blocks.
inline constexpr size_t kQ4kGroupUnitBytes = 32 * 64 + 3 * 4 * 16 + 2 * 16 * 2;

// Repacks 16 Q4_K rows of `in` values (a multiple of 256; rows[r]: row r's blocks) into dst
// [in / 256][kQ4kGroupUnitBytes].
void q4k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst);

// Whether this CPU and build run q4k_group_times_one (AVX512-VNNI).
bool q4k_group_usable();

// y[r], r < 16: the group's row r times a, a single row quantized per unit (a decode step's:
// q256, d256 and bsum32), `units` units. Requires q4k_group_usable().
void q4k_group_times_one(const uint8_t* group, int units, const QuantActs& a, float* y);

}  // namespace hanpu::simd
