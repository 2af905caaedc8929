// The CPU's matrix unit for 16-bit weights: Intel AMX (TMUL) bf16 tiles on x86 cores that
// have them (Sapphire Rapids and later). A TDPBF16PS multiplies a 16 x 32 bf16 tile by a
// 32 x 16 one into a 16 x 16 fp32 accumulator, an order of magnitude more multiply-adds per
// cycle than fp32 FMAs (`hanpu info` measures both; docs/performance.md). It is the
// CPU's counterpart of an NPU's cube unit: 16-bit inputs, exact products, fp32 sums.
//
// Operand layouts (hanpu's "pairs" layout, shared with the decode GEMV, the FMA-core prefill
// GEMM (gemm_bf16_pairs.h) and the widening for OpenBLAS, see src/cpu/nn/linear.h):
//   - A (activations): bf16 in tiles: 16-row blocks, each a run of KT tiles of 16 rows x 32
//     reduction steps (1 KB, row-major inside), rows zero-padded to a multiple of 32 and the
//     reduction to 32 KT. A tile load then reads 1 KB in sequence (from row-major x it read
//     16 lines a row apart, and the products waited on those loads).
//   - B (weights): strips of 32 output columns; a strip is KT blocks of 32 reduction steps,
//     each block 2 KB: two 16-column halves of 16 rows, row r holding for each column c the
//     pair (w[2r][c], w[2r + 1][c]) — the "VNNI" order TDPBF16PS reads its B tile in.
#pragma once

#include <cstdint>

namespace hanpu::simd {

inline constexpr int kPairStripCols = 32;   // output columns per strip
inline constexpr int kPairBlockDepth = 32;  // reduction steps per block
inline constexpr int kPairBlockElems = kPairStripCols * kPairBlockDepth;  // 1024 bf16 = 2 KB
// A block stored as two halves of 16 columns, each kPairRows rows of 16 pairs (64 bytes).
inline constexpr int kPairHalfCols = kPairStripCols / 2;
inline constexpr int kPairHalfElems = kPairBlockElems / 2;
inline constexpr int kPairRows = kPairBlockDepth / 2;

// True when this process can run AMX bf16 tiles: the CPU reports AMX-TILE and AMX-BF16, the
// OS enabled the tile state and it granted this process permission (Linux arch_prctl).
// Checked once. Whether projections use them is cpu/nn/projection_kernels.h's choice.
bool amx_bf16_usable();

inline constexpr int kPairTileRows = 16;
inline constexpr int kPairATileElems = kPairTileRows * kPairBlockDepth;  // 512 bf16 = 1 KB

// Element (r, k) of A in the tiled layout above, for KT reduction blocks.
inline int64_t amx_a_index(int64_t r, int k, int kt_blocks) {
  return ((r / kPairTileRows) * kt_blocks + k / kPairBlockDepth) * kPairATileElems +
         (r % kPairTileRows) * kPairBlockDepth + k % kPairBlockDepth;
}

// C[m_rows x n_cols] (fp32, leading dimension ldc) = A[m_rows x 32 KT] B, for A in the tiled
// layout starting at a 16-row block (round_up(m_rows, 32) rows readable, zero-padded) and B
// the `strips` strips at b (n_cols <= 32 strips; columns past n_cols are computed and
// dropped). C is overwritten. Requires amx_bf16_usable().
void amx_gemm_bf16(const uint16_t* a, int m_rows, const uint16_t* b, int kt_blocks, int strips,
                   int n_cols, float* c, int64_t ldc);

// A register-only tile loop (4 accumulators, products of tiles already loaded) for
// `iterations` steps of 4 TDPBF16PS on the calling thread; returns the FLOPs done (an
// exact bf16 multiply-add counts 2). The denominator of "% of AMX peak". Requires
// amx_bf16_usable().
double amx_bf16_loop(int64_t iterations);

}  // namespace hanpu::simd
