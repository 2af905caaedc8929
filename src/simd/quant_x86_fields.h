// Fields of GGUF's blocks as x86 vectors, shared by the AVX2 and AVX512-VNNI unpackers
// (simd/quant_dot_avx2.cc, quant_dot_vnni.cc), which include it inside their x86-only parts.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "base/quant_block_fields.h"

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
// operations, quant_fields::q4k_scales_mins_words).
__attribute__((target("sse2"), always_inline)) inline __m128i q4k_scales_mins_bytes(
    const uint8_t* s) {
  uint32_t w[4];
  quant_fields::q4k_scales_mins_words(s, w);
  return _mm_set_epi32(static_cast<int>(w[3]), static_cast<int>(w[2]), static_cast<int>(w[1]),
                       static_cast<int>(w[0]));
}

}  // namespace hanpu::simd
