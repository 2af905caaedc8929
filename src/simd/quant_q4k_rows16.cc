// Q4_K rows repacked sixteen to a group, and their decode product (see quant_q4k_rows16.h).
// Hand-written: the point of the layout is the instruction count of this one loop.
#include "simd/quant_q4k_rows16.h"

#include <cstring>

#include "base/quant_block_fields.h"
#include "simd/quant_vnni_unpack.h"

namespace hanpu::simd {

namespace {

constexpr int kCodesBytes = 32 * 64, kFieldBytes = 4 * kQ4kGroupRows;
constexpr int kBlockBytes = 144;  // Q4_K: d, dmin (f16), 12 bytes of scales, 128 of codes

}  // namespace

void q4k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst) {
  const int units = in / kQuantUnit;
  for (int u = 0; u < units; ++u) {
    uint8_t* out = dst + static_cast<size_t>(u) * kQ4kGroupUnitBytes;
    uint8_t* scale_low = out + kCodesBytes;
    uint8_t* min_low = scale_low + kFieldBytes;
    uint8_t* high = min_low + kFieldBytes;
    uint8_t* d = high + kFieldBytes;
    uint8_t* dmin = d + 2 * kQ4kGroupRows;
    for (int r = 0; r < kQ4kGroupRows; ++r) {
      const uint8_t* b = rows[r] + static_cast<size_t>(u) * kBlockBytes;
      std::memcpy(d + 2 * r, b, 2);
      std::memcpy(dmin + 2 * r, b + 2, 2);
      uint32_t sl = 0, ml = 0, hi = 0;
      for (int s = 0; s < 8; ++s) {
        int scale = 0, min = 0;
        quant_fields::q4k_scale_min(b + 4, s, &scale, &min);
        sl |= static_cast<uint32_t>(scale & 15) << (4 * s);
        ml |= static_cast<uint32_t>(min & 15) << (4 * s);
        hi |= static_cast<uint32_t>(scale >> 4) << (2 * s) | static_cast<uint32_t>(min >> 4)
                                                                 << (16 + 2 * s);
      }
      std::memcpy(scale_low + 4 * r, &sl, 4);
      std::memcpy(min_low + 4 * r, &ml, 4);
      std::memcpy(high + 4 * r, &hi, 4);
      // Vector j = 4 g + p: bytes 4g .. 4g + 3 of the row's 32 code bytes of sub-blocks 2p
      // (low nibbles) and 2p + 1 (high nibbles).
      const uint8_t* codes = b + 16;
      for (int j = 0; j < 32; ++j) {
        const int g = j / 4, p = j % 4;
        std::memcpy(out + j * 64 + 4 * r, codes + 32 * p + 4 * g, 4);
      }
    }
  }
}

#if HANPU_HAVE_VNNI

typedef int32_t __attribute__((may_alias)) AliasedInt32;

// v shifted left by n bits, right by -n where n < 0 (n a constant where inlined).
HANPU_VNNI_INLINE __m512i shift_left(__m512i v, int n) {
  return n >= 0 ? _mm512_slli_epi32(v, n) : _mm512_srli_epi32(v, -n);
}

bool q4k_group_usable() { return quant_vnni_usable(); }

HANPU_VNNI_TARGET void q4k_group_times_one(const uint8_t* group, int units, const QuantActs& a,
                                           float* y) {
  const int8_t* q = a.q256_row(0);
  const float* d256 = a.d256_row(0);
  const int16_t* bsum32 = a.bsum32.data();
  const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi32(0x30);
  const __m512i low4_lane = _mm512_set1_epi32(0x0F);
  __m512 total = _mm512_setzero_ps();
  for (int u = 0; u < units; ++u) {
    const uint8_t* w = group + static_cast<size_t>(u) * kQ4kGroupUnitBytes;
    // The unit's activations 4 at a time, each broadcast from memory into its vpdpbusd.
    const AliasedInt32* q32 = reinterpret_cast<const AliasedInt32*>(q + u * kQuantUnit);
    __m512i acc[8];
    for (int s = 0; s < 8; ++s) acc[s] = _mm512_setzero_si512();
      // Vectors in address order, sub-block pairs innermost: eight accumulator chains in
      // flight, not two (the same order over vectors 512 bytes apart, a unit's code vectors in
      // sub-block order, was faster in L2 but 20-30% slower from DRAM). The high
      // nibbles stay in place (16 times the code), so odd sub-blocks sum 16 times their
      // products at one instruction less a vector; the even ones' scales are taken 16 times to
      // match, and the unit's sum is scaled by 1/16 (exactly) with d.
#pragma GCC unroll 32
    for (int j = 0; j < 32; ++j) {
      const int g = j / 4, p = j % 4;
      const __m512i v = _mm512_loadu_si512(w + j * 64);
      acc[2 * p] = _mm512_dpbusd_epi32(acc[2 * p], _mm512_and_si512(v, low4),
                                       _mm512_set1_epi32(q32[16 * p + g]));
      acc[2 * p + 1] = _mm512_dpbusd_epi32(acc[2 * p + 1], _mm512_andnot_si512(low4, v),
                                           _mm512_set1_epi32(q32[16 * p + 8 + g]));
    }
    // Each sub-block's sum times its scale, and its activations' sum times its min, in
    // integers, scaled once a unit: at most 8 x 16 x 61K x 63 and 8 x 4064 x 63, no overflow.
    // Sub-block s's six-bit fields: bits 4s .. 4s + 3 of the low words, and bits 2s, 2s + 1
    // (scales) and 16 + 2s, 17 + 2s (mins) of the high word, each moved into place by one
    // shift (s is a constant once the loop is unrolled).
    const __m512i scale_low = _mm512_loadu_si512(w + kCodesBytes);
    const __m512i min_low = _mm512_loadu_si512(w + kCodesBytes + kFieldBytes);
    const __m512i high = _mm512_loadu_si512(w + kCodesBytes + 2 * kFieldBytes);
    const __m512i high_min = _mm512_srli_epi32(high, 16);
    constexpr int kLowOrTop = 0xEA;  // (A & B) | C
    __m512i isc = _mm512_setzero_si512(), imn = _mm512_setzero_si512();
    const int16_t* bs = bsum32 + u * 8;
#pragma GCC unroll 8
    for (int s = 0; s < 8; ++s) {
      // The scale at bits 0-5 (odd s) or 4-9 (even s: 16 times it).
      const int at = s % 2 == 0 ? 4 : 0;
      const __m512i scale_top =
          _mm512_and_si512(shift_left(high, 4 + at - 2 * s), _mm512_set1_epi32(0x30 << at));
      const __m512i scale = _mm512_ternarylogic_epi32(
          shift_left(scale_low, at - 4 * s), _mm512_set1_epi32(0x0F << at), scale_top, kLowOrTop);
      const __m512i min_top = _mm512_and_si512(shift_left(high_min, 4 - 2 * s), top2);
      const __m512i min = _mm512_ternarylogic_epi32(_mm512_srli_epi32(min_low, 4 * s), low4_lane,
                                                    min_top, kLowOrTop);
      isc = _mm512_add_epi32(isc, _mm512_mullo_epi32(acc[s], scale));
      // min < 64 in a lane's low word, its high word 0: one vpdpwssd adds min times the
      // sub-block's activation sum (|sum| <= 32 x 127, a word).
      imn = _mm512_dpwssd_epi32(imn, min, _mm512_set1_epi16(bs[s]));
    }
    const uint8_t* dd = w + kCodesBytes + 3 * kFieldBytes;
    const __m512 da = _mm512_set1_ps(d256[u]);
    const __m512 d = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd))), da);
    const __m512 dmin = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd + 32))), da);
    total = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.0f / 16)), _mm512_cvtepi32_ps(isc),
                            total);
    total = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(imn), total);
  }
  _mm512_storeu_ps(y, total);
}

#else

bool q4k_group_usable() { return false; }
void q4k_group_times_one(const uint8_t*, int, const QuantActs&, float*) {}

#endif

}  // namespace hanpu::simd
