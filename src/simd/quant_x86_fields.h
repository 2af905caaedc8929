// Fields of GGUF's blocks as x86 vectors, shared by the AVX2 and AVX512-VNNI unpackers
// (simd/quant_dot_avx2.cc, quant_dot_vnni.cc), which include it inside their x86-only parts.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace hanpu::simd {

// 16 bytes of nibbles at qs as a block's 32 values: low nibbles values 0-15, high 16-31
// (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL).
__attribute__((target("avx2"), always_inline)) inline __m256i block_nibbles(const uint8_t* qs) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, mask)),
                                 _mm_and_si128(_mm_srli_epi16(v, 4), mask), 1);
}

// Q4_K's and Q5_K's 12 scale bytes at s as 16 bytes: scales 0-7, then mins 0-7 (ggml's word
// operations, quant_fields::q4k_scales_mins_words, on bytes in one register: the scalar words
// and the inserts building the vector were a quarter of a decode kernel's instructions a
// unit). Reads 16 bytes from s; the scales sit at byte 4 of a 144- or 176-byte block.
//   j < 4:  sc[j] = s[j] & 63,                          m[j] = s[j + 4] & 63
//   j >= 4: sc[j] = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4, m[j] = (s[j + 4] >> 4) | (s[j] >> 6) <<
//   4
// Its byte picks (counted from the first scale byte) and masks: the low bits' source bytes,
// the bytes whose top two bits become bits 4-5; bytes 0-3 and 8-11 keep six bits, 4-7 the low
// nibble, 12-15 the high nibble (a 16-bit shift, then the mask drops what crossed from the
// neighbouring byte). Shared with the four-row AVX-512 form (quant_dot_vnni.cc).
struct Q4kFieldTables {
  int8_t low_src[16], top_src[16], low_keep[16], low_high[16], top_keep[16];
};
inline constexpr Q4kFieldTables kQ4kFields = {
    {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11},
    {0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7},
    {63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0},
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15},
    {0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48}};

__attribute__((target("ssse3"), always_inline)) inline __m128i q4k_field_table(
    const int8_t (&t)[16]) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
}

__attribute__((target("ssse3"), always_inline)) inline __m128i q4k_scales_mins_bytes(
    const uint8_t* s) {
  const Q4kFieldTables& f = kQ4kFields;
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i low_src = _mm_shuffle_epi8(v, q4k_field_table(f.low_src));
  const __m128i top_src = _mm_shuffle_epi8(v, q4k_field_table(f.top_src));
  const __m128i low =
      _mm_or_si128(_mm_and_si128(low_src, q4k_field_table(f.low_keep)),
                   _mm_and_si128(_mm_srli_epi16(low_src, 4), q4k_field_table(f.low_high)));
  const __m128i top = _mm_and_si128(_mm_srli_epi16(top_src, 2), q4k_field_table(f.top_keep));
  return _mm_or_si128(low, top);
}

}  // namespace hanpu::simd
