// A 16 x 16 transpose of 32-bit words in AVX-512 registers, shared by the pairs-layout packer
// (pairs_pack.cc) and the int8 panels' packer (quant_panel_vnni.cc). Written with intrinsics:
// Highway 1.0.3 (Debian's) has no cross-block lane shuffle of 512-bit vectors. Include on
// x86-64 only, after <immintrin.h>.
#pragma once

#include <immintrin.h>

namespace hanpu::simd {

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

#pragma GCC diagnostic pop

}  // namespace hanpu::simd
