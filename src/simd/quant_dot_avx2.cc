// The AVX2 quantized kernel (see quant_dot.h), for x86 cores without AVX512-VNNI: the VNNI
// kernel's structure on 256-bit vectors, with vpmaddubsw (u8 x s8 -> pairs of i16) and
// vpmaddwd (-> i32 lanes of four products) in place of vpdpbusd. vpmaddubsw saturates a pair
// above 32767, which codes of at most 63 (Q4_*, Q5_*, Q6_K, Q2_K, Q3_K) never reach; the types
// whose codes span 8 bits (Q8_0, IQ4_NL, IQ4_XS: code = q + 128, offset = 128 scale) multiply
// their signed q instead, as |q| times the activation with q's sign (llama.cpp's way), and drop
// the offset with the shift. The file builds for the baseline ISA; each function using AVX2
// carries the target attribute, so nothing here runs before quant_avx2_usable() said yes.
#include <cstring>
#include <type_traits>

#include "base/quant_block_fields.h"
#include "simd/quant_dot.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "simd/quant_x86_fields.h"
#define HANPU_AVX2_TARGET __attribute__((target("avx2,fma,f16c")))
#define HANPU_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline
#define HANPU_HAVE_AVX2 1
#endif

namespace hanpu::simd {

#if HANPU_HAVE_AVX2

// F16C is not asked for: every x86 core with AVX2 has it (it arrived a generation earlier), and
// clang's __builtin_cpu_supports does not know the name.
bool quant_avx2_usable() {
  static const bool usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return usable;
}

namespace {

// A unit in registers: 8 x 32 codes; lane l of vector k covers values 32 k + 4 l .. + 3, group
// 2 k + l / 4, and scale_lane[k] holds that group's scale in each lane; the 16 group offsets.
struct Unit {
  __m256i code[8];
  __m256 scale_lane[8];
  __m256 offset[2];
  // Q4_K only: the 6-bit sub-block scales as i16 lanes (vpmaddwd multiplies the pair sums by
  // them, exactly, in place of a float multiply per sub-block) and the block's d.
  __m256i scale16[8];
  float d;
};

template <QuantType T>
constexpr bool kSignedWide =
    T == QuantType::kQ8_0 || T == QuantType::kIQ4_NL || T == QuantType::kIQ4_XS;

HANPU_AVX2_INLINE float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// Lanes 0-3: group 2k's value, lanes 4-7: group 2k + 1's.
HANPU_AVX2_INLINE __m256 two_groups(float g0, float g1) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_set1_ps(g0)), _mm_set1_ps(g1), 1);
}

HANPU_AVX2_INLINE void from_scalar(const QuantUnit& s, Unit* u) {
  for (int k = 0; k < 8; ++k) {
    u->code[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.code + 32 * k));
    u->scale_lane[k] = two_groups(s.scale[2 * k], s.scale[2 * k + 1]);
  }
  u->offset[0] = _mm256_load_ps(s.offset);
  u->offset[1] = _mm256_load_ps(s.offset + 8);
}

// Q4_K's and Q5_K's codes: the low nibbles of qs's 32 bytes 32c .. are values 64c .. + 31
// (code[2c]), their high nibbles the next 32 (code[2c + 1]); Q5_K adds bit k of its 32 qh
// bytes to code[k] as bit 4.
HANPU_AVX2_INLINE void k4_codes(const uint8_t* qs, const uint8_t* qh, __m256i* code) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * c));
    code[2 * c] = _mm256_and_si256(v, mask);
    code[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
  }
  if (qh == nullptr) return;
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
  const __m256i bit4 = _mm256_set1_epi8(0x10);
  for (int k = 0; k < 8; ++k) {  // bit k moved to bit 4
    const __m256i at4 = k <= 4 ? _mm256_slli_epi16(bits, 4 - k) : _mm256_srli_epi16(bits, k - 4);
    code[k] = _mm256_or_si256(code[k], _mm256_and_si256(at4, bit4));
  }
}

// Q4_K's and Q5_K's d, sub-block scales (scale16) and mins (offsets): the 12 bytes at b + 4.
HANPU_AVX2_INLINE void k4_scales_mins(const uint8_t* b, Unit* u) {
  u->d = half_at(b);
  const __m128i bytes = q4k_scales_mins_bytes(b + 4);  // scales 0-7, mins 0-7
  const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(bytes));
  for (int j = 0; j < 8; ++j)  // i16 lane j in every lane
    u->scale16[j] =
        _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * j)));
  const __m256 mins =
      _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8))),
                    _mm256_set1_ps(half_at(b + 2)));
  // Offsets per 16-value group: sub-block j's min for groups 2j and 2j + 1.
  u->offset[0] = _mm256_permutevar8x32_ps(mins, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
  u->offset[1] = _mm256_permutevar8x32_ps(mins, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
}

HANPU_AVX2_INLINE void unpack_q4_k(const uint8_t* b, Unit* u) {
  k4_codes(b + 16, nullptr, u->code);
  k4_scales_mins(b, u);
}

HANPU_AVX2_INLINE void unpack_q5_k(const uint8_t* b, Unit* u) {
  k4_codes(b + 48, b + 16, u->code);
  k4_scales_mins(b, u);
}

// IQ4_XS as its signed levels (kSignedWide: no offsets): sub-block k's 16 bytes at b + 8 + 16k
// hold its values 0-15 in their low nibbles and 16-31 in their high ones, each an index into
// the 16 levels.
HANPU_AVX2_INLINE void unpack_iq4_xs(const uint8_t* b, Unit* u) {
  const __m256i table = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant_fields::kIq4Levels)));
  const __m128i mask = _mm_set1_epi8(0x0F);
  for (int k = 0; k < 8; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 8 + 16 * k));
    const __m256i idx = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, mask)),
                                                _mm_and_si128(_mm_srli_epi16(v, 4), mask), 1);
    u->code[k] = _mm256_shuffle_epi8(table, idx);
    const float dl = half_at(b) * static_cast<float>(quant_fields::iq4xs_scale(b, k));
    u->scale_lane[k] = _mm256_set1_ps(dl);
  }
}

// Q6_K's 256 codes (0..63): code[k] holds values 32k .. + 31.
HANPU_AVX2_INLINE void q6k_codes(const uint8_t* b, __m256i* code) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), low2 = _mm256_set1_epi8(0x03);
  for (int h = 0; h < 2; ++h) {
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h));
    for (int half = 0; half < 2; ++half) {
      const __m256i ql =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 64 * h + 32 * half));
      for (int j = 0; j < 2; ++j) {
        // Values 128 h + 64 j + 32 half .. + 31: nibble j of ql, bit pair 2 j + half of qh.
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(ql, 4 * j), low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 4 * j + 2 * half), low2);
        code[4 * h + 2 * j + half] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
      }
    }
  }
}

HANPU_AVX2_INLINE void unpack_q6_k(const uint8_t* b, Unit* u) {
  q6k_codes(b, u->code);
  const float d = half_at(b + 208);
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  alignas(32) float offset[16];
  for (int k = 0; k < 8; ++k) {
    const float s0 = d * static_cast<float>(sc[2 * k]), s1 = d * static_cast<float>(sc[2 * k + 1]);
    u->scale_lane[k] = two_groups(s0, s1);
    offset[2 * k] = 32 * s0;
    offset[2 * k + 1] = 32 * s1;
  }
  u->offset[0] = _mm256_load_ps(offset);
  u->offset[1] = _mm256_load_ps(offset + 8);
}

// Q8_0: the signed values as they are (kSignedWide: no shift, no offset).
HANPU_AVX2_INLINE void unpack_q8_0(const uint8_t* b, Unit* u) {
  for (int k = 0; k < 8; ++k) {
    const uint8_t* blk = b + 34 * k;
    u->code[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    u->scale_lane[k] = _mm256_set1_ps(half_at(blk));
  }
}

HANPU_AVX2_INLINE void unpack_q4_0(const uint8_t* b, Unit* u) {
  alignas(32) float offset[16];
  for (int k = 0; k < 8; ++k) {
    const uint8_t* blk = b + 18 * k;
    u->code[k] = block_nibbles(blk + 2);
    const float d = half_at(blk);
    u->scale_lane[k] = _mm256_set1_ps(d);
    offset[2 * k] = offset[2 * k + 1] = 8 * d;
  }
  u->offset[0] = _mm256_load_ps(offset);
  u->offset[1] = _mm256_load_ps(offset + 8);
}

// Q5_0's and Q5_1's fifth bits: bit j of the 32-bit qh at `at` as 0x10 in byte j (byte j takes
// qh's byte j / 8, then its bit j % 8 is tested).
HANPU_AVX2_INLINE __m256i block_fifth_bits(const uint8_t* at) {
  uint32_t qh;
  std::memcpy(&qh, at, sizeof(qh));
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                          _mm256_set1_epi8(0x10));
}

// The 32-value types other than Q4_0 and Q8_0, eight blocks of `bytes` (the f16 scale d first):
// Q4_1 and Q5_1 add their f16 min m (offset -m), Q5_0 offsets its codes by 16 times d, IQ4_NL
// is a signed type (kSignedWide: its levels, no offset).
template <QuantType T>
HANPU_AVX2_INLINE void unpack_blocks(const uint8_t* b, Unit* u) {
  constexpr int bytes = quant_unit_bytes(T) / (kQuantUnit / 32);  // a 32-value block
  alignas(32) float offset[16];
  for (int k = 0; k < 8; ++k) {
    const uint8_t* blk = b + bytes * k;
    const float d = half_at(blk);
    u->scale_lane[k] = _mm256_set1_ps(d);
    float off = 0;
    if constexpr (T == QuantType::kQ4_1) {
      u->code[k] = block_nibbles(blk + 4);
      off = -half_at(blk + 2);
    } else if constexpr (T == QuantType::kQ5_0) {
      u->code[k] = _mm256_or_si256(block_nibbles(blk + 6), block_fifth_bits(blk + 2));
      off = 16 * d;
    } else if constexpr (T == QuantType::kQ5_1) {
      u->code[k] = _mm256_or_si256(block_nibbles(blk + 8), block_fifth_bits(blk + 4));
      off = -half_at(blk + 2);
    } else {
      static_assert(T == QuantType::kIQ4_NL);
      const __m256i table = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(quant_fields::kIq4Levels)));
      u->code[k] = _mm256_shuffle_epi8(table, block_nibbles(blk + 2));
    }
    offset[2 * k] = offset[2 * k + 1] = off;
  }
  u->offset[0] = _mm256_load_ps(offset);
  u->offset[1] = _mm256_load_ps(offset + 8);
}

// Q2_K's and Q3_K's two-bit plane at q: values 32c .. 32c + 31 are pair c % 4 of bytes
// 32 (c / 4) .. + 31 (quant_fields::two_bits).
HANPU_AVX2_INLINE __m256i two_bit_codes(const uint8_t* q, int c) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * (c / 4)));
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (c % 4)), _mm256_set1_epi8(0x03));
}

// Group scales and offsets (16 each) into the unit's lanes.
HANPU_AVX2_INLINE void set_groups(const float* scale, const float* offset, Unit* u) {
  for (int k = 0; k < 8; ++k) u->scale_lane[k] = two_groups(scale[2 * k], scale[2 * k + 1]);
  u->offset[0] = _mm256_loadu_ps(offset);
  u->offset[1] = _mm256_loadu_ps(offset + 8);
}

// Q2_K: 16 scale bytes (low nibble the group's scale, high its min) times d and dmin.
HANPU_AVX2_INLINE void unpack_q2_k(const uint8_t* b, Unit* u) {
  for (int c = 0; c < 8; ++c) u->code[c] = two_bit_codes(b + 16, c);
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  alignas(32) float scale[16], offset[16];
  for (int g = 0; g < 16; ++g) {
    scale[g] = d * static_cast<float>(b[g] & 0x0F);
    offset[g] = dmin * static_cast<float>(b[g] >> 4);
  }
  set_groups(scale, offset, u);
}

// Q3_K: two bits from qs plus bit c of the 32 hmask bytes as bit 2 (codes 0..7, offset 4 times
// the scale); 16 signed six-bit scales from the 12 bytes at b + 96 (the low 4 bits nibble s / 8
// of byte s % 8, the high 2 bits pair s / 4 of byte 8 + s % 4, less 32).
HANPU_AVX2_INLINE void unpack_q3_k(const uint8_t* b, Unit* u) {
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
  const __m256i one = _mm256_set1_epi8(1);
  for (int c = 0; c < 8; ++c) {
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hm, c), one);
    u->code[c] = _mm256_or_si256(two_bit_codes(b + 32, c), _mm256_slli_epi16(hi, 2));
  }
  const float d = half_at(b + 108);
  const uint8_t* sb = b + 96;
  alignas(32) float scale[16], offset[16];
  for (int g = 0; g < 16; ++g) {
    const int sc =
        (((sb[g % 8] >> (4 * (g / 8))) & 0x0F) | (((sb[8 + g % 4] >> (2 * (g / 4))) & 3) << 4)) -
        32;
    scale[g] = d * static_cast<float>(sc);
    offset[g] = 4 * scale[g];
  }
  set_groups(scale, offset, u);
}

template <QuantType T>
constexpr int kUnitBytes = quant_unit_bytes(T);

// Unit u of a row of type T into registers (kSignedWide types: signed values, no offsets).
template <QuantType T>
HANPU_AVX2_INLINE void unpack(const uint8_t* row, int in, int u, QuantUnit* scratch, Unit* out) {
  // Rows of 256-value blocks: every unit is whole.
  if constexpr (T == QuantType::kQ4_K)
    return unpack_q4_k(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (T == QuantType::kQ5_K)
    return unpack_q5_k(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (T == QuantType::kIQ4_XS)
    return unpack_iq4_xs(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (T == QuantType::kQ2_K)
    return unpack_q2_k(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (T == QuantType::kQ3_K)
    return unpack_q3_k(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (T == QuantType::kQ6_K)
    return unpack_q6_k(row + static_cast<size_t>(u) * kUnitBytes<T>, out);
  if constexpr (kBlocks32<T>) {  // whole units, and a partial last one (unit_of_blocks)
    alignas(32) uint8_t buf[quant_unit_bytes(T)];
    const uint8_t* at = unit_of_blocks<T>(row, in, u, buf);
    if constexpr (T == QuantType::kQ8_0) return unpack_q8_0(at, out);
    if constexpr (T == QuantType::kQ4_0) return unpack_q4_0(at, out);
    if constexpr (T != QuantType::kQ8_0 && T != QuantType::kQ4_0) return unpack_blocks<T>(at, out);
  }
  unpack_unit(T, row, in, u, scratch);
  from_scalar(*scratch, out);
  if constexpr (kSignedWide<T>) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int k = 0; k < 8; ++k) out->code[k] = _mm256_xor_si256(out->code[k], flip);
  }
}

// i32 lanes of four products of 32 codes and 32 activations.
template <QuantType T>
HANPU_AVX2_INLINE __m256i dot4(__m256i code, __m256i act) {
  __m256i pairs;
  if constexpr (kSignedWide<T>) {
    pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(code), _mm256_sign_epi8(act, code));
  } else {
    pairs = _mm256_maddubs_epi16(code, act);
  }
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

HANPU_AVX2_INLINE float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <QuantType T, int R>
HANPU_AVX2_TARGET void rows_times_acts(const uint8_t* const* rows, int n, const QuantActs& a,
                                       int64_t r0, float* y, int64_t ldy) {
  QuantUnit scratch;  // 64-byte aligned by its type
  for (int o = 0; o < n; ++o) {
    const uint8_t* row = rows[o];
    __m256 acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int u = 0; u < a.units; ++u) {
      prefetch_ahead<T>(row, u);
      Unit w;
      unpack<T>(row, a.in, u, &scratch, &w);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = a.q_row(r0 + r) + u * kQuantUnit;
        const float* dlane = a.dlane_row(r0 + r) + u * 64;
        if constexpr (T == QuantType::kQ4_K || T == QuantType::kQ5_K) {  // scale16 and d set
          // Codes <= 31 (Q4_K: 15) times |a| <= 128, two a pair: <= 7936 in i16; times a
          // 6-bit scale, two a lane: < 2^20 in i32, exact in float.
          __m256 unit = _mm256_setzero_ps();
          for (int k = 0; k < 8; ++k) {
            const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * k));
            const __m256i isum =
                _mm256_madd_epi16(_mm256_maddubs_epi16(w.code[k], act), w.scale16[k]);
            unit = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_loadu_ps(dlane + 8 * k), unit);
          }
          acc[r][0] = _mm256_fmadd_ps(unit, _mm256_set1_ps(w.d), acc[r][0]);
          const float* dsum = a.dsum_row(r0 + r) + u * kQuantGroups;
          acc[r][0] = _mm256_fnmadd_ps(w.offset[0], _mm256_loadu_ps(dsum), acc[r][0]);
          acc[r][1] = _mm256_fnmadd_ps(w.offset[1], _mm256_loadu_ps(dsum + 8), acc[r][1]);
          continue;
        }
        for (int k = 0; k < 8; ++k) {
          const __m256i isum =
              dot4<T>(w.code[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * k)));
          const __m256 f = _mm256_mul_ps(_mm256_loadu_ps(dlane + 8 * k), w.scale_lane[k]);
          acc[r][k % 2] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), f, acc[r][k % 2]);
        }
        if constexpr (!kSignedWide<T>) {
          const float* dsum = a.dsum_row(r0 + r) + u * kQuantGroups;
          acc[r][0] = _mm256_fnmadd_ps(w.offset[0], _mm256_loadu_ps(dsum), acc[r][0]);
          acc[r][1] = _mm256_fnmadd_ps(w.offset[1], _mm256_loadu_ps(dsum + 8), acc[r][1]);
        }
      }
    }
    for (int r = 0; r < R; ++r) y[(r0 + r) * ldy + o] = hsum(_mm256_add_ps(acc[r][0], acc[r][1]));
  }
}

// Decode of Q4_K, Q5_K and Q6_K rows against activations quantized per unit (QuantActs::q256),
// as the VNNI kernel's unit_acts_rows_times_one: vector k of a unit holds 32 values of one
// scale (Q4_K, Q5_K: sub-block k; Q6_K: groups 2k and 2k + 1), so vpmaddubsw's pair sums times the
// scale in vpmaddwd add up in i32 over the unit (no f32 work per vector), scaled to f32 once.
// Bounds: a pair sums 2 products of a code <= 63 and |q| <= 127 (< 2^14, no saturation);
// vpmaddwd's lane, 2 pairs times |scale| <= 128 (< 2^22); 8 vectors, < 2^25 in i32. The lane
// sum of 8 is formed in f32 after the scale (each lane exact, < 2^24 for Q4_K; Q6_K's may
// round by one part in 2^24 of the unit's sum).
template <QuantType T>
HANPU_AVX2_INLINE void unit_times_acts(const uint8_t* b, const int8_t* q, float da,
                                       const int16_t* bsum, __m256* acc, __m128* acc_min) {
  __m256i isum = _mm256_setzero_si256();
  if constexpr (T == QuantType::kQ4_K || T == QuantType::kQ5_K) {
    const __m128i bytes = q4k_scales_mins_bytes(b + 4);  // scales 0-7, mins 0-7
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(bytes));
    __m256i code[8];
    if constexpr (T == QuantType::kQ4_K) {
      k4_codes(b + 16, nullptr, code);
    } else {
      k4_codes(b + 48, b + 16, code);
    }
    for (int j = 0; j < 8; ++j) {  // sub-block j: its scale in every word
      const __m256i sc =
          _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * j)));
      const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * j));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(code[j], act), sc));
    }
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(half_at(b) * da), *acc);
    const __m128i sub = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsum)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsum + 8)));
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    *acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_madd_epi16(mins, sub)),
                            _mm_set1_ps(half_at(b + 2) * da), *acc_min);
  } else {  // Q6_K: code - 32 times sc per group of 16
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
    // Words 0-7 (groups 0-7) and 8-15 in both lanes; vector k takes group 2k's scale in its
    // low lane and 2k + 1's in its high lane.
    const __m256i groups[2] = {_mm256_permute2x128_si256(scales16, scales16, 0x00),
                               _mm256_permute2x128_si256(scales16, scales16, 0x11)};
    __m256i code[8];
    q6k_codes(b, code);
    for (int k = 0; k < 8; ++k) {  // values 32k .. + 31: groups 2k and 2k + 1
      const int g = 2 * k % 8;     // group 2k's word within its 8
      const __m256i pick = _mm256_setr_epi8(
          2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1,
          2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g, 2 * g + 1, 2 * g + 2, 2 * g + 3, 2 * g + 2,
          2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2,
          2 * g + 3, 2 * g + 2, 2 * g + 3, 2 * g + 2, 2 * g + 3);
      const __m256i sc = _mm256_shuffle_epi8(groups[k / 4], pick);
      const __m256i act = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32 * k));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(code[k], act), sc));
    }
    // The shift of 32: minus 32 sum_g sc_g bsum_g.
    const __m256i off =
        _mm256_madd_epi16(scales16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsum)));
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(off, 5));
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(half_at(b + 208) * da), *acc);
  }
}

template <QuantType T>
HANPU_AVX2_TARGET void unit_acts_rows_times_one(const uint8_t* const* rows, int n,
                                                const QuantActs& a, int64_t r0, float* y) {
  const int8_t* q = a.q256_row(r0);
  const float* d = a.d256_row(r0);
  const int16_t* bsum = a.bsum16_row(r0);
  for (int o = 0; o < n; ++o) {
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int u = 0; u < a.units; ++u) {
      prefetch_ahead<T>(rows[o], u);
      unit_times_acts<T>(rows[o] + static_cast<size_t>(u) * kUnitBytes<T>, q + u * kQuantUnit, d[u],
                         bsum + u * kQuantGroups, &acc, &acc_min);
    }
    const __m128 m = _mm_add_ps(acc_min, _mm_movehl_ps(acc_min, acc_min));
    y[o] = hsum(acc) - _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
  }
}

template <QuantType T>
HANPU_AVX2_TARGET void gemm_of_type(const uint8_t* const* rows, int n, const QuantActs& a,
                                    int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if constexpr (T == QuantType::kQ4_K || T == QuantType::kQ5_K || T == QuantType::kQ6_K) {
    if (r1 - r0 == 1) return unit_acts_rows_times_one<T>(rows, n, a, r0, y + r0 * ldy);
  }
  for_row_tiles(r0, r1, [&](auto tile, int64_t r) {
    rows_times_acts<T, decltype(tile)::value>(rows, n, a, r, y, ldy);
  });
}

}  // namespace

bool quant_avx2_unit_acts(QuantType t, int64_t rows) {
  return rows == 1 && (t == QuantType::kQ4_K || t == QuantType::kQ5_K || t == QuantType::kQ6_K);
}

void quant_gemm_avx2(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  for_quant_type(
      t, [&](auto type) { gemm_of_type<decltype(type)::value>(rows, n, a, r0, r1, y, ldy); });
}

#else

bool quant_avx2_usable() { return false; }
bool quant_avx2_unit_acts(QuantType, int64_t) { return false; }
void quant_gemm_avx2(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  quant_gemm_scalar(t, rows, n, a, r0, r1, y, ldy);
}

#endif

}  // namespace hanpu::simd
