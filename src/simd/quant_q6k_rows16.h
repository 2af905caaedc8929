// Q6_K weights repacked sixteen rows to a group for decode (cpu/nn/quant_linear.h keeps such a
// copy of every Q6_K projection beside its blocks), as quant_q4k_rows16.h does for Q4_K: a
// vector's 16 int32 lanes are the 16 rows, so one vpdpbusd against 4 activation bytes
// broadcast to every lane adds 4 products to each row's sum and the sub-blocks' int8 scales
// apply as plain vector products, where the blocks' loop (quant_dot_vnni.cc) spends its
// instructions moving each row's scales into its lanes and summing each row across them. The
// copy takes the blocks' 210 bytes a row and unit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/quant_dot.h"

namespace hanpu::simd {

inline constexpr int kQ6kGroupRows = 16;
// A group's unit: for each half of the unit's values and each of 8 runs of 4 bytes, three
// vectors of 64 bytes (4 bytes of each row's ql at the run, of its ql 32 further on, and of
// its qh: 48 vectors in the order the loop reads them), then each sub-block's int8 scale a
// row, then the rows' d (f16): 210 bytes a row, as GGUF's blocks.
inline constexpr size_t kQ6kGroupUnitBytes = 48 * 64 + 16 * 16 + 16 * 2;

// Repacks 16 Q6_K rows of `in` values (a multiple of 256; rows[r]: row r's blocks) into dst
// [in / 256][kQ6kGroupUnitBytes].
void q6k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst);

// Whether this CPU and build run q6k_group_times_one (AVX512-VNNI).
bool q6k_group_usable();

// y[r], r < 16: the group's row r times a, a single row quantized per unit (a decode step's:
// q256, d256 and bsum16), `units` units. Requires q6k_group_usable().
void q6k_group_times_one(const uint8_t* group, int units, const QuantActs& a, float* y);

}  // namespace hanpu::simd
