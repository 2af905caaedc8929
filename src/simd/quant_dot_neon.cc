// The ARM quantized kernel (see quant_dot.h), for cores with the dot-product extension
// (Armv8.2 DotProd, every Cortex-A55/A75 and later edge core): sdot multiplies 16 signed codes
// by 16 int8 activations into four i32 lanes of four products, so one vector holds one group
// of 16 values and its scale. Four groups' lane sums are folded into one vector by two
// pairwise adds and scaled in f32 together. Codes of at most 63 (Q4_*, Q5_*, Q6_K, Q2_K, Q3_K)
// are already valid int8; the types whose codes span 8 bits (Q8_0, IQ4_NL, IQ4_XS: code = q +
// 128, offset = 128 scale) multiply their signed q and drop the offset, as the AVX2 kernel
// does. The file builds for the baseline ISA; each function using sdot carries the target
// attribute, so nothing here runs before quant_neon_dot_usable() said yes.
#include <cstring>

#include "base/quant_block_fields.h"
#include "simd/quant_dot.h"

#if defined(__aarch64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#if defined(__clang__)
#define HANPU_DOT_TARGET __attribute__((target("dotprod")))
#else
// GCC's arm_neon.h declares sdot under Armv8.2-A; "+dotprod" alone keeps the base Armv8-A
// and refuses to inline it. Every core with the extension implements Armv8.2-A.
#define HANPU_DOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#define HANPU_DOT_INLINE HANPU_DOT_TARGET __attribute__((always_inline)) inline
#define HANPU_HAVE_NEON_DOT 1
#endif

namespace hanpu::simd {

#if HANPU_HAVE_NEON_DOT

bool quant_neon_dot_usable() {
  static const bool usable = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return usable;
}

namespace {

// A unit in registers: group g's 16 codes in code[g]; the scales and offsets of groups 4j ..
// 4j + 3 in scale[j] and offset[j].
struct Unit {
  int8x16_t code[16];
  float32x4_t scale[4];
  float32x4_t offset[4];
};

template <QuantType T>
constexpr bool kSignedWide =
    T == QuantType::kQ8_0 || T == QuantType::kIQ4_NL || T == QuantType::kIQ4_XS;

HANPU_DOT_INLINE void from_scalar(const QuantUnit& s, Unit* u, bool signed_wide) {
  for (int g = 0; g < 16; ++g) {
    uint8x16_t c = vld1q_u8(s.code + 16 * g);
    if (signed_wide) c = veorq_u8(c, vdupq_n_u8(0x80));
    u->code[g] = vreinterpretq_s8_u8(c);
  }
  for (int j = 0; j < 4; ++j) {
    u->scale[j] = vld1q_f32(s.scale + 4 * j);
    u->offset[j] = vld1q_f32(s.offset + 4 * j);
  }
}

// The 8 per-sub-block values (32 values each) in v03 (sub-blocks 0-3) and v47, each given to
// its two groups: out[j] = sub-blocks 2j, 2j, 2j + 1, 2j + 1.
HANPU_DOT_INLINE void two_groups_each(float32x4_t v03, float32x4_t v47, float32x4_t* out) {
  out[0] = vzip1q_f32(v03, v03);
  out[1] = vzip2q_f32(v03, v03);
  out[2] = vzip1q_f32(v47, v47);
  out[3] = vzip2q_f32(v47, v47);
}

HANPU_DOT_INLINE void unpack_q4_k(const uint8_t* b, Unit* u) {
  // Chunk c: 32 bytes whose low nibbles are values 64c .. + 31 (groups 4c, 4c + 1) and high
  // nibbles values 64c + 32 .. + 63 (groups 4c + 2, 4c + 3).
  const uint8x16_t mask = vdupq_n_u8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const uint8x16_t v0 = vld1q_u8(b + 16 + 32 * c), v1 = vld1q_u8(b + 32 + 32 * c);
    u->code[4 * c] = vreinterpretq_s8_u8(vandq_u8(v0, mask));
    u->code[4 * c + 1] = vreinterpretq_s8_u8(vandq_u8(v1, mask));
    u->code[4 * c + 2] = vreinterpretq_s8_u8(vshrq_n_u8(v0, 4));
    u->code[4 * c + 3] = vreinterpretq_s8_u8(vshrq_n_u8(v1, 4));
  }
  uint32_t w[4];  // scales 0-7 then mins 0-7, a byte each
  quant_fields::q4k_scales_mins_words(b + 4, w);
  const uint8x16_t bytes = vreinterpretq_u8_u32(vld1q_u32(w));
  const uint16x8_t sc = vmovl_u8(vget_low_u8(bytes)), mn = vmovl_high_u8(bytes);
  const float d = quant_fields::half_at(b), dmin = quant_fields::half_at(b + 2);
  two_groups_each(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(sc))), d),
                  vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(sc)), d), u->scale);
  two_groups_each(vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(mn))), dmin),
                  vmulq_n_f32(vcvtq_f32_u32(vmovl_high_u16(mn)), dmin), u->offset);
}

HANPU_DOT_INLINE void unpack_q6_k(const uint8_t* b, Unit* u) {
  // Half h: values 128h + 32k + l (k = 0..3, l = 0..31) take nibble k / 2 of ql byte 64h +
  // 32 (k % 2) + l and bit pair k of qh byte 32h + l; groups 8h + 2k (l < 16) and + 1.
  const uint8x16_t low4 = vdupq_n_u8(0x0F), pair = vdupq_n_u8(0x30);
  for (int h = 0; h < 2; ++h) {
    uint8x16_t ql[4], qh[2];
    for (int i = 0; i < 4; ++i) ql[i] = vld1q_u8(b + 64 * h + 16 * i);
    for (int i = 0; i < 2; ++i) qh[i] = vld1q_u8(b + 128 + 32 * h + 16 * i);
    for (int i = 0; i < 2; ++i) {  // l < 16, l >= 16
      const uint8x16_t lo[4] = {vandq_u8(ql[i], low4), vandq_u8(ql[2 + i], low4),
                                vshrq_n_u8(ql[i], 4), vshrq_n_u8(ql[2 + i], 4)};
      const uint8x16_t hi[4] = {vandq_u8(vshlq_n_u8(qh[i], 4), pair),
                                vandq_u8(vshlq_n_u8(qh[i], 2), pair), vandq_u8(qh[i], pair),
                                vandq_u8(vshrq_n_u8(qh[i], 2), pair)};
      for (int k = 0; k < 4; ++k)
        u->code[8 * h + 2 * k + i] = vreinterpretq_s8_u8(vorrq_u8(lo[k], hi[k]));
    }
  }
  const float d = quant_fields::half_at(b + 208);
  const int16x8_t sc[2] = {vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(b + 192))),
                           vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(b + 200)))};
  for (int j = 0; j < 4; ++j) {
    const int16x8_t s = sc[j / 2];
    const int32x4_t s4 = j % 2 == 0 ? vmovl_s16(vget_low_s16(s)) : vmovl_high_s16(s);
    u->scale[j] = vmulq_n_f32(vcvtq_f32_s32(s4), d);
    u->offset[j] = vmulq_n_f32(u->scale[j], 32.0f);
  }
}

// The f16 scales of 8 consecutive 32-value blocks (`bytes` apart), each given to its two
// groups.
HANPU_DOT_INLINE void block_scales(const uint8_t* b, int bytes, Unit* u) {
  float d[8];
  for (int k = 0; k < 8; ++k) d[k] = quant_fields::half_at(b + k * bytes);
  two_groups_each(vld1q_f32(d), vld1q_f32(d + 4), u->scale);
}

// Q8_0: the signed values as they are (kSignedWide: no offset).
HANPU_DOT_INLINE void unpack_q8_0(const uint8_t* b, Unit* u) {
  for (int k = 0; k < 8; ++k) {
    const auto* q = reinterpret_cast<const int8_t*>(b + 34 * k + 2);
    u->code[2 * k] = vld1q_s8(q);
    u->code[2 * k + 1] = vld1q_s8(q + 16);
  }
  block_scales(b, 34, u);
}

HANPU_DOT_INLINE void unpack_q4_0(const uint8_t* b, Unit* u) {
  const uint8x16_t mask = vdupq_n_u8(0x0F);
  for (int k = 0; k < 8; ++k) {
    const uint8x16_t v = vld1q_u8(b + 18 * k + 2);
    u->code[2 * k] = vreinterpretq_s8_u8(vandq_u8(v, mask));
    u->code[2 * k + 1] = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
  }
  block_scales(b, 18, u);
  for (int j = 0; j < 4; ++j) u->offset[j] = vmulq_n_f32(u->scale[j], 8.0f);
}

// Unit u of a row of type T into registers (kSignedWide types: signed values, no offsets).
template <QuantType T>
HANPU_DOT_INLINE void unpack(const uint8_t* row, int in, int u, QuantUnit* scratch, Unit* out) {
  constexpr bool kVector = T == QuantType::kQ4_K || T == QuantType::kQ6_K ||
                           T == QuantType::kQ8_0 || T == QuantType::kQ4_0;
  if constexpr (kVector) {
    if ((u + 1) * kQuantUnit <= in) {
      const uint8_t* at = row + static_cast<size_t>(u) * quant_unit_bytes(T);
      if constexpr (T == QuantType::kQ4_K) return unpack_q4_k(at, out);
      if constexpr (T == QuantType::kQ6_K) return unpack_q6_k(at, out);
      if constexpr (T == QuantType::kQ8_0) return unpack_q8_0(at, out);
      if constexpr (T == QuantType::kQ4_0) return unpack_q4_0(at, out);
    }
  }
  unpack_unit(T, row, in, u, scratch);
  from_scalar(*scratch, out, kSignedWide<T>);
}

// Weight rows [0, n) times activation rows [r0, r0 + R), each unit unpacked once for the R
// rows, whose sums stay in registers.
template <QuantType T, int R>
HANPU_DOT_TARGET void rows_times_acts(const uint8_t* const* rows, int n, const QuantActs& a,
                                      int64_t r0, float* y, int64_t ldy) {
  QuantUnit scratch;  // 64-byte aligned by its type
  for (int o = 0; o < n; ++o) {
    const uint8_t* row = rows[o];
    // Two sums a row, so a decode step's single row does not wait on one chain's latency.
    float32x4_t acc[R][2];
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (int u = 0; u < a.units; ++u) {
      prefetch_ahead<T>(row, u);
      Unit w;
      unpack<T>(row, a.in, u, &scratch, &w);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = a.q_row(r0 + r) + u * kQuantUnit;
        const float* dlane = a.dlane_row(r0 + r) + u * 64;
        const float* dsum = a.dsum_row(r0 + r) + u * kQuantGroups;
        for (int j = 0; j < 4; ++j) {
          int32x4_t s[4];
          for (int i = 0; i < 4; ++i)
            s[i] = vdotq_s32(vdupq_n_s32(0), w.code[4 * j + i], vld1q_s8(q + 64 * j + 16 * i));
          // [sum of group 4j, 4j + 1, 4j + 2, 4j + 3]: exact, |sum| <= 16 * 128 * 128.
          const int32x4_t sums = vpaddq_s32(vpaddq_s32(s[0], s[1]), vpaddq_s32(s[2], s[3]));
          // The activation scale of group g is dlane's lane 4g (every lane of a group holds it).
          const float32x4_t da = vld4q_f32(dlane + 16 * j).val[0];
          float32x4_t& sum = acc[r][j % 2];
          sum = vfmaq_f32(sum, vcvtq_f32_s32(sums), vmulq_f32(w.scale[j], da));
          if constexpr (!kSignedWide<T>) sum = vfmsq_f32(sum, w.offset[j], vld1q_f32(dsum + 4 * j));
        }
      }
    }
    for (int r = 0; r < R; ++r) y[(r0 + r) * ldy + o] = vaddvq_f32(vaddq_f32(acc[r][0], acc[r][1]));
  }
}

template <QuantType T>
HANPU_DOT_TARGET void gemm_of_type(const uint8_t* const* rows, int n, const QuantActs& a,
                                   int64_t r0, int64_t r1, float* y, int64_t ldy) {
  for_row_tiles(r0, r1, [&](auto tile, int64_t r) {
    rows_times_acts<T, decltype(tile)::value>(rows, n, a, r, y, ldy);
  });
}

}  // namespace

void quant_gemm_neon_dot(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a,
                         int64_t r0, int64_t r1, float* y, int64_t ldy) {
  for_quant_type(
      t, [&](auto type) { gemm_of_type<decltype(type)::value>(rows, n, a, r0, r1, y, ldy); });
}

#else

bool quant_neon_dot_usable() { return false; }
void quant_gemm_neon_dot(QuantType t, const uint8_t* const* rows, int n, const QuantActs& a,
                         int64_t r0, int64_t r1, float* y, int64_t ldy) {
  quant_gemm_scalar(t, rows, n, a, r0, r1, y, ldy);
}

#endif

}  // namespace hanpu::simd
