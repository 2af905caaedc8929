// Q6_K weights repacked four rows to a group for decode (cpu/nn/quant_linear.h keeps such a
// copy of every Q6_K projection beside its blocks): a group's unit u is unit u of each of its
// 4 rows back to back, so a core's decode reads one sequential run where the rows' own blocks
// are read as four runs at once, rows apart (the blocks' decode kernel reads four rows in
// lockstep, from a quarter of its range each: four adjacent rows from their own blocks read
// far slower still). The bytes are the blocks' own, 210 a row and unit; the product is the
// blocks' decode kernel's (quant_dot_vnni.cc), on the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simd/quant_dot.h"

namespace hanpu::simd {

inline constexpr int kQ6kGroupRows = 4;
inline constexpr size_t kQ6kGroupUnitBytes = 4 * 210;

// Repacks 4 Q6_K rows of `in` values (a multiple of 256; rows[r]: row r's blocks) into dst
// [in / 256][kQ6kGroupUnitBytes].
void q6k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst);

// Whether this CPU and build run q6k_group_times_one (AVX512-VNNI).
bool q6k_group_usable();

// y[r], r < 4: the group's row r times a, a single row quantized per unit (a decode step's:
// q256, d256 and shift_lane), `units` units. Requires q6k_group_usable().
void q6k_group_times_one(const uint8_t* group, int units, const QuantActs& a, float* y);

}  // namespace hanpu::simd
