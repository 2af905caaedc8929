// The fused attention's bf16 dot-product kernels (see attn_bf16_dot.h). As in
// gemm_bf16_dot.cc, everything that executes AVX-512 is a function marked HANPU_DOT_TARGET
// and the file is compiled for the baseline ISA.
#include "simd/attn_bf16_dot.h"

#include <algorithm>
#include <cstdlib>

#include "simd/bf16_dot_isa.h"

namespace hanpu::simd {

#if defined(HANPU_HAVE_BF16_DOT)
namespace {

// Register tile: kMR rows x 32 columns, 24 accumulators and the two B vectors of a pair
// step (the projections' tile, gemm_bf16_dot.cc), each A word the instruction's broadcast.
constexpr int kMR = 12;

HANPU_DOT_TARGET inline __mmask16 LaneMask(int n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

// C tile [MR x n] (n <= 16 NV) as gemm_bf16_dot_pairs says; a and b at the tile's first row
// and column.
template <int MR, int NV>
HANPU_DOT_TARGET void PairTile(int kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                               int64_t ldb, float* c, int64_t ldc, int n, const float* row_scale,
                               bool accumulate) {
  const __mmask16 m0 = LaneMask(n), m1 = LaneMask(n - 16);
  __m512 acc[MR][NV];
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i)
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int q = 0; q < kp; ++q) {
    const uint32_t* bq = b + q * ldb;
    const uint32_t* aq = a + q * lda;
    const __m512bh w0 = AsPairs(_mm512_maskz_loadu_epi32(m0, bq));
    __m512bh w1 = w0;
    if constexpr (NV == 2) w1 = AsPairs(_mm512_maskz_loadu_epi32(m1, bq + 16));
    HANPU_UNROLL_ALL
    for (int i = 0; i < MR; ++i) {
      const __m512bh x = AsPairs(_mm512_set1_epi32(static_cast<int>(aq[i])));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], w0, x);
      if constexpr (NV == 2) acc[i][1] = _mm512_dpbf16_ps(acc[i][1], w1, x);
    }
  }
  HANPU_UNROLL_ALL
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
    // C's old rows weigh row_scale[i], 1 (accumulate) or nothing.
    const __m512 beta = _mm512_set1_ps(row_scale != nullptr ? row_scale[i] : 1.0f);
    const bool old = row_scale != nullptr || accumulate;
    __m512 s0 = acc[i][0];
    if (old) s0 = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m0, ci), s0);
    _mm512_mask_storeu_ps(ci, m0, s0);
    if constexpr (NV == 2) {
      __m512 s1 = acc[i][1];
      if (old) s1 = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m1, ci + 16), s1);
      _mm512_mask_storeu_ps(ci + 16, m1, s1);
    }
  }
}

template <int R>
HANPU_DOT_TARGET void PairTileUpTo(int m, int kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                                   int64_t ldb, float* c, int64_t ldc, int n,
                                   const float* row_scale, bool accumulate) {
  if constexpr (R > 0) {
    if (m != R) return PairTileUpTo<R - 1>(m, kp, a, lda, b, ldb, c, ldc, n, row_scale, accumulate);
    if (n <= 16) return PairTile<R, 1>(kp, a, lda, b, ldb, c, ldc, n, row_scale, accumulate);
    return PairTile<R, 2>(kp, a, lda, b, ldb, c, ldc, n, row_scale, accumulate);
  }
}

// Rows outer, columns inner: a row tile's A words (kp lines at most) stay in L1 while the
// column groups' B stream past from L2.
HANPU_DOT_TARGET void GemmPairs(int M, int N, int kp, const uint32_t* a, int64_t lda,
                                const uint32_t* b, int64_t ldb, float* c, int64_t ldc,
                                const float* row_scale, bool accumulate) {
  for (int i0 = 0; i0 < M; i0 += kMR) {
    const int m = std::min(kMR, M - i0);
    for (int j0 = 0; j0 < N; j0 += 32) {
      PairTileUpTo<kMR>(m, kp, a + i0, lda, b + j0, ldb, c + i0 * ldc + j0, ldc,
                        std::min(32, N - j0), row_scale != nullptr ? row_scale + i0 : nullptr,
                        accumulate);
    }
  }
}

// 16 fp32 lanes (masked to n) rounded to bf16, zero-extended into 32-bit lanes.
HANPU_DOT_TARGET inline __m512i Bf16Lanes(const float* x, __mmask16 m, __m512 scale) {
  const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x), scale);
  // The zero-masking forms: GCC 12 warns about the plain ones' undefined source vector.
  return _mm512_maskz_cvtepu16_epi32(0xffff,
                                     (__m256i)_mm512_cvtneps_pbh(v));  // NOLINT: a vector cast
}

HANPU_DOT_TARGET void PackRowPairs(const float* r0, const float* r1, int n, uint32_t* out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int j = 0; j < n; j += 16) {
    const __mmask16 m = LaneMask(n - j);
    __m512i w = Bf16Lanes(r0 + j, m, one);
    if (r1 != nullptr)
      w = _mm512_or_si512(w, _mm512_maskz_slli_epi32(0xffff, Bf16Lanes(r1 + j, m, one), 16));
    _mm512_mask_storeu_epi32(out + j, m, w);
  }
}

HANPU_DOT_TARGET void PackPairsTransposed(const float* x, int64_t ldx, int rows, int n, float scale,
                                          uint32_t* out, int64_t ldo) {
  const __m512 s = _mm512_set1_ps(scale);
  alignas(64) uint32_t words[8];
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    for (int k0 = 0; k0 < n; k0 += 16) {
      const int valid = std::min(16, n - k0);
      const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(LaneMask(valid), xr + k0), s);
      _mm256_store_si256(reinterpret_cast<__m256i*>(words),
                         (__m256i)_mm512_cvtneps_pbh(v));  // NOLINT: vector cast
      const int q0 = k0 / 2;
      for (int j = 0; j < valid / 2; ++j) out[(q0 + j) * ldo + r] = words[j];
    }
  }
}

}  // namespace

void gemm_bf16_dot_pairs(int M, int N, int kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                         int64_t ldb, float* c, int64_t ldc, const float* row_scale,
                         bool accumulate) {
  if (M > 0 && N > 0) GemmPairs(M, N, kp, a, lda, b, ldb, c, ldc, row_scale, accumulate);
}

void pack_bf16_row_pairs(const float* r0, const float* r1, int n, uint32_t* out) {
  PackRowPairs(r0, r1, n, out);
}

void pack_bf16_pairs_transposed(const float* x, int64_t ldx, int rows, int n, float scale,
                                uint32_t* out, int64_t ldo) {
  PackPairsTransposed(x, ldx, rows, n, scale, out, ldo);
}

#else  // no x86-64 compiler support: bf16_dot_usable() is false, so nothing below is reached

void gemm_bf16_dot_pairs(int, int, int, const uint32_t*, int64_t, const uint32_t*, int64_t, float*,
                         int64_t, const float*, bool) {
  std::abort();
}
void pack_bf16_row_pairs(const float*, const float*, int, uint32_t*) { std::abort(); }
void pack_bf16_pairs_transposed(const float*, int64_t, int, int, float, uint32_t*, int64_t) {
  std::abort();
}

#endif

}  // namespace hanpu::simd
