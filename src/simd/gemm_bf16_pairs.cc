// fp32 x bf16-pairs GEMM (see gemm_bf16_pairs.h), compiled for every Highway target and
// dispatched once per call.
//
// A pairs row holds, per 32-bit lane, the weights of two consecutive reduction steps of one
// column: (lane << 16) and (lane & 0xffff0000) are the two as fp32 (bf16_widen-inl.h), so the
// widening costs two integer ops per vector of weights, whose loads feed them directly. The
// register tile is rows x 16 columns (one half of a strip: 64 contiguous bytes per pair row);
// its A operand is broadcast from x packed per row tile (PackX), small enough to stay in L1
// while the weights of the slice (L2-sized) stream past it.
#include "simd/gemm_bf16_pairs.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "simd/amx.h"
#include "simd/pairs_loop_nest.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/gemm_bf16_pairs.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "simd/bf16_widen-inl.h"

HWY_BEFORE_NAMESPACE();
namespace hanpu::simd::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DU = hn::RebindToUnsigned<DF>;

constexpr int kVectorRegisters = (HWY_ARCH_X86 && HWY_TARGET >= HWY_AVX2) ? 16 : 32;
constexpr int kNL = static_cast<int>(hn::MaxLanes(DF()));
// 16 columns (one half strip) where that is at least two vectors, else both halves.
constexpr int kTileCols = kNL >= kPairHalfCols ? kPairStripCols : kPairHalfCols;
constexpr int kTileVecs = kTileCols / kNL;
// Accumulators take what the weights (kTileVecs) and a broadcast leave, keeping one register
// spare for the 0xffff0000 mask: 6 rows x 2 vectors on AVX2 (GCC 12 still reloads the mask
// from the stack every step there, a load only; 5- and 4-row tiles were slower).
constexpr int kMR = std::clamp((kVectorRegisters - kTileVecs - 2) / kTileVecs, 1, 12);

// Loop nest: simd/pairs_loop_nest.h. Weights kPrefetchBlocks blocks ahead are prefetched: at
// depth 3584 a row block's first tile finds them in L3, not L2 (faster there).
constexpr int kSliceBlocks = 8;
constexpr int kPrefetchBlocks = 2;
constexpr int kRowBlock = 8 * kMR;

#define HANPU_UNROLL_ALL _Pragma("GCC unroll 16")

// Offset (in bf16) of tile vector v inside a pair row, from the tile's first column.
constexpr int VectorOffset(int v) {
  return (v * kNL / kPairHalfCols) * kPairHalfElems + (v * kNL % kPairHalfCols) * 2;
}

// The pairs (32-bit lanes) of one tile vector of a pair row.
HWY_INLINE hn::Vec<DU> Pairs(const uint16_t* p) {
  return hn::LoadU(DU(), reinterpret_cast<const uint32_t*>(p));
}

// C tile [MR x n] (+)= A B over `blocks` whole blocks. a is A packed k-major (kMR floats per
// reduction step, see PackA), b the tile's first column in the first block.
template <int MR>
HWY_INLINE void Tile(const float* HWY_RESTRICT a, const uint16_t* HWY_RESTRICT b, int blocks,
                     float* HWY_RESTRICT c, int64_t ldc, int n, bool accumulate) {
  const DF d;
  const auto high = HighHalves(d);
  VF acc[MR][kTileVecs];
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i) {
    HANPU_UNROLL_ALL
    for (int v = 0; v < kTileVecs; ++v) acc[i][v] = hn::Zero(d);
  }
  for (int blk = 0; blk < blocks; ++blk) {
    const uint16_t* bb = b + static_cast<int64_t>(blk) * kPairBlockElems;
    const float* ab = a + blk * kPairBlockDepth * kMR;
    for (int r = 0; r < kPairRows; ++r) {
      const uint16_t* row = bb + r * kPairStripCols;
      const float* ar = ab + 2 * r * kMR;
      hwy::Prefetch(row + kPrefetchBlocks * kPairBlockElems);
      VF w[kTileVecs];
      HANPU_UNROLL_ALL
      for (int v = 0; v < kTileVecs; ++v) w[v] = EvenWeights(d, Pairs(row + VectorOffset(v)));
      HANPU_UNROLL_ALL
      for (int i = 0; i < MR; ++i) {
        const VF av = hn::Set(d, ar[i]);
        HANPU_UNROLL_ALL
        for (int v = 0; v < kTileVecs; ++v) acc[i][v] = hn::MulAdd(av, w[v], acc[i][v]);
      }
      HANPU_UNROLL_ALL
      for (int v = 0; v < kTileVecs; ++v) w[v] = OddWeights(d, Pairs(row + VectorOffset(v)), high);
      HANPU_UNROLL_ALL
      for (int i = 0; i < MR; ++i) {
        const VF av = hn::Set(d, ar[kMR + i]);
        HANPU_UNROLL_ALL
        for (int v = 0; v < kTileVecs; ++v) acc[i][v] = hn::MulAdd(av, w[v], acc[i][v]);
      }
    }
  }
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
    HANPU_UNROLL_ALL
    for (int v = 0; v < kTileVecs; ++v) {
      const int lanes = std::clamp(n - v * kNL, 0, kNL);
      if (lanes == kNL) {
        hn::StoreU(accumulate ? hn::Add(acc[i][v], hn::LoadU(d, ci + v * kNL)) : acc[i][v], d,
                   ci + v * kNL);
      } else if (lanes > 0) {
        const auto m = hn::FirstN(d, static_cast<size_t>(lanes));
        const VF sum =
            accumulate ? hn::Add(acc[i][v], hn::MaskedLoad(m, d, ci + v * kNL)) : acc[i][v];
        hn::BlendedStore(sum, m, d, ci + v * kNL);
      }
    }
  }
}

void TileRows(int m, const float* a, const uint16_t* b, int blocks, float* c, int64_t ldc, int n,
              bool accumulate) {
  switch (m) {
#define HANPU_PAIRS_TILE_CASE(R)                                                 \
  case R:                                                                        \
    if constexpr (R <= kMR) return Tile<R>(a, b, blocks, c, ldc, n, accumulate); \
    return;
    HANPU_PAIRS_TILE_CASE(1)
    HANPU_PAIRS_TILE_CASE(2)
    HANPU_PAIRS_TILE_CASE(3)
    HANPU_PAIRS_TILE_CASE(4)
    HANPU_PAIRS_TILE_CASE(5)
    HANPU_PAIRS_TILE_CASE(6)
    HANPU_PAIRS_TILE_CASE(7)
    HANPU_PAIRS_TILE_CASE(8)
    HANPU_PAIRS_TILE_CASE(9)
    HANPU_PAIRS_TILE_CASE(10)
    HANPU_PAIRS_TILE_CASE(11)
    HANPU_PAIRS_TILE_CASE(12)
#undef HANPU_PAIRS_TILE_CASE
    default:
      return;
  }
}

// The first column of tile column group g in block 0 of its strip.
HWY_INLINE const uint16_t* GroupStart(const uint16_t* w, int64_t strip_elems, int g) {
  const int col = g * kTileCols;
  return w + (col / kPairStripCols) * strip_elems +
         (col % kPairStripCols / kPairHalfCols) * kPairHalfElems;
}

// Floats of one packed row tile of x: kMR rows over the depth in whole blocks.
int64_t TileFloats(int in) {
  return static_cast<int64_t>((in + kPairBlockDepth - 1) / kPairBlockDepth) * kPairBlockDepth * kMR;
}

// pack_x_for_pairs: the tiles of rows [row0, row1), whole (rows past row1 zeroed).
void PackX(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in, float* packed) {
  const int64_t tile_floats = TileFloats(in);
  const int depth = static_cast<int>(tile_floats / kMR);
  for (int64_t t = row0 / kMR; t * kMR < row1; ++t) {
    float* tile = packed + t * tile_floats;
    for (int i = 0; i < kMR; ++i) {
      const int64_t r = t * kMR + i;
      const int valid = r >= row0 && r < row1 ? in : 0;
      if (r < row0) continue;  // another call's row
      const float* src = x + r * ldx;
      for (int k = 0; k < valid; ++k) tile[k * kMR + i] = src[k];
      for (int k = valid; k < depth; ++k) tile[k * kMR + i] = 0.0f;
    }
  }
}

void GemmPairsPacked(int rows, const float* a, int in, const uint16_t* w, int kt_blocks, int kt0,
                     int kt_count, int strips, int n_cols, float* c, int64_t ldc, bool accumulate) {
  n_cols = std::min(n_cols, strips * kPairStripCols);
  const int64_t strip_elems = static_cast<int64_t>(kt_blocks) * kPairBlockElems;
  const int64_t tile_floats = TileFloats(in);
  for_each_pairs_tile(
      PairsNest{kMR, kTileCols, kRowBlock, kSliceBlocks}, rows, in, kt_blocks, kt0, kt_count,
      n_cols, c, ldc, accumulate, [&](int m, int64_t t, int s0, int blocks, int g, bool sums) {
        TileRows(m, a + t * tile_floats + static_cast<int64_t>(s0) * kPairBlockDepth * kMR,
                 GroupStart(w, strip_elems, g) + static_cast<int64_t>(s0) * kPairBlockElems, blocks,
                 c + t * kMR * ldc + g * kTileCols, ldc,
                 std::min(kTileCols, n_cols - g * kTileCols), sums);
      });
}

int PairsTileRows() { return kMR; }
int PairsTileCols() { return kTileCols; }

}  // namespace hanpu::simd::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace hanpu::simd {
HWY_EXPORT(GemmPairsPacked);
HWY_EXPORT(PackX);
HWY_EXPORT(TileFloats);
HWY_EXPORT(PairsTileRows);
HWY_EXPORT(PairsTileCols);

int gemm_bf16_pairs_tile_rows() { return HWY_DYNAMIC_DISPATCH(PairsTileRows)(); }
int gemm_bf16_pairs_tile_cols() { return HWY_DYNAMIC_DISPATCH(PairsTileCols)(); }

size_t pairs_packed_x_floats(int64_t rows, int in) {
  const int64_t mr = gemm_bf16_pairs_tile_rows();
  return static_cast<size_t>((rows + mr - 1) / mr * HWY_DYNAMIC_DISPATCH(TileFloats)(in));
}

void pack_x_for_pairs(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in,
                      float* packed) {
  if (row1 > row0) HWY_DYNAMIC_DISPATCH(PackX)(x, ldx, row0, row1, in, packed);
}

void gemm_bf16_pairs_packed(int rows, const float* a, int in, const uint16_t* w, int kt_blocks,
                            int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                            bool accumulate) {
  HWY_DYNAMIC_DISPATCH(GemmPairsPacked)
  (rows, a, in, w, kt_blocks, kt0, kt_count, strips, n_cols, c, ldc, accumulate);
}

void gemm_bf16_pairs(int rows, const float* a, int64_t lda, int in, const uint16_t* w,
                     int kt_blocks, int kt0, int kt_count, int strips, int n_cols, float* c,
                     int64_t ldc, bool accumulate) {
  if (rows <= 0 || n_cols <= 0) return;
  thread_local std::vector<float> packed;
  packed.resize(pairs_packed_x_floats(rows, in));
  pack_x_for_pairs(a, lda, 0, rows, in, packed.data());
  gemm_bf16_pairs_packed(rows, packed.data(), in, w, kt_blocks, kt0, kt_count, strips, n_cols, c,
                         ldc, accumulate);
}
}  // namespace hanpu::simd
#endif
