// The pairs-layout packer (see pairs_pack.h). The AVX-512 transpose is written with
// intrinsics: Highway 1.0.3 (Debian's) has no cross-block lane shuffle of 512-bit vectors.
#include "simd/pairs_pack.h"

#include <cstring>

#include "simd/amx.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hanpu::simd {

namespace {

void pack_words(const uint16_t* rows, int64_t ld, int kt_blocks, uint16_t* strip) {
  for (int kt = 0; kt < kt_blocks; ++kt) {
    uint16_t* block = strip + static_cast<int64_t>(kt) * kPairBlockElems;
    for (int c = 0; c < kPairStripCols; ++c) {
      const uint16_t* from = rows + c * ld + kt * kPairBlockDepth;
      uint16_t* to = block + (c / kPairHalfCols) * kPairHalfElems + (c % kPairHalfCols) * 2;
      for (int j = 0; j < kPairRows; ++j)
        std::memcpy(to + j * 2 * kPairHalfCols, from + 2 * j, sizeof(uint32_t));
    }
  }
}

#if defined(__x86_64__)
// GCC 12's headers build some of these from _mm512_undefined_epi32(), which its own
// -Wmaybe-uninitialized then reports; every lane is written.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// r[c] (16 words of row c) -> r[j] (word j of rows 0..15): 32-bit, then 64-bit interleaves,
// then two rounds of 128-bit lane selects (16 instructions each).
__attribute__((target("avx512f"))) inline void transpose_words_16x16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // Now r[4 i + j]'s 128-bit lane L holds word 4 L + j of rows 4 i .. 4 i + 3.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i a = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88);  // lanes 0, 2 of each
    const __m512i b = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xDD);  // lanes 1, 3
    const __m512i c = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88);
    const __m512i d = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xDD);
    t[j] = _mm512_shuffle_i32x4(a, c, 0x88);
    t[8 + j] = _mm512_shuffle_i32x4(a, c, 0xDD);
    t[4 + j] = _mm512_shuffle_i32x4(b, d, 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(b, d, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

__attribute__((target("avx512f"))) void pack_avx512(const uint16_t* rows, int64_t ld, int kt_blocks,
                                                    uint16_t* strip) {
  for (int kt = 0; kt < kt_blocks; ++kt) {
    for (int half = 0; half < 2; ++half) {
      __m512i r[16];
      for (int c = 0; c < kPairHalfCols; ++c)
        r[c] = _mm512_loadu_si512(rows + (half * kPairHalfCols + c) * ld + kt * kPairBlockDepth);
      transpose_words_16x16(r);
      uint16_t* dst = strip + static_cast<int64_t>(kt) * kPairBlockElems + half * kPairHalfElems;
      for (int j = 0; j < kPairRows; ++j) _mm512_storeu_si512(dst + j * 2 * kPairHalfCols, r[j]);
    }
  }
}

#pragma GCC diagnostic pop
#endif

}  // namespace

void pack_strip_bf16(const uint16_t* rows, int64_t ld, int kt_blocks, uint16_t* strip) {
#if defined(__x86_64__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return pack_avx512(rows, ld, kt_blocks, strip);
#endif
  pack_words(rows, ld, kt_blocks, strip);
}

}  // namespace hanpu::simd
