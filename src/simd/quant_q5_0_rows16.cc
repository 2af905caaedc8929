// Q5_0 rows repacked sixteen to a group, and their decode product (see quant_q5_0_rows16.h).
// Hand-written: the point of the layout is the instruction count of this one loop.
#include "simd/quant_q5_0_rows16.h"

#include <cstring>

#include "simd/quant_vnni_unpack.h"

namespace hanpu::simd {

namespace {

constexpr int kRows = kQ5_0GroupRows;
constexpr int kBlockBytes = 22;  // Q5_0: d (f16), qh (32 high bits), 16 bytes of nibbles

}  // namespace

void q5_0_group_rows(const uint8_t* const* rows, int in, uint8_t* dst) {
  const int blocks = in / 32;
  for (int b = 0; b < blocks; ++b) {
    uint8_t* out = dst + static_cast<size_t>(b) * kQ5_0GroupBlockBytes;
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* src = rows[r] + static_cast<size_t>(b) * kBlockBytes;
      for (int v = 0; v < 4; ++v) std::memcpy(out + v * 64 + 4 * r, src + 6 + 4 * v, 4);
      std::memcpy(out + 4 * 64 + 4 * r, src + 2, 4);
      std::memcpy(out + 5 * 64 + 2 * r, src, 2);
    }
  }
}

#if HANPU_HAVE_VNNI

#define HANPU_Q5_0_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bitalg,f16c,fma")))

typedef int32_t __attribute__((may_alias)) AliasedInt32;

bool q5_0_group_usable() {
  static const bool usable = quant_vnni_usable() && __builtin_cpu_supports("avx512bitalg");
  return usable;
}

// Code vector v holds values 4v .. 4v + 3 of each row in its low nibbles and 16 + 4v .. in its
// high ones; their fifth bits are bits 4v + i and 16 + 4v + i of the row's qh word, which one
// vpshufbitqmb picks into a byte mask (each of a 64-bit lane's bytes names a bit of the lane:
// rows 2m and 2m + 1 share a lane, the odd row's word at bit 32) that adds 16 to those bytes.
// Each block's sum is exact in integers; Q5_0's offset of 16 is paid on the activations' side
// (16 times their sum, dsum), and the block scaled once.
HANPU_Q5_0_TARGET void q5_0_group_times_one(const uint8_t* group, int blocks, const QuantActs& a,
                                            float* y) {
  const int8_t* q = a.q_row(0);
  const float* dlane = a.dlane_row(0);
  const float* dsum = a.dsum_row(0);
  alignas(64) uint8_t pick[8][64];  // low nibbles of vector v, then high ones (v + 4)
  for (int v = 0; v < 8; ++v) {
    for (int k = 0; k < 64; ++k) {
      const int row = k / 4, i = k % 4;
      pick[v][k] = static_cast<uint8_t>((row % 2) * 32 + (v / 4) * 16 + 4 * (v % 4) + i);
    }
  }
  __m512i picks[8];
  for (int v = 0; v < 8; ++v) picks[v] = _mm512_load_si512(pick[v]);
  const __m512i low4 = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(0x10);
  __m512 total = _mm512_setzero_ps();
  for (int b = 0; b < blocks; ++b) {
    const uint8_t* w = group + static_cast<size_t>(b) * kQ5_0GroupBlockBytes;
    const AliasedInt32* q32 = reinterpret_cast<const AliasedInt32*>(q + 32 * b);
    const __m512i high = _mm512_loadu_si512(w + 4 * 64);
    __m512i sum_low = _mm512_setzero_si512(), sum_high = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __m512i codes = _mm512_loadu_si512(w + v * 64);
      const __m512i low = _mm512_and_si512(codes, low4);
      const __m512i top = _mm512_and_si512(_mm512_srli_epi16(codes, 4), low4);
      const __m512i c_low =
          _mm512_mask_add_epi8(low, _mm512_bitshuffle_epi64_mask(high, picks[v]), low, fifth);
      const __m512i c_top =
          _mm512_mask_add_epi8(top, _mm512_bitshuffle_epi64_mask(high, picks[4 + v]), top, fifth);
      sum_low = _mm512_dpbusd_epi32(sum_low, c_low, _mm512_set1_epi32(q32[v]));
      sum_high = _mm512_dpbusd_epi32(sum_high, c_top, _mm512_set1_epi32(q32[4 + v]));
    }
    const __m512 d =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 5 * 64)));
    const __m512 sum = _mm512_fmsub_ps(_mm512_set1_ps(dlane[8 * b]),
                                       _mm512_cvtepi32_ps(_mm512_add_epi32(sum_low, sum_high)),
                                       _mm512_set1_ps(16 * (dsum[2 * b] + dsum[2 * b + 1])));
    total = _mm512_fmadd_ps(d, sum, total);
  }
  _mm512_storeu_ps(y, total);
}

#else

bool q5_0_group_usable() { return false; }
void q5_0_group_times_one(const uint8_t*, int, const QuantActs&, float*) {}

#endif

}  // namespace hanpu::simd
