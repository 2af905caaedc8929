// Q4_K rows repacked sixteen to a group, and their decode product (see quant_q4k_rows16.h).
// Hand-written: the point of the layout is the instruction count of this one loop.
#include "simd/quant_q4k_rows16.h"

#include <cstring>

#include "base/quant_block_fields.h"
#include "simd/quant_vnni_unpack.h"

namespace hanpu::simd {

namespace {

constexpr int kCodesBytes = 32 * 64, kScalesBytes = 8 * 16;
constexpr int kBlockBytes = 144;  // Q4_K: d, dmin (f16), 12 bytes of scales, 128 of codes

}  // namespace

void q4k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst) {
  const int units = in / kQuantUnit;
  for (int u = 0; u < units; ++u) {
    uint8_t* out = dst + static_cast<size_t>(u) * kQ4kGroupUnitBytes;
    uint8_t* sc = out + kCodesBytes;
    uint8_t* mn = sc + kScalesBytes;
    uint8_t* d = mn + kScalesBytes;
    uint8_t* dmin = d + 2 * kQ4kGroupRows;
    for (int r = 0; r < kQ4kGroupRows; ++r) {
      const uint8_t* b = rows[r] + static_cast<size_t>(u) * kBlockBytes;
      std::memcpy(d + 2 * r, b, 2);
      std::memcpy(dmin + 2 * r, b + 2, 2);
      for (int s = 0; s < 8; ++s) {
        int scale = 0, min = 0;
        quant_fields::q4k_scale_min(b + 4, s, &scale, &min);
        sc[s * kQ4kGroupRows + r] = static_cast<uint8_t>(scale);
        mn[s * kQ4kGroupRows + r] = static_cast<uint8_t>(min);
      }
      // Vector j = 8 p + g: bytes 4g .. 4g + 3 of the row's 32 code bytes of sub-blocks 2p
      // (low nibbles) and 2p + 1 (high nibbles).
      const uint8_t* codes = b + 16;
      for (int j = 0; j < 32; ++j) {
        const int p = j / 8, g = j % 8;
        std::memcpy(out + j * 64 + 4 * r, codes + 32 * p + 4 * g, 4);
      }
    }
  }
}

#if HANPU_HAVE_VNNI

bool q4k_group_usable() { return quant_vnni_usable(); }

HANPU_VNNI_TARGET void q4k_group_times_one(const uint8_t* group, int units, const QuantActs& a,
                                           int64_t r0, float* y) {
  const int8_t* q = a.q256_row(r0);
  const float* d256 = a.d256_row(r0);
  const int16_t* bsum16 = a.bsum16_row(r0);
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 total = _mm512_setzero_ps();
  for (int u = 0; u < units; ++u) {
    const uint8_t* w = group + static_cast<size_t>(u) * kQ4kGroupUnitBytes;
    const int8_t* qu = q + u * kQuantUnit;
    __m512i acc[8];
    for (int s = 0; s < 8; ++s) acc[s] = _mm512_setzero_si512();
#pragma GCC unroll 32
    for (int j = 0; j < 32; ++j) {
      const int p = j / 8, g = j % 8;
      const __m512i v = _mm512_loadu_si512(w + j * 64);
      const __m512i lo = _mm512_and_si512(v, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      int32_t a_lo, a_hi;
      std::memcpy(&a_lo, qu + 64 * p + 4 * g, 4);
      std::memcpy(&a_hi, qu + 64 * p + 32 + 4 * g, 4);
      acc[2 * p] = _mm512_dpbusd_epi32(acc[2 * p], lo, _mm512_set1_epi32(a_lo));
      acc[2 * p + 1] = _mm512_dpbusd_epi32(acc[2 * p + 1], hi, _mm512_set1_epi32(a_hi));
    }
    // Each sub-block's sum times its scale, and its activations' sum times its min, in
    // integers (at most 8 x 61K x 63 and 8 x 4064 x 63: no overflow), scaled once a unit.
    const uint8_t* sc = w + kCodesBytes;
    const uint8_t* mn = sc + kScalesBytes;
    __m512i isc = _mm512_setzero_si512(), imn = _mm512_setzero_si512();
    const int16_t* bs = bsum16 + u * kQuantGroups;
    for (int s = 0; s < 8; ++s) {
      const __m512i scale =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 16 * s)));
      const __m512i min =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(mn + 16 * s)));
      isc = _mm512_add_epi32(isc, _mm512_mullo_epi32(acc[s], scale));
      imn = _mm512_add_epi32(imn,
                             _mm512_mullo_epi32(min, _mm512_set1_epi32(bs[2 * s] + bs[2 * s + 1])));
    }
    const uint8_t* dd = mn + kScalesBytes;
    const __m512 da = _mm512_set1_ps(d256[u]);
    const __m512 d = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd))), da);
    const __m512 dmin = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(dd + 32))), da);
    total = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isc), total);
    total = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(imn), total);
  }
  _mm512_storeu_ps(y, total);
}

#else

bool q4k_group_usable() { return false; }
void q4k_group_times_one(const uint8_t*, int, const QuantActs&, int64_t, float*) {}

#endif

}  // namespace hanpu::simd
