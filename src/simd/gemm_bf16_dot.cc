// bf16 dot-product prefill GEMM (see gemm_bf16_dot.h). Everything that executes AVX-512 is a
// function of this file marked HANPU_DOT_TARGET; the file itself is compiled for the baseline
// ISA, so no inline function it instantiates (std::min, ...) can carry AVX-512 code into the
// rest of the binary through the linker's choice of one copy.
#include "simd/gemm_bf16_dot.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simd/amx.h"
#include "simd/bf16_dot_isa.h"
#include "simd/pairs_loop_nest.h"

#if defined(HANPU_HAVE_BF16_DOT)
#include <cpuid.h>
#endif

namespace hanpu::simd {

#if defined(HANPU_HAVE_BF16_DOT)
namespace {

// Rows of the register tile: 2 x kMR accumulators + the two weight vectors of a pair row
// fit the 32 vector registers with room to spare, the x pair arriving as the instruction's
// embedded broadcast from memory (no register). 14 rows (30 registers) measured the same as
// 12 (docs/performance.md, "Design measurements"), so the smaller tile stays: fewer rows in
// the edge tiles.
constexpr int kMR = 12;
// The loop nest of the pairs kernel (simd/pairs_loop_nest.h), whose L1/L2 sizing carries over:
// per slice of 8 blocks a row tile's x is 12 rows x 256 steps of bf16 (6 KB, L1) and a
// panel's weights 128 KB (L2).
constexpr int kSliceBlocks = 8;
constexpr int kPrefetchBlocks = 2;
constexpr int kRowBlock = 8 * kMR;
constexpr int kPairStepsPerBlock = kPairBlockDepth / 2;

// C tile [MR x n] (+)= A B over `blocks` whole blocks of one strip: a is the row tile's packed
// x from the first block on, b the strip's first block. n <= 16 NV (NV 1: the first half of
// the strip only, for the 16-column projections, which would otherwise multiply zeros).
template <int MR, int NV>
HANPU_DOT_TARGET void Tile(const uint32_t* a, const uint16_t* b, int blocks, float* c, int64_t ldc,
                           int n, bool accumulate) {
  __m512 acc[MR][2];
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int blk = 0; blk < blocks; ++blk) {
    const uint16_t* bb = b + static_cast<int64_t>(blk) * kPairBlockElems;
    const uint32_t* ab = a + blk * kPairStepsPerBlock * kMR;
    for (int r = 0; r < kPairRows; ++r) {
      const uint16_t* lo = bb + r * kPairStripCols;  // 16 pairs of the first half (64 bytes)
      const uint16_t* hi = lo + kPairHalfElems;
      _mm_prefetch(reinterpret_cast<const char*>(lo + kPrefetchBlocks * kPairBlockElems),
                   _MM_HINT_T0);
      if constexpr (NV == 2)
        _mm_prefetch(reinterpret_cast<const char*>(hi + kPrefetchBlocks * kPairBlockElems),
                     _MM_HINT_T0);
      const __m512bh w0 = AsPairs(_mm512_loadu_si512(lo)), w1 = AsPairs(_mm512_loadu_si512(hi));
      const uint32_t* ar = ab + r * kMR;
      HANPU_UNROLL_ALL
      for (int i = 0; i < MR; ++i) {
        const __m512bh x = AsPairs(_mm512_set1_epi32(static_cast<int>(ar[i])));
        acc[i][0] = _mm512_dpbf16_ps(acc[i][0], w0, x);
        if constexpr (NV == 2) acc[i][1] = _mm512_dpbf16_ps(acc[i][1], w1, x);
      }
    }
  }
  const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(n >= 32   ? 0xffff
                                              : n <= 16 ? 0
                                                        : (1u << (n - 16)) - 1);
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
    __m512 s0 = acc[i][0], s1 = acc[i][1];
    if (accumulate) {
      s0 = _mm512_add_ps(s0, _mm512_maskz_loadu_ps(m0, ci));
      if constexpr (NV == 2) s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(m1, ci + 16));
    }
    _mm512_mask_storeu_ps(ci, m0, s0);
    if constexpr (NV == 2) _mm512_mask_storeu_ps(ci + 16, m1, s1);
  }
}

template <int R>
HANPU_DOT_TARGET void TileUpTo(int m, const uint32_t* a, const uint16_t* b, int blocks, float* c,
                               int64_t ldc, int n, bool accumulate) {
  if constexpr (R > 0) {
    if (m != R) return TileUpTo<R - 1>(m, a, b, blocks, c, ldc, n, accumulate);
    if (n <= 16) return Tile<R, 1>(a, b, blocks, c, ldc, n, accumulate);
    return Tile<R, 2>(a, b, blocks, c, ldc, n, accumulate);
  }
}

int64_t TileWords(int in) {
  return static_cast<int64_t>((in + kPairBlockDepth - 1) / kPairBlockDepth) * kPairStepsPerBlock *
         kMR;
}

// One row of x as bf16 pairs, written to every kMR-th word of the tile from `dst` on: 16
// floats (8 pairs) a step, zeros past `in` up to `pairs` pairs.
HANPU_DOT_TARGET void PackRow(const float* src, int in, int pairs, uint32_t* dst) {
  alignas(64) uint32_t words[8];
  for (int p0 = 0; p0 < pairs; p0 += 8) {
    const int k0 = 2 * p0;
    const int valid = std::clamp(in - k0, 0, 16);
    const __m512 v = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << valid) - 1), src + k0);
    _mm256_store_si256(reinterpret_cast<__m256i*>(words),
                       (__m256i)_mm512_cvtneps_pbh(v));  // NOLINT: vector cast
    const int n = std::min(8, pairs - p0);
    for (int j = 0; j < n; ++j) dst[static_cast<int64_t>(p0 + j) * kMR] = words[j];
  }
}

HANPU_DOT_TARGET void PackX(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in,
                            uint32_t* packed) {
  const int64_t tile_words = TileWords(in);
  const int pairs = static_cast<int>(tile_words / kMR);
  for (int64_t t = row0 / kMR; t * kMR < row1; ++t) {
    uint32_t* tile = packed + t * tile_words;
    for (int i = 0; i < kMR; ++i) {
      const int64_t r = t * kMR + i;
      if (r < row0) continue;  // another call's row
      if (r < row1) {
        PackRow(x + r * ldx, in, pairs, tile + i);
      } else {
        for (int p = 0; p < pairs; ++p) tile[static_cast<int64_t>(p) * kMR + i] = 0;
      }
    }
  }
}

void GemmPacked(int rows, const uint32_t* a, int in, const uint16_t* w, int kt_blocks, int kt0,
                int kt_count, int strips, int n_cols, float* c, int64_t ldc, bool accumulate) {
  n_cols = std::min(n_cols, strips * kPairStripCols);
  const int64_t strip_elems = static_cast<int64_t>(kt_blocks) * kPairBlockElems;
  const int64_t tile_words = TileWords(in);
  for_each_pairs_tile(
      PairsNest{kMR, kPairStripCols, kRowBlock, kSliceBlocks}, rows, in, kt_blocks, kt0, kt_count,
      n_cols, c, ldc, accumulate, [&](int m, int64_t t, int s0, int blocks, int g, bool sums) {
        TileUpTo<kMR>(m, a + t * tile_words + static_cast<int64_t>(s0) * kPairStepsPerBlock * kMR,
                      w + g * strip_elems + static_cast<int64_t>(s0) * kPairBlockElems, blocks,
                      c + t * kMR * ldc + g * kPairStripCols, ldc,
                      std::min(kPairStripCols, n_cols - g * kPairStripCols), sums);
      });
}

HANPU_DOT_TARGET double DotLoop(int64_t iterations) {
  constexpr int kChains = 12;  // latency 6 x 2 per cycle would need 12 independent sums
  __m512 acc[kChains];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  __m512bh a = AsPairs(_mm512_set1_epi32(0x3f803f80)), b = a;  // (1, 1) pairs
  for (int64_t t = 0; t < iterations; ++t) {
    HANPU_UNROLL_ALL
    for (__m512& v : acc) v = _mm512_dpbf16_ps(v, a, b);
    __asm__ volatile("" : "+v"(a));  // keeps the loop from being folded
  }
  for (__m512& v : acc) __asm__ volatile("" : : "v"(v));  // the sums count as used
  return static_cast<double>(iterations) * kChains * 16 * 2 * 2;
}

bool detect() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !((ecx >> 27) & 1)) return false;  // OSXSAVE
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0xe6) != 0xe6) return false;  // SSE, AVX and the three AVX-512 state parts
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool avx512f = (ebx >> 16) & 1, avx512bw = (ebx >> 30) & 1, avx512vl = (ebx >> 31) & 1;
  if (!avx512f || !avx512bw || !avx512vl) return false;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax >> 5) & 1;  // AVX512_BF16
}

}  // namespace

bool bf16_dot_usable() {
  static const bool usable = detect();
  return usable;
}

int gemm_bf16_dot_tile_rows() { return kMR; }

size_t dot_packed_x_words(int64_t rows, int in) {
  return static_cast<size_t>((rows + kMR - 1) / kMR * TileWords(in));
}

void pack_x_for_dot(const float* x, int64_t ldx, int64_t row0, int64_t row1, int in,
                    uint32_t* packed) {
  if (row1 > row0) PackX(x, ldx, row0, row1, in, packed);
}

void gemm_bf16_dot_packed(int rows, const uint32_t* a, int in, const uint16_t* w, int kt_blocks,
                          int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                          bool accumulate) {
  GemmPacked(rows, a, in, w, kt_blocks, kt0, kt_count, strips, n_cols, c, ldc, accumulate);
}

double bf16_dot_loop(int64_t iterations) { return DotLoop(iterations); }

#else  // no x86-64 compiler support: bf16_dot_usable() is false, so nothing below is reached

bool bf16_dot_usable() { return false; }
int gemm_bf16_dot_tile_rows() { return 1; }
size_t dot_packed_x_words(int64_t, int) { std::abort(); }
void pack_x_for_dot(const float*, int64_t, int64_t, int64_t, int, uint32_t*) { std::abort(); }
void gemm_bf16_dot_packed(int, const uint32_t*, int, const uint16_t*, int, int, int, int, int,
                          float*, int64_t, bool) {
  std::abort();
}
double bf16_dot_loop(int64_t) { std::abort(); }

#endif

void gemm_bf16_dot(int rows, const float* a, int64_t lda, int in, const uint16_t* w, int kt_blocks,
                   int kt0, int kt_count, int strips, int n_cols, float* c, int64_t ldc,
                   bool accumulate) {
  if (rows <= 0 || n_cols <= 0) return;
  thread_local std::vector<uint32_t> packed;
  packed.resize(dot_packed_x_words(rows, in));
  pack_x_for_dot(a, lda, 0, rows, in, packed.data());
  gemm_bf16_dot_packed(rows, packed.data(), in, w, kt_blocks, kt0, kt_count, strips, n_cols, c, ldc,
                       accumulate);
}

}  // namespace hanpu::simd
