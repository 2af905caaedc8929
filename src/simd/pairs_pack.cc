// The pairs-layout packer (see pairs_pack.h). The AVX-512 transpose is written with
// intrinsics: Highway 1.0.3 (Debian's) has no cross-block lane shuffle of 512-bit vectors.
#include "simd/pairs_pack.h"

#include <cstring>

#include "simd/amx.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "simd/transpose_words_x86.h"
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
