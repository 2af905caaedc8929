// The K and non-linear quantizers, ported from ggml's reference quantizers (ggml-quants.c:
// quantize_row_q4_K_ref, _q5_K_ref, _q6_K_ref and quantize_row_iq4_nl_impl as quantize_iq4_xs
// and quantize_iq4_nl call it without an importance matrix). Hand-written because ggml is the
// only implementation and is not packaged; a file must come out byte for byte as
// llama-quantize writes it, so every search, its step order and each float operation's order
// are kept as ggml has them (no fused multiply-add: the baseline build has none to contract).
#include "base/quant_quantize_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/quant_block_fields.h"
#include "base/quant_quantize.h"
#include "hanpu/dtype.h"

namespace hanpu {

namespace {

constexpr int kSuper = 256;
constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a group this small is zero

void store_half(uint8_t* p, float x) {
  const uint16_t h = f32_to_f16_bits(x);
  std::memcpy(p, &h, sizeof(h));
}

// ggml's make_qkx2_quants: codes 0..nmax for x ≈ scale q - min, weighted least squares over
// nstep + 1 trial inverse scales (rmin + rdelta is + nmax) / (max - min). Returns the scale and
// sets *the_min to the (non-negative) offset subtracted.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = ggml_nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ggml's make_qx_quants with rmse_type 1 (weights x^2) and no importance weights: signed codes
// -nmax..nmax-1 (stored offset by nmax) and the best of 19 trial scales around nmax / max.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = ggml_nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    const float fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = ggml_nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      const float fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = ggml_nearest_int(iscale * x[i]);
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q4_K and Q5_K share all but the code width and the search's range: 8 sub-blocks of 32, each
// with a scale and a min found by make_qkx2_quants (weights sqrt(mean x^2) + |x|), both
// quantized to 6 bits against the block's largest, then the codes recomputed from those.
// Returns the codes in L (0..nmax); the caller packs them.
void k_scales_and_codes(const float* x, int nmax, float rmin, int nstep, uint8_t* b, uint8_t* L) {
  float mins[kSuper / 32], scales[kSuper / 32], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSuper / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 0.1f, nstep);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint8_t* s = b + 4;  // the 12 bytes of 6-bit scales and mins, after d and dmin
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kSuper / 32; ++j) {
    uint8_t ls = static_cast<uint8_t>(ggml_nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(ggml_nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      s[j] = ls;
      s[j + 4] = lm;
    } else {
      s[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      s[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      s[j - 0] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  store_half(b, max_scale / 63.f);
  store_half(b + 2, max_min / 63.f);
  const float d_all = quant_fields::half_at(b), dmin_all = quant_fields::half_at(b + 2);
  for (int j = 0; j < kSuper / 32; ++j) {
    int sc = 0, m = 0;
    quant_fields::q4k_scale_min(s, j, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0) continue;
    const float dm = dmin_all * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = ggml_nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

// ggml's best_index_int8: the index of the level nearest x in the sorted levels (ties: the
// upper one).
int nearest_level(const int8_t* levels, float x) {
  if (x <= levels[0]) return 0;
  if (x >= levels[15]) return 15;
  int ml = 0, mu = 15;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < levels[mav])
      mu = mav;
    else
      ml = mav;
  }
  return x - levels[mu - 1] < levels[mu] - x ? mu - 1 : mu;
}

// ggml's quantize_row_iq4_nl_impl without importance weights (weights x^2), ntry 7: for each
// sub-block of 32 the scale that best fits the 16 non-linear levels over 15 trials; with more
// than one sub-block (IQ4_XS) the scales are then quantized to 6 bits against the largest.
// Writes d at dh, 4-bit codes at q4 and (IQ4_XS) the 6-bit scales at scales_h / scales_l.
void iq4_quantize(int super_block_size, const float* x, uint8_t* dh, uint8_t* q4, uint8_t* scales_h,
                  uint8_t* scales_l) {
  constexpr int kBlock = 32, kTries = 7;
  const int8_t* values = quant_fields::kIq4Levels;
  float scales[kSuper / kBlock], weight[kBlock];
  uint8_t L[kSuper];
  std::memset(q4, 0, static_cast<size_t>(super_block_size / 2));
  store_half(dh, 0.f);
  float max_scale = 0, amax_scale = 0;
  const int nb = super_block_size / kBlock;
  for (int ib = 0; ib < nb; ++ib) {
    const float* xb = x + ib * kBlock;
    uint8_t* Lb = L + ib * kBlock;
    for (int j = 0; j < kBlock; ++j) weight[j] = xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) amax = ax, max = xb[j];
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / values[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < kBlock; ++j) {
      const float al = id * xb[j];
      const int l = nearest_level(values, al);
      Lb[j] = static_cast<uint8_t>(l);
      const float q = values[l];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kTries; itry <= kTries; ++itry) {
      id = static_cast<float>(itry + values[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < kBlock; ++j) {
        const float al = id * xb[j];
        const int l = nearest_level(values, al);
        const float q = values[l];
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) amax_scale = abs_d, max_scale = d;
  }
  if (nb > 1) {
    std::memset(scales_h, 0, 2);
    const float d = -max_scale / 32;
    store_half(dh, d);
    const float id = d != 0 ? 1 / d : 0.f;
    uint16_t high = 0;
    for (int ib = 0; ib < nb; ++ib) {
      int l = ggml_nearest_int(id * scales[ib]);
      l = std::max(-32, std::min(31, l));
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      uint8_t* Lb = L + ib * kBlock;
      const float* xb = x + ib * kBlock;
      for (int j = 0; j < kBlock; ++j)
        Lb[j] = static_cast<uint8_t>(nearest_level(values, idl * xb[j]));
      l += 32;
      const uint8_t l_l = static_cast<uint8_t>(l & 0xf), l_h = static_cast<uint8_t>(l >> 4);
      if (ib % 2 == 0)
        scales_l[ib / 2] = l_l;
      else
        scales_l[ib / 2] |= static_cast<uint8_t>(l_l << 4);
      high |= static_cast<uint16_t>(l_h << (2 * (ib % 8)));
    }
    std::memcpy(scales_h, &high, sizeof(high));
  } else {
    store_half(dh, scales[0]);
    const float id = scales[0] != 0 ? 1 / scales[0] : 0;
    for (int j = 0; j < super_block_size; ++j)
      L[j] = static_cast<uint8_t>(nearest_level(values, id * x[j]));
  }
  for (int i = 0; i < super_block_size / 32; ++i) {
    for (int j = 0; j < 16; ++j)
      q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
  }
}

}  // namespace

void quantize_q4_k_block(const float* x, uint8_t* b) {
  uint8_t L[kSuper];
  std::memset(b + 4, 0, 12);
  k_scales_and_codes(x, 15, -1.f, 20, b, L);
  uint8_t* q = b + 16;
  for (int j = 0; j < kSuper; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void quantize_q5_k_block(const float* x, uint8_t* b) {
  uint8_t L[kSuper];
  std::memset(b + 4, 0, 12);
  k_scales_and_codes(x, 31, -0.5f, 15, b, L);
  uint8_t* qh = b + 16;
  uint8_t* ql = b + 48;
  std::memset(qh, 0, kSuper / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kSuper; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) l1 -= 16, qh[j] |= m1;
      int l2 = L[n + j + 32];
      if (l2 > 15) l2 -= 16, qh[j] |= m2;
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}

void quantize_q6_k_block(const float* x, uint8_t* b) {
  int8_t L[kSuper];
  float scales[kSuper / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < kSuper / 16; ++ib) {
    const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) max_abs_scale = abs_scale, max_scale = scale;
  }
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(b, 0, 210);
    return;
  }
  const float iscale = -128.f / max_scale;
  store_half(b + 208, 1 / iscale);
  for (int ib = 0; ib < kSuper / 16; ++ib)
    sc[ib] = static_cast<int8_t>(std::min(127, ggml_nearest_int(iscale * scales[ib])));
  const float d_all = quant_fields::half_at(b + 208);
  for (int j = 0; j < kSuper / 16; ++j) {
    const float d = d_all * static_cast<float>(sc[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = ggml_nearest_int(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = static_cast<int8_t>(l + 32);
    }
  }
  for (int j = 0; j < kSuper; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                    q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                   ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

void quantize_iq4_nl_block(const float* x, uint8_t* b) {
  iq4_quantize(32, x, b, b + 2, nullptr, nullptr);
}

void quantize_iq4_xs_block(const float* x, uint8_t* b) {
  iq4_quantize(kSuper, x, b, b + 8, b + 2, b + 4);
}

}  // namespace hanpu
