// The fused unit's key loop on the bf16 dot instruction (see attn_tile_kernel.h): STEEL's
// three stages as in key_loop_columns, with both products on simd/attn_bf16_dot.h.
//   stage 1  S^T [kr x N] = K_tile (c Q)^T: A = the key tile's rows as k-major pairs along
//            D, B = c Q^T as pairs along D (packed once per unit);
//   stage 2  the mask and the online softmax on fp32 scores, unchanged;
//   stage 3  O_g = diag(alpha) O_g + P_g V: A = P^T's rows taken two keys at a time (each
//            query column's pair of probabilities), B = the value tile as pairs of rows.
// Key tiles sit at multiples of kv_rows from key 0, so a tile's pairs never straddle two
// tiles and one head's tiles are packed once per core (attn_fused.cc); a unit whose range
// starts inside a tile (a sliding window) masks the keys before it.
#include <algorithm>

#include "cpu/attn/attn_tile_kernel.h"
#include "simd/attn_bf16_dot.h"
#include "simd/softmax_ops.h"

namespace hanpu::cpu {

namespace {

// Key tile [kb, kb + kr) of kv as pairs: K k-major into k_out ([D / 2 x kv_rows]), V as pairs
// of rows into v_out ([kv_rows / 2 x D], a missing odd row zero), widened through ws.kv.
void pack_tile(const KvRows& kv, int64_t kb, int kr, int D, AttnWorkspace& ws, uint32_t* k_out,
               uint32_t* v_out) {
  float* kc = ws.kv.data();
  float* vc = kc + static_cast<size_t>(ws.kv_rows) * D;
  copy_kv_rows(kv, kb, kr, D, D, kc, vc);  // the dot path runs with Dv = D (attn_api.cc)
  simd::pack_bf16_pairs_transposed(kc, D, kr, D, 1.0f, k_out, ws.kv_rows);
  for (int q = 0; 2 * q < kr; ++q) {
    simd::pack_bf16_row_pairs(vc + static_cast<size_t>(2 * q) * D,
                              2 * q + 1 < kr ? vc + static_cast<size_t>(2 * q + 1) * D : nullptr, D,
                              v_out + static_cast<size_t>(q) * D);
  }
}

}  // namespace

int64_t kv_pair_tile_words(int D, int kv_rows) { return static_cast<int64_t>(D / 2) * kv_rows; }

void pack_kv_pair_tiles(const KvRows& kv, int64_t keys, int D, AttnWorkspace& ws, uint32_t* k_out,
                        uint32_t* v_out) {
  const int KT = ws.kv_rows;
  const int64_t words = kv_pair_tile_words(D, KT);
  for (int64_t kb = 0, t = 0; kb < keys; kb += KT, ++t) {
    pack_tile(kv, kb, static_cast<int>(std::min<int64_t>(KT, keys - kb)), D, ws, k_out + t * words,
              v_out + t * words);
  }
}

bool key_loop_pairs(const AttnProblem& p, AttnWorkspace& ws, int hk, const KvRows& kv,
                    const KvPairTiles* packed, int64_t t0, int r, int64_t lo, int64_t hi) {
  const int G = p.group(), D = p.D, N = G * r, KT = ws.kv_rows;
  const ptrdiff_t ldq = ws.ldq;
  const int64_t words = kv_pair_tile_words(D, KT);
  uint32_t* qt = ws.qt_pairs.data();
  uint32_t* pp = ws.p_pairs.data();
  float* s = ws.s.data();
  for (int g = 0; g < G; ++g) {
    simd::pack_bf16_pairs_transposed(p.q + p.q_row(t0, hk * G + g),
                                     static_cast<ptrdiff_t>(p.Hq) * D, r, D, p.scale * kLog2E,
                                     qt + g * r, ldq);
  }
  // Keys every row of the tile sees: no mask needed on a key tile inside [full_lo, full_hi).
  const int64_t full_lo = p.key_begin(t0 + r - 1), full_hi = p.key_end(t0);
  bool first = true;
  for (int64_t kb = lo / KT * KT; kb < hi; kb += KT) {
    const int kr = static_cast<int>(std::min<int64_t>(KT, hi - kb));
    const int64_t tile = kb / KT;
    const uint32_t* kt = nullptr;
    const uint32_t* vt = nullptr;
    if (packed != nullptr && packed->keys >= kb + kr) {
      kt = packed->k + tile * words;
      vt = packed->v + tile * words;
    } else {
      uint32_t* kc = ws.kv_pairs.data();
      pack_tile(kv, kb, kr, D, ws, kc, kc + words);
      kt = kc;
      vt = kc + words;
    }
    simd::gemm_bf16_dot_pairs(kr, N, D / 2, kt, KT, qt, ldq, s, ldq, nullptr);
    // A tile that starts below lo holds keys before key_begin(t0) (key_lo is a multiple of
    // the tile, attn_tile_kernel.h), which no row sees: the mask hides them with the rest.
    if (kb < full_lo || kb + kr > full_hi) mask_scores(p, ws, t0, r, kb, kr);
    simd::online_softmax_columns(s, ldq, kr, N, ws.m.data(), ws.l.data(), ws.aux.data());
    const int pairs = (kr + 1) / 2;
    for (int q = 0; q < pairs; ++q) {
      simd::pack_bf16_row_pairs(s + 2 * q * ldq, 2 * q + 1 < kr ? s + (2 * q + 1) * ldq : nullptr,
                                N, pp + q * ldq);
    }
    // An odd kr leaves the last value pair's second row to a key outside the tile's range
    // (a later key of a packed tile): P is 0 there, but 0 x a non-finite value is not, so
    // that pair runs against a copy of the row with the second key zeroed.
    const int whole = kr / 2;
    const uint32_t* v_odd = nullptr;
    if (kr % 2 == 1) {
      uint32_t* fix = ws.v_last.data();
      const uint32_t* row = vt + static_cast<size_t>(whole) * D;
      for (int d = 0; d < D; ++d) fix[d] = row[d] & 0xffffu;
      v_odd = fix;
    }
    for (int g = 0; g < G; ++g) {
      float* og = ws.o.data() + static_cast<size_t>(g) * r * D;
      const float* scale = first ? nullptr : ws.aux.data() + g * r;
      simd::gemm_bf16_dot_pairs(r, D, whole, pp + g * r, ldq, vt, D, og, D, scale);
      if (v_odd != nullptr) {
        simd::gemm_bf16_dot_pairs(r, D, 1, pp + whole * ldq + g * r, ldq, v_odd, D, og, D, nullptr,
                                  true);
      }
    }
    first = false;
  }
  return !first;
}

}  // namespace hanpu::cpu
