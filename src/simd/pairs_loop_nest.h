// The loop nest of the prefill kernels on the pairs layout (simd/amx.h): gemm_bf16_pairs.cc
// (fp32 x, weights widened in registers) and gemm_bf16_dot.cc (bf16 x, the dot instruction)
// differ only in their register tile. Plain C++, no SIMD: each kernel passes its tile as a
// callable compiled for its own ISA.
//
// Why this order (measured against one another on a Zen 3 core with the pairs kernel,
// throwaway harness, 256 x 256 units of depth 1024 and 3584): row blocks, each through the
// depth in slices, each slice row tile by row tile (the tile's packed x in L1) against every
// column group (its weights from L2). A slice of 8 blocks keeps a 48-row block's C (48 x 256
// fp32) and the slice's weights (128 KB for 256 columns) in L2 together; 16-block slices and
// 96- or 192-row blocks measured no faster.
#pragma once

#include <algorithm>
#include <cstdint>

#include "simd/amx.h"

namespace hanpu::simd {

struct PairsNest {
  int tile_rows;     // rows of the register tile (x is packed in row tiles of this many)
  int tile_cols;     // output columns of one column group
  int row_block;     // rows of a row block, a multiple of tile_rows
  int slice_blocks;  // 32-deep blocks of a slice
};

// For C[rows x n_cols] (+)= A B over blocks kt0 .. kt0 + kt_count - 1 (and below both
// kt_blocks and the blocks `in` reaches; the rest hold only zero weights): calls
//   tile(m, t, s0, blocks, g, sums)
// for row tile t (its first m <= tile_rows rows valid), the slice of `blocks` blocks from
// block s0, column group g, `sums` saying whether C already holds sums to add to. With no
// block in range, C's [rows x n_cols] is zeroed unless `accumulate`.
template <class TileFn>
void for_each_pairs_tile(const PairsNest& nest, int rows, int in, int kt_blocks, int kt0,
                         int kt_count, int n_cols, float* c, int64_t ldc, bool accumulate,
                         TileFn&& tile) {
  if (rows <= 0 || n_cols <= 0) return;
  const int kt_end =
      std::min({kt0 + kt_count, kt_blocks, (in + kPairBlockDepth - 1) / kPairBlockDepth});
  if (kt_end <= kt0) {  // no block in range: the product is zero
    if (!accumulate) {
      for (int i = 0; i < rows; ++i) std::fill(c + i * ldc, c + i * ldc + n_cols, 0.0f);
    }
    return;
  }
  const int groups = (n_cols + nest.tile_cols - 1) / nest.tile_cols;
  for (int r0 = 0; r0 < rows; r0 += nest.row_block) {
    const int r1 = std::min(rows, r0 + nest.row_block);
    for (int s0 = kt0; s0 < kt_end; s0 += nest.slice_blocks) {
      const int blocks = std::min(nest.slice_blocks, kt_end - s0);
      const bool sums = accumulate || s0 > kt0;
      for (int i0 = r0; i0 < r1; i0 += nest.tile_rows) {
        for (int g = 0; g < groups; ++g)
          tile(std::min(nest.tile_rows, r1 - i0), i0 / nest.tile_rows, s0, blocks, g, sums);
      }
    }
  }
}

}  // namespace hanpu::simd
