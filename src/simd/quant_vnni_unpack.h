// The AVX512-VNNI unpackers of GGUF units (quant_unpack.h's form, in registers), shared by the
// decode / prefill dot kernels (quant_dot_vnni.cc) and the int8 prefill panels
// (quant_panel_vnni.cc). HANPU_HAVE_VNNI says whether this build compiles them: x86-64 with
// GCC or Clang where Highway's AVX-512 target is built too (a build told to leave AVX-512 out,
// as for an AVX2-only binary, then runs no AVX-512 anywhere). Every function carries the
// target attribute, so an including file builds for the baseline ISA and calls them only
// after quant_vnni_usable() said yes.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <hwy/detect_targets.h>

#include "base/quant_block_fields.h"
#include "simd/quant_unpack.h"
// Only where Highway's AVX-512 target is built too: a build told to leave AVX-512 out
// (HWY_DISABLED_TARGETS, as for an AVX2-only binary) then runs no AVX-512 anywhere.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && (HWY_TARGETS & HWY_AVX3)
// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source of their
// unmasked forms, which -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "simd/quant_x86_fields.h"
#define HANPU_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))
#define HANPU_VNNI_INLINE                                                      \
  __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma"), \
                 always_inline)) inline
#define HANPU_HAVE_VNNI 1
#endif

#if HANPU_HAVE_VNNI
namespace hanpu::simd {
// Internal linkage on purpose: each including file gets its own always-inline copies.
namespace {

// A unit in registers: 4 x 64 codes, the group scales spread over the 64 lanes of the
// vpdpbusd results (lane l of vector k covers values 64 k + 4 l .. + 3, group 4 k + l / 4),
// and the 16 group offsets.
struct Unit {
  __m512i code[4];
  __m512 scale_lane[4];
  __m512 offset;
};

// F16C's conversion, inline (a call out to the scalar one would spill every vector register).
HANPU_VNNI_INLINE float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

HANPU_VNNI_INLINE void spread_scales(__m512 scale, Unit* u) {
  for (int k = 0; k < 4; ++k) {
    const __m512i idx = _mm512_add_epi32(
        _mm512_set1_epi32(4 * k),
        _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                          2));
    u->scale_lane[k] = _mm512_permutexvar_ps(idx, scale);
  }
}

HANPU_VNNI_INLINE void from_scalar(const QuantUnit& s, Unit* u) {
  for (int k = 0; k < 4; ++k) u->code[k] = _mm512_load_si512(s.code + 64 * k);
  spread_scales(_mm512_load_ps(s.scale), u);
  u->offset = _mm512_load_ps(s.offset);
}

HANPU_VNNI_INLINE __m512i join(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

// Lane l of the spread vectors takes element idx[l] of a 16-float vector of per-group values.
HANPU_VNNI_INLINE __m512i lane_groups(int k) {
  return _mm512_add_epi32(
      _mm512_set1_epi32(4 * k),
      _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                        2));
}

// Q4_K's and Q5_K's scales: the 12 bytes at b + 4 as 8 six-bit scales times d and 8 mins times
// dmin, spread over the lanes (lane l of vector k covers group 4k + l / 4, sub-block 2k + l / 8).
HANPU_VNNI_INLINE void k4_scales_mins(const uint8_t* b, Unit* u) {
  // ggml's kmask shuffle on three 32-bit words, widened to 16 floats: sc 0..7 times d, m 0..7
  // times dmin.
  const __m512 sm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q4k_scales_mins_bytes(b + 4)));
  const __m512 ddmin =
      _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(half_at(b)), _mm512_set1_ps(half_at(b + 2)));
  const __m512 v = _mm512_mul_ps(sm, ddmin);  // lanes 0-7: d sc, 8-15: dmin m
  for (int k = 0; k < 4; ++k)
    u->scale_lane[k] = _mm512_permutexvar_ps(_mm512_srli_epi32(lane_groups(k), 1), v);
  u->offset = _mm512_permutexvar_ps(
      _mm512_add_epi32(
          _mm512_set1_epi32(8),
          _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            1)),
      v);
}

// Codes of vector k (values 64k .. + 63) of Q4_K's or Q5_K's nibbles at qs: 32 bytes to both
// halves of a vector, the high half shifted down a nibble (vpsrlvw, vpand; the broadcast is a
// load). Q5_K adds bit 2k (first 32 values) or 2k + 1 (last 32) of its 32 qh bytes as bit 4.
HANPU_VNNI_INLINE __m512i k4_codes(const uint8_t* qs, const uint8_t* qh, int k) {
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const __m512i shift = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
  const __m512i v =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k)));
  const __m512i lo = _mm512_and_si512(_mm512_srlv_epi16(v, shift), mask);
  if (qh == nullptr) return lo;
  const __m512i bits =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)));
  const __m512i bit_shift = _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(2 * k)),
                                               _mm256_set1_epi16(static_cast<short>(2 * k + 1)), 1);
  const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(bits, bit_shift), _mm512_set1_epi8(1));
  return _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
}

HANPU_VNNI_INLINE void unpack_q4_k(const uint8_t* b, Unit* u) {
  for (int k = 0; k < 4; ++k) u->code[k] = k4_codes(b + 16, nullptr, k);
  k4_scales_mins(b, u);
}

HANPU_VNNI_INLINE void unpack_q5_k(const uint8_t* b, Unit* u) {
  for (int k = 0; k < 4; ++k) u->code[k] = k4_codes(b + 48, b + 16, k);
  k4_scales_mins(b, u);
}

// Two-bit fields of Q2_K's and Q3_K's 64 bytes at q (quant_fields::two_bits): vector k's 64
// values take byte 32 (k / 2) + l % 32 of the plane, pair 2 (k % 2) for the first 32 and
// 2 (k % 2) + 1 for the last.
HANPU_VNNI_INLINE __m512i two_bit_codes(const uint8_t* q, int k) {
  const __m512i v = _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * (k / 2))));
  const __m512i shift =
      _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(4 * (k % 2))),
                         _mm256_set1_epi16(static_cast<short>(4 * (k % 2) + 2)), 1);
  return _mm512_and_si512(_mm512_srlv_epi16(v, shift), _mm512_set1_epi8(0x03));
}

// Q2_K: 16 scale bytes (low nibble the group's scale, high its min) times d and dmin.
HANPU_VNNI_INLINE void unpack_q2_k(const uint8_t* b, Unit* u) {
  for (int k = 0; k < 4; ++k) u->code[k] = two_bit_codes(b + 16, k);
  const __m512i sm = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  const __m512 scale =
      _mm512_mul_ps(_mm512_set1_ps(half_at(b + 80)),
                    _mm512_cvtepi32_ps(_mm512_and_si512(sm, _mm512_set1_epi32(15))));
  spread_scales(scale, u);
  u->offset =
      _mm512_mul_ps(_mm512_set1_ps(half_at(b + 82)), _mm512_cvtepi32_ps(_mm512_srli_epi32(sm, 4)));
}

// Q3_K: two bits from qs plus bit i / 32 of hmask byte i % 32 as bit 2 (codes 0..7, offset 4
// times the scale); 16 signed six-bit scales from the 12 bytes at b + 96 (the low 4 bits
// nibble s / 8 of byte s % 8, the high 2 bits pair s / 4 of byte 8 + s % 4, less 32).
HANPU_VNNI_INLINE void unpack_q3_k(const uint8_t* b, Unit* u) {
  const __m512i hm =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  for (int k = 0; k < 4; ++k) {
    const __m512i bit_shift =
        _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(2 * k)),
                           _mm256_set1_epi16(static_cast<short>(2 * k + 1)), 1);
    const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(hm, bit_shift), _mm512_set1_epi8(1));
    u->code[k] = _mm512_or_si512(two_bit_codes(b + 32, k), _mm512_slli_epi16(hi, 2));
  }
  // The 12 scale bytes alone: a 16-byte load would read past the block's end (110 bytes), and
  // past the tensor's for its last block.
  uint32_t sb[4] = {0, 0, 0, 0};
  std::memcpy(sb, b + 96, 12);
  const __m512i bytes = _mm512_cvtepu8_epi32(
      _mm_set_epi32(0, static_cast<int>(sb[2]), static_cast<int>(sb[1]), static_cast<int>(sb[0])));
  const __m512i s = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i low = _mm512_and_si512(
      _mm512_srlv_epi32(_mm512_permutexvar_epi32(_mm512_and_si512(s, _mm512_set1_epi32(7)), bytes),
                        _mm512_slli_epi32(_mm512_srli_epi32(s, 3), 2)),
      _mm512_set1_epi32(15));
  const __m512i high = _mm512_and_si512(
      _mm512_srlv_epi32(
          _mm512_permutexvar_epi32(
              _mm512_add_epi32(_mm512_set1_epi32(8), _mm512_and_si512(s, _mm512_set1_epi32(3))),
              bytes),
          _mm512_slli_epi32(_mm512_srli_epi32(s, 2), 1)),
      _mm512_set1_epi32(3));
  const __m512i sc =
      _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
  const __m512 scale = _mm512_mul_ps(_mm512_set1_ps(half_at(b + 108)), _mm512_cvtepi32_ps(sc));
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(4.0f), scale);
}

// IQ4_XS: sub-block j's 16 bytes at b + 8 + 16j hold its values 0-15 in their low nibbles and
// 16-31 in their high ones, each an index into the 16 levels (as codes: level + 128, offset
// 128 times the scale, the unpacker's convention for signed types).
HANPU_VNNI_INLINE void unpack_iq4_xs(const uint8_t* b, Unit* u) {
  alignas(16) int8_t levels[16];
  for (int i = 0; i < 16; ++i) levels[i] = static_cast<int8_t>(quant_fields::kIq4Levels[i] + 128);
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(levels)));
  // 128-bit lanes of vector k: sub-block 2k's low nibbles, its high ones, then 2k + 1's.
  const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 0x0004000400040004, 0x0004000400040004, 0, 0,
                                                 0x0004000400040004, 0x0004000400040004);
  for (int k = 0; k < 4; ++k) {
    const __m512i x = _mm512_castsi256_si512(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 8 + 32 * k)));
    const __m512i lanes = _mm512_shuffle_i64x2(x, x, _MM_SHUFFLE(1, 1, 0, 0));
    const __m512i idx =
        _mm512_and_si512(_mm512_srlv_epi16(lanes, nibble_shift), _mm512_set1_epi8(0x0F));
    u->code[k] = _mm512_shuffle_epi8(table, idx);
  }
  // The 8 signed six-bit scales (quant_fields::iq4xs_scale: low 4 bits nibble j of b[4..7],
  // high 2 bits pair j of the 16-bit word at b + 2, less 32) times d, in lanes 0-7; each
  // sub-block's two groups take its offset 128 d ls.
  uint32_t low;
  uint16_t high;
  std::memcpy(&low, b + 4, sizeof(low));
  std::memcpy(&high, b + 2, sizeof(high));
  const __m256i j = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i lo = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)), _mm256_slli_epi32(j, 2)),
      _mm256_set1_epi32(0x0F));
  const __m256i hi = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(high), _mm256_slli_epi32(j, 1)), _mm256_set1_epi32(3));
  const __m256i ls =
      _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
  const __m512 v =
      _mm512_zextps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(ls), _mm256_set1_ps(half_at(b))));
  for (int k = 0; k < 4; ++k)
    u->scale_lane[k] = _mm512_permutexvar_ps(_mm512_srli_epi32(lane_groups(k), 1), v);
  u->offset = _mm512_mul_ps(
      _mm512_set1_ps(128.0f),
      _mm512_permutexvar_ps(
          _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            1),
          v));
}

// Q6_K's 256 codes (0..63): code[k] holds values 64k .. + 63. Quarter k = 2h + j: ql bytes
// 64h .. + 63 shifted by 4j (low nibbles), and the 32 qh bytes of half h to both vector
// halves, shifted by 4j (first 32 values) and 4j + 2 (last 32) for their 2-bit fields.
HANPU_VNNI_INLINE void q6k_codes(const uint8_t* b, __m512i* code) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), low2 = _mm512_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(b + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h)));
    for (int j = 0; j < 2; ++j) {
      const __m512i hi_shift =
          _mm512_inserti64x4(_mm512_set1_epi16(static_cast<short>(4 * j)),
                             _mm256_set1_epi16(static_cast<short>(4 * j + 2)), 1);
      const __m512i lo = _mm512_and_si512(_mm512_srli_epi16(ql, 4 * j), low4);
      const __m512i hi = _mm512_and_si512(_mm512_srlv_epi16(qh, hi_shift), low2);
      code[2 * h + j] = _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));
    }
  }
}

HANPU_VNNI_INLINE void unpack_q6_k(const uint8_t* b, Unit* u) {
  q6k_codes(b, u->code);
  const float d = half_at(b + 208);
  const __m512 scale = _mm512_mul_ps(
      _mm512_set1_ps(d), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                             _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)))));
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(32.0f), scale);
}

// The f16 scales of 8 consecutive 32-value blocks (`bytes` apart), each spread over its two
// groups; blocks from `nb` on (past a partial unit's row end) scale 0.
HANPU_VNNI_INLINE __m512 block_scales(const uint8_t* b, int bytes, int nb = 8) {
  // Read as eight 16-bit inserts (not stores then a vector load, which would stall on
  // store forwarding).
  uint16_t h[8];
  for (int j = 0; j < 8; ++j) {
    h[j] = 0;
    if (j < nb) std::memcpy(&h[j], b + j * bytes, 2);
  }
  const __m256 d8 = _mm256_cvtph_ps(_mm_setr_epi16(
      static_cast<int16_t>(h[0]), static_cast<int16_t>(h[1]), static_cast<int16_t>(h[2]),
      static_cast<int16_t>(h[3]), static_cast<int16_t>(h[4]), static_cast<int16_t>(h[5]),
      static_cast<int16_t>(h[6]), static_cast<int16_t>(h[7])));
  const __m512i pair =
      _mm512_srli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
  return _mm512_permutexvar_ps(pair, _mm512_zextps256_ps512(d8));
}

// Block j of a unit at b, of `bytes` each: the unit's first block where j is past a partial
// unit's `nb` (any readable codes do: that block's scale and offset are 0).
HANPU_VNNI_INLINE const uint8_t* block_at(const uint8_t* b, int bytes, int j, int nb) {
  return b + bytes * (j < nb ? j : 0);
}

// nb: the unit's blocks in the row (8, or fewer in a partial last unit).
HANPU_VNNI_INLINE void unpack_q8_0(const uint8_t* b, Unit* u, int nb = 8) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int k = 0; k < 4; ++k) {
    const __m256i v0 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block_at(b, 34, 2 * k, nb) + 2));
    const __m256i v1 =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block_at(b, 34, 2 * k + 1, nb) + 2));
    u->code[k] = join(_mm256_xor_si256(v0, flip), _mm256_xor_si256(v1, flip));
  }
  const __m512 scale = block_scales(b, 34, nb);
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(128.0f), scale);
}

HANPU_VNNI_INLINE void unpack_q4_0(const uint8_t* b, Unit* u, int nb = 8) {
  for (int k = 0; k < 4; ++k)
    u->code[k] = join(block_nibbles(block_at(b, 18, 2 * k, nb) + 2),
                      block_nibbles(block_at(b, 18, 2 * k + 1, nb) + 2));
  const __m512 scale = block_scales(b, 18, nb);
  spread_scales(scale, u);
  u->offset = _mm512_mul_ps(_mm512_set1_ps(8.0f), scale);
}

// Q5_0's and Q5_1's fifth bits: bit j of the 32-bit qh at `at` is value j's bit 4 (a mask
// register made bytes by vpmovm2b).
HANPU_VNNI_INLINE __m256i block_fifth_bits(const uint8_t* at) {
  uint32_t qh;
  std::memcpy(&qh, at, sizeof(qh));
  return _mm256_and_si256(_mm256_movm_epi8(static_cast<__mmask32>(qh)), _mm256_set1_epi8(0x10));
}

// The codes of one 32-value block of type T (Q4_1, Q5_0, Q5_1, IQ4_NL) at blk.
template <QuantType T>
HANPU_VNNI_INLINE __m256i block_codes(const uint8_t* blk) {
  if constexpr (T == QuantType::kQ4_1) return block_nibbles(blk + 4);
  if constexpr (T == QuantType::kQ5_0)
    return _mm256_or_si256(block_nibbles(blk + 6), block_fifth_bits(blk + 2));
  if constexpr (T == QuantType::kQ5_1)
    return _mm256_or_si256(block_nibbles(blk + 8), block_fifth_bits(blk + 4));
  if constexpr (T == QuantType::kIQ4_NL) {  // IQ4_XS's levels as codes (level + 128)
    alignas(16) int8_t levels[16];
    for (int i = 0; i < 16; ++i) levels[i] = static_cast<int8_t>(quant_fields::kIq4Levels[i] + 128);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(levels)));
    return _mm256_shuffle_epi8(table, block_nibbles(blk + 2));
  }
}

// The 32-value types other than Q4_0 and Q8_0: values scale * code - offset per block, the f16
// scale d first in the block; Q4_1 and Q5_1 add their f16 min m (offset -m), Q5_0 offsets its
// codes by 16 and IQ4_NL by 128 (times d).
template <QuantType T>
HANPU_VNNI_INLINE void unpack_blocks(const uint8_t* b, Unit* u, int nb = 8) {
  constexpr int bytes = quant_unit_bytes(T) / (kQuantUnit / 32);  // a 32-value block
  for (int k = 0; k < 4; ++k)
    u->code[k] = join(block_codes<T>(block_at(b, bytes, 2 * k, nb)),
                      block_codes<T>(block_at(b, bytes, 2 * k + 1, nb)));
  const __m512 scale = block_scales(b, bytes, nb);
  spread_scales(scale, u);
  if constexpr (T == QuantType::kQ4_1 || T == QuantType::kQ5_1) {
    u->offset = _mm512_sub_ps(_mm512_setzero_ps(), block_scales(b + 2, bytes, nb));
  } else {
    u->offset = _mm512_mul_ps(_mm512_set1_ps(T == QuantType::kQ5_0 ? 16.0f : 128.0f), scale);
  }
}

// A unit of a 32-value block type with its first nb blocks in the row (8: a whole unit).
template <QuantType T>
HANPU_VNNI_INLINE void unpack_blocks32(const uint8_t* at, Unit* out, int nb) {
  if constexpr (T == QuantType::kQ8_0) return unpack_q8_0(at, out, nb);
  if constexpr (T == QuantType::kQ4_0) return unpack_q4_0(at, out, nb);
  if constexpr (T != QuantType::kQ8_0 && T != QuantType::kQ4_0)
    return unpack_blocks<T>(at, out, nb);
}

// Unit u of a row of type T into registers (the scalar unpacker for a type without a vector
// one).
template <QuantType T>
HANPU_VNNI_INLINE void unpack(const uint8_t* row, int in, int u, QuantUnit* scratch, Unit* out) {
  if constexpr (kBlocks32<T>) {
    const uint8_t* at = row + static_cast<size_t>(u) * quant_unit_bytes(T);
    // Whole units with the block count a constant (no per-block selects on the hot path); a
    // partial last unit with its own.
    const int have = in - u * kQuantUnit;
    if (have >= kQuantUnit) return unpack_blocks32<T>(at, out, 8);
    return unpack_blocks32<T>(at, out, have / 32);
  }
  constexpr bool kVector = T == QuantType::kQ4_K || T == QuantType::kQ5_K ||
                           T == QuantType::kQ6_K || T == QuantType::kIQ4_XS ||
                           T == QuantType::kQ2_K || T == QuantType::kQ3_K;
  if constexpr (kVector) {  // 256-value blocks: every unit is whole
    const uint8_t* at = row + static_cast<size_t>(u) * quant_unit_bytes(T);
    if constexpr (T == QuantType::kQ4_K) return unpack_q4_k(at, out);
    if constexpr (T == QuantType::kQ5_K) return unpack_q5_k(at, out);
    if constexpr (T == QuantType::kIQ4_XS) return unpack_iq4_xs(at, out);
    if constexpr (T == QuantType::kQ2_K) return unpack_q2_k(at, out);
    if constexpr (T == QuantType::kQ3_K) return unpack_q3_k(at, out);
    if constexpr (T == QuantType::kQ6_K) return unpack_q6_k(at, out);
  }
  unpack_unit(T, row, in, u, scratch);
  from_scalar(*scratch, out);
}

}  // namespace
}  // namespace hanpu::simd
#endif
