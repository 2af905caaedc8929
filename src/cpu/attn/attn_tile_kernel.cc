// The fused attention unit (see attn_tile_kernel.h).
#include "cpu/attn/attn_tile_kernel.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "simd/gemm.h"
#include "simd/gemm_few_rows.h"
#include "simd/softmax_ops.h"
#include "simd/vec_ops.h"

namespace hanpu::cpu {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Units with at most this many query columns take the row-major path (key_loop_rows). 16
// covers MLA's absorbed decode (Kimi Linear's 16 heads against one latent row of 576 per
// key), where the column path's packed fp32 copy of every bf16 key tile cost more than
// re-reading the tile from cache once per 4 query rows (measured: docs/journal, 2026-12-05).
constexpr int kRowPathMaxColumns = 16;

ptrdiff_t padded_columns(int n) {
  return (n + 15) / 16 * 16 + 16;
}  // + a line: fewer set conflicts

}  // namespace

void mask_scores(const AttnProblem& p, AttnWorkspace& ws, int64_t t0, int r, int64_t kb, int kr) {
  const int G = p.group();
  for (int pi = 0; pi < kr; ++pi) {
    const int64_t rel = kb + pi - p.q_offset - t0;  // key j sees rows i >= rel (causal)
    int64_t hide_below = 0, hide_from = r;
    if (p.mask != AttnMask::kNone) hide_below = std::clamp<int64_t>(rel, 0, r);
    if (p.mask == AttnMask::kSliding) hide_from = std::clamp<int64_t>(rel + p.window, 0, r);
    if (hide_below == 0 && hide_from == r) continue;
    float* row = ws.s.data() + pi * ws.ldq;
    for (int g = 0; g < G; ++g) {
      std::fill(row + g * r, row + g * r + hide_below, kNegInf);
      std::fill(row + g * r + hide_from, row + g * r + r, kNegInf);
    }
  }
}

AttnWorkspace::AttnWorkspace(const AttnProblem& p, AttnTiles tiles, ScratchMeter* meter, bool bf16)
    : q_rows(tiles.q_rows),
      kv_rows(tiles.kv_rows),
      ldq(padded_columns(p.group() * tiles.q_rows)),
      qt(bf16 ? 0 : static_cast<size_t>(p.D) * ldq, meter),  // the dot path keeps c Q^T in qt_pairs
      s(std::max<size_t>(static_cast<size_t>(tiles.kv_rows) * ldq,
                         static_cast<size_t>(p.group()) * tiles.q_rows * (tiles.kv_rows + 16)),
        meter),
      m(ldq, meter),
      l(ldq, meter),
      aux(ldq, meter),
      kv(static_cast<size_t>(p.D + p.Dv) * tiles.kv_rows, meter),  // K, V tiles (column path)
      o(static_cast<size_t>(p.group()) * tiles.q_rows * p.Dv, meter),
      bf16_products(bf16),
      qt_pairs(bf16 ? static_cast<size_t>(p.D / 2) * ldq : 0, meter),
      p_pairs(bf16 ? static_cast<size_t>(tiles.kv_rows / 2) * ldq : 0, meter),
      kv_pairs(bf16 ? 2 * static_cast<size_t>(kv_pair_tile_words(p.D, tiles.kv_rows)) : 0, meter),
      v_last(bf16 ? static_cast<size_t>(p.D) : 0, meter) {}

namespace {

// Scores transposed (keys x query columns): the query columns fill the SIMD lanes. Returns
// whether any key tile was processed.
bool key_loop_columns(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv, int64_t t0,
                      int r, int64_t lo, int64_t hi) {
  const int G = p.group(), D = p.D, Dv = p.Dv, N = G * r;
  const ptrdiff_t ldq = ws.ldq;
  float* qt = ws.qt.data();
  for (int g = 0; g < G; ++g) {
    simd::transpose(p.q + p.q_row(t0, hk * G + g), static_cast<ptrdiff_t>(p.Hq) * D, qt + g * r,
                    ldq, r, D);
  }
  simd::scale_rows(qt, ldq, qt, ldq, nullptr, p.scale * kLog2E, D, N);
  // Keys every row of the tile sees: no mask needed on a key tile inside [full_lo, full_hi).
  const int64_t full_lo = p.key_begin(t0 + r - 1), full_hi = p.key_end(t0);
  bool first = true;
  for (int64_t kb = lo; kb < hi; kb += ws.kv_rows) {
    const int kr = static_cast<int>(std::min<int64_t>(ws.kv_rows, hi - kb));
    const float* kt = nullptr;
    const float* vt = nullptr;
    if (kv.dense_f32(D, Dv)) {
      kt = kv.k_f32() + kb * D;
      vt = kv.v_f32() + kb * Dv;
    } else {  // rows in place, Hkv x D apart (or 16-bit): copy the tile to contiguous fp32 rows
      float* kc = ws.kv.data();
      float* vc = kc + static_cast<size_t>(ws.kv_rows) * D;
      copy_kv_rows(kv, kb, kr, D, Dv, kc, vc);
      kt = kc;
      vt = vc;
    }
    simd::gemm(kr, N, D, simd::row_major(kt, D), qt, ldq, ws.s.data(), ldq, 1.0f, 0.0f);
    if (kb < full_lo || kb + kr > full_hi) mask_scores(p, ws, t0, r, kb, kr);
    simd::online_softmax_columns(ws.s.data(), ldq, kr, N, ws.m.data(), ws.l.data(), ws.aux.data());
    for (int g = 0; g < G; ++g) {
      const simd::MatA P = simd::transposed(ws.s.data() + g * r, ldq);
      float* og = ws.o.data() + static_cast<size_t>(g) * r * Dv;
      if (first) {
        simd::gemm(r, Dv, kr, P, vt, Dv, og, Dv, 1.0f, 0.0f);
      } else {
        simd::gemm_row_scaled(r, Dv, kr, P, vt, Dv, og, Dv, ws.aux.data() + g * r);
      }
    }
    first = false;
  }
  return !first;
}

// Scores row-major (query rows x keys) for units of at most kRowPathMaxColumns query rows
// (decode: 1 token x a few query heads, or MLA's 16). Both products read the key/value rows in
// place, in their storage dtype (16-bit rows widened in registers), each exactly once, as a
// memory-bound decode should: the scores as dot products along D (gemm_few_rows_bt: no K^T,
// which cost a transpose pass per tile), P V on the few-row micro-kernel (gemm_few_rows.h).
bool key_loop_rows(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv, int64_t t0,
                   int r, int64_t lo, int64_t hi) {
  const int G = p.group(), D = p.D, Dv = p.Dv, N = G * r;
  const ptrdiff_t lds = ws.kv_rows + 16;
  float* qs = ws.qt.data();  // [N x D] scaled query rows
  float* s = ws.s.data();    // [N x lds]
  for (int g = 0; g < G; ++g) {
    simd::scale_rows(qs + static_cast<size_t>(g) * r * D, D, p.q + p.q_row(t0, hk * G + g),
                     static_cast<ptrdiff_t>(p.Hq) * D, nullptr, p.scale * kLog2E, r, D);
  }
  bool first = true;
  for (int64_t kb = lo; kb < hi; kb += ws.kv_rows) {
    const int kr = static_cast<int>(std::min<int64_t>(ws.kv_rows, hi - kb));
    // The next tile's rows are fetched while this one computes, spread over both products
    // (see simd::RowsToFetch): keys during the scores, values during P V. Past `hi` too, up to
    // the last key the call's rows can see: the caller's next call on this head continues
    // there (decode walks blocks of keys, all heads in each), and those lines wait in L2.
    const int64_t next0 = kb + kr;
    const int64_t next =
        std::max<int64_t>(0, std::min<int64_t>(p.key_end(t0 + r - 1), next0 + ws.kv_rows) - next0);
    const size_t row_bytes = D * dtype_size(kv.dtype);
    const simd::RowsToFetch next_k{
        kv.k_row(next0), kv.ld * static_cast<ptrdiff_t>(dtype_size(kv.dtype)), row_bytes, next};
    const simd::RowsToFetch next_v{kv.v_row(next0),
                                   kv.v_stride() * static_cast<ptrdiff_t>(dtype_size(kv.dtype)),
                                   Dv * dtype_size(kv.dtype), next};
    simd::gemm_few_rows_bt(N, kr, D, qs, D, kv.k_row(kb), kv.dtype, kv.ld, s, lds, &next_k);
    for (int g = 0; g < G; ++g) {
      for (int i = 0; i < r; ++i) {  // the mask, from coordinates: keys outside [begin, end)
        float* row = s + (g * r + i) * lds;
        const int64_t hide_from = std::clamp<int64_t>(p.key_end(t0 + i) - kb, 0, kr);
        const int64_t hide_below = std::clamp<int64_t>(p.key_begin(t0 + i) - kb, 0, kr);
        std::fill(row + hide_from, row + kr, kNegInf);
        std::fill(row, row + hide_below, kNegInf);
      }
    }
    simd::online_softmax_rows(s, lds, N, kr, ws.m.data(), ws.l.data(), ws.aux.data());
    simd::gemm_few_rows(N, Dv, kr, s, lds, kv.v_row(kb), kv.dtype, kv.v_stride(), ws.o.data(), Dv,
                        first ? nullptr : ws.aux.data(), &next_v);
    first = false;
  }
  return !first;
}

}  // namespace

void copy_kv_rows(const KvRows& kv, int64_t j0, int64_t n, int D, int Dv, float* k_out,
                  float* v_out) {
  for (int64_t j = 0; j < n; ++j) {
    simd::load_f32(k_out + j * D, kv.k_row(j0 + j), kv.dtype, D);
    simd::load_f32(v_out + j * Dv, kv.v_row(j0 + j), kv.dtype, Dv);
  }
}

KvRows kv_rows_in_place(const AttnProblem& p, int hk) {
  const size_t at = p.kv_row(0, hk) * dtype_size(p.kv_dtype);
  const size_t v_at = p.v_row(0, hk) * dtype_size(p.kv_dtype);
  return KvRows{static_cast<const char*>(p.k) + at, static_cast<const char*>(p.v) + v_at,
                static_cast<ptrdiff_t>(p.kv_ld), p.kv_dtype, static_cast<ptrdiff_t>(p.v_ld)};
}

void attend_query_tile(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv,
                       int64_t t0, int r, int64_t key_lo, int64_t key_hi, const TileOut& out,
                       const KvPairTiles* packed) {
  const int G = p.group(), Dv = p.Dv, N = G * r;
  float* m = ws.m.data();
  float* l = ws.l.data();
  float* alpha = ws.aux.data();
  std::fill_n(m, N, kNegInf);
  std::fill_n(l, N, 0.0f);
  const int64_t lo = std::max(key_lo, p.key_begin(t0));
  const int64_t hi = std::min(key_hi, p.key_end(t0 + r - 1));
  bool any = false;
  if (lo < hi) {
    any = ws.bf16_products          ? key_loop_pairs(p, ws, hk, kv, packed, t0, r, lo, hi)
          : N <= kRowPathMaxColumns ? key_loop_rows(p, ws, hk, kv, t0, r, lo, hi)
                                    : key_loop_columns(p, ws, hk, kv, t0, r, lo, hi);
  }
  const bool first = !any;
  // Normalise; rows that saw nothing (l = 0) become 0 with lse -inf.
  for (int c = 0; c < N; ++c) alpha[c] = l[c] > 0.0f ? 1.0f / l[c] : 0.0f;
  for (int g = 0; g < G; ++g) {
    float* og = out.o + g * out.head_stride;
    if (first) {
      for (int i = 0; i < r; ++i) std::fill_n(og + i * out.row_stride, Dv, 0.0f);
    } else {
      simd::scale_rows(og, out.row_stride, ws.o.data() + static_cast<size_t>(g) * r * Dv, Dv,
                       alpha + g * r, 1.0f, r, Dv);
    }
    if (out.lse) {
      float* lse = out.lse + g * out.lse_head_stride;
      for (int i = 0; i < r; ++i) {
        const int c = g * r + i;
        lse[i] = l[c] > 0.0f ? (m[c] + std::log2(l[c])) * kLn2 : kNegInf;
      }
    }
  }
}

}  // namespace hanpu::cpu
