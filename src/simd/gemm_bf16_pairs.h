// Prefill GEMM straight from bf16 weights in the pairs layout (simd/amx.h), for cores without
// a matrix unit: fp32 activations times bf16 weights widened in registers, fp32 sums.
//
// Why by hand: the alternative is to widen every weight block to fp32 and hand it to a BLAS,
// which then packs it again. Both copies go (the pairs layout already is a packed B: 64 bytes
// per two reduction steps of 16 columns, read front to back), and the 16-bit weights halve the
// bytes each core's L2 holds of B.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::simd {

// C[rows x n_cols] (row-major, ldc) = A B, or C + A B when `accumulate`, where
//   A [rows x in] is fp32 row-major (lda), read for columns k < in only (past it reads as 0),
//   B [in x n_cols] is blocks kt0 .. kt0 + kt_count - 1 of `strips` pairs-layout strips that
//     are kt_blocks blocks long each (columns past n_cols hold zeros, as clear_padding leaves
//     them), so only A's columns [32 kt0, 32 (kt0 + kt_count)) take part.
// n_cols <= 32 strips. Runs on the calling thread; packs A first (pack_x_for_pairs).
void gemm_bf16_pairs(int rows, const float* a, int64_t lda, int in, const uint16_t* w,
                     int kt_blocks, int kt0, int kt_count, int strips, int n_cols, float* c,
                     int64_t ldc, bool accumulate);

// Register tile of the kernel on this machine's SIMD target: rows x columns.
int gemm_bf16_pairs_tile_rows();
int gemm_bf16_pairs_tile_cols();

// x [rows x in] as the kernel reads it, so that the several products of one x (the panels of
// a projection) share one packing: row tiles of gemm_bf16_pairs_tile_rows() rows, tile t
// holding rows [t MR, (t + 1) MR) k-major (MR floats a reduction step) over the depth rounded
// up to whole 32-deep blocks, zeros past `in` and past the last row. Why pack at all: the rows
// of x are `ldx` apart, a multiple of 4 KB at hidden sizes like 1024, so read in place a tile's
// rows fall in the same L1 sets, next to the weights' (a tile reads 1 KB of each 2 KB block
// of them: half the sets), and were evicted before their next use.
size_t pairs_packed_x_floats(int64_t rows, int in);
// Packs rows [row0, row1) of x into `packed` (the buffer of all rows, tile 0 first); row0 is
// a multiple of the tile rows, and rows of row1's tile past row1 are zeroed. Calls for
// disjoint tile ranges may run on different threads.
void pack_x_for_pairs(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in,
                      float* packed);

// gemm_bf16_pairs on x packed by pack_x_for_pairs: `a` is the tile of A's first row (which
// starts a tile).
void gemm_bf16_pairs_packed(int rows, const float* a, int in, const uint16_t* w, int kt_blocks,
                            int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                            bool accumulate);

}  // namespace hanpu::simd
