// The AVX512-VNNI quantized kernel (see quant_dot.h). The file builds for the baseline ISA;
// each function that uses AVX-512 carries the target attribute, so nothing here runs before
// quant_vnni_usable() said yes. Every type's units are unpacked in registers, a 32-value
// type's partial last unit too (its missing blocks scale 0).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <hwy/detect_targets.h>

#include "base/quant_block_fields.h"
#include "hanpu/dtype.h"
#include "simd/quant_dot.h"
#include "simd/quant_vnni_unpack.h"

namespace hanpu::simd {

#if HANPU_HAVE_VNNI

bool quant_vnni_usable() {
  static const bool usable = __builtin_cpu_supports("avx512vnni") &&
                             __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl");
  return usable;
}

namespace {

// Weight rows [0, n) times activation rows [r0, r0 + R): each unit unpacked once for the R
// rows, whose sums stay in registers (R is a template parameter so the accumulators are).
template <QuantType T, int R>
HANPU_VNNI_TARGET void rows_times_acts(const uint8_t* const* rows, int n, const QuantActs& a,
                                       int64_t r0, float* y, int64_t ldy) {
  // Independent sums per activation row and, for one or two rows (decode), per 64-value
  // quarter of a unit and for the offsets: one chain of dependent multiply-adds would wait
  // on each one's latency, which a decode step's single row cannot hide.
  constexpr int kChains = R <= 2 ? 5 : 1;
  alignas(64) QuantUnit scratch;
  for (int o = 0; o < n; ++o) {
    const uint8_t* row = rows[o];
    __m512 acc[R][kChains];
    for (int r = 0; r < R; ++r) {
      for (int c = 0; c < kChains; ++c) acc[r][c] = _mm512_setzero_ps();
    }
    for (int u = 0; u < a.units; ++u) {
      prefetch_ahead<T>(row, u);
      Unit w;
      unpack<T>(row, a.in, u, &scratch, &w);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = a.q_row(r0 + r) + u * kQuantUnit;
        const float* dlane = a.dlane_row(r0 + r) + u * 64;
        for (int k = 0; k < 4; ++k) {
          const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.code[k],
                                                   _mm512_loadu_si512(q + 64 * k));
          const __m512 f = _mm512_mul_ps(_mm512_loadu_ps(dlane + 16 * k), w.scale_lane[k]);
          __m512& sum = acc[r][kChains == 1 ? 0 : k];
          sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), f, sum);
        }
        __m512& off = acc[r][kChains == 1 ? 0 : 4];
        off =
            _mm512_fnmadd_ps(w.offset, _mm512_loadu_ps(a.dsum_row(r0 + r) + u * kQuantGroups), off);
      }
    }
    for (int r = 0; r < R; ++r) {
      __m512 total = acc[r][0];
      for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[r][c]);
      y[(r0 + r) * ldy + o] = _mm512_reduce_add_ps(total);
    }
  }
}

// Decode (one activation row): weight rows read as kStreams runs at once, rows o, o + n /
// kStreams, ..., each with its own software prefetch. One sequential run a core reached ~9.5
// GB/s of a core's DRAM reads, four runs ~12 (two cores: 17 against 22-25 GB/s); eight
// measured the same as four (docs/performance.md, "Design measurements").
constexpr int kStreams = 4;
template <QuantType T>
HANPU_VNNI_TARGET void rows_times_one(const uint8_t* const* rows, int n, const QuantActs& a,
                                      int64_t r0, float* y) {
  alignas(64) QuantUnit scratch;
  const int per = n / kStreams;
  const int8_t* q = a.q_row(r0);
  const float* dlane = a.dlane_row(r0);
  const float* dsum = a.dsum_row(r0);
  for (int o = 0; o < per; ++o) {
    __m512 acc[kStreams];
    for (int s = 0; s < kStreams; ++s) acc[s] = _mm512_setzero_ps();
    for (int u = 0; u < a.units; ++u) {
#pragma GCC unroll 4
      for (int s = 0; s < kStreams; ++s) {
        const uint8_t* row = rows[o + s * per];
        prefetch_ahead<T>(row, u);
        Unit w;
        unpack<T>(row, a.in, u, &scratch, &w);
        for (int k = 0; k < 4; ++k) {
          const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.code[k],
                                                   _mm512_loadu_si512(q + u * kQuantUnit + 64 * k));
          const __m512 f = _mm512_mul_ps(_mm512_loadu_ps(dlane + u * 64 + 16 * k), w.scale_lane[k]);
          acc[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), f, acc[s]);
        }
        acc[s] = _mm512_fnmadd_ps(w.offset, _mm512_loadu_ps(dsum + u * kQuantGroups), acc[s]);
      }
    }
    for (int s = 0; s < kStreams; ++s) y[o + s * per] = _mm512_reduce_add_ps(acc[s]);
  }
}

// A unit holding two rows of 128 values times their activations twice over (q, dlane, dsum's
// lanes; ds: dsum as a vector) into y[0] and y[1].
HANPU_VNNI_INLINE void pair_times_acts(const Unit& w, const int8_t* q, const float* dlane,
                                       __m512 ds, float* y) {
  __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int k = 0; k < 4; ++k) {
    const __m512i isum =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.code[k], _mm512_load_si512(q + 64 * k));
    const __m512 f = _mm512_mul_ps(_mm512_load_ps(dlane + 16 * k), w.scale_lane[k]);
    acc[k / 2] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), f, acc[k / 2]);
  }
  const __m512 off = _mm512_mul_ps(w.offset, ds);  // lanes 0-7 the first row's groups
  y[0] = _mm512_reduce_add_ps(acc[0]) - _mm512_mask_reduce_add_ps(0x00FF, off);
  y[1] = _mm512_reduce_add_ps(acc[1]) - _mm512_mask_reduce_add_ps(0xFF00, off);
}

// Decode of rows of 128 values in a 32-value block type (Kimi Linear's low-rank gates and
// MLA's key halves): a unit would be half padding, so two adjacent rows, 8 blocks in a row in
// memory, are read as one unit against the activations twice over, vectors 0-1 summing into
// the first row and 2-3 into the second. Returns false (nothing done) unless every row pair
// is adjacent.
template <QuantType T>
HANPU_VNNI_TARGET bool row_pairs_times_one(const uint8_t* const* rows, int n, const QuantActs& a,
                                           int64_t r0, float* y) {
  constexpr size_t kRowBytes = quant_unit_bytes(T) / 2;
  for (int o = 0; o + 1 < n; o += 2) {
    if (rows[o + 1] != rows[o] + kRowBytes) return false;
  }
  // The unit's activations: a row's 128 values, their lane scales and group sums, twice.
  alignas(64) int8_t q[kQuantUnit];
  alignas(64) float dlane[64], dsum[kQuantGroups];
  for (int half = 0; half < 2; ++half) {
    std::memcpy(q + 128 * half, a.q_row(r0), 128);
    std::memcpy(dlane + 32 * half, a.dlane_row(r0), sizeof(float) * 32);
    std::memcpy(dsum + 8 * half, a.dsum_row(r0), sizeof(float) * 8);
  }
  const __m512 ds = _mm512_load_ps(dsum);
  alignas(64) QuantUnit scratch;
  const int pairs = n / 2, per = pairs / kStreams;
  for (int j = 0; j < per; ++j) {
#pragma GCC unroll 4
    for (int s = 0; s < kStreams; ++s) {
      const int p = s * per + j;
      prefetch_ahead<T>(rows[2 * p], 0);
      Unit w;
      unpack<T>(rows[2 * p], kQuantUnit, 0, &scratch, &w);
      pair_times_acts(w, q, dlane, ds, y + 2 * p);
    }
  }
  for (int p = per * kStreams; p < pairs; ++p) {
    Unit w;
    unpack<T>(rows[2 * p], kQuantUnit, 0, &scratch, &w);
    pair_times_acts(w, q, dlane, ds, y + 2 * p);
  }
  if (n % 2 != 0) rows_times_acts<T, 1>(rows + n - 1, 1, a, r0, y + n - 1, 1);
  return true;
}

// Decode of Q4_K, Q5_K and Q6_K rows against activations quantized per unit (QuantActs::q256): a
// unit's products stay in integers, the sub-block scales applied exactly by vpdpwssd, and are
// scaled to f32 once (d times the unit's activation scale). The per-32 kernel (rows_times_one)
// spends four f32 multiplies, conversions and multiply-adds of 16 lanes a unit where this
// spends one of each.
// Q4_K and Q6_K, a decode step's bulk, take the fewest instructions a unit: Q4_K's codes come
// from two 64-byte loads against activations in the nibbles' order (QuantActs::q256_nibbles),
// two vectors of vpdpbusd sums are packed to 16-bit words (vpackssdw) so one vpdpwssd applies
// the scales of four sub-blocks, and Q6_K's offset of 32 costs no instruction a row: its
// vpdpbusd lanes start at -32 times their activations' sum (QuantActs::shift_lane, made once
// a token); Q6_K's two high bits join the low four by one vpternlogd, and the decode's four
// row streams' d are converted by one instruction. Q5_K keeps the older form (a 32-byte
// broadcast and a shift per 64 codes, a vpdpwssd per vector). A decode step streams its
// weights from DRAM, but a kernel that only just keeps up with the memory leaves it idle
// whenever the memory is fast (docs/performance.md).
// Bounds: a vpdpbusd lane sums 4 products of a code (Q4_K <= 15, Q5_K <= 31, Q6_K <= 63) and
// |q| <= 127: <= 32004, so it packs to a word exactly and is its own low 16 bits for vpdpwssd.
// Q4_K and Q5_K: times a scale <= 63, over a unit's vectors, < 2^24 in an i32 lane: exact, and
// exact in f32. Q6_K's lanes sum 4 products (code - 32) q, |code - 32| <= 32: <= 16256, a word
// exactly; times |sc| <= 128, two packed words a lane and two vpdpwssd: < 2^24, exact in i32
// and in f32.
struct UnitActsConsts {
  __m512i q5k_pick[4];
  __m512i q4k_pick[2];  // Q4_K's scale words for the packed pairs (0, 1) and (2, 3)
  __m128i q4k_mins;     // Q4_K's 8 mins as words
  // q4k_four_units: q4k_scales_mins_bytes's shuffles and masks a lane each, the four rows'
  // f16 pairs, dmin's lanes, the mins as words, and lane 0's dwords.
  __m512i q4k_x4_low_src, q4k_x4_top_src, q4k_x4_low_keep, q4k_x4_low_high, q4k_x4_top_keep;
  __m512i q4k_x4_halves, q4k_x4_dmin, q4k_x4_mins, q4k_x4_lane0;
  __m512i q6k_pick[2];  // Q6_K's scale words for the packed pairs
};

HANPU_VNNI_INLINE UnitActsConsts unit_acts_consts() {
  UnitActsConsts c;
  alignas(64) int8_t bytes[64];
  alignas(64) int16_t words[32];
  for (int k = 0; k < 4; ++k) {
    // Q5_K: vector k's dword lanes 0-7 take sub-block 2k's scale, 8-15 sub-block 2k + 1's (its
    // i16: bytes 2j, 2j + 1 of each 128-bit lane's copy of the 8 scales; zeros above).
    for (int lane = 0; lane < 16; ++lane) {
      const int j = 2 * k + (lane >= 8 ? 1 : 0);
      bytes[4 * lane] = static_cast<int8_t>(2 * j);
      bytes[4 * lane + 1] = static_cast<int8_t>(2 * j + 1);
      bytes[4 * lane + 2] = bytes[4 * lane + 3] = static_cast<int8_t>(0x80);
    }
    c.q5k_pick[k] = _mm512_load_si512(bytes);
  }
  // vpackssdw of vectors a, b: each 128-bit lane L holds a's dwords 4L .. 4L + 3 as words 0-3
  // and b's as words 4-7.
  for (int pair = 0; pair < 2; ++pair) {
    for (int lane = 0; lane < 4; ++lane) {
      for (int w = 0; w < 8; ++w) {
        // Q4_K: vector k's dword lanes 0-7 cover sub-block 4 (k / 2) + k % 2, lanes 8-15 the
        // same + 2; the scale byte widened to a word by a zero byte (0x80 picks zero).
        const int sub = 4 * pair + (lane >= 2 ? 2 : 0) + (w >= 4 ? 1 : 0);
        bytes[16 * lane + 2 * w] = static_cast<int8_t>(sub);
        bytes[16 * lane + 2 * w + 1] = static_cast<int8_t>(0x80);
        // Q6_K: vector k's dword lane l covers group 4k + l / 4.
        words[8 * lane + w] = static_cast<int16_t>(8 * pair + (w >= 4 ? 4 : 0) + lane);
      }
    }
    c.q4k_pick[pair] = _mm512_load_si512(bytes);
    c.q6k_pick[pair] = _mm512_load_si512(words);
  }
  for (int w = 0; w < 8; ++w) {  // the mins: bytes 8-15 of q4k_scales_mins_bytes
    bytes[2 * w] = static_cast<int8_t>(8 + w);
    bytes[2 * w + 1] = static_cast<int8_t>(0x80);
  }
  c.q4k_mins = _mm_load_si128(reinterpret_cast<const __m128i*>(bytes));
  c.q4k_x4_mins = _mm512_broadcast_i32x4(c.q4k_mins);
  // q4k_scales_mins_bytes's tables a lane each, its picks 4 further on (the lane holds the
  // unit's start, the scales from byte 4).
  const Q4kFieldTables& f = kQ4kFields;
  const __m512i four = _mm512_set1_epi8(4);
  c.q4k_x4_low_src = _mm512_add_epi8(_mm512_broadcast_i32x4(q4k_field_table(f.low_src)), four);
  c.q4k_x4_top_src = _mm512_add_epi8(_mm512_broadcast_i32x4(q4k_field_table(f.top_src)), four);
  c.q4k_x4_low_keep = _mm512_broadcast_i32x4(q4k_field_table(f.low_keep));
  c.q4k_x4_low_high = _mm512_broadcast_i32x4(q4k_field_table(f.low_high));
  c.q4k_x4_top_keep = _mm512_broadcast_i32x4(q4k_field_table(f.top_keep));
  c.q4k_x4_halves = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  c.q4k_x4_dmin = _mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7);
  c.q4k_x4_lane0 = _mm512_setr_epi32(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  return c;
}

// One unit's activations, as the type's kernel reads them: its 256 values (q256, or
// q256_nibbles for Q4_K) as 4 vectors, the unit's scale, and the group sums the type's
// offsets need (Q4_K bsum32, Q5_K bsum16, Q6_K shift_lane).
struct UnitActs {
  __m512i q[4];
  float d;
  const void* sums;
};

template <QuantType T>
HANPU_VNNI_INLINE UnitActs unit_acts(const QuantActs& a, int64_t r, int u) {
  UnitActs x;
  const int8_t* q =
      (T == QuantType::kQ4_K ? a.q256_nibbles.data() : a.q256_row(r)) + u * kQuantUnit;
  for (int k = 0; k < 4; ++k) x.q[k] = _mm512_loadu_si512(q + 64 * k);
  x.d = a.d256_row(r)[u];
  if constexpr (T == QuantType::kQ4_K) x.sums = a.bsum32.data() + u * 8;
  if constexpr (T == QuantType::kQ5_K) x.sums = a.bsum16_row(r) + u * kQuantGroups;
  if constexpr (T == QuantType::kQ6_K) x.sums = a.shift_lane.data() + u * 64;
  return x;
}

// Q4_K's unit at b times the unit's activations, in integers: its codes by two 64-byte loads
// against q256_nibbles, each vector's vpdpbusd sums packed to words in pairs, and the
// sub-block scales applied by vpdpwssd from `scales` (the unit's scale and min bytes, as
// q4k_scales_mins_bytes gives them, in every 128-bit lane).
HANPU_VNNI_INLINE __m512i q4k_unit_isum(const uint8_t* b, const UnitActs& x, __m512i scales,
                                        const UnitActsConsts& c) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), zero = _mm512_setzero_si512();
  const __m512i lo = _mm512_loadu_si512(b + 16), hi = _mm512_loadu_si512(b + 80);
  const __m512i p0 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(lo, low4), x.q[0]);
  const __m512i p1 =
      _mm512_dpbusd_epi32(zero, _mm512_and_si512(_mm512_srli_epi16(lo, 4), low4), x.q[1]);
  const __m512i p2 = _mm512_dpbusd_epi32(zero, _mm512_and_si512(hi, low4), x.q[2]);
  const __m512i p3 =
      _mm512_dpbusd_epi32(zero, _mm512_and_si512(_mm512_srli_epi16(hi, 4), low4), x.q[3]);
  const __m512i isum = _mm512_dpwssd_epi32(zero, _mm512_packs_epi32(p0, p1),
                                           _mm512_shuffle_epi8(scales, c.q4k_pick[0]));
  return _mm512_dpwssd_epi32(isum, _mm512_packs_epi32(p2, p3),
                             _mm512_shuffle_epi8(scales, c.q4k_pick[1]));
}

// Q6_K's unit at b times the unit's activations, in integers: sum of (code - 32) q times sc
// per group of 16.
HANPU_VNNI_INLINE __m512i q6k_unit_isum(const uint8_t* b, const UnitActs& x,
                                        const UnitActsConsts& c) {
  const __m512i zero = _mm512_setzero_si512();
  // Codes: the low 4 bits from ql, the high 2 at bits 4-5 merged in by vpternlogd (bits 0-3
  // from the first operand, the rest from the second). Half h's 32 qh bytes, broadcast,
  // give pairs 0 and 2 (bits 0-1, 4-5) masked by 0x33 in the low 256 bits and pairs 1 and 3
  // shifted down 2 in the high, so pairs 0 and 1 sit a shift of 4 below where the codes of
  // values 0-63 want them and pairs 2 and 3 where those of 64-127 do.
  const __m512i low4 = _mm512_set1_epi8(0x0F), pairs = _mm512_set1_epi8(0x33);
  const __m512i down2 = _mm512_inserti64x4(zero, _mm256_set1_epi16(2), 1);
  constexpr int kLowFromA = 0xE4;  // (A & C) | (B & ~C), C the 0x0F mask
  __m512i prod[4];
  for (int h = 0; h < 2; ++h) {
    const __m512i ql = _mm512_loadu_si512(b + 64 * h);
    const __m512i qh = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * h)));
    const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(qh, down2), pairs);
    const __m512i c0 = _mm512_ternarylogic_epi32(ql, _mm512_slli_epi16(high, 4), low4, kLowFromA);
    const __m512i c1 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), high, low4, kLowFromA);
    // Each lane starts at -32 times its activations' sum (QuantActs::shift_lane): it sums
    // (code - 32) q, Q6_K's offset paid on the activations' side, once a token.
    const int32_t* shift = static_cast<const int32_t*>(x.sums) + 32 * h;
    prod[2 * h] = _mm512_dpbusd_epi32(_mm512_loadu_si512(shift), c0, x.q[2 * h]);
    prod[2 * h + 1] = _mm512_dpbusd_epi32(_mm512_loadu_si512(shift + 16), c1, x.q[2 * h + 1]);
  }
  const __m512i scales = _mm512_castsi256_si512(
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192))));
  const __m512i isum = _mm512_dpwssd_epi32(zero, _mm512_packs_epi32(prod[0], prod[1]),
                                           _mm512_permutexvar_epi16(c.q6k_pick[0], scales));
  return _mm512_dpwssd_epi32(isum, _mm512_packs_epi32(prod[2], prod[3]),
                             _mm512_permutexvar_epi16(c.q6k_pick[1], scales));
}

// One unit of a row of type T (at b) times the unit's activations: d da sum(code q) into acc
// (16 lanes), and for Q4_K and Q5_K the mins' term dmin da sum(m bsum) into acc_min (4 lanes).
template <QuantType T>
HANPU_VNNI_INLINE void unit_times_acts(const uint8_t* b, const UnitActs& x, const UnitActsConsts& c,
                                       __m512* acc, __m128* acc_min) {
  const __m512i zero = _mm512_setzero_si512();
  if constexpr (T == QuantType::kQ4_K) {
    const __m128i bytes = q4k_scales_mins_bytes(b + 4);  // scales 0-7, mins 0-7
    const __m512i isum = q4k_unit_isum(b, x, _mm512_broadcast_i32x4(bytes), c);
    int32_t d_dmin;  // the two f16 at b, converted together
    std::memcpy(&d_dmin, b, sizeof(d_dmin));
    const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(d_dmin)), _mm_set1_ps(x.d));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_broadcastss_ps(dd), *acc);
    const __m128i mins = _mm_shuffle_epi8(bytes, c.q4k_mins);
    const __m128i bsum = _mm_loadu_si128(static_cast<const __m128i*>(x.sums));
    *acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_madd_epi16(mins, bsum)), _mm_permute_ps(dd, 0x55),
                            *acc_min);
  } else if constexpr (T == QuantType::kQ5_K) {
    __m512i isum = zero;
    const __m128i bytes = q4k_scales_mins_bytes(b + 4);  // scales 0-7, mins 0-7
    const __m512i scales = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(bytes));
    for (int k = 0; k < 4; ++k) {
      const __m512i prod = _mm512_dpbusd_epi32(zero, k4_codes(b + 48, b + 16, k), x.q[k]);
      isum = _mm512_dpwssd_epi32(isum, prod, _mm512_shuffle_epi8(scales, c.q5k_pick[k]));
    }
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(half_at(b) * x.d), *acc);
    // Mins against the sums of q per sub-block of 32 (two groups of 16 each).
    const int16_t* bsum = static_cast<const int16_t*>(x.sums);
    const __m128i sub = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsum)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsum + 8)));
    const __m128i mins = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    *acc_min = _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_madd_epi16(mins, sub)),
                            _mm_set1_ps(half_at(b + 2) * x.d), *acc_min);
  } else {  // Q6_K
    const __m512i isum = q6k_unit_isum(b, x, c);
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(half_at(b + 208) * x.d), *acc);
  }
}

// Q4_K's units of four rows at once (the decode's four streams): their headers (d, dmin and
// the 12 scale bytes, 16 bytes from each unit's start) sit in one vector a row a 128-bit lane,
// so the six-bit fields, the f16 pairs and the mins' term are decoded once for the four,
// where one row's take as many instructions a row in 128-bit vectors; the codes as
// unit_times_acts<kQ4_K>. The header of the next unit is decoded before this unit's codes
// are multiplied (Q4kHeads): decoding it is a long chain of dependent shuffles, which a unit's
// codes then waited on.
struct Q4kHeads {
  __m512i bytes;  // lane s: row s's scales 0-7 then mins 0-7
  __m512 dd;      // d0 dmin0 d1 dmin1 ... (f32, not yet times the activations' scale)
};

HANPU_VNNI_INLINE Q4kHeads q4k_four_heads(const uint8_t* const* b, const UnitActsConsts& c) {
  __m512i head = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0])));
  head = _mm512_inserti32x4(head, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1])), 1);
  head = _mm512_inserti32x4(head, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[2])), 2);
  head = _mm512_inserti32x4(head, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[3])), 3);
  // q4k_scales_mins_bytes on each lane, whose scale bytes start at byte 4 here.
  const __m512i low_src = _mm512_shuffle_epi8(head, c.q4k_x4_low_src);
  const __m512i top_src = _mm512_shuffle_epi8(head, c.q4k_x4_top_src);
  const __m512i low =
      _mm512_or_si512(_mm512_and_si512(low_src, c.q4k_x4_low_keep),
                      _mm512_and_si512(_mm512_srli_epi16(low_src, 4), c.q4k_x4_low_high));
  const __m512i top = _mm512_and_si512(_mm512_srli_epi16(top_src, 2), c.q4k_x4_top_keep);
  Q4kHeads h;
  h.bytes = _mm512_or_si512(low, top);
  // d and dmin of the four rows (dword 0 of each lane) as f32 pairs.
  h.dd = _mm512_castps256_ps512(
      _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutexvar_epi32(c.q4k_x4_halves, head))));
  return h;
}

// acc[s]: row s's 16 lanes; acc_min: row s's mins term in lanes 4s .. 4s + 3.
HANPU_VNNI_INLINE void q4k_four_units(const uint8_t* const* b, const Q4kHeads& h, const UnitActs& x,
                                      const UnitActsConsts& c, __m512* acc, __m512* acc_min) {
  const __m512 dd = _mm512_mul_ps(h.dd, _mm512_set1_ps(x.d));
  const __m512i bsum = _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(x.sums)));
  *acc_min = _mm512_fmadd_ps(
      _mm512_cvtepi32_ps(_mm512_madd_epi16(_mm512_shuffle_epi8(h.bytes, c.q4k_x4_mins), bsum)),
      _mm512_permutexvar_ps(c.q4k_x4_dmin, dd), *acc_min);
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) {
    // Row s's 16 bytes in every lane, for the in-lane picks of its scale words.
    const __m512i scales = _mm512_permutexvar_epi32(
        _mm512_add_epi32(c.q4k_x4_lane0, _mm512_set1_epi32(4 * s)), h.bytes);
    const __m512i isum = q4k_unit_isum(b[s], x, scales, c);
    acc[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum),
                             _mm512_permutexvar_ps(_mm512_set1_epi32(2 * s), dd), acc[s]);
  }
}

HANPU_VNNI_INLINE float finish(__m512 acc, __m128 acc_min) {
  const __m128 m = _mm_add_ps(acc_min, _mm_movehl_ps(acc_min, acc_min));
  return _mm512_reduce_add_ps(acc) - _mm_cvtss_f32(_mm_add_ss(m, _mm_movehdup_ps(m)));
}

template <QuantType T>
constexpr bool kUnitActsType =
    T == QuantType::kQ4_K || T == QuantType::kQ5_K || T == QuantType::kQ6_K;

// Weight rows [0, n) times activation row r0 with per-unit activations: kStreams rows at once
// (rows o, o + n / kStreams, ... as rows_times_one), then the rest one at a time.
template <QuantType T>
HANPU_VNNI_TARGET void unit_acts_rows_times_one(const uint8_t* const* rows, int n,
                                                const QuantActs& a, int64_t r0, float* y) {
  constexpr int kBytes = quant_unit_bytes(T);
  const UnitActsConsts c = unit_acts_consts();
  const int per = n / kStreams;
  for (int o = 0; o < per; ++o) {
    __m512 acc[kStreams];
    __m128 acc_min[kStreams];
    for (int s = 0; s < kStreams; ++s) {
      acc[s] = _mm512_setzero_ps();
      acc_min[s] = _mm_setzero_ps();
    }
    __m512 acc_min4 = _mm512_setzero_ps();  // Q4_K: the four rows' mins terms, 4 lanes each
    [[maybe_unused]] Q4kHeads next_heads;
    if constexpr (T == QuantType::kQ4_K) {
      const uint8_t* first[kStreams];
      for (int s = 0; s < kStreams; ++s) first[s] = rows[o + s * per];
      next_heads = q4k_four_heads(first, c);
    }
    for (int u = 0; u < a.units; ++u) {
      const UnitActs x = unit_acts<T>(a, r0, u);
      const uint8_t* unit[kStreams];
      for (int s = 0; s < kStreams; ++s) {
        unit[s] = rows[o + s * per] + static_cast<size_t>(u) * kBytes;
        prefetch_ahead<T>(rows[o + s * per], u);
      }
      if constexpr (T == QuantType::kQ4_K) {
        static_assert(kStreams == 4);
        // The next unit's headers (this row group's last unit: its own again, already read).
        const Q4kHeads heads = next_heads;
        const size_t ahead = static_cast<size_t>(std::min(u + 1, a.units - 1)) * kBytes;
        const uint8_t* next[kStreams];
        for (int s = 0; s < kStreams; ++s) next[s] = rows[o + s * per] + ahead;
        next_heads = q4k_four_heads(next, c);
        q4k_four_units(unit, heads, x, c, acc, &acc_min4);
      } else if constexpr (T == QuantType::kQ6_K) {
        // The four rows' d converted in one instruction, times the unit's activation scale,
        // and broadcast to each row from memory (a load, not a shuffle).
        uint64_t halves = 0;
        for (int s = 0; s < kStreams; ++s) {
          uint16_t h;
          std::memcpy(&h, unit[s] + 208, sizeof(h));
          halves |= uint64_t{h} << (16 * s);
        }
        alignas(16) float d[kStreams];
        _mm_store_ps(d, _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(halves))),
                                   _mm_set1_ps(x.d)));
#pragma GCC unroll 4
        for (int s = 0; s < kStreams; ++s) {
          const __m512i isum = q6k_unit_isum(unit[s], x, c);
          acc[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(d[s]), acc[s]);
        }
      } else {
#pragma GCC unroll 4
        for (int s = 0; s < kStreams; ++s) unit_times_acts<T>(unit[s], x, c, &acc[s], &acc_min[s]);
      }
    }
    if constexpr (T == QuantType::kQ4_K) {
      for (int s = 0; s < kStreams; ++s) {
        acc_min[s] = _mm512_extractf32x4_ps(
            _mm512_permutexvar_ps(_mm512_add_epi32(c.q4k_x4_lane0, _mm512_set1_epi32(4 * s)),
                                  acc_min4),
            0);
      }
    }
    for (int s = 0; s < kStreams; ++s) y[o + s * per] = finish(acc[s], acc_min[s]);
  }
  for (int o = per * kStreams; o < n; ++o) {
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int u = 0; u < a.units; ++u) {
      unit_times_acts<T>(rows[o] + static_cast<size_t>(u) * kBytes, unit_acts<T>(a, r0, u), c, &acc,
                         &acc_min);
    }
    y[o] = finish(acc, acc_min);
  }
}

template <QuantType T>
HANPU_VNNI_TARGET void gemm_of_type(const uint8_t* const* rows, int n, const QuantActs& a,
                                    int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if constexpr (kUnitActsType<T>) {
    if (a.rows == 1) return unit_acts_rows_times_one<T>(rows, n, a, r0, y + r0 * ldy);
  }
  if constexpr (kBlocks32<T>) {
    if (a.rows == 1 && a.in == kQuantUnit / 2 &&
        row_pairs_times_one<T>(rows, n, a, r0, y + r0 * ldy)) {
      return;
    }
  }
  if (r1 - r0 == 1 && n >= 4 * kStreams) {
    const int done = n / kStreams * kStreams;
    rows_times_one<T>(rows, n, a, r0, y + r0 * ldy);
    if (done < n) rows_times_acts<T, 1>(rows + done, n - done, a, r0, y + r0 * ldy + done, ldy);
    return;
  }
  // Eight activation rows a pass where there are (a batched decode step of several
  // sequences): each unit is read and unpacked once for all eight, whose sums fit the 32
  // vector registers beside the unit; the rest in tiles of up to four.
  int64_t r = r0;
  for (; r + 8 <= r1; r += 8) rows_times_acts<T, 8>(rows, n, a, r, y, ldy);
  for_row_tiles(r, r1, [&](auto tile, int64_t rr) {
    rows_times_acts<T, decltype(tile)::value>(rows, n, a, rr, y, ldy);
  });
}

// The group values of unit u of a row of type T as f32 vectors of 16, v[k][j] holding values
// 64 k + 16 j .. + 15 (lane l of scale_lane[k] is the scale of values 64 k + 4 l .. + 3, so
// group 4 k + j takes lane 4 j). The scales and offsets go through memory: a broadcast from
// memory is a load, where a lane permute competes with the conversions (and a prefill's
// packer's shuffles) for one port.
template <QuantType T>
HANPU_VNNI_INLINE void unit_values(const uint8_t* row, int in, int u, QuantUnit* scratch,
                                   __m512 v[4][4]) {
  Unit w;
  unpack<T>(row, in, u, scratch, &w);
  alignas(64) float offsets[16], scales[4][16];
  _mm512_store_ps(offsets, w.offset);
  for (int k = 0; k < 4; ++k) _mm512_store_ps(scales[k], w.scale_lane[k]);
  for (int k = 0; k < 4; ++k) {
    alignas(64) uint8_t codes[64];
    _mm512_store_si512(codes, w.code[k]);
    for (int j = 0; j < 4; ++j) {
      const __m512 code = _mm512_cvtepi32_ps(
          _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(codes + 16 * j))));
      v[k][j] = _mm512_fmsub_ps(_mm512_set1_ps(scales[k][4 * j]), code,
                                _mm512_set1_ps(offsets[4 * k + j]));
    }
  }
}

template <QuantType T>
HANPU_VNNI_TARGET void dequantize_of_type(const uint8_t* row, int in, float* out) {
  alignas(64) QuantUnit scratch;
  alignas(64) float tail[kQuantUnit];
  for (int u = 0; u < quant_units(in); ++u) {
    const bool whole = (u + 1) * kQuantUnit <= in;
    float* dst = whole ? out + u * kQuantUnit : tail;
    __m512 v[4][4];
    unit_values<T>(row, in, u, &scratch, v);
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) _mm512_storeu_ps(dst + 64 * k + 16 * j, v[k][j]);
    if (!whole) std::memcpy(out + u * kQuantUnit, tail, sizeof(float) * (in - u * kQuantUnit));
  }
}

// As dequantize_of_type, rounded to bf16 in registers (vcvtne2ps2bf16: to nearest even, as
// store_f32 rounds): a prefill on the matrix unit decodes every weight this way, and a second
// pass converting an f32 row cost more than the decoding.
template <QuantType T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512bf16,f16c,fma"))) void
dequantize_bf16_of_type(const uint8_t* row, int in, uint16_t* out) {
  alignas(64) QuantUnit scratch;
  alignas(64) uint16_t tail[kQuantUnit];
  for (int u = 0; u < quant_units(in); ++u) {
    const bool whole = (u + 1) * kQuantUnit <= in;
    uint16_t* dst = whole ? out + u * kQuantUnit : tail;
    __m512 v[4][4];
    unit_values<T>(row, in, u, &scratch, v);
    for (int k = 0; k < 4; ++k) {
      for (int p = 0; p < 2; ++p) {  // the low 16 bf16 from the second operand
        const __m512bh b = _mm512_cvtne2ps_pbh(v[k][2 * p + 1], v[k][2 * p]);
        _mm512_storeu_si512(dst + 64 * k + 32 * p, reinterpret_cast<const __m512i&>(b));
      }
    }
    if (!whole) std::memcpy(out + u * kQuantUnit, tail, sizeof(uint16_t) * (in - u * kQuantUnit));
  }
}

}  // namespace

bool quant_vnni_bf16_usable() {
  static const bool usable = quant_vnni_usable() && __builtin_cpu_supports("avx512bf16");
  return usable;
}

void dequantize_row_bf16_vnni(QuantType t, const uint8_t* row, int in, uint16_t* out) {
  for_quant_type(t,
                 [&](auto type) { dequantize_bf16_of_type<decltype(type)::value>(row, in, out); });
}

bool quant_vnni_unit_acts(QuantType t, int /*n*/, int64_t rows) {
  return rows == 1 && (t == QuantType::kQ4_K || t == QuantType::kQ5_K || t == QuantType::kQ6_K);
}

void dequantize_row_vnni(QuantType t, const uint8_t* row, int in, float* out) {
  for_quant_type(t, [&](auto type) { dequantize_of_type<decltype(type)::value>(row, in, out); });
}

void quant_gemm_vnni(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  for_quant_type(
      t, [&](auto type) { gemm_of_type<decltype(type)::value>(rows, n, a, r0, r1, y, ldy); });
}

#else

bool quant_vnni_usable() { return false; }
bool quant_vnni_bf16_usable() { return false; }
void dequantize_row_bf16_vnni(QuantType, const uint8_t*, int, uint16_t*) { std::abort(); }
bool quant_vnni_unit_acts(QuantType, int, int64_t) { return false; }
void dequantize_row_vnni(QuantType t, const uint8_t* row, int in, float* out) {
  dequantize_row(t, row, in, out);
}
void quant_gemm_vnni(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a, int64_t r0,
                     int64_t r1, float* y, int64_t ldy) {
  quant_gemm_scalar(t, rows, n, a, r0, r1, y, ldy);
}

#endif

}  // namespace hanpu::simd
