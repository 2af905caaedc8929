// Q6_K rows repacked sixteen to a group, and their decode product (see quant_q6k_rows16.h).
// Hand-written: the point of the layout is the instruction count of this one loop.
#include "simd/quant_q6k_rows16.h"

#include <cstring>

#include "simd/quant_vnni_unpack.h"

namespace hanpu::simd {

namespace {

constexpr int kRows = kQ6kGroupRows;
constexpr int kCodesBytes = 48 * 64, kScalesBytes = 16 * kRows;
constexpr int kBlockBytes = 210;  // Q6_K: ql[128], qh[64], scales[16] (int8), d (f16)

// The run of 4 bytes the loop's j-th step reads in a half: runs 0 and 4 first, then 1 and 5,
// ..., so that consecutive steps feed different sub-blocks' sums (runs 0-3 are values 0-15 of
// their sub-blocks, 4-7 values 16-31 of the next).
constexpr int run_of_step(int j) { return (j % 2) * 4 + j / 2; }

}  // namespace

void q6k_group_rows(const uint8_t* const* rows, int in, uint8_t* dst) {
  const int units = in / kQuantUnit;
  for (int u = 0; u < units; ++u) {
    uint8_t* out = dst + static_cast<size_t>(u) * kQ6kGroupUnitBytes;
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* b = rows[r] + static_cast<size_t>(u) * kBlockBytes;
      const uint8_t *ql = b, *qh = b + 128, *sc = b + 192;
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 8; ++j) {
          const int run = run_of_step(j);
          uint8_t* v = out + (h * 8 + j) * 3 * 64 + 4 * r;
          std::memcpy(v, ql + 64 * h + 4 * run, 4);
          std::memcpy(v + 64, ql + 64 * h + 32 + 4 * run, 4);
          std::memcpy(v + 128, qh + 32 * h + 4 * run, 4);
        }
      }
      for (int s = 0; s < 16; ++s) out[kCodesBytes + s * kRows + r] = sc[s];
      std::memcpy(out + kCodesBytes + kScalesBytes + 2 * r, b + 208, 2);
    }
  }
}

#if HANPU_HAVE_VNNI

typedef int32_t __attribute__((may_alias)) AliasedInt32;

bool q6k_group_usable() { return quant_vnni_usable(); }

// Per half h of a unit (values 128 h ..), step j reads run `run` (bytes 4 run .. 4 run + 3 of
// the half's first and second 32 ql bytes, A and B, and of its 32 qh bytes, H). Their values
// are, for k = 0..3, 32 k + 4 run + 0..3: the low 4 bits from A's low nibbles (k = 0), B's
// low (1), A's high (2), B's high (3), the top 2 from H's bits 2k, 2k + 1; sub-block
// 8 h + 2 k + run / 4. A code byte is made by a shift, an and and a vpternlogd, then one
// vpdpbusd adds 4 products a row. Each sub-block's sum starts at -32 times its activations'
// sum (bsum16), Q6_K's offset of 32, and is times its int8 scale in integers (|sum| <= 16 x
// 32 x 127, times 128, 16 sub-blocks: no overflow), scaled once a unit.
HANPU_VNNI_TARGET void q6k_group_times_one(const uint8_t* group, int units, const QuantActs& a,
                                           float* y) {
  const int8_t* q = a.q256_row(0);
  const float* d256 = a.d256_row(0);
  const int16_t* bsum16 = a.bsum16_row(0);
  const __m512i low4 = _mm512_set1_epi8(0x0F), top2 = _mm512_set1_epi8(0x30);
  constexpr int kLowOrTop = 0xEA;  // (A & B) | C
  __m512 total = _mm512_setzero_ps();
  for (int u = 0; u < units; ++u) {
    const uint8_t* w = group + static_cast<size_t>(u) * kQ6kGroupUnitBytes;
    const AliasedInt32* q32 = reinterpret_cast<const AliasedInt32*>(q + u * kQuantUnit);
    const int16_t* bs = bsum16 + u * kQuantGroups;
    const int8_t* scales = reinterpret_cast<const int8_t*>(w + kCodesBytes);
    __m512i isum = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
      __m512i acc[8];  // sub-block 8 h + 2 k + run / 4 at 2 k + run / 4
      for (int i = 0; i < 8; ++i) acc[i] = _mm512_set1_epi32(-32 * bs[8 * h + i]);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const int run = run_of_step(j), half = run / 4;
        const uint8_t* v = w + (h * 8 + j) * 3 * 64;
        const __m512i A = _mm512_loadu_si512(v), B = _mm512_loadu_si512(v + 64);
        const __m512i H = _mm512_loadu_si512(v + 128);
        const __m512i c0 = _mm512_ternarylogic_epi32(
            A, low4, _mm512_and_si512(_mm512_slli_epi16(H, 4), top2), kLowOrTop);
        const __m512i c1 = _mm512_ternarylogic_epi32(
            B, low4, _mm512_and_si512(_mm512_slli_epi16(H, 2), top2), kLowOrTop);
        const __m512i c2 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(A, 4), low4,
                                                     _mm512_and_si512(H, top2), kLowOrTop);
        const __m512i c3 =
            _mm512_ternarylogic_epi32(_mm512_srli_epi16(B, 4), low4,
                                      _mm512_and_si512(_mm512_srli_epi16(H, 2), top2), kLowOrTop);
        const AliasedInt32* qh = q32 + 32 * h + run;  // values 128 h + 4 run, then + 32 k
        acc[half] = _mm512_dpbusd_epi32(acc[half], c0, _mm512_set1_epi32(qh[0]));
        acc[2 + half] = _mm512_dpbusd_epi32(acc[2 + half], c1, _mm512_set1_epi32(qh[8]));
        acc[4 + half] = _mm512_dpbusd_epi32(acc[4 + half], c2, _mm512_set1_epi32(qh[16]));
        acc[6 + half] = _mm512_dpbusd_epi32(acc[6 + half], c3, _mm512_set1_epi32(qh[24]));
      }
      for (int i = 0; i < 8; ++i) {
        const __m512i scale = _mm512_cvtepi8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + (8 * h + i) * kRows)));
        isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(acc[i], scale));
      }
    }
    const __m512 d = _mm512_mul_ps(
        _mm512_cvtph_ps(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + kCodesBytes + kScalesBytes))),
        _mm512_set1_ps(d256[u]));
    total = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), total);
  }
  _mm512_storeu_ps(y, total);
}

#else

bool q6k_group_usable() { return false; }
void q6k_group_times_one(const uint8_t*, int, const QuantActs&, float*) {}

#endif

}  // namespace hanpu::simd
