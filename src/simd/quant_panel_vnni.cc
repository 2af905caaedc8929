// The int8 panel GEMM on AVX512-VNNI (see quant_panel.h). Hand-written for the same reason as
// quant_dot_vnni.cc: Highway 1.0.3 has no 8-bit dot-product operation.
//
// Panel layout, per 256-value unit, for groups of G values (32: kMins, 16: kCentred):
//   codes  [256 / G groups g][G / 4 steps s][2 vectors v][16 lanes][4 bytes]: lane l of vector
//          v holds column 16 v + l's codes of values G g + 4 s .. + 3 (one vpdpbusd operand);
//   scale  [256 / G][32 columns] f32;
//   kMins: offset [8][32] f32; kCentred: the weights' 128 sum_g scale_g sum c [32] f32.
// A tile of up to 4 activation rows times the panel's 32 columns keeps 8 integer sums (one
// group's), 8 f32 sums (one unit's, before the activations' scale) and 8 totals in registers:
// 24 of the 32, with the two weight vectors and the broadcast activations.
#include "simd/quant_panel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "simd/quant_vnni_unpack.h"
#if HANPU_HAVE_VNNI
#include "simd/transpose_words_x86.h"
#endif

namespace hanpu::simd {

namespace {

enum class Layout { kNone, kMins, kCentred };

// Q2_K and Q3_K (scaled per 16, their activations per 32 in the decode kernels) are left to
// the bf16 kernels: a per-32 activation scale under Q3_K's centred offsets would make its
// weights-only term depend on the row.
template <QuantType T>
constexpr Layout kLayout =
    kBlocks32<T> || T == QuantType::kQ4_K || T == QuantType::kQ5_K || T == QuantType::kIQ4_XS
        ? Layout::kMins
    : T == QuantType::kQ6_K ? Layout::kCentred
                            : Layout::kNone;

// kCentred's z (offset = z scale), as quant_unpack.h's decoders make Q6_K's offsets.
constexpr int kCentre = 32;

Layout layout_of(QuantType t) {
  Layout l = Layout::kNone;
  for_quant_type(t, [&](auto type) { l = kLayout<decltype(type)::value>; });
  return l;
}

// Whether the VNNI decode kernel, whose activations the panels share, quantizes t's per unit.
bool per_unit_acts(QuantType t) { return quant_vnni_unit_acts(t, 0, 1); }

template <Layout L>
struct Shape {
  static constexpr int kGroup = L == Layout::kMins ? 32 : 16;
  static constexpr int kGroups = kQuantUnit / kGroup;
  static constexpr int kSteps = kGroup / 4;
  static constexpr int kCodeBytes = kQuantUnit * kPanelCols;
  static constexpr int kScaleFloats = kGroups * kPanelCols;
  static constexpr int kExtraFloats = L == Layout::kMins ? kGroups * kPanelCols : kPanelCols;
  static constexpr int kUnitBytes = kCodeBytes + 4 * (kScaleFloats + kExtraFloats);
  static_assert(kUnitBytes % 64 == 0);
};

// Units of a panel multiplied by every activation row before the next ones: about 30 KB,
// within L1 beside the rows' activations.
constexpr int kUnitsPerBlock = 3;

}  // namespace

ActsKinds quant_panel_acts(QuantType t) {
  return per_unit_acts(t) ? ActsKinds::kPerUnit : ActsKinds::kPer32;
}

size_t quant_panel_bytes(QuantType t, int in) {
  const int unit = layout_of(t) == Layout::kCentred ? Shape<Layout::kCentred>::kUnitBytes
                                                    : Shape<Layout::kMins>::kUnitBytes;
  return static_cast<size_t>(quant_units(in)) * unit;
}

void size_panel_acts(QuantType t, const QuantActs& a, PanelActs* p) {
  const size_t blocks = static_cast<size_t>(a.rows) * a.units * 8;
  p->sums.resize(blocks);
  p->d32.resize(per_unit_acts(t) ? 0 : blocks);
  p->shifted.resize(layout_of(t) == Layout::kCentred ? blocks * 32 : 0);
}

void panel_acts_rows(QuantType t, const QuantActs& a, int64_t r0, int64_t r1, PanelActs* p) {
  for (int64_t r = r0; r < r1; ++r) {
    float* s = p->sums.data() + r * a.units * 8;
    if (!per_unit_acts(t)) {  // d and d times the sum of each block of 32
      const float* dsum = a.dsum_row(r);
      const float* dlane = a.dlane_row(r);
      float* d = p->d32.data() + r * a.units * 8;
      for (int j = 0; j < a.units * 8; ++j) {
        s[j] = dsum[2 * j] + dsum[2 * j + 1];
        d[j] = dlane[8 * j];
      }
      continue;
    }
    const int16_t* b = a.bsum16_row(r);
    for (int j = 0; j < a.units * 8; ++j)
      s[j] = static_cast<float>(b[2 * j]) + static_cast<float>(b[2 * j + 1]);
    if (layout_of(t) != Layout::kCentred) continue;
    const int8_t* q = a.q256_row(r);
    uint8_t* u = p->shifted.data() + r * a.units * kQuantUnit;
    for (int i = 0; i < a.units * kQuantUnit; ++i) u[i] = static_cast<uint8_t>(q[i] ^ 0x80);
  }
}

#if HANPU_HAVE_VNNI

namespace {

// The codes of one panel unit from the columns' unpacked codes: word m (values 4m .. + 3) of
// column 16 v + l goes to lane l of vector 2m + v, by 16 x 16 transposes (gathers of the same
// words cost the packing twice as much).
HANPU_VNNI_INLINE void store_codes(const uint8_t (&codes)[kPanelCols][kQuantUnit], uint8_t* out) {
  for (int v = 0; v < 2; ++v) {
    for (int m0 = 0; m0 < kQuantUnit / 4; m0 += 16) {
      __m512i r[16];
      for (int l = 0; l < 16; ++l) r[l] = _mm512_load_si512(&codes[16 * v + l][4 * m0]);
      transpose_words_16x16(r);
      for (int i = 0; i < 16; ++i) _mm512_store_si512(out + (2 * (m0 + i) + v) * 64, r[i]);
    }
  }
}

// Per column, its group fields as one vector: kMins, lanes 0-7 the 8 scales of 32 values and
// 8-15 their offsets; kCentred, lanes 0-15 the 16 scales of 16 values. The unpacked unit's
// group g scale is lane 4 (g % 4) of scale_lane[g / 4] and its offset lane g of offset.
template <Layout L>
HANPU_VNNI_INLINE __m512 group_fields(const Unit& w) {
  if constexpr (L == Layout::kMins) {  // 32 values: group 2j
    const __m512i pick = _mm512_setr_epi32(0, 8, 16, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512 lo = _mm512_permutex2var_ps(w.scale_lane[0], pick, w.scale_lane[1]);
    const __m512 hi = _mm512_permutex2var_ps(w.scale_lane[2], pick, w.scale_lane[3]);
    const __m512 scales = _mm512_permutex2var_ps(
        lo, _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 0, 0, 0, 0, 0, 0, 0, 0), hi);
    return _mm512_permutex2var_ps(
        scales, _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 18, 20, 22, 24, 26, 28, 30),
        w.offset);
  } else {
    const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512 lo = _mm512_permutex2var_ps(w.scale_lane[0], pick, w.scale_lane[1]);
    const __m512 hi = _mm512_permutex2var_ps(w.scale_lane[2], pick, w.scale_lane[3]);
    return _mm512_permutex2var_ps(
        lo, _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23), hi);
  }
}

template <QuantType T>
HANPU_VNNI_TARGET void pack_of_type(const uint8_t* const* rows, int n, int in, uint8_t* panel) {
  constexpr Layout L = kLayout<T>;
  using S = Shape<L>;
  static_assert(S::kScaleFloats + (L == Layout::kMins ? S::kExtraFloats : 0) ==
                16 * kPanelCols);  // the fields are a [16][32] array
  alignas(64) uint8_t codes[kPanelCols][kQuantUnit];
  alignas(64) float fields[kPanelCols][16];
  alignas(64) float corr[kPanelCols];  // kCentred's weights-only term
  alignas(64) QuantUnit scratch;
  for (int u = 0; u < quant_units(in); ++u) {
    for (int c = 0; c < kPanelCols; ++c) {
      if (c >= n) {  // zero weights: codes z, scale 0, offset 0
        std::memset(codes[c], 0, sizeof(codes[c]));
        _mm512_store_ps(fields[c], _mm512_setzero_ps());
        corr[c] = 0.0f;
        continue;
      }
      Unit w;
      unpack<T>(rows[c], in, u, &scratch, &w);
      for (int k = 0; k < 4; ++k) {
        if constexpr (L == Layout::kMins) {
          _mm512_store_si512(codes[c] + 64 * k, w.code[k]);
        } else {  // signed: code - z (two's complement bytes)
          _mm512_store_si512(codes[c] + 64 * k,
                             _mm512_sub_epi8(w.code[k], _mm512_set1_epi8(kCentre)));
        }
      }
      _mm512_store_ps(fields[c], group_fields<L>(w));
      if constexpr (L == Layout::kCentred) {
        // Each group's sum of codes by vpsadbw (per 8 bytes), less 16 z for the signed ones.
        alignas(64) uint64_t eights[4][8];
        for (int k = 0; k < 4; ++k)
          _mm512_store_si512(eights[k], _mm512_sad_epu8(w.code[k], _mm512_setzero_si512()));
        double sum = 0;  // one rounding
        for (int g = 0; g < S::kGroups; ++g) {
          const int64_t codes_sum =
              static_cast<int64_t>(eights[g / 4][2 * (g % 4)] + eights[g / 4][2 * (g % 4) + 1]) -
              16 * kCentre;
          sum += 128.0 * static_cast<double>(fields[c][g]) * static_cast<double>(codes_sum);
        }
        corr[c] = static_cast<float>(sum);
      }
    }
    uint8_t* out = panel + static_cast<size_t>(u) * S::kUnitBytes;
    store_codes(codes, out);
    // Field i of 16 columns at once: a 16 x 16 transpose, row i to the fields' row i.
    float* field_rows = reinterpret_cast<float*>(out + S::kCodeBytes);
    for (int v = 0; v < 2; ++v) {
      __m512i r[16];
      for (int l = 0; l < 16; ++l) r[l] = _mm512_load_si512(fields[16 * v + l]);
      transpose_words_16x16(r);
      for (int i = 0; i < 16; ++i) _mm512_store_si512(field_rows + i * kPanelCols + 16 * v, r[i]);
    }
    if constexpr (L == Layout::kCentred)
      std::memcpy(field_rows + S::kScaleFloats, corr, sizeof(corr));
  }
}

// Activation rows [r0, r0 + R) times units [u0, u1) of the panel; `add`: onto what y holds
// (the units before u0); kPer32: activations scaled per 32 values (a's q, PanelActs' d32).
// See the file comment.
template <Layout L, bool kPer32, int R>
HANPU_VNNI_TARGET void panel_tile(const uint8_t* panel, int n, const QuantActs& a,
                                  const PanelActs& p, int u0, int u1, bool add, int64_t r0,
                                  float* y, int64_t ldy) {
  using S = Shape<L>;
  __m512 total[R][2];
  for (int r = 0; r < R; ++r) total[r][0] = total[r][1] = _mm512_setzero_ps();
  const uint8_t* x[R];  // kMins: q256 or q (signed); kCentred: q256 + 128
  for (int r = 0; r < R; ++r) {
    x[r] = L == Layout::kCentred ? p.shifted.data() + (r0 + r) * a.units * kQuantUnit
           : kPer32              ? reinterpret_cast<const uint8_t*>(a.q_row(r0 + r))
                                 : reinterpret_cast<const uint8_t*>(a.q256_row(r0 + r));
  }
  for (int u = u0; u < u1; ++u) {
    const uint8_t* unit = panel + static_cast<size_t>(u) * S::kUnitBytes;
    const float* scale = reinterpret_cast<const float*>(unit + S::kCodeBytes);
    const float* extra = scale + S::kScaleFloats;
    __m512 part[R][2];
    for (int r = 0; r < R; ++r) part[r][0] = part[r][1] = _mm512_setzero_ps();
    for (int g = 0; g < S::kGroups; ++g) {
      __m512i dot[R][2];
      for (int r = 0; r < R; ++r) dot[r][0] = dot[r][1] = _mm512_setzero_si512();
      const uint8_t* codes = unit + g * S::kSteps * 2 * 64;
#pragma GCC unroll 8
      for (int s = 0; s < S::kSteps; ++s) {
        const __m512i w0 = _mm512_load_si512(codes + (2 * s) * 64);
        const __m512i w1 = _mm512_load_si512(codes + (2 * s + 1) * 64);
        for (int r = 0; r < R; ++r) {
          int32_t word;
          std::memcpy(&word, x[r] + u * kQuantUnit + S::kGroup * g + 4 * s, sizeof(word));
          const __m512i xb = _mm512_set1_epi32(word);
          if constexpr (L == Layout::kMins) {  // unsigned codes, signed activations
            dot[r][0] = _mm512_dpbusd_epi32(dot[r][0], w0, xb);
            dot[r][1] = _mm512_dpbusd_epi32(dot[r][1], w1, xb);
          } else {  // unsigned activations, signed codes
            dot[r][0] = _mm512_dpbusd_epi32(dot[r][0], xb, w0);
            dot[r][1] = _mm512_dpbusd_epi32(dot[r][1], xb, w1);
          }
        }
      }
      if constexpr (kPer32) {  // each block's own d: straight into the totals
        for (int v = 0; v < 2; ++v) {
          const __m512 sc = _mm512_load_ps(scale + g * kPanelCols + 16 * v);
          const __m512 off = _mm512_load_ps(extra + g * kPanelCols + 16 * v);
          for (int r = 0; r < R; ++r) {
            const int64_t at = ((r0 + r) * a.units + u) * 8 + g;
            const __m512 f = _mm512_mul_ps(sc, _mm512_set1_ps(p.d32[at]));
            total[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][v]), f, total[r][v]);
            total[r][v] = _mm512_fnmadd_ps(_mm512_set1_ps(p.sums[at]), off, total[r][v]);
          }
        }
        continue;
      }
      for (int v = 0; v < 2; ++v) {
        const __m512 sc = _mm512_load_ps(scale + g * kPanelCols + 16 * v);
        for (int r = 0; r < R; ++r)
          part[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot[r][v]), sc, part[r][v]);
        if constexpr (L == Layout::kMins) {
          const __m512 off = _mm512_load_ps(extra + g * kPanelCols + 16 * v);
          for (int r = 0; r < R; ++r) {
            const float* sum = p.sums.data() + ((r0 + r) * a.units + u) * 8;
            part[r][v] = _mm512_fnmadd_ps(_mm512_set1_ps(sum[g]), off, part[r][v]);
          }
        }
      }
    }
    if constexpr (kPer32) continue;
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_set1_ps(a.d256_row(r0 + r)[u]);
      for (int v = 0; v < 2; ++v) {
        __m512 unit_sum = part[r][v];
        if constexpr (L == Layout::kCentred)
          unit_sum = _mm512_sub_ps(unit_sum, _mm512_load_ps(extra + 16 * v));
        total[r][v] = _mm512_fmadd_ps(unit_sum, d, total[r][v]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < 2; ++v) {
      const int cols = n - 16 * v;
      if (cols <= 0) continue;
      const __mmask16 keep =
          cols >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << cols) - 1);
      float* out = y + (r0 + r) * ldy + 16 * v;
      const __m512 sum =
          add ? _mm512_add_ps(total[r][v], _mm512_maskz_loadu_ps(keep, out)) : total[r][v];
      _mm512_mask_storeu_ps(out, keep, sum);
    }
  }
}

template <Layout L, bool kPer32>
void gemm_of_layout(const uint8_t* panel, int n, const QuantActs& a, const PanelActs& p, int64_t r0,
                    int64_t r1, float* y, int64_t ldy) {
  // Units a block at a time for every row, so the block's panel part stays in L1 while the
  // rows stream past.
  for (int u0 = 0; u0 < a.units; u0 += kUnitsPerBlock) {
    const int u1 = std::min(a.units, u0 + kUnitsPerBlock);
    for_row_tiles(r0, r1, [&](auto tile, int64_t r) {
      panel_tile<L, kPer32, decltype(tile)::value>(panel, n, a, p, u0, u1, u0 > 0, r, y, ldy);
    });
  }
}

}  // namespace

bool quant_panel_usable(QuantType t) {
  return layout_of(t) != Layout::kNone && quant_vnni_usable();
}

void pack_quant_panel(QuantType t, const uint8_t* const* rows, int n, int in, uint8_t* panel) {
  for_quant_type(t, [&](auto type) {
    constexpr QuantType kT = decltype(type)::value;
    if constexpr (kLayout<kT> != Layout::kNone) {
      pack_of_type<kT>(rows, n, in, panel);
    } else {
      std::abort();  // quant_panel_usable said no
    }
  });
}

void quant_panel_gemm(QuantType t, const uint8_t* panel, int n, const QuantActs& a,
                      const PanelActs& p, int64_t r0, int64_t r1, float* y, int64_t ldy) {
  if (layout_of(t) == Layout::kCentred)
    return gemm_of_layout<Layout::kCentred, false>(panel, n, a, p, r0, r1, y, ldy);
  if (per_unit_acts(t)) return gemm_of_layout<Layout::kMins, false>(panel, n, a, p, r0, r1, y, ldy);
  gemm_of_layout<Layout::kMins, true>(panel, n, a, p, r0, r1, y, ldy);
}

#else

bool quant_panel_usable(QuantType) { return false; }
void pack_quant_panel(QuantType, const uint8_t* const*, int, int, uint8_t*) { std::abort(); }
void quant_panel_gemm(QuantType, const uint8_t*, int, const QuantActs&, const PanelActs&, int64_t,
                      int64_t, float*, int64_t) {
  std::abort();
}

#endif

}  // namespace hanpu::simd
