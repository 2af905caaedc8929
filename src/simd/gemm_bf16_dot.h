// Prefill GEMM on the CPU's bf16 dot-product instruction (AVX512-BF16 VDPBF16PS: per fp32
// lane, acc += a0 b0 + a1 b1 over a pair of bf16), for x86 cores that have it without AMX
// (AMD Zen 4 and later, Intel Cooper Lake): x rounded to bf16, the weights read as stored in
// the pairs layout (simd/amx.h), whose 32-bit lanes already are the pairs the instruction
// takes, exact products, fp32 sums. It does twice the multiply-adds of an fp32 FMA per
// instruction at the same rate (`hanpu info` measures both).
//
// Numerics: those of the AMX path (amx.h): x is rounded to bf16 (round to nearest even,
// relative error <= 2^-9 per element), the rest is fp32. Subnormal inputs count as zero.
//
// Why by hand: Highway (1.0.3, Debian 12) has no target with AVX512-BF16 nor an op that emits
// VDPBF16PS; the kernel is intrinsics in functions compiled for that ISA alone, chosen at run
// time (bf16_dot_usable), so the rest of the binary still runs on any x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hanpu::simd {

// True when this process may run the kernel: an x86 CPU with AVX512-F and AVX512-BF16 whose
// OS saves the 512-bit state, and a compiler that built it. Checked once.
bool bf16_dot_usable();

// Register tile: rows x 32 columns (one strip: two 16-column halves, a vector each).
int gemm_bf16_dot_tile_rows();

// x [rows x in] rounded to bf16 and packed as the kernel reads it: row tiles of
// gemm_bf16_dot_tile_rows() rows, tile t holding rows [t MR, (t + 1) MR) pair-step-major (for
// each pair of reduction steps 2p, 2p + 1, MR 32-bit words (x[r][2p] | x[r][2p + 1] << 16)),
// over the depth rounded up to whole 32-deep blocks, zeros past `in` and past the last row.
size_t dot_packed_x_words(int64_t rows, int in);
// Packs rows [row0, row1) of x into `packed` (the buffer of all rows, tile 0 first); row0 is
// a multiple of the tile rows, and rows of row1's tile past row1 are zeroed. Calls for
// disjoint tile ranges may run on different threads. Requires bf16_dot_usable().
void pack_x_for_dot(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in,
                    uint32_t* packed);

// C[rows x n_cols] (row-major, ldc) = A B, or C + A B when `accumulate`, with A packed by
// pack_x_for_dot (`a`: the tile of A's first row, which starts a tile) and B blocks
// kt0 .. kt0 + kt_count - 1 of `strips` pairs-layout strips of kt_blocks blocks (columns past
// n_cols hold zeros, as clear_padding leaves them); n_cols <= 32 strips. On the calling
// thread. Requires bf16_dot_usable().
void gemm_bf16_dot_packed(int rows, const uint32_t* a, int in, const uint16_t* w, int kt_blocks,
                          int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                          bool accumulate);

// The same from row-major fp32 x (lda), packed first (for tests and one-off products).
void gemm_bf16_dot(int rows, const float* a, int64_t lda, int in, const uint16_t* w, int kt_blocks,
                   int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                   bool accumulate);

// A register-only loop of `iterations` steps of 12 independent VDPBF16PS on the calling
// thread; returns the FLOPs done (a bf16 multiply-add counts 2). The denominator of "% of
// the dot peak". Requires bf16_dot_usable().
double bf16_dot_loop(int64_t iterations);

}  // namespace hanpu::simd
