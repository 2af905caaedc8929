// The AVX512-VNNI quantized kernel (see quant_dot.h). The file builds for the baseline ISA;
// each function that uses AVX-512 carries the target attribute, so nothing here runs before
// quant_vnni_usable() said yes. Q4_K, Q6_K, Q8_0 and Q4_0 (the types of the common mixes)
// are unpacked in registers; the others through the scalar unpacker (quant_unpack.h).
#include <cstring>

#include "hanpu/dtype.h"
#include "simd/quant_dot.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source of their
// unmasked forms, which -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#define HANPU_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c")))
#define HANPU_HAVE_VNNI 1
#endif

namespace hanpu::simd {

#if HANPU_HAVE_VNNI

bool quant_vnni_usable() {
  static const bool usable = __builtin_cpu_supports("avx512vnni") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl");
  return usable;
}

namespace {

constexpr int kTileRows = 4;  // activation rows multiplied per unpacked unit

// A unit in registers: 4 x 64 codes, the group scales spread over the 64 lanes of the
// vpdpbusd results (lane l of vector k covers values 64 k + 4 l .. + 3, group 4 k + l / 4),
// and the 16 group offsets.
struct Unit {
  __m512i code[4];
  __m512 scale_lane[4];
  __m512 offset;
};

float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return f16_bits_to_f32(h);
}

HANPU_VNNI_TARGET inline void spread_scales(__m512 scale, Unit* u) {
  for (int k = 0; k < 4; ++k) {
    const __m512i idx = _mm512_add_epi32(
        _mm512_set1_epi32(4 * k),
        _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                          2));
    u->scale_lane[k] = _mm512_permutexvar_ps(idx, scale);
  }
}

HANPU_VNNI_TARGET inline void from_scalar(const QuantUnit& s, Unit* u) {
  for (int k = 0; k < 4; ++k) u->code[k] = _mm512_load_si512(s.code + 64 * k);
  spread_scales(_mm512_load_ps(s.scale), u);
  u->offset = _mm512_load_ps(s.offset);
}

HANPU_VNNI_TARGET inline __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

HANPU_VNNI_TARGET void unpack_q4_k(const uint8_t* b, Unit* u) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  for (int k = 0; k < 4; ++k) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16 + 32 * k));
    u->code[k] = join(_mm256_and_si256(v, mask), _mm256_and_si256(_mm256_srli_epi16(v, 4), mask));
  }
  alignas(64) float scale[16], offset[16];
  const float d = half_at(b), dmin = half_at(b + 2);
  const uint8_t* s = b + 4;
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    if (j < 4) {
      sc = s[j] & 0x3F;
      m = s[j + 4] & 0x3F;
    } else {
      sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 2) & 0x30);
      m = (s[j + 4] >> 4) | ((s[j] >> 2) & 0x30);
    }
    scale[2 * j] = scale[2 * j + 1] = d * static_cast<float>(sc);
    offset[2 * j] = offset[2 * j + 1] = dmin * static_cast<float>(m);
  }
  spread_scales(_mm512_load_ps(scale), u);
  u->offset = _mm512_load_ps(offset);
}

HANPU_VNNI_TARGET void unpack_q6_k(const uint8_t* b, Unit* u) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m256i low2 = _mm256_set1_epi8(0x03);
  for (int k = 0; k < 4; ++k) {
    const int h = k / 2, shift = 4 * (k % 2);
    const __m512i ql = _mm512_loadu_si512(b + 64 * h);
    const __m512i lo = _mm512_and_si512(_mm512_srli_epi16(ql, shift), low4);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    const __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(qh, shift), low2);
    const __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(qh, shift + 2), low2);
    u->code[k] = _mm512_or_si512(lo, _mm512_slli_epi16(join(hi0, hi1), 4));
  }
  const float d = half_at(b + 208);
  const __m512 scale = _mm512_mul_ps(
      _mm512_set1_ps(d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)))));
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(32.0f), scale);
}

// The f16 scales of 8 consecutive 32-value blocks (`bytes` apart), each spread over its two
// groups.
HANPU_VNNI_TARGET __m512 block_scales(const uint8_t* b, int bytes) {
  alignas(16) uint16_t h[8];
  for (int j = 0; j < 8; ++j) std::memcpy(&h[j], b + j * bytes, 2);
  const __m256 d8 = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  const __m512i pair =
      _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
  return _mm512_permutexvar_ps(pair, _mm512_zextps256_ps512(d8));
}

HANPU_VNNI_TARGET void unpack_q8_0(const uint8_t* b, Unit* u) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int k = 0; k < 4; ++k) {
    const uint8_t* b0 = b + 34 * (2 * k);
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 34 + 2));
    u->code[k] = join(_mm256_xor_si256(v0, flip), _mm256_xor_si256(v1, flip));
  }
  const __m512 scale = block_scales(b, 34);
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(128.0f), scale);
}

HANPU_VNNI_TARGET void unpack_q4_0(const uint8_t* b, Unit* u) {
  const __m128i mask = _mm_set1_epi8(0x0F);
  for (int k = 0; k < 4; ++k) {
    __m512i c = _mm512_setzero_si512();
    for (int j = 0; j < 2; ++j) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18 * (2 * k + j) + 2));
      const __m256i block = _mm256_inserti128_si256(_mm256_zextsi128_si256(_mm_and_si128(v, mask)),
                                                    _mm_and_si128(_mm_srli_epi16(v, 4), mask), 1);
      c = _mm512_inserti64x4(c, block, j);
    }
    u->code[k] = c;
  }
  const __m512 scale = block_scales(b, 18);
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(8.0f), scale);
}

HANPU_VNNI_TARGET float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

HANPU_VNNI_TARGET void unpack(QuantType t, const uint8_t* row, int in, int u, QuantUnit* scratch,
                              Unit* out) {
  const QuantTypeInfo& info = quant_type_info(t);
  const bool whole = (u + 1) * kQuantUnit <= in;
  const uint8_t* at = row + static_cast<size_t>(u) * (kQuantUnit / info.block_elems) * info.bytes;
  if (whole) {
    switch (t) {
      case QuantType::kQ4_K:
        return unpack_q4_k(at, out);
      case QuantType::kQ6_K:
        return unpack_q6_k(at, out);
      case QuantType::kQ8_0:
        return unpack_q8_0(at, out);
      case QuantType::kQ4_0:
        return unpack_q4_0(at, out);
      default:
        break;
    }
  }
  unpack_unit(t, row, in, u, scratch);
  from_scalar(*scratch, out);
}

}  // namespace

HANPU_VNNI_TARGET void quant_gemm_vnni(QuantType t, const uint8_t* rows, size_t row_bytes, int n,
                                       const QuantActs& a, int64_t r0, int64_t r1, float* y,
                                       int64_t ldy) {
  alignas(64) QuantUnit scratch;
  for (int o = 0; o < n; ++o) {
    const uint8_t* row = rows + static_cast<size_t>(o) * row_bytes;
    for (int64_t t0 = r0; t0 < r1; t0 += kTileRows) {
      const int tr = static_cast<int>(std::min<int64_t>(kTileRows, r1 - t0));
      __m512 acc[kTileRows], accm[kTileRows];
      for (int r = 0; r < kTileRows; ++r) acc[r] = accm[r] = _mm512_setzero_ps();
      for (int u = 0; u < a.units; ++u) {
        Unit w;
        unpack(t, row, a.in, u, &scratch, &w);
        for (int r = 0; r < tr; ++r) {
          const int8_t* q = a.q_row(t0 + r) + u * kQuantUnit;
          const float* dlane = a.dlane_row(t0 + r) + u * 64;
          for (int k = 0; k < 4; ++k) {
            const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.code[k],
                                                     _mm512_loadu_si512(q + 64 * k));
            const __m512 f = _mm512_mul_ps(_mm512_loadu_ps(dlane + 16 * k), w.scale_lane[k]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), f, acc[r]);
          }
          accm[r] = _mm512_fmadd_ps(
              w.offset, _mm512_loadu_ps(a.dsum_row(t0 + r) + u * kQuantGroups), accm[r]);
        }
      }
      for (int r = 0; r < tr; ++r) y[(t0 + r) * ldy + o] = hsum(acc[r]) - hsum(accm[r]);
    }
  }
}

#else

bool quant_vnni_usable() { return false; }
void quant_gemm_vnni(QuantType t, const uint8_t* rows, size_t row_bytes, int n, const QuantActs& a,
                     int64_t r0, int64_t r1, float* y, int64_t ldy) {
  quant_gemm_scalar(t, rows, row_bytes, n, a, r0, r1, y, ldy);
}

#endif

}  // namespace hanpu::simd
