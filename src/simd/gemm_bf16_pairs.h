// Prefill GEMM straight from bf16 weights in the pairs layout (simd/amx.h), for cores without
// a matrix unit: fp32 activations times bf16 weights widened in registers, fp32 sums.
//
// Why by hand: the alternative is to widen every weight block to fp32 and hand it to a BLAS,
// which then packs it again. Both copies go (the pairs layout already is a packed B: 64 bytes
// per two reduction steps of 16 columns, read front to back), and the 16-bit weights halve the
// bytes each core's L2 holds of B.
#pragma once

#include <cstdint>

namespace hanpu::simd {

// C[rows x n_cols] (row-major, ldc) = A B, or C + A B when `accumulate`, where
//   A [rows x in] is fp32 row-major (lda), read for columns k < in only (past it reads as 0),
//   B [in x n_cols] is blocks kt0 .. kt0 + kt_count - 1 of `strips` pairs-layout strips that
//     are kt_blocks blocks long each (columns past n_cols hold zeros, as clear_padding leaves
//     them), so only A's columns [32 kt0, 32 (kt0 + kt_count)) take part.
// n_cols <= 32 strips. Runs on the calling thread.
void gemm_bf16_pairs(int rows, const float* a, int64_t lda, int in, const uint16_t* w, int kt_blocks, int kt0,
                     int kt_count, int strips, int n_cols, float* c, int64_t ldc, bool accumulate);

// Register tile of gemm_bf16_pairs on this machine's SIMD target: rows x columns.
int gemm_bf16_pairs_tile_rows();
int gemm_bf16_pairs_tile_cols();

}  // namespace hanpu::simd
