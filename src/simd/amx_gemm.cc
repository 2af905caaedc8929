// AMX bf16 tile kernel (see amx.h). Written with the compiler's AMX intrinsics because
// Highway (1.0, Debian's) has no tile operations; this file alone is compiled with
// -mamx-tile -mamx-bf16 and runs only after amx_bf16_usable() said yes.
//
// Register plan: tiles 0-3 accumulate a 32 x 32 fp32 block of C (2 x 2 tiles of 16 x 16),
// tiles 4-5 hold two 16-row slices of A (16 x 32 bf16 each), tiles 6-7 the two 16-column
// halves of one 32 x 32 B block. Each 32-deep step loads 4 tiles (4 KB, each 1 KB in
// sequence) and issues 4 tile products (64 K FLOP).
#include <immintrin.h>

#include <cstring>

#include "simd/amx.h"

namespace hanpu::simd {

namespace {

struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Every tile 16 rows of 64 bytes: 16 fp32 (C) or 32 bf16 (A, and B's row pairs).
void load_tile_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
}

// Copies the valid part of a 16 x 16 tile stored at `scratch` into C.
void copy_tile(const float* scratch, int rows, int cols, float* c, int64_t ldc) {
  for (int r = 0; r < rows; ++r)
    std::memcpy(c + r * ldc, scratch + r * 16, static_cast<size_t>(cols) * sizeof(float));
}

// The tile number of _tile_stored must be a literal (GCC pastes it into the instruction).
#define HANPU_STORE_TILE(T, ROW0, COL0)                                     \
  do {                                                                      \
    const int vr = rows_valid - (ROW0), vc = cols_valid - (COL0);           \
    if (vr > 0 && vc > 0) {                                                 \
      float* dst = c + static_cast<int64_t>(ROW0) * ldc + (COL0);           \
      if (vr >= 16 && vc >= 16) {                                           \
        _tile_stored(T, dst, ldc* static_cast<int64_t>(sizeof(float)));     \
      } else {                                                              \
        _tile_stored(T, scratch, 64);                                       \
        copy_tile(scratch, vr < 16 ? vr : 16, vc < 16 ? vc : 16, dst, ldc); \
      }                                                                     \
    }                                                                       \
  } while (0)

// One 32-row (kTwoRowTiles) or 16-row block of A against one strip of B.
template <bool kTwoRowTiles>
void strip_block(const uint16_t* a, const uint16_t* b, int kt_blocks, float* c, int64_t ldc,
                 int rows_valid, int cols_valid) {
  alignas(64) float scratch[16 * 16];
  const uint16_t* a_lower = a + static_cast<int64_t>(kt_blocks) * kPairATileElems;  // rows 16..31
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (kTwoRowTiles) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int kt = 0; kt < kt_blocks; ++kt) {
    const uint16_t* bk = b + static_cast<int64_t>(kt) * kPairBlockElems;
    // Tile registers are not renamed: a load waits until every product reading the old
    // contents has finished. Loading both A slices and the first B half before the first
    // products, and the second B half between, overlapped loads and products best among
    // the orders tried (in an in-L1 harness, ahead of B, B, A, dp, dp, A, dp, dp).
    _tile_loadd(4, a + static_cast<int64_t>(kt) * kPairATileElems, 64);
    if constexpr (kTwoRowTiles)
      _tile_loadd(5, a_lower + static_cast<int64_t>(kt) * kPairATileElems, 64);
    _tile_loadd(6, bk, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kTwoRowTiles) _tile_dpbf16ps(2, 5, 6);
    _tile_loadd(7, bk + kPairBlockElems / 2, 64);
    _tile_dpbf16ps(1, 4, 7);
    if constexpr (kTwoRowTiles) _tile_dpbf16ps(3, 5, 7);
  }
  HANPU_STORE_TILE(0, 0, 0);
  HANPU_STORE_TILE(1, 0, 16);
  if constexpr (kTwoRowTiles) {
    HANPU_STORE_TILE(2, 16, 0);
    HANPU_STORE_TILE(3, 16, 16);
  }
}

#undef HANPU_STORE_TILE

}  // namespace

void amx_gemm_bf16(const uint16_t* a, int m_rows, const uint16_t* b, int kt_blocks, int strips,
                   int n_cols, float* c, int64_t ldc) {
  if (m_rows <= 0 || n_cols <= 0) return;
  load_tile_config();
  const int64_t strip_elems = static_cast<int64_t>(kt_blocks) * kPairBlockElems;
  // Row blocks outermost: a 32-row block of A (64 KB at K = 1024) is used by every strip
  // from L2, and the strips (512 KB for 8 of them) stay in L2 across row blocks. With the
  // strips outermost instead, all of A streamed from L3 once per strip, which held the
  // projections to a fraction of the tile rate.
  for (int i = 0; i < m_rows; i += 32) {
    const uint16_t* ai = a + amx_a_index(i, 0, kt_blocks);
    for (int s = 0; s < strips; ++s) {
      const int col0 = s * kPairStripCols;
      if (col0 >= n_cols) break;
      const uint16_t* bs = b + s * strip_elems;
      float* ci = c + static_cast<int64_t>(i) * ldc + col0;
      if (m_rows - i > 16) {
        strip_block<true>(ai, bs, kt_blocks, ci, ldc, m_rows - i, n_cols - col0);
      } else {
        strip_block<false>(ai, bs, kt_blocks, ci, ldc, m_rows - i, n_cols - col0);
      }
    }
  }
  _tile_release();  // the 8 KB tile state is not saved on this thread's context switches
}

double amx_bf16_loop(int64_t iterations) {
  load_tile_config();
  alignas(64) uint16_t ones[kPairATileElems];
  for (uint16_t& v : ones) v = 0x3f80;  // 1.0 in bf16
  alignas(64) float sink[16 * 16];
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sink, 64);  // the products are used
  _tile_release();
  volatile float keep = sink[0];
  (void)keep;
  return 4.0 * 2.0 * 16 * 16 * kPairBlockDepth * static_cast<double>(iterations);
}

}  // namespace hanpu::simd
