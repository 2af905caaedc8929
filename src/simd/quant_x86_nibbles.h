// The nibbles of GGUF's 32-value blocks as bytes, shared by the AVX2 and AVX512-VNNI unpackers
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

}  // namespace hanpu::simd
